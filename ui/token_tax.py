"""The token tax in the Tokens panel: the same sentence counted in ten languages by this model's tokenizer (once the
model is loaded) and tiktoken's cl100k_base and o200k_base, and a learner's own sentence beside them
(pipeline/token_tax.py counts, viz/token_tax.py draws)."""
from __future__ import annotations

from pipeline import token_tax
from viz import token_tax as tax_viz
from viz.text import t
from ui import model
from ui.layout import static_figure


def counters() -> tuple[dict, str | None]:
    """The tokenizers to count with, by their shown names, and the model's own name among them (None while loading)."""
    out, name = {}, None
    lm = model.loaded()
    if lm is not None:
        name = t("compare.this_model", model=lm.info.id)
        out[name] = token_tax.model_counter(lm.tokenizer)
    return out | token_tax.tiktoken_counters(), name


def view(own: str | None = None) -> str:
    """The panel's HTML: the sentences and the learner's own, as bars (a static figure the page draws) and words."""
    count_with, model_name = counters()
    rows = token_tax.measure(token_tax.sentences(), count_with, own)
    names = list(count_with)
    mine = next((r for r in rows if r.sentence.lang == "own"), None)
    return (tax_viz.summary_html(rows, names, model_name) + tax_viz.own_tokens_html(mine, rows)
            + static_figure(tax_viz.figure(rows, names)))

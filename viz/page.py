"""Every panel of the page for one step of a trace: the glue between records and the app.

Pure: a Trace and the person's view options in, panel values (figures / HTML) out.
"""
from __future__ import annotations

import html
import re

import plotly.graph_objects as go

from pipeline.trace.records import ModelInfo, Trace

from viz import kv, panels, speculative, tokens
from viz.text import count, decimal, t, t_html, thousands
from viz.panels import compare_html, context_pieces, output_only, tokens_only  # noqa: F401 (the app's names for them)

# The panel outputs `render` fills, in page order (ui/wiring.py wires them up), which of them follow the
# step, and which are drawn only with the heavy batch while a run streams: all from viz.panels.
PANEL_KEYS, STEP_FIGURES, HEAVY = panels.PANEL_KEYS, panels.STEP_FIGURES, panels.HEAVY
_clamp_step = panels.clamp_step  # (the one clamp of the step on screen)


def distribution_only(trace: Trace, *, step, temperature, top_k, top_p, min_p=0.0, repetition_penalty=None):
    """The distribution panel alone (drawn at every token while a run streams)."""
    return render(trace, step=step, layer=0, head=None, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                  repetition_penalty=repetition_penalty, only=("dist",))["dist"]


def render(trace: Trace, *, step, layer, head, temperature, top_k, top_p, min_p=0.0, repetition_penalty=None, heavy: bool = True,
           metric: str = "entropy", only: tuple[str, ...] | None = None) -> dict:
    """{panel key: value} for the step on screen: the light panels, the heavy ones too when
    `heavy`, or just the keys in `only`. Each is its panel's `figure` (viz.panels)."""
    if not trace.steps:
        return {"output": "", "tokens": tokens.tokens_html(trace.prompt, (), upto=None, highlight=None)}
    s = _clamp_step(trace, step)
    view = panels.View(trace, s, layer=layer, head=head, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                       repetition_penalty=repetition_penalty, metric=metric)
    keys = only if only is not None else [k for k in PANEL_KEYS if heavy or k not in HEAVY]
    out = {}
    for k in keys:
        p = panels.BY_KEY[k]
        out[k] = p.figure(view) if p.kind == "html" else go.Figure(p.figure(view))
        if p.follows_step:  # the contract the page and the tests read: the step a panel shows (the distribution's settings kept)
            out[k].update_layout(meta={"step": s, **(out[k].layout.meta or {})})
    return out


def step_html(trace: Trace) -> dict[str, list[str]]:
    """Per step of the trace, the bits of HTML the page's step viewer writes in place when that step is
    on screen: the token counts line (inside .tok-counts) and the KV cache summary."""
    return {"counts": [tokens.counts_html(trace.prompt, trace.steps[: s + 1]) for s in range(len(trace.steps))],
            "kv": [kv.kv_summary_html(steps=trace.steps, step=s, model=trace.model) for s in range(len(trace.steps))]}


def speculative_summary_html(trace: Trace, speed: dict | None = None) -> str:
    if trace.speculative is None:
        return f"<p style='color:#718096'>{t_html('speculative.not_speculative', **speculative.switch_words())}</p>"
    return speculative.summary_html(trace.rounds, trace.speculative.draft, trace.speculative.k, speed=speed)


_WEIGHTS = re.compile(r"(?P<head>.*?)(?:[;,] computed in (?P<computed>.*))?")  # pipeline/weights.py's words


def weights_words(english: str) -> str:
    """pipeline/weights.py's description of the stored weights ("GGUF: matrix weights Q4_1, embedding Q8_0, norms F32;
    computed in float32 (dequantised at load)") in the language spoken: its roles and its "computed in" put in words,
    the formats (GGUF, Q4_1, float32) as they are."""
    m = _WEIGHTS.fullmatch(english)
    roles = {"matrix weights": lambda: t("model.w_matrix"), "embedding": lambda: t("style.embedding"), "norms": lambda: t("model.w_norms")}
    head = re.sub("|".join(roles), lambda r: roles[r.group(0)](), m.group("head"))
    if not m.group("computed"):
        return head
    computed = m.group("computed").replace("(dequantised at load)", f"({t('model.w_dequantised')})")
    return f"{head}; {t('model.computed_in', dtype=computed)}"


def model_markdown(info: ModelInfo, *, loaded_from_file: bool = False) -> str:
    """The model line: one plain sentence, then the details a specialist wants, folded behind a disclosure."""
    where = {"embedded": lambda: t("model.where.embedded"), "hub": lambda: t("model.where.hub"),
             "local": lambda: t("model.where.local"), "config": lambda: t("model.where.config")}.get(info.source, lambda: info.source)()
    q = info.n_heads // max(info.n_kv_heads, 1)
    gqa = t("model.gqa", kv=info.n_kv_heads, q=q) if info.n_kv_heads != info.n_heads else t("model.mha")
    # how the weights are really stored (4-bit for the embedded model), not just the dtype computed in
    weights = html.escape(weights_words(info.weights)) if info.weights else t("model.computed_in", dtype=info.dtype)
    size = (t("model.size_billion", x=decimal(info.n_params / 1e9, 1)) if info.n_params >= 1e9
            else t("model.size_million", x=decimal(info.n_params / 1e6, 0)))
    plain = t("model.plain_file" if loaded_from_file else "model.plain_live", lead=t("model.lead_file" if loaded_from_file else "model.lead_live"),
              name=f"**{html.escape(info.id)}**", size=size, layers=info.n_layers)
    details = t("model.details", where=where, family=info.family, params=decimal(info.n_params / 1e6, 1), weights=weights,
                layers=info.n_layers, heads=info.n_heads, gqa=gqa, d_model=info.d_model, head_dim=info.head_dim,
                vocab=thousands(info.vocab_size), context=count(info.context_length, "token"))
    return f"{plain} <details class='model-details'><summary>{t_html('model.in_detail')}</summary>{details}</details>"

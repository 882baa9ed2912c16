"""The panel registry: every panel of a step, once, in page order; every list of panels derives from it.

A `Panel` is one output the server fills for the step on screen (`viz.page.render`): its key (the
name in render's dict and in ui/layout.py's components), its element id, the card it sits in, what
the server draws (`figure`: HTML, or a figure as plain data that the server wraps in a go.Figure) and,
for a panel that follows the step, how the viewer bundle carries it (`frames`: one Plotly figure with
a frame per step, viz.viewer.frames; by default the same `figure` at every step). A `Card` is a
numbered box of the page: its heading and caption. Derived here and used by everyone else:

- `PANEL_KEYS`, `STEP_FIGURES`, `HEAVY` (viz.page, ui/wiring.py), the light ones being drawn at every
  token while a run streams;
- `STEP_PANELS` / `STEP_IDS`: the panels the page draws from the bundle, in the bundle's order
  (viz.viewer's `panels`, ui/viewer_wiring.py, assets/app_viewer.js via the page's head, the tests);
- `CARDS`: ui/layout.py lays the cards out and the offline page (viz.viewer.page) writes their sections.

Pure: no torch, no gradio. See docs/architecture.md, "How to add a panel".
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

from pipeline.indices import clamp_index
from pipeline.trace.records import Trace
from pipeline.tiktoken_offline import ENCODINGS, EncodingUnavailable, encode_pieces

from viz import attention, distribution, embeddings, kv, output, speculative, tokens
from viz.style import MUTED, MUTED_TEXT, NEW_COLOR, PROMPT_COLOR
from viz.text import language, t, thousands
from viz.viewer.attention import attention_panel
from viz.viewer.frames import animated_plain

N_CANDIDATES = 20  # bars of the distribution panel (viz.distribution's default)

REMOVED_LABEL = f"<span style='color:{MUTED_TEXT}'>{{}}</span>"


def dist_style() -> dict:
    """How viz.distribution marks a candidate the sampling settings removed (tests pin it to the figure), in the
    language spoken (viz.text.speaking)."""
    return {
        "kept_color": PROMPT_COLOR, "removed_color": MUTED, "rest_color": "#cbd5e0",
        "removed_label": REMOVED_LABEL, "removed_hover": distribution.removed_hover(),
        "title": distribution.title_template(), "subtitle": distribution.SUBTITLE,
        "cut_line": dict(type="line", xref="paper", x0=0, x1=1, yref="y", line=dict(color=NEW_COLOR, width=1.5, dash="dash"), name="cut-off"),
        "cut_label": dict(xref="paper", x=1, xanchor="left", yref="y", yanchor="middle", showarrow=False, text=t("dist.cut_off"),
                          font=dict(size=13, color=NEW_COLOR), name="cut-off"),
    }


@dataclass(frozen=True)
class View:
    """What a panel is drawn for: the trace, the step on screen (an index into its steps) and the view
    options as the page hands them. `frames`: the viewer bundle's steps, when the figure is one of them."""
    trace: Trace
    step: int
    layer: Any = 0
    head: Any = None
    temperature: Any = 1.0
    top_k: Any = 0
    top_p: Any = 1.0
    min_p: Any = 0.0
    repetition_penalty: Any = None  # None: the trace's own
    metric: str = "entropy"
    frames: tuple = ()


@dataclass(frozen=True)
class Card:
    """A numbered box of the page. `row`: cards side by side share one (ui/layout.py); `side_by_side`:
    its plots in one row, each as wide as its panel's `scale`."""
    elem_id: str
    number: int
    heading: Callable[[], str]  # its title in the language spoken (viz.text.speaking): `title`
    caption: str  # the key in viz.captions.captions()
    row: str = ""
    side_by_side: bool = False
    caption_below: bool = False  # its caption after its panels (the first screen keeps the figure high)

    @property
    def title(self) -> str:
        return self.heading()


@dataclass(frozen=True)
class Panel:
    """One output of the step (see the module doc). `heavy`: drawn with the heavy batch while a run streams."""
    key: str
    elem_id: str
    kind: str  # "html" or "plot"
    figure: Callable[[View], Any]
    card: str | None = None  # the elem_id of its Card (None: laid out on its own)
    frames: Callable[..., dict] | None = field(default=None, repr=False)  # (trace, steps, *, layer, head, metric)
    heavy: bool = True
    scale: int | None = None

    @property
    def follows_step(self) -> bool:
        """Drawn per step from the viewer bundle (its figure's layout.meta.step names the step)."""
        return self.frames is not None


def clamp_step(trace: Trace, step) -> int:
    """The step on screen as an index into the trace's steps (no number: the last)."""
    return clamp_index(step, len(trace.steps), default=len(trace.steps) - 1)


def head_of(head):
    return None if head in (None, "all", "") else int(head)


def layer_of(trace: Trace, layer) -> int:
    return clamp_index(layer, trace.model.n_layers, default=0)


def _compare(text: str) -> tuple:
    return _compare_in(text, language())


@lru_cache(maxsize=64)
def _compare_in(text: str, lang: str) -> tuple:
    out = []
    for name in ENCODINGS:
        try:
            out.append(encode_pieces(name, text))
        except EncodingUnavailable as e:
            out.append((t("compare.unavailable", lang, name=name, error=e), [], []))
    return tuple(out)


def compare_html(trace: Trace, step: int | None = None) -> str:
    """The person's text and the model's reply (up to `step`; None: all of it), in the model's tokenizer
    and in two of OpenAI's. The page shows the whole reply: it does not follow the step slider."""
    reply = trace.steps if step is None else trace.steps[: step + 1]
    text = trace.prompt.text + "".join(s.text for s in reply)
    rows = list(_compare(text))
    if trace.prompt.text_ids:  # traces written before text_ids existed have no row of their own
        # every token but the end of sequence (a token holding half a character releases no text yet, but it is a token)
        gen = [s for s in reply if s.stop_reason != "eos"]
        rows.insert(0, (t("compare.this_model", model=trace.model.id), list(trace.prompt.text_pieces) + [s.piece for s in gen],
                        list(trace.prompt.text_ids) + [s.token_id for s in gen]))
    note = t("compare.note", chars=thousands(len(text)), tokens=thousands(len(trace.prompt.token_ids)))
    return "<div class='cmp-body'>" + tokens.compare_tokenizers_html(text, rows) + f"<p class='cmp-note'>{html.escape(note, quote=False)}</p></div>" + compare_held()


# Guess first (assets/guess.js) holds the comparison back: it spells out the whole text, the steps still to guess
# included, and follows no step. Shown instead while guessing (assets/style.css); hidden anywhere else (inline).
def compare_held() -> str:
    return f"<p class='cmp-held' style='display:none'>{html.escape(t('compare.held'), quote=False)}</p>"


def output_only(trace: Trace, *, step=None) -> str:
    s = clamp_step(trace, step) if trace.steps else -1
    # every step's text, the later ones hidden: the page's viewer shows any step of it (assets/app_viewer.js), coloured
    # by the mode the page's "Colour by" radio names (assets/colour_by.js, from the numbers on each step's span)
    return output.output_html(trace.steps, upto=s, stop_reason=trace.stop_reason)


def tokens_only(trace: Trace, *, step=None) -> str:
    s = clamp_step(trace, step) if trace.steps else None
    return tokens.tokens_html(trace.prompt, trace.steps, upto=s, highlight=s)


def context_pieces(trace: Trace) -> list[str]:
    """Every position's piece: the prompt's, then the generated tokens'."""
    return list(trace.prompt.pieces) + [st.piece for st in trace.steps]


# --- each step figure's one builder (plain data), for the server's render and the viewer's frames alike ---

def _distribution(v: View) -> dict:
    t = v.trace  # no repetition penalty given (a trace drawn as it was made): the trace's own applies
    rp = t.settings.repetition_penalty if v.repetition_penalty is None else float(v.repetition_penalty)
    return distribution.distribution_figure_dict(t.steps[v.step], temperature=float(v.temperature), top_k=int(v.top_k), top_p=float(v.top_p),
                                                 min_p=float(v.min_p or 0.0), repetition_penalty=rp, n=N_CANDIDATES,
                                                 vocab_size=t.model.vocab_size)


def _embeddings(v: View) -> dict:
    t = v.trace  # (the frames keep every trace at every step, empty or not, so that they line up)
    return embeddings.embeddings_figure_dict(prompt=t.prompt, steps=t.steps, step=v.step, cloud=t.vocab_cloud, keep_empty=bool(v.frames))


def _attention(v: View) -> dict:
    t = v.trace
    return attention.attention_figure_dict(steps=t.steps, step=v.step, layer=layer_of(t, v.layer), head=head_of(v.head),
                                           n_kv_heads=t.model.n_kv_heads, pieces=list(t.steps[v.step].context_pieces))


def _overview(v: View) -> dict:
    t = v.trace
    zmax = None  # the frames share one colour scale: the entropy of the last frame's context, spread evenly
    if v.frames:
        zmax = max(math.log2(t.steps[v.frames[-1]].position + 1), 1e-9) if v.metric == "entropy" else 1.0
    return attention.attention_overview_figure_dict(step=t.steps[v.step], n_kv_heads=t.model.n_kv_heads, metric=v.metric, zmax=zmax)


def _kv(v: View) -> dict:
    t = v.trace
    return kv.kv_timing_figure_dict(steps=t.steps, step=v.step, model=t.model, rounds=() if v.frames else t.rounds)


def animated(figure: Callable[[View], dict]) -> Callable[..., dict]:
    """A step figure's frames for the viewer bundle: the figure at each of the bundle's steps."""
    def frames(trace: Trace, steps: list[int], *, layer=0, head=None, metric="entropy") -> dict:
        return animated_plain([figure(View(trace, s, layer=layer, head=head, metric=metric, frames=tuple(steps))) for s in steps], steps)
    return frames


def _unmarked(labels: list, hover: list, n: int) -> tuple[list, list]:
    """A step's candidate labels and hover texts with the marks of removed candidates taken off."""
    pre, post = REMOVED_LABEL.split("{}")
    mark = distribution.removed_hover()
    plain = [lab[len(pre):-len(post)] if k < n and lab.startswith(pre) and lab.endswith(post) else lab for k, lab in enumerate(labels)]
    return plain, [h[:-len(mark)] if k < n and h.endswith(mark) else h for k, h in enumerate(hover)]


def distribution_panel(trace: Trace, steps: list[int], **_) -> dict:
    """The distribution under the trace's own settings per step, plus each step's candidates
    as they read with nothing removed (the browser greys what its settings remove)."""
    st = trace.settings
    figs, plain = [], []
    for s in steps:
        step = trace.steps[s]
        fig = _distribution(View(trace, s, temperature=st.temperature, top_k=st.top_k, top_p=st.top_p, min_p=st.min_p, frames=tuple(steps)))
        figs.append(fig)
        bars = fig["data"][0]
        labels, hover = _unmarked(list(bars["y"]), list(bars["customdata"]), len(bars["y"]) - 1)
        rank = next((k for k, i in enumerate(step.top_ids) if int(i) == step.token_id), -1)  # the sampled token's bar
        plain.append({"labels": labels, "hover": hover, "step": step.index, "position": step.position + 1, "entropy": step.entropy + 0.0, "rank": rank})
    panel = animated_plain(figs, steps)
    panel["candidates"] = plain
    return panel


def _attention_frames(trace: Trace, steps: list[int], *, layer=0, head=None, metric="entropy") -> dict:
    return attention_panel(trace, steps, layer=layer, head=head)  # windows of one band per head (viz.viewer.attention)


def _spec(v: View) -> str:
    return speculative.rounds_html(v.trace.rounds, step=v.step, pieces=context_pieces(v.trace))


CARDS: tuple[Card, ...] = (
    Card("panel-distribution", 0, lambda: t("title.card.distribution"), "distribution", caption_below=True),  # (first screen)
    Card("panel-tokens", 1, lambda: t("title.card.tokens"), "tokens", row="tokens-embeddings"),
    Card("panel-embeddings", 2, lambda: t("title.card.embeddings"), "embeddings", row="tokens-embeddings"),
    Card("panel-attention", 3, lambda: t("title.card.attention"), "attention", side_by_side=True),
    Card("panel-kv", 4, lambda: t("title.card.kv"), "kv"),
    Card("panel-speculative", 6, lambda: t("title.card.speculative"), "speculative"),
)

# In page order. The HTML panels show every step of the trace with the step's parts marked (data-step):
# the page's step viewer shows an earlier step from them with no request (assets/app_viewer.js).
PANELS: tuple[Panel, ...] = (
    Panel("output", "output", "html", lambda v: output_only(v.trace, step=v.step), heavy=False),
    Panel("tokens", "tokens-html", "html", lambda v: tokens_only(v.trace, step=v.step), card="panel-tokens", heavy=False),
    Panel("compare", "tokenizer-compare", "html", lambda v: compare_html(v.trace), card="panel-tokens"),
    Panel("dist", "dist-plot", "plot", _distribution, card="panel-distribution", frames=distribution_panel, heavy=False),
    Panel("emb", "emb-plot", "plot", _embeddings, card="panel-embeddings", frames=animated(_embeddings)),
    Panel("attn", "attn-plot", "plot", _attention, card="panel-attention", frames=_attention_frames, scale=3),
    Panel("overview", "attn-overview", "plot", _overview, card="panel-attention", frames=animated(_overview), scale=2),
    Panel("kv_text", "kv-summary", "html", lambda v: kv.kv_summary_html(steps=v.trace.steps, step=v.step, model=v.trace.model), card="panel-kv"),
    Panel("kv", "kv-plot", "plot", _kv, card="panel-kv", frames=animated(_kv)),
    Panel("spec", "spec-rounds", "html", _spec, card="panel-speculative"),
)

BY_KEY = {p.key: p for p in PANELS}
BY_ID = {p.elem_id: p for p in PANELS}
CARD = {c.elem_id: c for c in CARDS}
PANEL_KEYS = tuple(p.key for p in PANELS)
HEAVY = tuple(p.key for p in PANELS if p.heavy)
STEP_PANELS = tuple(p for p in PANELS if p.follows_step)  # the panels the page draws from the viewer bundle
STEP_FIGURES = frozenset(p.key for p in STEP_PANELS)
STEP_KEYS = tuple(p.key for p in STEP_PANELS)
STEP_IDS = tuple(p.elem_id for p in STEP_PANELS)
# drawn by the server for the whole trace (the page shows the step's part): the page's first values, a run's end
LIGHT_KEYS = tuple(p.key for p in PANELS if not p.follows_step)


def in_card(card: str) -> tuple[Panel, ...]:
    """The panels of a card, in page order."""
    return tuple(p for p in PANELS if p.card == card)


assert len(BY_KEY) == len(PANELS) and len(BY_ID) == len(PANELS), "a panel's key and element id are its own"
assert all(p.card is None or p.card in CARD for p in PANELS), "every panel's card is in CARDS"
assert all(p.kind == "plot" for p in STEP_PANELS), "a panel that follows the step is a figure"

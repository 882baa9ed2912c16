"""The tab registry of "Inside the model": every tab, once, in page order; everything about the tabs derives from it.

A `Tab` declares what the page shows and how the server fills it (as viz/panels.py does for the step's panels):

- its `id` (the element id is "tab-<id>"), `title` and `caption` (the key in viz.captions.captions(), shown first);
- its `parts`: the components, each a `Part` (kind, key in the page's components `C`, element id, and the rest of
  its keywords: label, value, scale, ...), laid out in `Box`es (a row, a group). ui/layout.py turns them into
  components (it stays the only module that makes them): a declaration here makes none;
- `compute`: one function of the step on screen (a `TabView`) that returns {key: value} for the tab's `outputs`,
  reading the page's values of its `inputs` (keys of `C`, inside the tab or not: the seed);
- `redraw`: the events, (key, event), that draw the open tab anew (a button, a field typed in);
- `actions`: its buttons with a listener of their own (each runs the model again: kv_compare_click, swap_click).

A tab with no compute is filled otherwise (its action, or ui/generation.py's branches). Derived here: `BY_ID`,
`INSIDE` (tab id -> outputs), `OUTPUTS`, `INPUTS`, `REDRAW`, `ACTIONS`; ui/inside/listeners.py looks a tab up in `BY_ID`
(Inside.inside_view) and hands ui/wiring.py its inputs, outputs and events.

A new tab: its entry in TABS, its compute function (here, calling a viz module) and its caption (viz/captions.py).
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Callable, Iterator

import gradio as gr

from pipeline.errors import SettingsError
from pipeline.indices import clamp_index
from pipeline.trace.records import StepRecord, Trace
from ui import model
from ui.inside import ablate as ablate_tab
from ui.api import HEAVY_GROUP
from ui.inside.data import accounting_for, default_swap, position_for
from ui.inside.lens_cache import LENS
from ui.messages import sentence
from viz import branches as branches_viz
from viz import text

SAMPLING_ROWS = ((1.0, 0, 1.0), (0.7, 0, 0.9), (0.3, 0, 1.0))  # temperature, top-k, top-p of the side-by-side columns
CMP_KEYS = tuple(f"cmp_{x}{n}" for n in range(len(SAMPLING_ROWS)) for x in "tkp")  # their fields
PAGE_NAMES = ("tab", "trace", "step")  # what every compute reads besides its inputs: the open tab, the trace, the step on screen


@dataclass(frozen=True)
class Part:
    """One component of a tab. `kind`: "caption" (`key`: its key in captions(); no component of its own), "html",
    "plot", "number", "button" or "radio"; `key`: its name in the page's components; `props`: its other keywords."""
    kind: str
    key: str
    elem_id: str | None = None
    props: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Box:
    """Parts laid out together: `kind` "row" (side by side) or "group" (in one box); `props`: the box's keywords."""
    kind: str
    parts: tuple
    props: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TabView:
    """What a compute draws: the trace, the step on screen (an index into its steps), the tab's inputs by key."""
    trace: Trace
    s: int
    inputs: dict

    @property
    def step(self) -> StepRecord:
        return self.trace.steps[self.s]


@dataclass(frozen=True)
class Action:
    """A button with its own listener: `fn` of the `inputs` (keys of the page's components, or "trace", "step"),
    returning the `outputs` in order."""
    button: str
    fn: Callable
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    event: str = "click"
    options: dict = field(default_factory=dict)  # the event's other keywords (a concurrency group: HEAVY_GROUP)


@dataclass(frozen=True)
class Tab:
    """One tab of "Inside the model" (see the module doc)."""
    id: str
    title: str
    caption: str
    parts: tuple = ()
    compute: Callable[[TabView], dict] | None = field(default=None, repr=False)
    outputs: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    redraw: tuple[tuple[str, str], ...] = ()
    actions: tuple[Action, ...] = ()

    @property
    def elem_id(self) -> str:
        return f"tab-{self.id}"

    def components(self) -> tuple[Part, ...]:
        """Its parts that are components (its captions left out), in page order."""
        return tuple(p for p in flat(self.parts) if p.kind != "caption")


def flat(parts) -> Iterator[Part]:
    for p in parts:
        if isinstance(p, Box):
            yield from flat(p.parts)
        else:
            yield p


# --- the declarations' shorthand --------------------------------------------------------------------------------

def _caption(key: str) -> Part:
    return Part("caption", key)


def _html(key: str, elem_id: str, **props) -> Part:
    return Part("html", key, elem_id, props)


def _plot(key: str, elem_id: str) -> Part:
    return Part("plot", key, elem_id, {"show_label": False})


def _number(key: str, elem_id: str, label: str, **props) -> Part:
    return Part("number", key, elem_id, {"label": label, **props})


def _button(key: str, elem_id: str, label: str, **props) -> Part:
    return Part("button", key, elem_id, {"value": label, **props})


def _row(*parts, **props) -> Box:
    return Box("row", parts, props)


# --- each tab's compute: {key: value} for the step on screen --------------------------------------------------------

def _note(text: str) -> str:
    return f"<p class='inside-note'>{html.escape(text)}</p>"


def _no_lens(trace: Trace) -> str:
    """Why the logit lens of a step cannot be shown, and what to do."""
    lm = model.loaded()
    if lm is not None and model.same_model(trace) is None:
        return text.t("inside.lens_other_model", trace_model=trace.model.id, loaded_model=lm.info.id)
    if lm is None and not trace.lens:
        return text.t("inside.lens_loading")
    return text.t("inside.lens_no_states")


def _lens(v: TabView) -> dict:
    from viz.inside import lens as lens_viz

    st = v.step
    rec = LENS.get(model.loaded(), v.trace, st)
    if rec is None:
        return {"lens_html": _note(_no_lens(v.trace)), "lens_plot": None}
    return {"lens_html": lens_viz.lens_summary_html(rec, forced=st.forced),
            "lens_plot": lens_viz.logit_lens_figure(rec, v.trace.model.n_layers, forced=st.forced)}


def _residual(v: TabView) -> dict:
    from viz.inside import residual

    st = v.step
    piece = st.context_pieces[-1]
    out = {"resid_plot": residual.residual_path_figure(st.resid_2d, st.resid_norm, st.update_norm, piece=piece, step=st.index)
           if st.resid_2d is not None else None,
           "contrib_plot": residual.contributions_figure(st.attn_out_norm, st.mlp_out_norm, st.resid_norm, st.update_norm,
                                                         piece=piece, step=st.index)}
    if st.resid_2d is None:
        gr.Info(text.t("inside.no_residual", step=st.index))
    return out


def _position(v: TabView) -> dict:
    from viz.inside import position as pos_viz

    pos = position_for(model.loaded(), v.trace)
    return {"pos_plot": pos_viz.position_figure(pos, list(v.step.context_pieces)) if pos is not None else None}


def _accounting(v: TabView) -> dict:
    from viz.inside import compute

    t = v.trace
    if t.speculative:  # its steps came k + 1 at a time from rounds of draft and verify passes
        return {"acc_html": _note(text.t("inside.speculative_compute")), "acc_plot": None}
    acc = accounting_for(model.loaded(), t)
    if acc is None:
        return {"acc_html": _note(text.t("inside.no_param_counts")), "acc_plot": None}
    recs, machine, params = acc
    return {"acc_html": compute.accounting_html(recs[v.s], machine, params, t.model), "acc_plot": compute.accounting_figure(recs, v.s)}


def _sampling(v: TabView) -> dict:
    from viz import sampling_compare

    cmp, t = v.inputs, v.trace
    if any(cmp[k] in (None, "") for k in CMP_KEYS):
        raise SettingsError(text.t("inside.sampling_fields"))
    rows = [dict(temperature=float(cmp[f"cmp_t{n}"]), top_k=int(cmp[f"cmp_k{n}"]), top_p=float(cmp[f"cmp_p{n}"]))
            for n in range(len(SAMPLING_ROWS))]
    return {"cmp_plot": sampling_compare.sampling_compare_figure(v.step, rows, vocab_size=t.model.vocab_size,
                                                                 repetition_penalty=t.settings.repetition_penalty, seed=int(cmp["seed"] or 0))}


def _bytes(v: TabView) -> dict:
    from viz.inside import bytes_view

    return {"bytes_html": bytes_view.bytes_html(v.trace.prompt, v.trace.steps, v.s)}


def _price(x) -> float | None:
    return float(x) if x not in (None, "") else None


def _context(v: TabView) -> dict:
    from viz.inside import context

    return {"ctx_html": context.context_html(v.trace, v.s, price_in_per_m=_price(v.inputs["price_in"]),
                                             price_out_per_m=_price(v.inputs["price_out"])),
            "ctx_plot": context.context_figure(v.trace, v.s)}


# --- the actions: buttons that run the model again ---------------------------------------------------------------

def kv_compare_click(trace, step):
    from pipeline.inside import analyses as inside
    from viz.inside import compute

    lm = model.same_model(trace)
    if trace is None or not trace.steps:
        return gr.skip(), gr.skip()
    if lm is None:
        gr.Warning(text.t("inside.recompute_needs_model"))
        return gr.skip(), gr.skip()
    s = clamp_index(step or 0, len(trace.steps))
    kvc = inside.kv_compare(lm, trace, trace.steps[s].index)
    pieces = [lm.tokens.piece(int(i)) for i in kvc.top_ids]
    return compute.kv_compare_html(kvc, pieces), compute.kv_compare_figure(kvc, pieces)


def swap_click(trace, i, j):
    from pipeline.inside import analyses as inside
    from viz.inside import position as pos_viz

    lm = model.same_model(trace)
    if trace is None or lm is None:
        gr.Warning(text.t("inside.swap_needs_model"))
        return gr.skip(), gr.skip(), gr.skip()
    try:
        if i in (None, "") or j in (None, "") or int(i) == int(j):  # two words of what the person typed
            i, j = default_swap(trace)
        swap = inside.swap_demo(lm, list(trace.prompt.token_ids), int(i), int(j))
    except (SettingsError, ValueError) as e:
        gr.Warning(sentence(e))
        return gr.skip(), gr.skip(), gr.skip()
    return pos_viz.swap_figure(swap), int(i), int(j)


# --- the tabs, in page order -------------------------------------------------------------------------------------

def _sampler_column(n: int, t: float, k: int, p: float) -> Box:
    """One column of the side-by-side sampler: its temperature, top-k and top-p."""
    return Box("group", (_number(f"cmp_t{n}", f"cmp-t{n}", text.t("label.cmp_t", n=n + 1), value=t, step=0.05),
                         _number(f"cmp_k{n}", f"cmp-k{n}", text.t("label.cmp_k"), value=k, precision=0),
                         _number(f"cmp_p{n}", f"cmp-p{n}", text.t("label.cmp_p"), value=p, step=0.01)))


TABS: tuple[Tab, ...] = (
    Tab("lens", text.t("tab.lens"), "lens", (_html("lens_html", "lens-summary"), _plot("lens_plot", "lens-plot")),
        _lens, ("lens_html", "lens_plot")),
    Tab("residual", text.t("tab.residual"), "residual",
        (_plot("resid_plot", "residual-plot"), _caption("contributions"), _plot("contrib_plot", "contributions-plot")),
        _residual, ("resid_plot", "contrib_plot")),
    Tab("position", text.t("tab.position"), "position",
        (_plot("pos_plot", "position-plot"),
         _row(_number("swap_i", "swap-i", text.t("label.swap_i"), value=None, precision=0, minimum=0, scale=1),
              _number("swap_j", "swap-j", text.t("label.swap_j"), value=None, precision=0, minimum=0, scale=1),
              _button("swap_btn", "swap-button", text.t("button.swap"), scale=2), equal_height=True),
         _plot("swap_plot", "swap-plot")),
        _position, ("pos_plot",),
        actions=(Action("swap_btn", swap_click, ("trace", "swap_i", "swap_j"), ("swap_plot", "swap_i", "swap_j")),)),
    Tab("kvc", text.t("tab.kvc"), "kv_compare",
        (_button("kvc_btn", "kvc-button", text.t("button.kvc")), _html("kvc_html", "kvc-summary"),
         _plot("kvc_plot", "kvc-plot")),
        actions=(Action("kvc_btn", kv_compare_click, ("trace", "step"), ("kvc_html", "kvc_plot")),)),
    Tab("accounting", text.t("tab.accounting"), "accounting", (_html("acc_html", "accounting-summary"), _plot("acc_plot", "accounting-plot")),
        _accounting, ("acc_html", "acc_plot")),
    Tab("sampling", text.t("tab.sampling"), "sampling_compare",
        (_row(*(_sampler_column(n, *row) for n, row in enumerate(SAMPLING_ROWS))),
         _button("cmp_btn", "sampling-button", text.t("button.cmp")), _plot("cmp_plot", "sampling-plot")),
        _sampling, ("cmp_plot",), inputs=(*CMP_KEYS, "seed"), redraw=(("cmp_btn", "click"),)),
    Tab("branches", text.t("tab.branches"), "branching",  # (filled by ui/generation.py: a branch made, a branch shown)
        (_html("branches_html", "branches", value=branches_viz.branches_html([], None)),
         _row(Part("radio", "branch_pick", "branch-pick", {"choices": [], "label": text.t("label.branch_pick"), "scale": 3}),
              _number("branch_rank", "branch-rank", text.t("label.branch_rank"), value=2, precision=0, minimum=1, maximum=100, scale=1),
              _button("branch_btn", "branch-button", text.t("button.branch"), scale=2), equal_height=True))),
    Tab("bytes", text.t("tab.bytes"), "bytes", (_html("bytes_html", "bytes-html"),), _bytes, ("bytes_html",)),
    Tab("context", text.t("tab.context"), "context",
        (_row(_number("price_in", "price-in", text.t("label.price_in"), value=None, minimum=0),
              _number("price_out", "price-out", text.t("label.price_out"), value=None, minimum=0)),
         _html("ctx_html", "context-summary"), _plot("ctx_plot", "context-plot")),
        _context, ("ctx_html", "ctx_plot"), inputs=("price_in", "price_out"), redraw=(("price_in", "input"), ("price_out", "input"))),
    Tab("ablate", text.t("tab.ablate"), "ablate",  # (ui/inside/ablate.py: its compute and buttons)
        (_row(_number("ablate_layer", "ablate-layer", text.t("label.ablate_layer"), value=0, precision=0, minimum=0, scale=1, min_width=110),
              Part("radio", "ablate_part", "ablate-part", {"label": text.t("label.ablate_part"), "value": "head", "scale": 4, "min_width": 280, "choices": [
                  (text.t("choice.ablate_part.head"), "head"), (text.t("choice.ablate_part.attn"), "attn"),
                  (text.t("choice.ablate_part.mlp"), "mlp")]}),
              _number("ablate_head", "ablate-head", text.t("label.ablate_head"), value=0, precision=0, minimum=0, scale=1, min_width=110),
              _button("ablate_run", "ablate-run", text.t("button.ablate_run"), variant="primary", scale=1, min_width=140),
              equal_height=True),
         _html("ablate_html", "ablate-html"), _plot("ablate_plot", "ablate-plot"),
         _row(_button("ablate_map_run", "ablate-map-run", text.t("button.ablate_map_run")),
              _button("ablate_map_all", "ablate-map-all", text.t("button.ablate_map_all"))),
         _html("ablate_map_html", "ablate-map-summary"), _plot("ablate_map", "ablate-map")),
        ablate_tab.compute, ("ablate_html", "ablate_plot", "ablate_map_html", "ablate_map"),
        inputs=("ablate_layer", "ablate_part", "ablate_head", "ablate_map_html"),
        actions=(Action("ablate_run", ablate_tab.run_click, ("trace", "step", "ablate_layer", "ablate_part", "ablate_head"),
                        ("ablate_html", "ablate_plot")),
                 Action("ablate_map_run", ablate_tab.map_block_click, ("trace", "step", "ablate_layer"), ("ablate_map_html", "ablate_map"),
                        options=HEAVY_GROUP),
                 Action("ablate_map_all", ablate_tab.map_all_click, ("trace", "step"), ("ablate_map_html", "ablate_map"),
                        options=HEAVY_GROUP))),
)

BY_ID = {t.id: t for t in TABS}
INSIDE = {t.id: t.outputs for t in TABS}  # tab id -> the components its compute fills (none: filled otherwise)
OUTPUTS = tuple(k for t in TABS for k in t.outputs)
INPUTS = tuple(dict.fromkeys(k for t in TABS for k in t.inputs))  # every compute's inputs, once each
REDRAW = tuple(r for t in TABS for r in t.redraw)
ACTIONS = tuple(a for t in TABS for a in t.actions)


def _check(t: Tab) -> bool:
    own = {p.key for p in t.components()}
    return (set(t.outputs) <= own and (t.compute is None) == (not t.outputs) and {k for k, _ in t.redraw} <= own
            and all(a.button in own and set(a.outputs) <= own and set(a.inputs) <= own | set(PAGE_NAMES) for a in t.actions))


assert len(BY_ID) == len(TABS), "a tab's id is its own"
_KEYS = [p.key for t in TABS for p in t.components()]
assert len(set(_KEYS)) == len(_KEYS) and not set(_KEYS) & set(PAGE_NAMES), "a component's key is its own"
assert all(_check(t) for t in TABS), "a tab's outputs, redraw events and actions name its own components"
assert all(p.kind != "caption" or p.elem_id is None for t in TABS for p in flat(t.parts))

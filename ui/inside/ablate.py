"""The "Switch off" tab of "Inside the model" (its entry is in ui/inside/tabs.py's TABS): the step on screen
recomputed with one part of the model switched off (pipeline/inside/ablate.py), drawn by viz/inside/ablate.py.

- `compute` (the tab opened, the step slider settled): the switch-off the fields name, for the step on screen; a head
  map already on screen stays when it is this step's, else it is cleared (it is named by viz.inside.ablate.map_key).
- `run_click` (`#ablate-run`): the same, asked for; `map_block_click` / `map_all_click` (`#ablate-map-run`,
  `#ablate-map-all`): each head switched off in turn, for one block or every block, streamed block by block, in the
  heavy queue (ui/api.py HEAVY_GROUP) and under the model's lock, pass by pass.

No model loaded (still loading, failed), or a trace made by another model: the tab says so in a sentence.
"""
from __future__ import annotations

import gradio as gr

from pipeline.errors import SettingsError
from pipeline.indices import clamp_index
from ui import model
from ui.messages import sentence
from viz.inside import ablate as ablate_viz
from viz import text

PARTS = ("head", "attn", "mlp")  # the part radio's values (pipeline.trace.ablated.PARTS)


def why_not(trace) -> str | None:
    """The sentence that says why this trace's steps cannot be switched off here, or None when they can."""
    lm = model.loaded()
    if lm is None:
        return text.t("ablate.needs_model")
    if model.same_model(trace) is None:
        return text.t("ablate.other_model", trace_model=trace.model.id, loaded_model=lm.info.id)
    return None


def _pieces(lm, ids) -> dict[int, str]:
    return {int(i): lm.tokens.piece(int(i)) for i in dict.fromkeys(int(i) for i in ids)}


def _int(x, what: str) -> int:
    """The field `what` ("block" or "head") as a whole number; a SettingsError that says so when it is not one."""
    if x in (None, "") or float(x) != int(float(x)):
        raise SettingsError(text.t("ablate.whole_block" if what == "block" else "ablate.whole_head"))
    return int(float(x))


def switch_off(trace, s: int, layer, part, head) -> tuple[str, object]:
    """(the result's HTML, the side-by-side figure) of step `s` (an index into trace.steps) with `part` of block
    `layer` switched off; a SettingsError for a field out of range."""
    from pipeline.inside import ablate

    lm = model.same_model(trace)
    st = trace.steps[s]
    part = part if part in PARTS else "head"
    rec = ablate.ablate_step(lm, st, layer=_int(layer, "block"), part=part,
                             head=_int(head, "head") if part == "head" else None)
    ids = [*rec.top("before", ablate_viz.SHOWN)[0], *rec.top("after", ablate_viz.SHOWN)[0], *rec.movers(ablate_viz.MOVERS)[0],
           rec.token_id]
    pieces = _pieces(lm, ids)
    return ablate_viz.ablation_html(rec, pieces, step=st.index), ablate_viz.ablation_figure(rec, pieces, step=st.index)


def _map_key(trace, s: int) -> str:
    st = trace.steps[s]
    return ablate_viz.map_key(trace.model.id, st.index, st.context_ids, st.token_id)


def compute(v) -> dict:
    """The tab for the step on screen (`v`: ui.inside.tabs.TabView)."""
    why = why_not(v.trace)
    if why is not None:
        note = ablate_viz.note_html(why)
        return {"ablate_html": note, "ablate_plot": None, "ablate_map_html": note, "ablate_map": None}
    html, fig = switch_off(v.trace, v.s, v.inputs["ablate_layer"], v.inputs["ablate_part"], v.inputs["ablate_head"])
    shown = v.inputs.get("ablate_map_html") or ""
    keep = f"data-key='{_map_key(v.trace, v.s)}'" in shown
    return {"ablate_html": html, "ablate_plot": fig, "ablate_map_html": gr.skip() if keep else ablate_viz.map_hint_html(),
            "ablate_map": gr.skip() if keep else None}


def run_click(trace, step, layer, part, head):
    """`#ablate-run`: the switch-off the fields name, for the step on screen."""
    if trace is None or not trace.steps:
        return gr.skip(), gr.skip()
    why = why_not(trace)
    if why is not None:
        gr.Warning(why)
        return ablate_viz.note_html(why), None
    try:
        return switch_off(trace, clamp_index(step or 0, len(trace.steps)), layer, part, head)
    except SettingsError as e:
        gr.Warning(sentence(e))
        return gr.skip(), gr.skip()


def _map(trace, step, layers):
    """Each head of `layers` (None: every block) switched off in turn: (HTML, map) after every block done."""
    from pipeline.inside import ablate

    if trace is None or not trace.steps:
        yield gr.skip(), gr.skip()
        return
    why = why_not(trace)
    if why is not None:
        gr.Warning(why)
        yield ablate_viz.note_html(why), None
        return
    lm, s = model.same_model(trace), clamp_index(step or 0, len(trace.steps))
    st, key = trace.steps[s], _map_key(trace, s)
    total = lm.info.n_layers if layers is None else len(layers)
    pieces = _pieces(lm, [st.token_id])
    try:
        for hm in ablate.iter_head_map(lm, st.context_ids, st.token_id, layers):
            yield (ablate_viz.head_map_html(hm, pieces, step=st.index, key=key, total=total),
                   ablate_viz.head_map_figure(hm, pieces, step=st.index, every_block=layers is None))
    except SettingsError as e:
        gr.Warning(sentence(e))
        yield gr.skip(), gr.skip()


def map_block_click(trace, step, layer):
    """`#ablate-map-run`: each head of the block in the field switched off in turn."""
    try:
        layers = [_int(layer, "block")]
    except SettingsError as e:
        gr.Warning(sentence(e))
        yield gr.skip(), gr.skip()
        return
    yield from _map(trace, step, layers)


def map_all_click(trace, step):
    """`#ablate-map-all`: each head of every block switched off in turn, the map filled block by block."""
    yield from _map(trace, step, None)

"""The listeners of "Inside the model": the open tab drawn for the step on screen, a lookup in the tab registry
(ui/inside/tabs.py: each tab's compute), and what ui/wiring.py wires from the registry: the open tab's inputs and
outputs, the events that draw it anew, the buttons with listeners of their own (which run the model again)."""
from __future__ import annotations

import inspect
from functools import partial

import gradio as gr

from pipeline.errors import SettingsError
from pipeline.indices import clamp_index
from ui.inside.tabs import ACTIONS, BY_ID, INPUTS, INSIDE, OUTPUTS, PAGE_NAMES, REDRAW, TabView, kv_compare_click, swap_click
from ui.page import Page
from ui.messages import sentence

__all__ = ["INSIDE", "Inside", "kv_compare_click", "swap_click"]


def _with(trigger, options: dict):
    return partial(trigger, **options) if options else trigger


class Inside:
    def __init__(self, p: Page):
        self.p = p
        self.C = p.C

    def component(self, key: str):
        """A name the registry uses, as the page's component: "tab", "trace", "step" (the open tab, the session's
        trace, the step slider) or a key of the page's components."""
        page = {"tab": self.p.tab, "trace": self.p.state, "step": self.C.slider}
        return page[key] if key in page else self.C[key]

    @property
    def inputs(self) -> dict:
        """inside_view's inputs by parameter name (Gradio's inputs_kwargs): the open tab, the trace, the step on
        screen and every tab's inputs (the side-by-side sampler's fields, the seed, the prices)."""
        return {k: self.component(k) for k in (*PAGE_NAMES, *INPUTS)}

    @property
    def outputs(self) -> list:
        """Every component a tab's compute fills."""
        return [self.C[k] for k in OUTPUTS]

    def redraws(self) -> list:
        """The triggers that draw the open tab anew (C.cmp_btn.click, C.price_in.input, ...), in the registry's order."""
        return [getattr(self.C[key], event) for key, event in REDRAW]

    def actions(self) -> list[tuple]:
        """(trigger, listener, inputs by the listener's parameter names, outputs) of each button with a listener of its
        own, in the registry's order; the trigger carries the action's own options (a concurrency group)."""
        return [(_with(getattr(self.C[a.button], a.event), a.options), a.fn, dict(zip(inspect.signature(a.fn).parameters, (self.component(k) for k in a.inputs))),
                 [self.C[k] for k in a.outputs]) for a in ACTIONS]

    def nothing(self) -> dict:
        return {self.C[OUTPUTS[0]]: gr.skip()}  # (an empty dict would read as one missing value)

    def inside_view(self, tab, trace, step, **inputs) -> dict:
        """The open tab of "Inside the model" for the step on screen, as {component: value}: its compute in the
        registry. `inputs`: the page's values of the tabs' inputs, by key (INPUTS: cmp_t0 ... cmp_p2, seed, price_in,
        price_out); each compute gets its own. A tab with no compute, or no tab of that id, draws nothing."""
        t = BY_ID.get(tab) if isinstance(tab, str) else None
        if trace is None or not trace.steps or t is None or t.compute is None:
            return self.nothing()
        view = TabView(trace, clamp_index(step or 0, len(trace.steps)), {k: inputs.get(k) for k in t.inputs})
        try:
            out = t.compute(view)
        except (SettingsError, ValueError, TypeError) as e:
            gr.Warning(sentence(e))
            return self.nothing()
        return {self.C[k]: v for k, v in out.items()} or self.nothing()

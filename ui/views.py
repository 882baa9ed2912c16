"""What several listeners draw alike: the panels of one step, the step slider, the layer and head choices.

`C` is the page's components by name (`Components`, filled by ui/layout.py); the updates are {component: value}.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable

import gradio as gr

from pipeline.indices import clamp_index
from pipeline.trace.records import Trace
from viz import page
from viz.text import t


class Components(SimpleNamespace):
    """The page's components as named attributes (`C.prompt`, `C.slider`); `C[name]` where the name is held in
    a variable (a panel's key from the registry, viz.panels; a link's field)."""

    def __getitem__(self, name: str):
        return getattr(self, name)

    def __setitem__(self, name: str, value) -> None:
        setattr(self, name, value)


@dataclass(frozen=True)
class Call:
    """A listener with its inputs, outputs and options: a named link of the page's event chains
    (`w.inside.after(ev)`: the open "inside the model" tab drawn anew once `ev` is done). `inputs` as a
    dict (parameter name -> component) hands the listener its values by name (Gradio's `inputs_kwargs`)."""
    fn: Callable
    inputs: list | dict
    outputs: object
    options: dict = field(default_factory=dict)

    def _args(self, options: dict) -> dict:
        given = dict(inputs_kwargs=self.inputs) if isinstance(self.inputs, dict) else dict(inputs=self.inputs)
        return {"fn": self.fn, **given, "outputs": self.outputs, **self.options, **options}

    def after(self, ev, **options):
        return ev.then(**self._args(options))

    def on(self, trigger, **options):
        return trigger(**self._args(options))

    def only_if(self, flag, nothing) -> "Call":
        """This call run only when `flag` (a gr.State set by the listener before it) holds True; else `nothing`."""
        fn = self.fn
        if isinstance(self.inputs, dict):
            return Call(lambda only_if_flag, **kw: fn(**kw) if only_if_flag else nothing, {"only_if_flag": flag, **self.inputs},
                        self.outputs, self.options)
        return Call(lambda ok, *a: fn(*a) if ok else nothing, [flag, *self.inputs], self.outputs, self.options)


@dataclass(frozen=True)
class ViewOptions:
    """How a step's panels are drawn: the attention layer and head, and the sampling settings that
    shape the distribution (the values of the page's fields, as Gradio passes them)."""
    layer: object
    head: object
    temperature: object
    top_k: object
    top_p: object
    min_p: object = 0.0
    repetition_penalty: object = None  # None: the trace's own

    @classmethod
    def of(cls, trace: Trace) -> "ViewOptions":
        """A trace as it was made: layer 0, every head, its own sampling settings."""
        s = trace.settings
        return cls(0, "all", s.temperature, s.top_k, s.top_p, s.min_p, s.repetition_penalty)


def unchanged(C: Components) -> dict:
    """An update that changes nothing (Gradio reads an empty dict as one missing value)."""
    return {C.output: gr.skip()}


def panels(C: Components, trace: Trace | None, step, opts: ViewOptions, *, heavy=True, only=None) -> dict:
    """Every panel for one step of a trace (or the `only` ones), as {component: value}."""
    if trace is None:
        return {}
    out = page.render(trace, step=step, layer=opts.layer, head=opts.head, temperature=opts.temperature, top_k=opts.top_k,
                      top_p=opts.top_p, min_p=opts.min_p, repetition_penalty=opts.repetition_penalty, heavy=heavy, only=only)
    return {C[k]: v for k, v in out.items()}


def panels_of_values(C: Components, trace: Trace | None, step, layer, head, temperature, top_k, top_p, min_p=0.0,
                     repetition_penalty=None, *, only=None) -> dict:
    """panels() with the options as separate values (ui/links.py's Deps.view)."""
    return panels(C, trace, step, ViewOptions(layer, head, temperature, top_k, top_p, min_p, repetition_penalty), only=only)


def slider_props(trace: Trace | None, value=None) -> dict:
    """The step slider's range and step for `trace`, on step `value` (None: the last). A Gradio slider needs
    minimum < maximum: with one step or none it shows 0..1, locked."""
    n = len(trace.steps) if trace else 0
    top = max(n - 1, 0)
    return dict(minimum=0, maximum=max(top, 1), value=top if value is None else clamp_index(value, top + 1), step=1, interactive=n > 1)


def slider(trace: Trace | None, value=None, *, keep_value: bool = False):
    """The step slider's update for `trace` (slider_props); `keep_value`: its range only, the step a
    person may just have dragged to is left alone."""
    props = slider_props(trace, value)
    if keep_value:
        del props["value"]
    return gr.Slider(**props)


def layer_head_choices(trace: Trace | None):
    L = trace.model.n_layers if trace else 1
    H = trace.model.n_heads if trace else 1
    return gr.Dropdown(choices=list(range(L))), gr.Dropdown(choices=[(t("choice.head.all"), "all")] + list(range(H)))

"""The page object: every component of the page (made by ui/layout.py, the one file that makes them), grouped by the
region it sits in, each session's gr.State values, and the named input groups the listeners take (ui/wiring.py).

    p = layout(example, status, spec_cost)    # a Page
    p.C.prompt, p.C["top_k"]                   # a component by name (the names the listeners and links use)
    p.sampling.temperature, p.lesson.slider    # the same, by region
    p.view(), p.drawn(), p.run()               # {parameter name: component}: what a listener of that kind takes
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import gradio as gr

from viz import panels
from ui.views import Components


@dataclass(frozen=True)
class Lesson:
    """The first screen's left column: an example, the prompt and its buttons, the text, the step slider and its tools."""
    example: gr.Dropdown
    mode: gr.Radio
    prompt: gr.Textbox
    generate: gr.Button
    step: gr.Button
    stop: gr.Button
    output: gr.HTML
    slider: gr.Slider
    play: gr.Button
    resample: gr.Button
    tour: gr.Button
    colour_by: gr.Radio
    guess: gr.Textbox
    guess_btn: gr.Button
    guess_result: gr.HTML


@dataclass(frozen=True)
class Sampling:
    """Temperature, top-k, top-p, min-p and the repetition penalty: above the distribution they reshape."""
    temperature: gr.Slider
    top_k: gr.Slider
    top_p: gr.Slider
    min_p: gr.Slider
    repetition_penalty: gr.Slider


@dataclass(frozen=True)
class RunSettings:
    """The rest of a run's settings, below the first screen, and the files and links beside them."""
    system: gr.Textbox
    seed: gr.Number
    max_new: gr.Number
    live: gr.Checkbox
    spec_on: gr.Checkbox
    spec_k: gr.Slider
    spec_draft: gr.Dropdown
    download: gr.Button
    download_page: gr.Button
    upload: gr.UploadButton
    copy_link: gr.Button
    link_box: gr.Textbox


@dataclass(frozen=True)
class DrawMany:
    """Draw many (ui/samples.py): how many continuations, how long, the button, the result and the samples it shows."""
    samples_n: gr.Number
    samples_m: gr.Number
    samples_run: gr.Button
    samples_result: gr.HTML
    samples_state: gr.State


@dataclass(frozen=True)
class ClassRoom:
    """A class: the teacher's start button and card (the room itself: the session's `room`, ui/class_room.py)."""
    class_start: gr.Button
    class_info: gr.HTML


def _group(cls, C: Components):
    return cls(**{f.name: C[f.name] for f in fields(cls)})


@dataclass
class Page:
    """The page's components (`C`, by name), its "Inside the model" tabs by id (ui/inside/tabs.py), and each session's
    values: `state` the trace on screen; `branches`, `pending`, `tour_i`, `tab`, `room`: the branches made, a branch
    being run, the tour's stage, the open Inside tab, the class room this page started ({"code", "key"}), whether a tab
    opened is another than the open one."""
    C: Components = field(default_factory=Components)
    tabs: dict = field(default_factory=dict)
    state: gr.State | None = None
    branches: gr.State | None = None
    pending: gr.State | None = None
    tour_i: gr.State | None = None
    tab: gr.State | None = None
    room: gr.State | None = None
    tab_moved: gr.State | None = None

    # -- the regions -----------------------------------------------------------------------------
    @property
    def lesson(self) -> Lesson:
        return _group(Lesson, self.C)

    @property
    def sampling(self) -> Sampling:
        return _group(Sampling, self.C)

    @property
    def settings(self) -> RunSettings:
        return _group(RunSettings, self.C)

    @property
    def draw_many(self) -> DrawMany:
        return _group(DrawMany, self.C)

    @property
    def class_room(self) -> ClassRoom:
        return _group(ClassRoom, self.C)

    @property
    def step_panels(self) -> dict:
        """The step panels by their registry key (viz/panels.py)."""
        return {k: self.C[k] for k in panels.PANEL_KEYS}

    @property
    def bridge(self) -> gr.HTML:
        return self.C.bridge

    # -- the named input groups ------------------------------------------------------------------
    def drawn(self) -> dict:
        """How a trace is drawn: the attention layer and head, the sampling settings."""
        return dict(layer=self.C.layer, head=self.C.head, **vars(self.sampling))

    def view(self) -> dict:
        """The trace on screen, its step, and how it is drawn."""
        return dict(trace=self.state, step=self.C.slider, **self.drawn())

    def run(self) -> dict:
        """What a run reads (ui/generation.py's Generation.stream): the fields, the view, the model line as clicked (a
        click while it said "loading" starts no run) and the trace on screen."""
        C = self.C
        return dict(prompt=C.prompt, system=C.system, mode=C.mode, **vars(self.sampling), seed=C.seed, max_new=C.max_new,
                    layer=C.layer, head=C.head, live=C.live, spec_on=C.spec_on, spec_k=C.spec_k, spec_draft=C.spec_draft,
                    shown=C.info, state=self.state)

"""The page's other listeners: a trace file loaded or downloaded, the page opened, the tour, the
model's status line.

Environment: LLM_VIZ_DOWNLOAD_DIR=DIR holds the folder of trace files made for download (default:
the system's temporary folder); that folder is removed at exit, and each session's own folder in it
as soon as that session's page closes (session_closed, Gradio's unload).
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import gradio as gr  # (at module level: Gradio reads the `gr.Request` annotations against this module's names)

from pipeline.trace import files as trace_io
from pipeline import guess as guessing
from pipeline.errors import SettingsError, TraceFormatError
from pipeline.indices import clamp_index
from pipeline.trace.records import Trace
from viz import guess as guess_viz
from viz import page
from viz import tour as tour_viz
from viz.text import DEFAULT, language, t
from ui import bridge, downloads, layout, links, messages, model, model_match
from ui import viewer_wiring as viewer
from ui.page import Page
from ui.views import ViewOptions, layer_head_choices, panels, slider, unchanged

# a folder of our own (inside LLM_VIZ_DOWNLOAD_DIR when set), removed at exit. Process-wide (docs/state.md): one folder
# per browser session that downloaded, each holding one file, removed when its page closes (session_closed).
DOWNLOADS = Path(tempfile.mkdtemp(prefix="llm-viz-traces-", dir=os.environ.get("LLM_VIZ_DOWNLOAD_DIR") or None))
atexit.register(shutil.rmtree, DOWNLOADS, ignore_errors=True)


class Listeners:
    def __init__(self, p: Page, example: Trace | None):
        self.p, self.C, self.example = p, p.C, example

    def _download(self, button: str, label: str, what: str, trace: Trace | None, request, write):
        """A file made now that someone asked for it, `write(folder)`, into the hidden download button that
        the page's script then clicks; `button` reads "Preparing …" meanwhile."""
        C = self.C
        if not trace or not trace.steps:
            gr.Warning(t("warn.no_download"))
            yield {C.download_file: None}
            return
        yield {C[button]: gr.Button(t("button.preparing", what=what), interactive=False), C.download_file: None}
        folder = downloads.download_folder(DOWNLOADS, getattr(request, "session_hash", None))
        try:
            path = str(write(folder))
        except (OSError, SettingsError) as e:
            gr.Warning(t("error.download_write", what=what, reason=messages.sentence(e)))
            path = None
        yield {C[button]: gr.Button(label, interactive=True), C.download_file: path}

    def download_click(self, trace: Trace | None, request: gr.Request = None):
        """The trace file (the logit lens of every step is computed here, not after every run)."""
        yield from self._download("download", t("button.download"), t("common.trace_file"), trace, request,
                                  lambda folder: downloads.write_download(model.loaded(), trace, folder))

    def download_page_click(self, trace: Trace | None, layer, head, metric, request: gr.Request = None):
        """The trace on screen as one web page that needs nothing else (viz.viewer.page), built from the
        viewer bundle the page holds."""
        yield from self._download("download_page", t("button.download_page"), t("common.web_page"), trace, request,
                                  lambda folder: viewer.web_page(trace, layer, head, metric, folder))

    def load_trace(self, file, request: gr.Request = None):
        """An uploaded trace file onto the page (or a Trace already read: a gallery one, shared by every session)."""
        C = self.C
        if file is None:
            return unchanged(C)
        if isinstance(file, Trace):
            trace = file
        else:
            try:
                trace = trace_io.load(file if isinstance(file, str) else getattr(file, "name", str(file)))  # .json(.gz), /1 or /2
            except (OSError, EOFError, TraceFormatError) as e:
                gr.Warning(t("error.trace_read", error=messages.said(e)))
                return {**unchanged(C), C.ran: False}  # (`ran` False: the load's follow-ups do nothing, ui/wiring.py)
        if not trace.steps:
            gr.Warning(t("error.trace_empty"))
            return {**unchanged(C), C.ran: False}
        L, H = layer_head_choices(trace)
        s = trace.settings
        # a file from disk is not the gallery's (a gallery trace comes here as a Trace, and names itself after)
        from_disk = {} if isinstance(file, Trace) else {C.example: gr.Dropdown(value=None), C.example_look: links.fields_line(trace, "trace")}
        # the fields say how the trace was made (its prompt, mode and settings), as the panels use them
        return {**from_disk, C.ran: True, **{C[k]: v for k, v in links.trace_fields(trace).items()},
            self.p.state: trace, **panels(C, trace, len(trace.steps) - 1, ViewOptions.of(trace)),
            C.slider: slider(trace), C.layer: gr.Dropdown(choices=list(range(trace.model.n_layers)), value=0),
            C.head: gr.Dropdown(choices=[(t("choice.head.all"), "all")] + list(range(trace.model.n_heads)), value="all"),
            C.temperature: s.temperature, C.top_k: s.top_k, C.top_p: s.top_p, C.min_p: s.min_p,
            C.repetition_penalty: s.repetition_penalty, C.seed: s.seed,
            C.info: page.model_markdown(model_match.known_weights(trace.model, model.loaded()), loaded_from_file=True),
            C.download: gr.Button(t("button.download"), interactive=True), C.spec_summary: page.speculative_summary_html(trace),
        }

    def on_load(self):
        """The session's trace: the example (immutable: every session shares the one object). The page opened
        showing it (ui/layout.py's first values; its bundle named in the page's head)."""
        C, t = self.C, self.example
        if t is None:
            return {C.info: model.HOLDER.status}
        # (the page was drawn in English: a visitor speaking another language gets the example's text and chips in it)
        again = {} if language() == DEFAULT else {**{C[k]: v for k, v in layout.first_values(t).items()},
                                                   C.spec_summary: page.speculative_summary_html(t)}
        return {self.p.state: t, C.info: model.HOLDER.status, **again}

    def rate_guess(self, trace, step, guess):
        """A person's guess at the step on screen, rated by the model that made the trace when it is loaded (every
        number exact over the whole vocabulary), otherwise from what the trace kept (pipeline/guess.py)."""
        if trace is None or not trace.steps:
            return guess_viz.refused_html(t("error.guess_no_text"))
        s = clamp_index(step, len(trace.steps))
        try:
            r = guessing.rate(model.same_model(trace), trace, s, guess)
        except guessing.GuessError as e:
            return guess_viz.refused_html(messages.sentence(e))
        return guess_viz.rating_html(r, s, trace.steps[s])

    def tour_show(self, trace, step, i):
        C = self.C
        if trace is None or not trace.steps:
            gr.Warning(t("warn.no_tour"))
            return {C.bridge: bridge.say("tour", target="")}
        s = clamp_index(step, len(trace.steps))
        stages = tour_viz.tour_stages(trace, s)
        if i is not None and int(i) >= len(stages):  # "Finish" on the last stage ends the tour
            return {C.tour_group: gr.Group(visible=False), self.p.tour_i: 0, C.bridge: bridge.say("tour", target="")}
        i = clamp_index(i, len(stages))
        last = i == len(stages) - 1
        return {C.tour_group: gr.Group(visible=True), C.tour_box: tour_viz.tour_html(trace, s, i), self.p.tour_i: i,
                C.bridge: bridge.say("tour", target=stages[i].target), C.tour_next: gr.Button(t("button.tour_finish" if last else "button.tour_next")),
                C.tour_back: gr.Button(interactive=i > 0)}


def session_closed(request: gr.Request = None):
    """A page closed or reloaded (Gradio's unload, once its heartbeat stops): its session's download
    folder goes now rather than at exit, so a day of classes does not fill the Space's disk."""
    downloads.remove_download_folder(DOWNLOADS, getattr(request, "session_hash", None))


def status_tick():  # the model line each second until loading has ended (or failed), then the timer stops
    line, done = model.HOLDER.line_and_done()
    return line, gr.Timer(active=not done)

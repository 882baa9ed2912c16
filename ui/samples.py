"""Draw many: N continuations from the step on screen, one batch (pipeline/samples.py), shown as a tree, the texts and the
first token's frequencies (viz/samples.py); any of them opened as a branch with its full trace (pipeline/forced_run.py).

    panel = SamplesPanel(p)         # p: ui/page.py's Page
    panel.draw(...)                 # Draw (#samples-run): -> {the result's HTML, the samples kept in the session}
    panel.open(...)                 # the page's "sample_open" message {i}: that continuation as a branch, on screen

Both need the loaded model (ModelHolder.get): without it, or for a trace of another model, they say why in the result.
"""
from __future__ import annotations

import html

import gradio as gr

from pipeline.errors import SettingsError
from pipeline.indices import clamp_index
from viz import branches as branches_viz
from viz import samples as samples_viz
from viz.text import t
from ui import messages, model, run_inputs
from ui.page import Page
from ui.views import ViewOptions, panels, slider

# the result's own script: a click on a continuation's "open" button sends the page's "sample_open" message (ui/bridge.py)
OPEN_JS = ("element.addEventListener('click', (e) => { const b = e.target.closest && e.target.closest('.sample-open');"
           " if (b && window.LLMBridge) window.LLMBridge.send('sample_open', { i: Number(b.dataset.i) }); });")


def _why(e: Exception) -> str:
    return f"<div class='samples-result samples-refused' data-n='0'>{html.escape(messages.sentence(e))}</div>"


def _alone_seconds(lm, samples) -> float | None:
    """One continuation alone, the first one's random stream and as many tokens as the longest of the N: measured now,
    for the cost sentence (a decode step of one sequence reads every weight once, as it does for all N)."""
    from pipeline.samples import draw_samples

    m = max((len(x.token_ids) for x in samples.samples), default=0)
    if m < 1 or samples.n < 2:
        return None
    one = draw_samples(lm, samples.prompt_ids, samples.settings, n=1, max_new_tokens=m, prefix=samples.prefix,
                       start_step=samples.start_step, ignore_eos=True)
    return one.seconds


def _model(shown):
    """The loaded model, or SettingsError saying that drawing needs it (the holder's own words name Generate)."""
    try:
        lm = model.HOLDER.get(shown) if model.HOLDER is not None else None
    except model.ModelNotReady:
        lm = None
    if lm is None:
        raise SettingsError(t("samples.no_model"))
    return lm


class SamplesPanel:
    """The listeners of "Draw many" (ui/wiring.py wires them by name)."""

    def __init__(self, p: Page):
        self.p, self.C = p, p.C

    def draw(self, trace, step, temperature, top_k, top_p, min_p, repetition_penalty, seed, n, m, shown):
        """N continuations from the step on screen with the sliders' settings and the seed: the view and the samples kept,
        at once; then the same view with one continuation alone measured for the cost sentence (the class reads the
        continuations meanwhile)."""
        from pipeline.samples import samples_from_trace, validate_counts

        C = self.C
        try:
            n, m = validate_counts(n, m)
            settings = run_inputs.settings_from_inputs("Chat", "", temperature, top_k, top_p, seed, m, min_p=min_p,
                                                       repetition_penalty=repetition_penalty)
            if trace is None or not trace.steps:
                raise SettingsError(t("samples.no_trace"))
            lm = _model(shown)
            s = clamp_index(int(step or 0), len(trace.steps))
            got = samples_from_trace(lm, trace, s, settings, n=n, max_new_tokens=m)
        except SettingsError as e:
            yield {C.samples_result: _why(e), C.samples_state: None}
            return
        yield {C.samples_result: samples_viz.samples_html(got), C.samples_state: got}
        alone = _alone_seconds(lm, got)
        if alone is not None:
            yield {C.samples_result: samples_viz.samples_html(got, alone_seconds=alone)}

    def open(self, samples, trace, branches, layer, head, temperature, top_k, top_p, min_p, repetition_penalty, shown,
             evt: gr.EventData):
        """Continuation `i` of the samples on screen as a branch of the trace it was drawn from, shown with every panel."""
        from pipeline.forced_run import open_sample
        from ui import bridge

        C, p = self.C, self.p
        try:
            if samples is None or trace is None:
                raise SettingsError(t("samples.none_to_open"))
            lm = _model(shown)
            i = int(bridge.data(evt).get("i", -1))
            opened = open_sample(lm, trace, samples, i)
        except (SettingsError, TypeError, ValueError) as e:
            gr.Warning(messages.sentence(e))
            return {C.ran: False}
        same = branches_viz.same_prompt(branches, trace)
        if not any(b.trace is trace for b in same):
            same.append(branches_viz.Branch(branches_viz.branch_label(len(same)), trace, None))
        s = samples.start_step
        same.append(branches_viz.Branch(branches_viz.branch_label(len(same)), opened, s, opened.steps[s].piece,
                                        trace.steps[s].piece if s < len(trace.steps) else ""))
        opts = ViewOptions(layer, head, temperature, top_k, top_p, min_p, repetition_penalty)
        label = same[-1].label
        return {C.ran: True, p.state: opened, **panels(C, opened, len(opened.steps) - 1, opts), C.slider: slider(opened),
                p.branches: same, C.branches_html: branches_viz.branches_html(same, opened),
                C.branch_pick: gr.Radio(choices=[b.label for b in same], value=label)}


__all__ = ["SamplesPanel", "OPEN_JS"]

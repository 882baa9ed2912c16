"""The step slider: a Gradio slider whose value the server takes as it comes.

Gradio checks a slider's value against the maximum the server last sent this session. The page's
step viewer (assets/app_viewer.js) moves the step slider on its own, and a streamed run updates the
slider's range while a stopped run's last update can arrive after another event has already read
the old range; the check would then refuse an in-range step ("Value 8 is greater than maximum
value 2") and the event would never run. The handlers clamp every step to the trace they draw
(pipeline.indices.clamp_index, via viz.page._clamp_step), which is the one truth of how many steps
there are, so this slider passes the number through instead of refusing it.
"""
from __future__ import annotations

import math

import gradio as gr


class StepSlider(gr.Slider):
    is_template = True  # the page draws it with Gradio's own slider (blocks.get_block_name)

    def preprocess(self, payload: float | None) -> int:
        """The step as an int (the minimum when empty or not a number): never refused for the range."""
        try:
            v = float(payload)
        except (TypeError, ValueError):
            return int(self.minimum)
        return int(self.minimum) if not math.isfinite(v) else max(int(self.minimum), int(round(v)))

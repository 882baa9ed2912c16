"""The generated text, optionally with each step's text in its own span, and why it stopped."""
from __future__ import annotations

import html
from typing import Sequence

from pipeline.records import StepRecord

from .style import visible

STOP_WORDS = {
    "eos": "stopped: end-of-sequence token",
    "max_new_tokens": "stopped: reached the maximum number of new tokens",
    "context_limit": "stopped: reached the context limit",
}
_SHADES = ("#e6f0ff", "#fff0d9")


def output_html(steps: Sequence[StepRecord], *, upto: int | None = None, show_boundaries: bool = True,
                stop_reason: str | None = None) -> str:
    """The text of every step, escaped, newlines kept (white-space: pre-wrap), showing steps[0..upto] (None: all).

    show_boundaries: each step's text in a span of alternating colour whose title gives the
    step, token id and probabilities. stop_reason: appended in words when given.

    Every step's text sits in a span with `data-step`, and the text block says how many steps it
    holds (`data-steps`, always the whole trace): a later step's span is drawn `hidden`, and the page's
    step viewer (assets/app_viewer.js) shows another step by hiding and showing spans, whatever step
    this text was drawn at (a trace opened at step 5 still grows to step 7 with the slider)."""
    shown = list(steps)
    parts = []
    for i, s in enumerate(shown):
        if not s.text:
            continue  # end-of-sequence, or bytes held back until a character is complete
        at = " at-step" if i == upto else ""  # the step on screen (Guess first hides it: assets/style.css)
        hide = " hidden" if upto is not None and i > upto else ""
        if show_boundaries:
            title = (f"step {i} · id {s.token_id} · {visible(s.piece)!r} · p={s.chosen_final_prob:.3f} sampled from "
                     f"({s.chosen_prob:.3f} at temperature 1)")
            parts.append(f"<span class='step{at}' data-step='{i}'{hide} style='background:{_SHADES[i % 2]};border-radius:3px' "
                         f"title=\"{html.escape(title)}\">{html.escape(s.text)}</span>")
        else:
            cls = " class='at-step'" if at else ""
            parts.append(f"<span{cls} data-step='{i}'{hide}>{html.escape(s.text)}</span>")
    out = (f"<div class='gen-text' data-steps='{len(shown)}' style='white-space:pre-wrap;word-break:break-word;font-size:16px;"
           f"line-height:1.6'>{''.join(parts)}</div>")
    if stop_reason:
        words = STOP_WORDS.get(stop_reason, f"stopped: {stop_reason}")
        hide = " hidden" if upto is not None and upto < len(shown) - 1 else ""  # (why it stopped: at the last step only)
        out += f"<div class='stop-reason'{hide} style='margin-top:6px;color:#718096;font-size:13.5px'>■ {html.escape(words)}</div>"
    return out

"""The generated text, each step's text in its own span carrying the step's numbers, and why it stopped.

Every span carries what the "Colour by" radio colours the text by, so that the page switches modes in the browser
with no request (assets/colour_by.js holds the scales, the palettes and the legend; the offline page uses the same
spans, attributes and script: viz/viewer/page.py):
  data-step     the step
  data-prob     the token's probability in the distribution it was drawn from (StepRecord.chosen_final_prob)
  data-surprise -log2 of its probability at temperature 1, in bits (from StepRecord.chosen_prob)
  data-entropy  the entropy of the step's distribution at temperature 1, in bits (StepRecord.entropy)
and a title that gives them in words (a hover, or a tap: assets/page_view.js).
"""
from __future__ import annotations

import html
import math
from typing import Sequence

from pipeline.trace.records import StepRecord

from viz.style import visible
from viz.text import decimal, t
from viz.text_lang import lang_attr

STOPS = ("eos", "max_new_tokens", "context_limit")  # the stop reasons the catalogue words (stop.*)


def stop_words(reason: str) -> str:
    """Why a generation stopped, in words: "stopped: end-of-sequence token"."""
    if reason not in STOPS:
        return t("viewer.stopped", reason=reason)
    return t("stop.eos" if reason == "eos" else "stop.max_new_tokens" if reason == "max_new_tokens" else "stop.context_limit")
# the colour modes, in the radio's order (the values the code compares; labels: choice.colour_by.*). "boundaries" is
# the default: each token in one of two alternating shades (data-cb 'a' or 'b', by the step's parity, as
# assets/colour_by.js paints it: the text reads right from its first paint, before the script runs)
MODES = ("boundaries", "prob", "surprise", "entropy", "none")
DEFAULT_MODE = "boundaries"


def surprise_bits(p: float) -> float:
    """-log2 p: how surprising a token of probability p is, in bits (infinite for p = 0)."""
    return -math.log2(p) if p > 0 else math.inf


def _num(x: float) -> str:
    """A number for a data attribute, as the browser's Number() reads it back (7 significant digits)."""
    return "Infinity" if x == math.inf else f"{x:.7g}"


def colour_data(s: StepRecord) -> str:
    """The step's numbers as the span's data attributes (leading space)."""
    return (f" data-prob='{_num(s.chosen_final_prob)}' data-surprise='{_num(surprise_bits(s.chosen_prob))}'"
            f" data-entropy='{_num(s.entropy)}'")


def piece_title(s: StepRecord, i: int) -> str:
    """The span's title: the step, its token and every number the colour modes show."""
    surprise = surprise_bits(s.chosen_prob)
    return t("colour.piece_title", step=i, id=s.token_id, piece=repr(visible(s.piece)), final=decimal(s.chosen_final_prob, 3),
             raw=decimal(s.chosen_prob, 3), surprise="∞" if surprise == math.inf else decimal(surprise, 2), entropy=decimal(s.entropy, 2))


def output_html(steps: Sequence[StepRecord], *, upto: int | None = None, stop_reason: str | None = None) -> str:
    """The text of every step, escaped, newlines kept (white-space: pre-wrap), showing steps[0..upto] (None: all).

    Each step's text sits in a span (class `step`) with its numbers (colour_data) and a title, shaded as token
    boundaries until the page's script colours it by the mode chosen. stop_reason: appended in words when given.

    The text block says how many steps it holds (`data-steps`, always the whole trace): a later step's span is
    drawn `hidden`, and the page's step viewer (assets/app_viewer.js) shows another step by hiding and showing spans,
    whatever step this text was drawn at (a trace opened at step 5 still grows to step 7 with the slider)."""
    shown = list(steps)
    parts = []
    for i, s in enumerate(shown):
        if not s.text:
            continue  # end-of-sequence, or bytes held back until a character is complete
        at = " at-step" if i == upto else ""  # the step on screen (Guess first hides it: assets/style.css)
        hide = " hidden" if upto is not None and i > upto else ""
        parts.append(f"<span class='step{at}' data-step='{i}'{hide}{colour_data(s)} data-cb='{'ab'[i % 2]}' "
                     f"title=\"{html.escape(piece_title(s, i))}\">{html.escape(s.text)}</span>")
    # (its language, when the words tell it: a screen reader's voice for it: viz/text_lang.py)
    out = (f"<div class='gen-text'{lang_attr(''.join(s.text for s in shown))} data-steps='{len(shown)}' data-colour-by='{DEFAULT_MODE}' style='white-space:pre-wrap;"
           f"word-break:break-word;font-size:16px;line-height:1.6'>{''.join(parts)}</div>")
    if stop_reason:
        words = stop_words(stop_reason)
        hide = " hidden" if upto is not None and upto < len(shown) - 1 else ""  # (why it stopped: at the last step only)
        out += f"<div class='stop-reason'{hide} style='margin-top:6px;color:#718096;font-size:13.5px'>■ {html.escape(words)}</div>"
    return out


# where assets/colour_by.js draws the legend of the mode chosen (the scale, what it measures, the number of the token
# hovered or tapped): under the text on the page (ui/layout.py), under the reply on the offline page
LEGEND_HOST = "<div class='cb-host' aria-live='polite'></div>"


def colour_controls_html() -> str:
    """The offline page's "Colour by" radio (the app's is a gr.Radio, ui/layout.py) and the legend's place."""
    label = html.escape(t("label.colour_by"))
    names = {"boundaries": t("choice.colour_by.boundaries"), "prob": t("choice.colour_by.prob"),
             "surprise": t("choice.colour_by.surprise"), "entropy": t("choice.colour_by.entropy"), "none": t("choice.colour_by.none")}
    choices = "".join(f"<label><input type='radio' name='colour-by' value='{m}'{' checked' if m == DEFAULT_MODE else ''}> "
                      f"{html.escape(names[m])}</label>" for m in MODES)
    return (f"<div id='colour-by' class='colour-by' role='radiogroup' aria-label=\"{label}\"><span class='cb-label'>{label}</span>"
            f"{choices}</div>\n<div id='colour-legend'>{LEGEND_HOST}</div>")

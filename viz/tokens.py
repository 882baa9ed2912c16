"""Token chips: the context the model reads (chat template included), and tokenizer comparisons.

Every piece is escaped (html.escape) and has its whitespace made visible.
"""
from __future__ import annotations

import html
from typing import Sequence

from pipeline.trace.records import PromptRecord, StepRecord

from viz import fmt
from viz.char_parts import Part, chip_html, parts
from viz.style import PASTELS, visible
from viz.text import count, decimal, t, t_html

# A chip's look is assets/style.css's (`.tok`, `.tok.gen`, `.tok-id`); only its pastel is its own. (Inline, the look was
# ~270 of a chip's ~460 characters, sent again for every chip with every streamed token: docs/benchmarks.md.)
_ID = "<span class='tok-id'>{id}</span>"
# (it scrolls: a keyboard reaches it, and a screen reader names it)
_WRAP = "<div class='tok-box' tabindex='0' role='region' aria-label='{label}' style='line-height:1.2;max-height:420px;overflow-y:auto'>{chips}</div>"


def _wrap(chips: str) -> str:
    return _WRAP.format(label=html.escape(t("title.card.tokens"), quote=True), chips=chips)


def _chip(piece: list[str | Part], tid: int, pos: int, *, generated: bool, highlight: bool, title: str, n: int | None = 24,
          step: int | None = None, hidden: bool = False, first: int | None = None, now: int | None = None) -> str:
    """piece: its segments (char_parts.parts), so that a character cut across chips reads as its parts
    (first: the chip index of step 0; now: the step on screen; see char_parts.chip_html)."""
    data = (f" data-step='{step}'" if step is not None else "") + (" hidden" if hidden else "")
    return (f"<span class='tok{' gen' if generated else ''}{' hl' if highlight else ''}'{data} style=\"background:{PASTELS[pos % len(PASTELS)]}\" "
            f"title=\"{html.escape(title)}\"><span>{chip_html(piece, n, first_step=first, step=step, now=now)}</span>{_ID.format(id=int(tid))}</span>")


def _ratio(chars: int, toks: int) -> str:
    return decimal(chars / toks, 2) if toks else "–"


def tokens_html(prompt: PromptRecord, steps: Sequence[StepRecord], *, upto: int | None = None, highlight: int | None = None) -> str:
    """The rendered context as chips: prompt tokens (thin border) then generated ones (bold border).

    upto: show the generated tokens of steps[0..upto] inclusive (None: all steps); the later ones are
    there too, `hidden` (assets/style.css), so that the page's step viewer can show any step.
    highlight: the step whose chip is emphasised (None: none).
    A generated chip carries `data-step`: the page's step viewer shows another step by hiding and showing
    chips, moving the `hl` class (styled in assets/style.css) and writing counts_html of that step.
    Each chip shows the readable piece and its id below; its title gives position and id."""
    shown = list(steps) if upto is None else list(steps[: upto + 1])
    counts = f"<div class='tok-counts' style='font-size:13.5px;color:#2d3748;margin-bottom:4px'>{counts_html(prompt, shown)}</div>"
    chips, T0 = [], len(prompt.pieces)
    segs, now = parts(list(prompt.pieces) + [s.piece for s in steps]), len(shown) - 1
    for pos, (tid, piece) in enumerate(zip(prompt.token_ids, prompt.pieces)):
        chips.append(_chip(segs[pos], tid, pos, generated=False, highlight=False,
                           title=t("tokens.chip_prompt", pos=pos, id=tid, piece=repr(visible(piece)))))
    for i, s in enumerate(steps):
        pos = s.position + 1  # the chosen token sits after the query that chose it
        chips.append(_chip(segs[T0 + i], s.token_id, pos, generated=True, highlight=highlight == i, step=i, hidden=i >= len(shown),
                           first=T0, now=now,
                           title=t("tokens.chip_generated", step=i, phase=fmt.phase(s.phase), pos=pos, id=s.token_id,
                                   p=decimal(s.chosen_final_prob, 3), piece=repr(visible(s.piece)))))
    legend = f"<div style='font-size:12px;color:#718096;margin-top:4px'>{t_html('tokens.legend')}</div>"
    return counts + _wrap("".join(chips)) + legend


def counts_html(prompt: PromptRecord, shown: Sequence[StepRecord]) -> str:
    """Characters and tokens of the prompt and of the generated steps `shown`."""
    T0, p_chars, g_chars = len(prompt.token_ids), len(prompt.rendered), sum(len(s.text) for s in shown)
    return (t_html("tokens.counts_prompt", what=f"<b>{t_html('tokens.prompt')}</b>", chars=count(p_chars, "character"),
                   tokens=count(T0, "token"), ratio=_ratio(p_chars, T0)) + " · "
            + t_html("tokens.counts_generated", what=f"<b>{t_html('tokens.generated')}</b>", chars=count(g_chars, "character"),
                     tokens=count(len(shown), "token"), ratio=_ratio(g_chars, len(shown))))


def compare_tokenizers_html(text: str, encodings: Sequence[tuple[str, list[str], list[int]]]) -> str:
    """One row of chips per tokenizer for the same text: (name, pieces, ids) each, with its count."""
    rows = []
    for name, pieces, ids in encodings:
        chips = "".join(
            _chip(p, i, k, generated=False, highlight=False, title=t("tokens.cmp_chip", name=name, k=k, id=i))
            for k, (p, i) in enumerate(zip(parts(pieces), ids))
        )
        rows.append(
            f"<div class='cmp-row' style='margin:6px 0'><div style='font-size:13.5px'>"
            f"{t_html('tokens.cmp_row', name=f'<b>{html.escape(name)}</b>', tokens=count(len(ids), 'token'), ratio=_ratio(len(text), len(ids)))}"
            f"</div>{_wrap(chips)}</div>"
        )
    if not rows:
        rows.append(f"<div style='color:#718096'>{t_html('tokens.cmp_none')}</div>")
    head = f"<div style='font-size:13.5px;color:#2d3748'>{t_html('tokens.cmp_head', chars=count(len(text), 'character'))}</div>"
    return head + "".join(rows)

"""The branches of one prompt side by side: where each forked, which token was forced, and the text
each one went on to write (pure: traces in, HTML out)."""
from __future__ import annotations

import html
from dataclasses import dataclass

from pipeline.trace.records import Trace

from viz.style import html_piece
from viz.text import count, t_html


@dataclass(frozen=True)
class Branch:
    label: str  # "A", "B", ...
    trace: Trace
    fork_step: int | None  # the step whose token was forced; None for the original generation
    forced_piece: str | None = None
    model_piece: str | None = None  # what the model had chosen there, in the trace it branched from


def same_prompt(branches, trace: Trace | None) -> list[Branch]:
    """The branches kept that share `trace`'s prompt and model (the list a new branch of it joins)."""
    return [b for b in (branches or []) if trace is not None and b.trace.prompt.rendered == trace.prompt.rendered
            and b.trace.model.id == trace.model.id]


def branch_label(n: int) -> str:
    """0 -> 'A', 25 -> 'Z', 26 -> 'AA'."""
    s = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        s = chr(65 + r) + s
    return s


def branches_html(branches: list[Branch], current: Trace | None) -> str:
    """One row per branch: its label, its fork, and its text with the forced token marked."""
    if not branches:
        return f"<p class='branch-empty'>{t_html('branches.empty')}</p>"
    rows = []
    for b in branches:
        steps = b.trace.steps
        fork = (t_html("branches.own") if b.fork_step is None else
                t_html("branches.fork", step=b.fork_step, forced=f"<code>{html_piece(b.forced_piece or '')}</code>",
                       model=f"<code>{html_piece(b.model_piece or '')}</code>"))
        # every forced token is marked: a branch of a branch keeps the earlier one's too
        parts = [f"<mark class='forced'>{html.escape(s.text) or html_piece(s.piece)}</mark>" if s.forced else html.escape(s.text)
                 for s in steps]
        on = " branch-current" if current is b.trace else ""
        shown = " · " + t_html("branches.on_screen") if on else ""
        rows.append(f"<div class='branch-row{on}'><div class='branch-head'><b>{html.escape(b.label)}</b> · {fork} · "
                    f"{html.escape(count(len(steps), 'token'))}{shown}</div><div class='branch-text'>{''.join(parts)}</div></div>")
    return "<div class='branches'>" + "".join(rows) + "</div>"

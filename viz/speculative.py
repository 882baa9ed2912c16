"""Speculative decoding, round by round: what the draft proposed and how the target's test went.

Pure: rounds (pipeline.records.RoundRecord) in, HTML out. Every piece is escaped.
"""
from __future__ import annotations

import html
from typing import Sequence

from pipeline.records import DraftInfo, RoundRecord, speculative_summary

from .style import html_piece

# status -> (background, border, words)
STYLE = {
    "accepted": ("#d9f2e3", "#2f9e5b", "accepted"),
    "rejected": ("#fde2e2", "#c0262d", "rejected"),
    "discarded": ("#f1f1f1", "#b8b8b8", "never tested (after a rejection)"),
    "resampled": ("#ffe8cc", "#e07b1a", "drawn from the residual"),
    "bonus": ("#dbe7fb", "#3b6fd8", "bonus from the target"),
}


def _chip(piece: str, status: str, title: str, *, strike: bool = False, words: bool = False) -> str:
    """A token piece (whitespace made visible) or, with `words`, plain words, in the status's colours."""
    bg, border, _ = STYLE[status]
    deco = "text-decoration:line-through;" if strike else ""
    font = "font-family:inherit" if words else "font-family:monospace"
    text = html.escape(piece) if words else html_piece(piece, 24)
    return (f"<span class='spec-chip spec-{status}' title=\"{html.escape(title)}\" style='display:inline-block;margin:2px;"
            f"padding:1px 6px;border-radius:4px;background:{bg};border:2px solid {border};{font};"
            f"font-size:13.5px;{deco}'>{text}</span>")


def _proposal_title(p) -> str:
    test = (f"u = {p.u:.3f} {'<' if p.status == 'accepted' else '≥'} {p.accept_prob:.3f} → {p.status}"
            if p.u is not None else "not tested: an earlier proposal of this round was rejected")
    return (f"{p.piece!r}: draft q = {p.draft_prob:.4f}, target p = {p.target_prob:.4f}; "
            f"accept with probability min(1, p/q) = {p.accept_prob:.3f}; {test}")


def round_html(r: RoundRecord, *, on_screen: bool = False) -> str:
    chips = [_chip(p.piece, p.status, _proposal_title(p), strike=p.status != "accepted") for p in r.proposals]
    if r.residual is not None:
        res = r.residual
        chips.append(_chip(res.piece, "resampled",
                           f"{res.piece!r} drawn from the residual max(0, p − q), normalised: probability {res.prob:.4f} there. "
                           f"The residual's mass {res.mass:.3f} is the chance that a draft proposal at this position is rejected."))
    if r.bonus is not None:
        chips.append(_chip(r.bonus.piece, "bonus",
                           f"{r.bonus.piece!r}: every proposal was accepted, so the target's pass gives one more token "
                           f"(p = {r.bonus.prob:.4f})"))
    rollback = ""
    if r.target_rollback or r.draft_rollback:
        rollback = f" · KV roll-back: target −{r.target_rollback}, draft −{r.draft_rollback} positions"
    meta = (f"{r.n_accepted}/{r.k} accepted → {len(r.token_ids)} token{'s' if len(r.token_ids) != 1 else ''} from "
            f"{r.target_passes} target pass · draft {r.draft_passes} pass{'es' if r.draft_passes != 1 else ''} "
            f"({r.draft_ms:.0f} ms), target {r.target_ms:.0f} ms{rollback}")
    hl = "background:#fff7e0;" if on_screen else ""
    return (f"<div class='spec-round' data-round='{r.index}' style='margin:3px 0;padding:2px 4px;border-radius:4px;{hl}'>"
            f"<span style='display:inline-block;width:5.5em;color:#4a5568;font-size:13px'>round {r.index}</span>"
            f"{''.join(chips)} <span style='color:#718096;font-size:12.5px'>{html.escape(meta)}</span></div>")


def legend_html() -> str:
    return "<div class='spec-legend' style='font-size:13px;margin:4px 0'>" + " ".join(
        _chip(words, status, words, words=True).replace("spec-chip spec-", "spec-chip spec-legend-")
        for status, (_, _, words) in STYLE.items()) + "</div>"


def summary_html(rounds: Sequence[RoundRecord], draft: DraftInfo, k: int, *, speed: dict | None = None) -> str:
    """Acceptance rate, tokens per target pass and, when measured, speed against plain decoding."""
    s = speculative_summary(rounds)
    rate = "–" if s["acceptance_rate"] is None else f"{100 * s['acceptance_rate']:.0f}%"
    tpp = "–" if s["tokens_per_target_pass"] is None else f"{s['tokens_per_target_pass']:.2f}"
    kind = (f"the target's own first {draft.n_layers} layers with its final norm and LM head (weights shared)"
            if draft.kind == "layers" else f"{draft.id}, {draft.n_layers} layers")
    lines = [
        f"Draft: <b>{html.escape(draft.id)}</b>, {html.escape(kind)}, {draft.n_params / 1e6:.1f} M parameters per pass · "
        f"k = {k} proposals per round.",
        f"<b>{s['rounds']}</b> rounds · {s['accepted']} of {s['proposed']} proposals accepted (<b>{rate}</b>) · "
        f"<b>{tpp}</b> tokens per target forward pass (plain decoding: 1) · {s['draft_passes']} draft passes.",
    ]
    if speed:
        ratio = speed["speculative_tok_s"] / speed["plain_tok_s"] if speed["plain_tok_s"] else float("nan")
        lines.append(
            f"Measured on this machine, same prompt and settings: speculative <b>{speed['speculative_tok_s']:.2f}</b> tokens/s, "
            f"plain <b>{speed['plain_tok_s']:.2f}</b> tokens/s → speed-up <b>{ratio:.2f}×</b>.")
        if ratio < 1:
            lines.append(
                "Below 1 here: a speed-up needs the target's pass over k+1 tokens to cost about as much as its pass over one "
                "token (true on a GPU, where decoding waits on memory), and the draft to be much cheaper than the target. On "
                "this CPU the target's pass grows with the tokens it checks, and every rejected proposal is work thrown away.")
    return "<div class='spec-summary' style='font-size:14px;line-height:1.5'>" + "".join(
        f"<p style='margin:2px 0'>{x}</p>" for x in lines) + "</div>"


def rounds_html(rounds: Sequence[RoundRecord], *, step: int | None = None, last: int = 40) -> str:
    """The rounds as rows of chips (the most recent `last`), the round holding `step` shaded."""
    if not rounds:
        return "<p class='spec-empty' style='color:#718096'>No speculative rounds yet: tick “Speculative decoding” and press Generate.</p>"
    shown = list(rounds)[-last:]
    rows = [round_html(r, on_screen=step is not None and r.first_step <= step < r.first_step + len(r.token_ids)) for r in shown]
    more = f"<p style='color:#718096;font-size:12.5px'>{len(rounds) - len(shown)} earlier rounds not shown.</p>" if len(rounds) > len(shown) else ""
    return legend_html() + more + "".join(rows)

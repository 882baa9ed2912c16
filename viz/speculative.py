"""Speculative decoding, round by round: what the draft proposed and how the target's test went;
and the cost curve that says when a draft pays off.

Pure: rounds (pipeline.records.RoundRecord) or a measured CostCurve in, HTML or a Plotly figure
out. Every piece is escaped.
"""
from __future__ import annotations

import html
from typing import Sequence

import plotly.graph_objects as go

from pipeline.records import DraftInfo, RoundRecord, speculative_summary
from pipeline.speculative_cost import CostCurve, break_even_alpha, round_ms

from . import fmt
from .style import GEN_COLOR, MUTED, NEW_COLOR, PROMPT_COLOR, base_layout, html_piece, plot_text, visible

# status -> (background, border, words)
STYLE = {
    "accepted": ("#d9f2e3", "#2f9e5b", "accepted"),
    "rejected": ("#fde2e2", "#c0262d", "rejected"),
    "discarded": ("#f1f1f1", "#b8b8b8", "never tested (the round ended before it)"),
    "resampled": ("#ffe8cc", "#e07b1a", "drawn from the residual"),
    "bonus": ("#dbe7fb", "#3b6fd8", "bonus from the target"),
    "plain": ("#eef0f3", "#718096", "plain step (nothing to propose)"),
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


def _text_at(pieces: Sequence[str] | None, start: int, end: int) -> str | None:
    """The pieces at positions start .. end-1, joined and made visible; None when unknown."""
    if pieces is None or start < 0 or end > len(pieces) or start >= end:
        return None
    return visible("".join(pieces[start:end]))


def _copied_from(p, r: RoundRecord, pieces: Sequence[str] | None) -> str:
    """Where a prompt-lookup proposal was copied from, in words."""
    src = p.source_position
    if src is None:
        return ""
    if src > r.position:  # past the context's end: the lookup repeats its own earlier proposal
        return f"copied from proposal {src - r.position} of this round (the pattern repeats)"
    t = _text_at(pieces, src, src + 1)
    return f"copied from position {src}" + (f" ({t!r})" if t is not None else "")


def _proposal_title(p, r: RoundRecord, pieces: Sequence[str] | None) -> str:
    test = (f"u = {p.u:.3f} {'<' if p.status == 'accepted' else '≥'} {p.accept_prob:.3f} → {p.status}"
            if p.u is not None else "not tested: the round ended before it (a rejection, or an accepted end of text)")
    if p.source_position is not None:  # prompt lookup: q is one-hot, the test is "keep with probability p"
        return (f"{p.piece!r}: {_copied_from(p, r, pieces)}. The lookup is certain (q = 1), so it is kept with probability "
                f"p = {p.target_prob:.4f}, the target's; {test}")
    return (f"{p.piece!r}: draft q = {p.draft_prob:.4f}, target p = {p.target_prob:.4f}; "
            f"accept with probability min(1, p/q) = {p.accept_prob:.3f}; {test}")


def _lookup_words(r: RoundRecord, pieces: Sequence[str] | None) -> str:
    """A lookup round: which n-gram matched where, and what was copied."""
    if r.k == 0 or r.proposals[0].source_position is None:
        return ""
    src, n = r.proposals[0].source_position, r.match_length
    gram = _text_at(pieces, src - n, src)
    copied = _text_at(pieces, src, min(src + r.k, r.position + 1))
    return (f"lookup: the last {fmt.tokens(n)}{f' {gram!r}' if gram is not None else ''} also stand at "
            f"position{'s' if n != 1 else ''} {src - n}{f'–{src - 1}' if n > 1 else ''}; copied from position {src} on"
            + (f" ({copied!r}…)" if copied is not None else ""))


def round_html(r: RoundRecord, *, on_screen: bool = False, pieces: Sequence[str] | None = None) -> str:
    """One round as a row of chips. `pieces`: the whole context's pieces (prompt, then generated), to
    show what a prompt-lookup proposal was copied from."""
    chips = [_chip(p.piece, p.status, _proposal_title(p, r, pieces), strike=p.status != "accepted") for p in r.proposals]
    if r.residual is not None:
        res = r.residual
        chips.append(_chip(res.piece, "resampled",
                           f"{res.piece!r} drawn from the residual max(0, p − q), normalised: probability {res.prob:.4f} there. "
                           f"The residual's mass {res.mass:.3f} is the chance that a draft proposal at this position is rejected."))
    if r.bonus is not None and r.k == 0:
        chips.append(_chip(r.bonus.piece, "plain",
                           f"{r.bonus.piece!r}: the draft had nothing to propose, so this round was a plain decode step: one target "
                           f"pass, the token drawn from p (p = {r.bonus.prob:.4f})"))
    elif r.bonus is not None:
        chips.append(_chip(r.bonus.piece, "bonus",
                           f"{r.bonus.piece!r}: every proposal was accepted, so the target's pass gives one more token "
                           f"(p = {r.bonus.prob:.4f})"))
    rollback = ""
    if r.draft_passes == 0 and r.draft_rollback == 0 and r.target_rollback:  # a lookup keeps no cache of its own
        rollback = f" · KV roll-back: target −{r.target_rollback} positions"
    elif r.target_rollback or r.draft_rollback:
        rollback = f" · KV roll-back: target −{r.target_rollback}, draft −{r.draft_rollback} positions"
    n_tok = len(r.token_ids)
    head = ("nothing proposed → a plain step" if r.k == 0 else f"{r.n_accepted}/{r.k} accepted")
    meta = (f"{head} → {fmt.tokens(n_tok)} from {r.target_passes} target pass of {fmt.tokens(r.target_tokens_fed)} fed · "
            f"draft {r.draft_ms:.1f} ms" + (f" ({fmt.count(r.draft_passes, 'pass', 'passes')})" if r.draft_passes else "")
            + f" + verify {r.target_ms:.0f} ms{rollback}")
    lookup = _lookup_words(r, pieces)
    # the round holding the step on screen: a class (assets/style.css), moved by the page's step viewer
    # from data-first / data-steps with no request
    on = " on-screen" if on_screen else ""
    return (f"<div class='spec-round{on}' data-round='{r.index}' data-first='{r.first_step}' data-steps='{len(r.token_ids)}' "
            f"style='margin:3px 0;padding:2px 4px;border-radius:4px'>"
            f"<span style='display:inline-block;width:5.5em;color:#4a5568;font-size:13px'>round {r.index}</span>"
            f"{''.join(chips)} <span style='color:#718096;font-size:12.5px'>{html.escape(meta)}</span>"
            + (f"<div class='spec-lookup' style='margin-left:5.5em;color:#4a5568;font-size:12.5px'>{html.escape(lookup)}</div>"
               if lookup else "") + "</div>")


def legend_html() -> str:
    return "<div class='spec-legend' style='font-size:13px;margin:4px 0'>" + " ".join(
        _chip(words, status, words, words=True).replace("spec-chip spec-", "spec-chip spec-legend-")
        for status, (_, _, words) in STYLE.items()) + "</div>"


def _draft_words(draft: DraftInfo) -> str:
    if draft.kind == "ngram":
        return "no model: it copies what followed the last tokens' most recent earlier occurrence in the context, 0 parameters per proposal"
    if draft.kind == "layers":
        return (f"the target's own first {draft.n_layers} layers with its final norm and LM head (weights shared), "
                f"{draft.n_params / 1e6:.1f} M parameters per proposal")
    return f"{draft.id}, {draft.n_layers} layers, {draft.n_params / 1e6:.1f} M parameters per proposal"


def summary_html(rounds: Sequence[RoundRecord], draft: DraftInfo, k: int, *, speed: dict | None = None) -> str:
    """Acceptance (the paper's alpha and the share of all proposals), tokens per target pass against
    the paper's expectation, the time split, and, when measured, speed against plain decoding."""
    s = speculative_summary(rounds)
    rate = "–" if s["acceptance_rate"] is None else f"{100 * s['acceptance_rate']:.0f}%"
    share = "–" if s["share_accepted"] is None else f"{100 * s['share_accepted']:.0f}%"
    tpp = "–" if s["tokens_per_target_pass"] is None else f"{s['tokens_per_target_pass']:.2f}"
    exp = "–" if s["expected_tokens_per_target_pass"] is None else f"{s['expected_tokens_per_target_pass']:.2f}"
    plain_steps = (f" · {s['rounds_without_proposals']} of them plain steps (nothing to propose)" if s["rounds_without_proposals"] else "")
    lines = [
        f"Draft: <b>{html.escape(draft.id)}</b>, {html.escape(_draft_words(draft))} · k = {k} proposals per round.",
        f"<b>{s['rounds']}</b> rounds{plain_steps} · acceptance rate α = <b>{rate}</b> ({s['accepted']} accepted of "
        f"{s['tested']} tested proposals, as Leviathan et al. count it) · {share} of all {s['proposed']} proposals "
        f"(a proposal after a rejection is never tested).",
        f"<b>{tpp}</b> tokens per target forward pass, measured (plain decoding: 1) · the paper's (1 − α<sup>k+1</sup>) / (1 − α) "
        f"expects <b>{exp}</b> at this α · {s['draft_passes']} draft passes.",
        f"Time in the rounds: draft {s['draft_ms']:.0f} ms + verify {s['target_ms']:.0f} ms (each pass timed inside the model's "
        f"lock) of {s['ms']:.0f} ms in all.",
    ]
    if draft.kind == "ngram" and s["rounds"] and 2 * s["rounds_without_proposals"] > s["rounds"]:
        lines.append(
            f"{s['rounds_without_proposals']} of {s['rounds']} rounds found no earlier occurrence of the last tokens, so they ran "
            "as plain decode steps: this reply writes new text rather than copying its context, and prompt lookup then runs at "
            "about plain speed (it pays off on replies that repeat, fix or reformat their input).")
    if speed:
        ratio = speed["speculative_tok_s"] / speed["plain_tok_s"] if speed["plain_tok_s"] else float("nan")
        lines.append(
            f"Measured on this machine, same prompt and settings: speculative <b>{speed['speculative_tok_s']:.2f}</b> tokens/s, "
            f"plain <b>{speed['plain_tok_s']:.2f}</b> tokens/s → speed-up <b>{ratio:.2f}×</b>.")
        if ratio < 1 and draft.kind == "ngram":
            lines.append(
                "Below 1 here: this reply did not copy much from its context, so few proposals were accepted, and each "
                "rejected one still made the checking pass a little longer. Prompt lookup pays off on replies that repeat, fix "
                "or reformat their input.")
        elif ratio < 1:
            lines.append(
                f"Below 1 here: every proposal costs a draft pass through {draft.n_params / 1e6:.0f}M parameters (the LM head "
                "included), and a small model's early layers rarely agree with its last one. The cost curve below shows the "
                "acceptance rate this draft would need.")
    return "<div class='spec-summary' style='font-size:14px;line-height:1.5'>" + "".join(
        f"<p style='margin:2px 0'>{x}</p>" for x in lines) + "</div>"


def rounds_html(rounds: Sequence[RoundRecord], *, step: int | None = None, last: int = 40, pieces: Sequence[str] | None = None) -> str:
    """The rounds as rows of chips (the most recent `last`), the round holding `step` shaded.
    `pieces`: the whole context's pieces, to show where prompt-lookup proposals were copied from."""
    if not rounds:
        return "<p class='spec-empty' style='color:#718096'>No speculative rounds yet: tick “Speculative decoding” and press Generate.</p>"
    shown = list(rounds)[-last:]
    on = None if step is None else round_of_step(rounds, step)
    rows = [round_html(r, on_screen=r is on, pieces=pieces) for r in shown]
    more = f"<p style='color:#718096;font-size:12.5px'>{len(rounds) - len(shown)} earlier rounds not shown.</p>" if len(rounds) > len(shown) else ""
    return legend_html() + more + "".join(rows)


def round_of_step(rounds: Sequence[RoundRecord], step: int) -> RoundRecord | None:
    """The round that produced step `step` (a StepRecord.index)."""
    return next((r for r in rounds if r.first_step <= step < r.first_step + len(r.token_ids)), None)



# ---------------------------------------------------------------------------------------
# The cost curve


LOOKUP_COLOR = "#2f9e5b"
DRAFT_COLORS = (GEN_COLOR, NEW_COLOR, "#805ad5", "#975a16", "#2b6cb0")  # model and layer drafts, in turn
NEVER = 1.06  # where "never pays off" sits on the break-even axis


def _colors(curve: CostCurve) -> dict[str, str]:
    others = iter(DRAFT_COLORS * 4)
    return {d.spec: LOOKUP_COLOR if d.kind == "ngram" else next(others) for d in curve.drafts}


def cost_curve_figure(curve: CostCurve, *, ks: Sequence[int] | None = None) -> go.Figure:
    """Left: the measured target pass by tokens fed, the cost of a round with each draft (k
    proposals + a pass of k + 1 tokens), and plain decoding's cost for as many tokens. Right: the
    acceptance rate each draft needs to break even, by k."""
    ks = list(ks) if ks is not None else list(range(1, curve.max_k + 1))
    n = list(curve.tokens)
    t1 = curve.pass_ms(1)
    colors = _colors(curve)
    free = [d.spec for d in curve.drafts if d.ms_per_proposal < 0.01 * t1]  # a round costs the pass alone
    traces = [
        go.Scatter(x=n, y=[t1 * x for x in n], mode="lines", name="plain decoding: n passes of 1 token",
                   line=dict(color=MUTED, width=2, dash="dot"), hovertemplate="%{x} tokens by plain decoding: %{y:.0f} ms<extra>formula</extra>"),
        go.Scatter(x=n, y=list(curve.target_ms), mode="lines+markers",
                   name="one target pass fed n tokens (measured)" + (f" = a round with {', '.join(free)}" if free else ""),
                   line=dict(color=PROMPT_COLOR, width=3), marker=dict(size=7),
                   hovertemplate="one pass fed %{x} tokens: %{y:.1f} ms<extra>measured</extra>"),
    ]
    for d in curve.drafts:
        if d.spec in free:
            continue
        color = colors[d.spec]
        traces.append(go.Scatter(
            x=n, y=[round_ms(curve, d.ms_per_proposal, x - 1) for x in n], mode="lines", name=f"round with {d.spec}: k proposals + pass",
            line=dict(color=color, width=2, dash="dash"), legendgroup=d.spec,
            hovertemplate=f"{plot_text(d.spec)}, k = %{{customdata}}: %{{y:.0f}} ms per round<extra>formula</extra>",
            customdata=[x - 1 for x in n]))
    for d in curve.drafts:
        color = colors[d.spec]
        be = [break_even_alpha(curve, d.spec, k) for k in ks]
        traces.append(go.Scatter(
            x=ks, y=[NEVER if a is None else a for a in be], mode="lines+markers", name=f"{d.spec}: break-even α",
            xaxis="x2", yaxis="y2", line=dict(color=color, width=2), legendgroup=d.spec, showlegend=d.spec in free,
            marker=dict(size=8, symbol=["x" if a is None else "circle" for a in be]),
            customdata=["never: slower even if every proposal is accepted" if a is None else f"α ≥ {a:.2f} pays off" for a in be],
            hovertemplate=f"{plot_text(d.spec)}, k = %{{x}}: %{{customdata}}<extra></extra>"))
    sub = dict(xref="paper", yref="paper", y=1.0, yanchor="bottom", showarrow=False, font=dict(size=13))
    annotations = [dict(sub, x=0.22, xanchor="center", text="Cost: one round against plain decoding"),
                   dict(sub, x=0.78, xanchor="center", text="Acceptance rate needed to break even")]
    k4 = 4 if 4 in ks else ks[-1]
    words = why_words(curve, k=k4)
    ymax = max(max(t1 * x for x in n), max(round_ms(curve, d.ms_per_proposal, max(n) - 1) for d in curve.drafts))
    layout = base_layout(
        f"When speculative decoding pays off on this machine ({plot_text(curve.machine)}, {curve.date})", height=470,
        margin=dict(l=70, r=20, t=80, b=150), annotations=annotations, legend=dict(orientation="h", x=0, y=-0.2, font=dict(size=12)),
        xaxis=dict(domain=[0.0, 0.44], title=dict(text="tokens fed to the target's pass (k + 1)"), dtick=1, anchor="y"),
        yaxis=dict(range=[0, ymax * 1.05], title=dict(text="milliseconds"), anchor="x"),
        xaxis2=dict(domain=[0.56, 1.0], title=dict(text="k: proposals per round"), dtick=1, anchor="y2"),
        yaxis2=dict(range=[0, 1.12], title=dict(text="break-even acceptance rate α"), anchor="x2",
                    tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1.0, NEVER], ticktext=["0", "0.2", "0.4", "0.6", "0.8", "1", "never"]),
        meta=dict(why=words, context=curve.context),
    )
    return go.Figure(data=traces, layout=layout)


def why_words(curve: CostCurve, *, k: int = 4) -> str:
    """Why the lookup wins and a layer draft loses here, with the curve's own numbers."""
    t1, tk = curve.pass_ms(1), curve.pass_ms(k + 1)
    parts = [f"On this machine one target pass fed {k + 1} tokens costs {tk:.0f} ms, {tk / t1:.2f}× a pass fed 1 token "
             f"({t1:.0f} ms): decoding reads every weight whether it checks one token or {k + 1}, so checking is cheap."]
    for d in curve.drafts:
        a = break_even_alpha(curve, d.spec, k)
        need = "never pays off, even if every proposal is accepted" if a is None else f"pays off from α = {a:.2f}"
        parts.append(f"{d.spec} costs {d.ms_per_proposal:.2f} ms a proposal ({d.ms_per_proposal / t1:.2f} of a target pass): at "
                     f"k = {k} it {need}.")
    parts.append("Prompt lookup costs nothing, so any acceptance it gets is profit; a layer draft runs most of the model and "
                 "its LM head per proposal, and a 135M model's early layers rarely agree with its last one.")
    return " ".join(parts)


def cost_curve_html(curve: CostCurve, *, k: int = 4) -> str:
    return (f"<div class='spec-cost' style='font-size:13.5px;line-height:1.5;color:#2d3748'>{html.escape(why_words(curve, k=k))} "
            f"<span style='color:#718096'>Measured with <code>python -m pipeline bench --cost-curve</code>: {curve.context} positions "
            f"cached, median of {curve.repeats} alternating repeats, {curve.threads} torch threads.</span></div>")

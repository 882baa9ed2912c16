"""Speculative decoding, round by round: what the draft proposed and how the target's test went;
and the cost curve that says when a draft pays off.

Pure: rounds (pipeline.trace.records.RoundRecord) or a measured CostCurve in, HTML or a Plotly figure
out, in the catalogue's words (speculative.*: locales/en.json, viz.text). Every piece is escaped.
"""
from __future__ import annotations

import html
from typing import Sequence

import plotly.graph_objects as go

from pipeline.trace.records import DraftInfo, RoundRecord, speculative_summary
from pipeline.speculative.cost import CostCurve, break_even_alpha, round_ms

from viz import fmt
from viz.style import GEN_COLOR, MUTED, NEW_COLOR, PROMPT_COLOR, base_layout, html_piece, plot_lines, plot_text, visible
from viz.text import count, decimal, pct, t, t_html, thousands

# status -> (background, border, its words: made when the legend is drawn, in the language spoken)
STYLE = {
    "accepted": ("#d9f2e3", "#2f9e5b", lambda: t("speculative.status.accepted")),
    "rejected": ("#fde2e2", "#c0262d", lambda: t("speculative.status.rejected")),
    "discarded": ("#f1f1f1", "#b8b8b8", lambda: t("speculative.status.discarded")),
    "resampled": ("#ffe8cc", "#e07b1a", lambda: t("speculative.status.resampled")),
    "bonus": ("#dbe7fb", "#3b6fd8", lambda: t("speculative.status.bonus")),
    "plain": ("#eef0f3", "#718096", lambda: t("speculative.status.plain")),
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
        return t("speculative.copied_from_proposal", n=src - r.position)
    piece = _text_at(pieces, src, src + 1)
    return t("speculative.copied_from", position=src) + (f" ({piece!r})" if piece is not None else "")


def _proposal_title(p, r: RoundRecord, pieces: Sequence[str] | None) -> str:
    outcome = t("speculative.status.accepted") if p.status == "accepted" else t("speculative.status.rejected")
    test = (f"u = {decimal(p.u, 3)} {'<' if p.status == 'accepted' else '≥'} {decimal(p.accept_prob, 3)} → {outcome}"
            if p.u is not None else t("speculative.not_tested"))
    if p.source_position is not None:  # prompt lookup: q is one-hot, the test is "keep with probability p"
        return t("speculative.title_lookup", piece=repr(p.piece), copied=_copied_from(p, r, pieces), p=decimal(p.target_prob, 4),
                 test=test)
    return t("speculative.title_draft", piece=repr(p.piece), q=decimal(p.draft_prob, 4), p=decimal(p.target_prob, 4),
             a=decimal(p.accept_prob, 3), test=test)


def _lookup_words(r: RoundRecord, pieces: Sequence[str] | None) -> str:
    """A lookup round: which n-gram matched where, and what was copied."""
    if r.k == 0 or r.proposals[0].source_position is None:
        return ""
    src, n = r.proposals[0].source_position, r.match_length
    gram = _text_at(pieces, src - n, src)
    copied = _text_at(pieces, src, min(src + r.k, r.position + 1))
    where = t("speculative.at_positions", first=src - n, last=src - 1) if n > 1 else t("speculative.at_position", position=src - n)
    return (t("speculative.lookup", tokens=fmt.tokens(n) + (f" {gram!r}" if gram is not None else ""), where=where, position=src)
            + (f" ({copied!r}…)" if copied is not None else ""))


def round_html(r: RoundRecord, *, on_screen: bool = False, pieces: Sequence[str] | None = None) -> str:
    """One round as a row of chips. `pieces`: the whole context's pieces (prompt, then generated), to
    show what a prompt-lookup proposal was copied from."""
    chips = [_chip(p.piece, p.status, _proposal_title(p, r, pieces), strike=p.status != "accepted") for p in r.proposals]
    if r.residual is not None:
        res = r.residual
        chips.append(_chip(res.piece, "resampled", t("speculative.title_residual", piece=repr(res.piece), prob=decimal(res.prob, 4),
                                                      mass=decimal(res.mass, 3))))
    if r.bonus is not None and r.k == 0:
        chips.append(_chip(r.bonus.piece, "plain", t("speculative.title_plain", piece=repr(r.bonus.piece), p=decimal(r.bonus.prob, 4))))
    elif r.bonus is not None:
        chips.append(_chip(r.bonus.piece, "bonus", t("speculative.title_bonus", piece=repr(r.bonus.piece), p=decimal(r.bonus.prob, 4))))
    rollback = ""
    if r.draft_passes == 0 and r.draft_rollback == 0 and r.target_rollback:  # a lookup keeps no cache of its own
        rollback = " · " + t("speculative.rollback_target", target=r.target_rollback)
    elif r.target_rollback or r.draft_rollback:
        rollback = " · " + t("speculative.rollback", target=r.target_rollback, draft=r.draft_rollback)
    n_tok = len(r.token_ids)
    head = t("speculative.head_plain") if r.k == 0 else t("speculative.head", accepted=r.n_accepted, k=r.k)
    ms = dict(draft=decimal(r.draft_ms, 1), verify=decimal(r.target_ms, 0))
    time = (t("speculative.time_passes", passes=count(r.draft_passes, "pass"), **ms) if r.draft_passes else t("speculative.time", **ms))
    meta = (t("speculative.meta", head=head, tokens=fmt.tokens(n_tok), passes=r.target_passes, fed=fmt.tokens(r.target_tokens_fed))
            + f" · {time}{rollback}")
    lookup = _lookup_words(r, pieces)
    # the round holding the step on screen: a class (assets/style.css), moved by the page's step viewer
    # from data-first / data-steps with no request
    on = " on-screen" if on_screen else ""
    return (f"<div class='spec-round{on}' data-round='{r.index}' data-first='{r.first_step}' data-steps='{len(r.token_ids)}' "
            f"style='margin:3px 0;padding:2px 4px;border-radius:4px'>"
            f"<span style='display:inline-block;width:5.5em;color:#4a5568;font-size:13px'>{t_html('speculative.round', n=r.index)}</span>"
            f"{''.join(chips)} <span style='color:#718096;font-size:12.5px'>{html.escape(meta)}</span>"
            + (f"<div class='spec-lookup' style='margin-left:5.5em;color:#4a5568;font-size:12.5px'>{html.escape(lookup)}</div>"
               if lookup else "") + "</div>")


def legend_html() -> str:
    return "<div class='spec-legend' style='font-size:13px;margin:4px 0'>" + " ".join(
        _chip(words(), status, words(), words=True).replace("spec-chip spec-", "spec-chip spec-legend-")
        for status, (_, _, words) in STYLE.items()) + "</div>"


def _draft_words(draft: DraftInfo) -> str:
    if draft.kind == "ngram":
        return t("speculative.draft_ngram")
    if draft.kind == "layers":
        return t("speculative.draft_layers", layers=draft.n_layers, params=decimal(draft.n_params / 1e6, 1))
    return t("speculative.draft_model", layers=draft.n_layers, params=decimal(draft.n_params / 1e6, 1))


def _draft_name(draft: DraftInfo) -> str:
    """The draft as the Draft box names it (ngram, layers:N): the pipeline's own id of these is English; a model's
    id is its name."""
    return draft.spec if draft.kind in ("ngram", "layers") else draft.id


def summary_html(rounds: Sequence[RoundRecord], draft: DraftInfo, k: int, *, speed: dict | None = None) -> str:
    """Acceptance (the paper's alpha and the share of all proposals), tokens per target pass against
    the paper's expectation, the time split, and, when measured, speed against plain decoding."""
    s = speculative_summary(rounds)
    rate = "–" if s["acceptance_rate"] is None else pct(s["acceptance_rate"], 0)
    share = "–" if s["share_accepted"] is None else pct(s["share_accepted"], 0)
    tpp = "–" if s["tokens_per_target_pass"] is None else decimal(s["tokens_per_target_pass"], 2)
    exp = "–" if s["expected_tokens_per_target_pass"] is None else decimal(s["expected_tokens_per_target_pass"], 2)
    rounds = f"<b>{html.escape(count(s['rounds'], 'round'))}</b>"
    if s["rounds_without_proposals"]:
        rounds += " · " + t_html("speculative.rounds_plain", n=s["rounds_without_proposals"])
    formula = "(1 − α<sup>k+1</sup>) / (1 − α)"
    lines = [
        t_html("speculative.draft", draft=f"<b>{html.escape(_draft_name(draft))}</b>", words=html.escape(_draft_words(draft)), k=k),
        " · ".join((rounds, t_html("speculative.acceptance", rate=f"<b>{rate}</b>", accepted=s["accepted"], tested=s["tested"]),
                    t_html("speculative.share", share=share, proposed=s["proposed"]))),
        " · ".join((t_html("speculative.per_pass", n=f"<b>{tpp}</b>"), t_html("speculative.expected", formula=formula, n=f"<b>{exp}</b>"),
                    t_html("speculative.draft_passes", n=s["draft_passes"]))),
        t_html("speculative.time_rounds", draft=decimal(s["draft_ms"], 0), verify=decimal(s["target_ms"], 0), total=decimal(s["ms"], 0)),
    ]
    if draft.kind == "ngram" and s["rounds"] and 2 * s["rounds_without_proposals"] > s["rounds"]:
        lines.append(t_html("speculative.lookup_plain", n=s["rounds_without_proposals"], rounds=s["rounds"]))
    if speed:
        ratio = speed["speculative_tok_s"] / speed["plain_tok_s"] if speed["plain_tok_s"] else float("nan")
        lines.append(t_html("speculative.speed", speculative=f"<b>{decimal(speed['speculative_tok_s'], 2)}</b>",
                            plain=f"<b>{decimal(speed['plain_tok_s'], 2)}</b>", ratio=f"<b>{decimal(ratio, 2)}×</b>"))
        if ratio < 1 and draft.kind == "ngram":
            lines.append(t_html("speculative.slower_lookup"))
        elif ratio < 1:
            lines.append(t_html("speculative.slower_layers", params=decimal(draft.n_params / 1e6, 0)))
    return "<div class='spec-summary' style='font-size:14px;line-height:1.5'>" + "".join(
        f"<p style='margin:2px 0'>{x}</p>" for x in lines) + "</div>"


def switch_words() -> dict[str, str]:
    """{box, button}: the page's names of the setting that turns speculative decoding on and of the Generate button,
    quoted and escaped, for a sentence that says how to get rounds."""
    return dict(box=html.escape(t("common.quote", text=t("label.speculative_settings"))),
                button=html.escape(t("common.quote", text=t("button.generate"))))


def rounds_html(rounds: Sequence[RoundRecord], *, step: int | None = None, last: int = 40, pieces: Sequence[str] | None = None) -> str:
    """The rounds as rows of chips (the most recent `last`), the round holding `step` shaded.
    `pieces`: the whole context's pieces, to show where prompt-lookup proposals were copied from."""
    if not rounds:
        return f"<p class='spec-empty' style='color:#718096'>{t_html('speculative.empty', **switch_words())}</p>"
    shown = list(rounds)[-last:]
    on = None if step is None else round_of_step(rounds, step)
    rows = [round_html(r, on_screen=r is on, pieces=pieces) for r in shown]
    more = (f"<p style='color:#718096;font-size:12.5px'>{t_html('speculative.more', rounds=count(len(rounds) - len(shown), 'round'))}</p>"
            if len(rounds) > len(shown) else "")
    return legend_html() + more + "".join(rows)


def round_of_step(rounds: Sequence[RoundRecord], step: int) -> RoundRecord | None:
    """The round that produced step `step` (a StepRecord.index)."""
    return next((r for r in rounds if r.first_step <= step < r.first_step + len(r.token_ids)), None)



# ---------------------------------------------------------------------------------------
# The cost curve


LOOKUP_COLOR = "#2f9e5b"
DRAFT_COLORS = (GEN_COLOR, NEW_COLOR, "#805ad5", "#975a16", "#2b6cb0")  # model and layer drafts, in turn
NEVER = 1.06  # where "never pays off" sits on the break-even axis
COST_COMMAND = "<code>python -m pipeline bench --cost-curve</code>"  # what measures the curve (a command: no words to translate)


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
    formula, measured = html.escape(t("kv.formula")), html.escape(t("kv.measured"))
    traces = [
        go.Scatter(x=n, y=[t1 * x for x in n], mode="lines", name=t("speculative.curve_plain"),
                   line=dict(color=MUTED, width=2, dash="dot"),
                   hovertemplate=t_html("speculative.hover_plain", x="%{x}", ms="%{y:.0f}") + f"<extra>{formula}</extra>"),
        go.Scatter(x=n, y=list(curve.target_ms), mode="lines+markers",
                   name=plot_lines(t("speculative.curve_pass_free", drafts=", ".join(free)) if free else t("speculative.curve_pass"), 40),
                   line=dict(color=PROMPT_COLOR, width=3), marker=dict(size=7),
                   hovertemplate=t_html("speculative.hover_pass", x="%{x}", ms="%{y:.1f}") + f"<extra>{measured}</extra>"),
    ]
    for d in curve.drafts:
        if d.spec in free:
            continue
        color = colors[d.spec]
        traces.append(go.Scatter(
            x=n, y=[round_ms(curve, d.ms_per_proposal, x - 1) for x in n], mode="lines", name=t("speculative.curve_round", draft=d.spec),
            line=dict(color=color, width=2, dash="dash"), legendgroup=d.spec,
            hovertemplate=t_html("speculative.hover_round", draft=plot_text(d.spec), k="%{customdata}", ms="%{y:.0f}")
            + f"<extra>{formula}</extra>",
            customdata=[x - 1 for x in n]))
    for d in curve.drafts:
        color = colors[d.spec]
        be = [break_even_alpha(curve, d.spec, k) for k in ks]
        traces.append(go.Scatter(
            x=ks, y=[NEVER if a is None else a for a in be], mode="lines+markers", name=t("speculative.curve_break_even", draft=d.spec),
            xaxis="x2", yaxis="y2", line=dict(color=color, width=2), legendgroup=d.spec, showlegend=d.spec in free,
            marker=dict(size=8, symbol=["x" if a is None else "circle" for a in be]),
            customdata=[html.escape(t("speculative.never_hover") if a is None else t("speculative.pays_from", alpha=decimal(a, 2)))
                        for a in be],
            hovertemplate=f"{plot_text(d.spec)}, k = %{{x}}: %{{customdata}}<extra></extra>"))
    sub = dict(xref="paper", yref="paper", y=1.0, yanchor="bottom", showarrow=False, font=dict(size=13))
    # (each panel's words in short lines: half a phone's width is 150 px, and Plotly wraps none of them)
    annotations = [dict(sub, x=0.22, xanchor="center", text=plot_lines(t("speculative.cost_title"), 18)),
                   dict(sub, x=0.78, xanchor="center", text=plot_lines(t("speculative.break_even_title"), 18))]
    k4 = 4 if 4 in ks else ks[-1]
    words = why_words(curve, k=k4)
    ymax = max(max(t1 * x for x in n), max(round_ms(curve, d.ms_per_proposal, max(n) - 1) for d in curve.drafts))
    layout = base_layout(
        t_html("speculative.curve_title", machine=plot_text(curve.machine), date=html.escape(str(curve.date))), height=470,
        margin=dict(l=70, r=20, t=80, b=150), annotations=annotations, legend=dict(orientation="h", x=0, y=-0.2, font=dict(size=12)),
        xaxis=dict(domain=[0.0, 0.44], title=dict(text=plot_lines(t("speculative.axis_fed"), 24)), dtick=1, anchor="y"),
        yaxis=dict(range=[0, ymax * 1.05], title=dict(text=t_html("kv.milliseconds")), anchor="x"),
        xaxis2=dict(domain=[0.56, 1.0], title=dict(text=plot_lines(t("speculative.axis_k"), 24)), dtick=1, anchor="y2"),
        yaxis2=dict(range=[0, 1.12], title=dict(text=plot_lines(t("speculative.axis_break_even"), 24)), anchor="x2",
                    tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1.0, NEVER],
                    ticktext=["0", *(decimal(v, 1) for v in (0.2, 0.4, 0.6, 0.8)), "1", t_html("speculative.never")]),
        meta=dict(why=words, context=curve.context),
    )
    return go.Figure(data=traces, layout=layout)


def why_words(curve: CostCurve, *, k: int = 4) -> str:
    """Why the lookup wins and a layer draft loses here, with the curve's own numbers."""
    t1, tk = curve.pass_ms(1), curve.pass_ms(k + 1)
    parts = [t("speculative.why_pass", n=k + 1, ms=decimal(tk, 0), ratio=decimal(tk / t1, 2), one=decimal(t1, 0))]
    for d in curve.drafts:
        a = break_even_alpha(curve, d.spec, k)
        cost = dict(draft=d.spec, ms=decimal(d.ms_per_proposal, 2), share=decimal(d.ms_per_proposal / t1, 2), k=k)
        parts.append(t("speculative.why_never", **cost) if a is None else t("speculative.why_pays", alpha=decimal(a, 2), **cost))
    parts.append(t("speculative.why_lookup"))
    return " ".join(parts)


def cost_curve_html(curve: CostCurve, *, k: int = 4) -> str:
    return (f"<div class='spec-cost' style='font-size:13.5px;line-height:1.5;color:#2d3748'>{html.escape(why_words(curve, k=k))} "
            f"<span style='color:#718096'>{t_html('speculative.measured_with', command=COST_COMMAND, context=thousands(curve.context), repeats=curve.repeats, threads=curve.threads)}</span></div>")

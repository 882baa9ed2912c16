"""The next-token distribution of one step, reshaped by sampling settings (repetition penalty, temperature,
top-k, top-p, min-p, in transformers' order) with the very code that sampled it (pipeline.sampling). The
figure names the chain of stages in that order, what each kept and the probability it removed, and its
layout.meta the five settings (assets/viewer_frames.js writes the same in the browser).

Exact when the settings are the step's own (the recorded numbers) or when the step holds its
full-vocabulary logits. A step saved without them holds a summary of the rest of the vocabulary
(pipeline.sampling.rest): within 1e-3 at every slider position, and a count of tokens it can only estimate
is written with "≈". An older step without that summary gets the range its numbers must lie in
(pipeline.sampling.rest_bounds), written beside each number ("?" where it cannot be bounded); without even
the vocabulary's size, or with a repetition penalty, the top N candidates alone (said to be approximate).
"""
from __future__ import annotations

import html
from dataclasses import dataclass, replace

import numpy as np
import plotly.graph_objects as go

from pipeline.sampling import rest
from pipeline.sampling import rest_bounds
from pipeline.sampling import stages as sampling
from pipeline.trace.records import Settings, StepRecord

from viz import fmt
from viz.style import GEN_COLOR, MUTED, MUTED_TEXT, NEW_COLOR, PROMPT_COLOR, base_layout, plot_piece
from viz.text import decimal, number_marks, pct, t, t_html, template, thousands

# the title (position, entropies, up to four stage lines: repetition penalty, top-k, top-p, min-p) and the legend above
# the bars: the same for any settings, so moving a sampling slider in the page never moves the bars
TOP_MARGIN = 211
# the words are the catalogue's (dist.*, stage.*: locales/en.json); assets/viewer_frames.js writes the stages' lines
# from it too, and fills this title's {step} and {position} (viz.panels.dist_style ships it); both in the language
# spoken (viz.text.speaking)
def title_template() -> str:
    return f"{template('dist.title')}<br><span style='font-size:13px'>{template('dist.position')}</span>"


def removed_hover() -> str:
    """A candidate's hover when the sampling settings removed it (viz.panels.dist_style ships it to
    assets/viewer_frames.js)."""
    return "<br>" + t_html("dist.removed", removed=f"<b>{html.escape(t('dist.removed_word'))}</b>")


def short_number(x: float) -> str:
    """A setting's value as f"{x:g}" writes it (0.9, 1.1, 50), with the language's decimal mark (French 0,9)."""
    return f"{float(x):g}".replace(".", number_marks()[1])


SUBTITLE = "<br><span style='font-size:13px'>{}</span>"  # a title's second lines (plotly's <sup> is 10 px: unreadable)


@dataclass(frozen=True)
class Reshaped:
    """A step's candidates under some sampling settings. Arrays are (N,), in the step's top order
    (by raw logit, descending)."""

    raw_probs: np.ndarray  # temperature 1, full vocabulary (the step's top_probs)
    final_probs: np.ndarray  # in the distribution that would be sampled from
    kept: np.ndarray  # bool: survives every stage
    stage_names: tuple[str, ...]
    stage_params: tuple[float, ...]
    stage_kept: tuple[int, ...]  # tokens surviving each stage (over the vocabulary, or the top N if not exact)
    stage_mass: tuple[float, ...]  # mass of those tokens in the distribution entering the stage
    n_kept: int  # tokens that can be sampled (last stage's kept)
    cutoff: int  # candidates (in top order) up to and including the last kept one
    final_entropy: float  # bits
    exact: bool  # the model's own numbers (recorded, or from the full logits or the rest's exact sums)
    source: str  # "recorded" | "logits" | "rest" | "range" | "top-N"
    stage_estimated: tuple[bool, ...] = ()  # the stage's kept count is the rest's histogram's estimate ("≈")
    entropy_estimated: bool = False
    # "range" (a step without the rest's summary): each number's range (final_probs is the middle of each bar's)
    finals: tuple[np.ndarray, np.ndarray] | None = None
    stage_kept_range: tuple[tuple[int, int], ...] = ()
    stage_mass_range: tuple[tuple[float, float], ...] = ()
    entropy_range: tuple[float, float] | None = None
    entropy_known: bool = True  # False: a range step whose entropy cannot be bounded ("?")


def recorded_settings(step: StepRecord) -> list[tuple[str, float]]:
    return [(s.name, float(s.param)) for s in step.stages]


def _same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    return len(a) == len(b) and all(x[0] == y[0] and np.isclose(x[1], y[1], rtol=1e-6, atol=1e-9) for x, y in zip(a, b))


def reshape(step: StepRecord, *, temperature: float, top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0,
            repetition_penalty: float = 1.0, use_recorded: bool = True, vocab_size: int | None = None) -> Reshaped:
    """Final sampling probabilities of the step's candidates under these settings.

    Order of sources: the step's recorded numbers when the settings are its own (and
    use_recorded); a recomputation from step.logits (full vocabulary, exact); from step.rest (the
    rest of the vocabulary summarised: within 1e-3); the ranges of pipeline.sampling.rest_bounds (needs
    `vocab_size`, no repetition penalty); else a recomputation over the top N logits only (exact=False).
    Raises SettingsError for bad settings."""
    what_if = Settings(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p, repetition_penalty=repetition_penalty)
    stages = what_if.stages(step.context_ids)
    wanted = [(s.name, float(s.param)) for s in stages]
    raw = np.asarray(step.top_probs, np.float64)  # (N,)
    N = raw.size
    rp = any(s.name == "repetition_penalty" for s in stages)
    if use_recorded and _same(wanted, recorded_settings(step)):
        final = np.asarray(step.top_final_probs, np.float64)
        kept_n = step.stages[-1].kept if step.stages else N
        # without a repetition penalty every stage keeps the order, so the kept tokens are a prefix
        kept = final > 0 if rp else np.arange(N) < kept_n
        return _result(raw, final, kept, [(s.name, s.param, s.kept, s.mass) for s in step.stages], kept_n,
                       step.final_entropy, True, "recorded")
    if step.logits is not None:
        res = sampling.apply_stages(step.logits, stages)
        ids = np.asarray(step.top_ids, np.int64)
        final = res.final_probs[ids]
        kept = np.isfinite(res.final_logits[ids])
        info = [(s.name, s.param, k, m) for s, k, m in zip(stages, res.stage_kept, res.stage_mass)]
        return _result(raw, final, kept, info, res.stage_kept[-1], sampling.entropy_bits(res.final_probs), True, "logits")
    if rest.usable(step.rest, repetition_penalty):
        return _from_shape(raw, rest.reshape(step, step.rest, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p))
    rg = rest_bounds.ranged(step, vocab_size, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p) \
        if vocab_size and repetition_penalty == 1.0 else None
    if rg:
        return _ranged(raw, rg)
    # Approximate: only the top N logits are known; the repetition penalty sees the context ids among them.
    ctx = set(int(i) for i in step.context_ids)
    local = [j for j, i in enumerate(step.top_ids) if int(i) in ctx]
    stages = what_if.stages(local)
    res = sampling.apply_stages(np.asarray(step.top_logits, np.float32), stages)
    info = [(s.name, s.param, k, m) for s, k, m in zip(stages, res.stage_kept, res.stage_mass)]
    return _result(raw, res.final_probs, np.isfinite(res.final_logits), info, res.stage_kept[-1],
                   sampling.entropy_bits(res.final_probs), False, "top-N")


def _result(raw, final, kept, info, n_kept, final_entropy, exact, source) -> Reshaped:
    kept = np.asarray(kept, bool)
    idx = np.flatnonzero(kept)
    return Reshaped(
        raw_probs=raw, final_probs=np.asarray(final, np.float64), kept=kept,
        stage_names=tuple(i[0] for i in info), stage_params=tuple(float(i[1]) for i in info),
        stage_kept=tuple(int(i[2]) for i in info), stage_mass=tuple(float(i[3]) for i in info),
        n_kept=int(n_kept), cutoff=int(idx[-1]) + 1 if idx.size else 0,
        final_entropy=float(final_entropy), exact=exact, source=source,
    )


def _from_shape(raw: np.ndarray, sh: rest.Shape) -> Reshaped:
    est = tuple(x[4] for x in sh.stages)
    r = _result(raw, sh.final, sh.kept, sh.stages, sh.stages[-1][2], sh.entropy, sh.exact and not any(est), "rest")
    return replace(r, stage_estimated=est, entropy_estimated=any(est))


def _ranged(raw: np.ndarray, rg: rest_bounds.Range) -> Reshaped:
    """Each bar at the middle of its range, every range kept for the words."""
    info = [(name, param, k[1], (m[0] + m[1]) / 2) for name, param, k, m in rg.stages]
    H = rg.entropy or (float("nan"), float("nan"))
    r = _result(raw, (rg.lo + rg.hi) / 2, rg.kept, info, info[-1][2], (H[0] + H[1]) / 2, False, "range")
    return replace(r, finals=(rg.lo, rg.hi), entropy_range=rg.entropy, entropy_known=rg.entropy is not None,
                   stage_kept_range=tuple(st[2] for st in rg.stages), stage_mass_range=tuple(st[3] for st in rg.stages))


def kept_words(k: int, estimated: bool = False, span: tuple[int, int] | None = None) -> str:
    """How many tokens a stage keeps: '3,412 tokens', an estimate '≈3,412 tokens', a range '150 to 3,412 tokens'."""
    if span and span[0] != span[1]:
        return t("common.range", lo=thousands(span[0]), hi=fmt.tokens(span[1]))
    return ("≈" if estimated else "") + fmt.tokens(k)


def share_words(m: float, span: tuple[float, float] | None = None, digits: int = 1) -> str:
    """A probability as '90.0%', or the range it lies in, '88.1% to 90.0%' (when its ends read differently)."""
    if span and pct(span[0], digits) != pct(span[1], digits):
        return t("common.range", lo=pct(span[0], digits), hi=pct(span[1], digits))
    return pct(m, digits)


def bar_text(lo: float, hi: float) -> str:
    """A bar's label: '6%', or the range '2–6%' it lies in; nothing below half a percent."""
    if hi < 0.005:
        return ""
    return pct(hi, 0) if pct(lo, 0) == pct(hi, 0) else f"{lo * 100:.0f}–{pct(hi, 0)}"


def entropy_words(r: Reshaped) -> str:
    """The sampled-from entropy: '6.22', an estimate '≈6.22', the range '5.10 to 7.30' it lies in, or '?'."""
    if not r.entropy_known:
        return "?"
    lo, hi = (decimal(e + 0.0, 2) for e in r.entropy_range) if r.entropy_range else ("", "")
    if lo != hi:
        return t("common.range", lo=lo, hi=hi)
    return ("≈" if r.entropy_estimated else "") + decimal(r.final_entropy + 0.0, 2)


def removed_words(m: float, span: tuple[float, float] | None = None) -> str:
    """The probability a stage removed, 1 - the mass it kept: '7.7%', or the range it lies in (never below 0: a mass
    summed to a hair over 1 removed nothing)."""
    gone = lambda x: max(0.0, 1.0 - x)  # noqa: E731
    return share_words(gone(m), (gone(span[1]), gone(span[0])) if span else None)


CUTTING = ("top_k", "top_p", "min_p")  # the stages that keep a number of tokens


def _cut_text(r: Reshaped) -> list[str]:
    """The chain of stages in words, in their order, from the stage records: one line per stage that keeps or
    lowers anything (the repetition penalty, top-k, top-p, min-p; greedy), what it kept and the probability it removed."""
    parts = []
    for i, (name, param, k, m) in enumerate(zip(r.stage_names, r.stage_params, r.stage_kept, r.stage_mass)):
        est = bool(r.stage_estimated and r.stage_estimated[i])
        span, mspan = (r.stage_kept_range[i], r.stage_mass_range[i]) if r.stage_kept_range else (None, None)
        kept, removed = kept_words(k, est, span), removed_words(m, mspan)
        if name == "top_k":
            parts.append(t("stage.top_k", k=int(param), kept=kept, removed=removed))
        elif name == "top_p":
            parts.append(t("stage.top_p", p=short_number(param), kept=kept, removed=removed))
        elif name == "min_p":
            parts.append(t("stage.min_p", p=short_number(param), kept=kept, removed=removed))
        elif name == "repetition_penalty":
            parts.append(t("stage.repetition_penalty", p=short_number(param)))
        elif name == "temperature" and param == 0:
            parts.append(t("stage.greedy"))
    return parts


def _legend(forced: bool) -> list[dict]:
    """The legend: one entry per colour, as traces with no points. The bars stay out of it, because a
    legend shows a bar trace in its first bar's colour: the sampled token's red whenever it ranks first."""
    return [dict(type="scatter", x=[None], y=[None], mode="markers", name=name, hoverinfo="skip", marker=dict(symbol="square", size=12, color=colour))
            for name, colour in ((t("dist.raw_name"), PROMPT_COLOR), (t("dist.final_name"), GEN_COLOR),
                                 (t("dist.legend_forced" if forced else "dist.legend_sampled"), NEW_COLOR))]


def distribution_figure(step: StepRecord, *, temperature: float, top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0,
                        repetition_penalty: float = 1.0, n: int = 20, vocab_size: int | None = None) -> go.Figure:
    """distribution_figure_dict's figure, checked by Plotly."""
    return go.Figure(distribution_figure_dict(step, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                                              repetition_penalty=repetition_penalty, n=n, vocab_size=vocab_size))


def _bars(step: StepRecord, r: Reshaped, n: int, rank: int | None, vocab_size: int | None) -> list[dict]:
    """The raw and final bars of the top n candidates and the rest of the vocabulary, then the legend."""
    ids = np.asarray(step.top_ids)[:n]
    labels, raw, fin = [], list(r.raw_probs[:n]), list(r.final_probs[:n])
    for k in range(n):
        lab = f"#{k + 1} {plot_piece(step.top_pieces[k], 14)}"
        if k == rank:
            lab = f"<b>{lab} {t('dist.mark_forced' if step.forced else 'dist.mark_sampled')}</b>"
        elif not r.kept[k]:
            lab = f"<span style='color:{MUTED_TEXT}'>{lab}</span>"
        labels.append(lab)
    rest_label = t("dist.rest_n", tokens=fmt.tokens(vocab_size - n)) if vocab_size else t("dist.rest")
    labels.append(f"<i>{rest_label}</i>")
    raw.append(max(0.0, 1.0 - float(np.sum(r.raw_probs[:n]))))
    fin.append(max(0.0, 1.0 - float(np.sum(r.final_probs[:n]))))
    texts, exact_words = final_words(r, n)

    removed = removed_hover()
    hover = [t("dist.hover_token", piece=plot_piece(step.top_pieces[k], 40), id=int(ids[k])) + "<br>"
             + t("dist.hover_logit", logit=decimal(float(step.top_logits[k]), 2))
             + ("" if r.kept[k] else removed) for k in range(n)]
    hover.append(t("dist.rest_hover", rest=rest_label, n=n))
    raw_col = [PROMPT_COLOR if r.kept[k] else MUTED for k in range(n)] + ["#cbd5e0"]
    fin_col = [NEW_COLOR if k == rank else GEN_COLOR for k in range(n)] + ["#cbd5e0"]
    line_w = [2.5 if k == rank else 0 for k in range(n)] + [0]
    return [
        dict(type="bar", y=labels, x=raw, orientation="h", name=t("dist.raw_name"), showlegend=False,
             marker=dict(color=raw_col, line=dict(width=line_w, color=NEW_COLOR)),
             customdata=hover, hovertemplate="%{customdata}<br>" + t("dist.hover_raw") + " %{x:.2%}<extra></extra>"),
        dict(type="bar", y=labels, x=fin, orientation="h", name=t("dist.final_name"), marker=dict(color=fin_col), showlegend=False,
             customdata=hover, hovertext=exact_words, hovertemplate="%{customdata}<br>" + t("dist.hover_final") + " %{hovertext}<extra></extra>",
             text=texts, textposition="outside", cliponaxis=False,
             constraintext="none", textfont=dict(size=13)),
        *_legend(step.forced),
    ]


def final_words(r: Reshaped, n: int) -> tuple[list[str], list[str]]:
    """The sampled-from bars' labels and hover numbers, the rest of the vocabulary last: each bar's number, or
    the range it lies in (a step with neither logits nor the rest's summary)."""
    ends = r.finals or (r.final_probs, r.final_probs)
    lo, hi = np.minimum(*ends)[:n].tolist(), np.maximum(*ends)[:n].tolist()
    rests = [max(0.0, 1.0 - float(np.sum(e[:n]))) for e in ends]
    lo.append(min(rests))
    hi.append(max(rests))
    return ([bar_text(a, b) for a, b in zip(lo, hi)],
            [pct(b, 2) if pct(a, 2) == pct(b, 2) else t("common.range", lo=pct(a, 2), hi=pct(b, 2)) for a, b in zip(lo, hi)])


def _notes(step: StepRecord, r: Reshaped, n: int, rank: int | None) -> list[str]:
    """The lines below the x axis: where the chosen token is when the bars do not show it marked, and
    whether the reshaping is approximate."""
    N, notes = r.raw_probs.size, []
    what = t("dist.what_forced" if step.forced else "dist.what_sampled")
    if rank is None:
        notes.append(t("dist.not_top", what=what, piece=plot_piece(step.piece), n=N, p=f"{step.chosen_prob:.2e}".replace(".", number_marks()[1])))
    elif rank >= n or step.forced:
        notes.append(t("dist.ranked", what=what, piece=plot_piece(step.piece), rank=rank + 1, p=pct(step.chosen_prob, 2)))
    if r.source == "top-N":
        notes.append(t("dist.approximate_note", approximate=f"<b>{t('dist.approximate')}</b>", n=N))
    return notes


def _ranges_note(step: StepRecord, vocab_size: int | None, penalty: float) -> list[str]:
    """Below the axis, for a step whose numbers may be ranges (whatever the settings: the page's sliders move them)."""
    if step.logits is not None or rest.usable(step.rest, penalty) or not vocab_size or penalty != 1.0:
        return []
    return [t("dist.ranges_note", n=len(step.top_ids)), t("dist.ranges_note_2")]


def distribution_figure_dict(step: StepRecord, *, temperature: float, top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0,
                             repetition_penalty: float = 1.0, n: int = 20, vocab_size: int | None = None) -> dict:
    """Top-n candidates by raw logit: probability at temperature 1 beside the final sampling
    probability under these settings; filtered tokens grey; the cut-off line; the sampled token
    marked; one bar for the rest of the vocabulary so the bars add up to 1."""
    r = reshape(step, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p, repetition_penalty=repetition_penalty,
                vocab_size=vocab_size)
    N = r.raw_probs.size
    n = max(1, min(n, N))
    V = vocab_size or (step.logits.size if step.logits is not None else None)
    chosen = [k for k in range(N) if int(step.top_ids[k]) == step.token_id]
    rank = chosen[0] if chosen else None  # 0-based, within the recorded top N
    bars = _bars(step, r, n, rank, V)
    shapes, annotations = [], []
    cut = _cut_text(r)
    if 0 < r.cutoff < n:  # a line between the last kept candidate and the next
        shapes.append(dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=r.cutoff - 0.5, y1=r.cutoff - 0.5,
                           line=dict(color=NEW_COLOR, width=1.5, dash="dash"), name="cut-off"))
        annotations.append(dict(xref="paper", x=1, xanchor="left", yref="y", y=r.cutoff - 0.5, yanchor="middle", showarrow=False,
                                text=t("dist.cut_off"), font=dict(size=13, color=NEW_COLOR), name="cut-off"))
    if r.cutoff >= n and cut:  # the cut falls below the bars shown: more kept than shown, or (a penalty reorders) some kept lower
        last = next((k for name, k in zip(reversed(r.stage_names), reversed(r.stage_kept)) if name in CUTTING), None)
        cut[-1] = t("stage.more_than_shown" if last is None or last > n else "stage.beyond_shown", line=cut[-1], n=n)
    notes = _notes(step, r, n, rank) + _ranges_note(step, vocab_size, repetition_penalty)
    if notes:  # below the x axis title
        annotations.append(dict(xref="paper", yref="paper", x=0, y=0, yshift=-48, xanchor="left", yanchor="top", showarrow=False,
                                align="left", text="<br>".join(notes), font=dict(size=13, color="#4a5568"), name="notes"))
    # short lines: the panel is half the page wide, and a title line longer than the figure is cut off;
    # entropies are never negative: + 0.0 turns a -0.0 into 0.0 for display
    lines = [t("stage.entropy_approx" if r.source == "top-N" else "stage.entropy", raw=decimal(step.entropy + 0.0, 2), sampled=entropy_words(r)),
             *cut]
    title = title_template().format(step=step.index, position=step.position + 1) + "".join(SUBTITLE.format(line) for line in lines)
    # the plot area holds a row of 24 px per bar (less and Plotly labels every other bar): the margins come on top
    layout = base_layout(title, height=max(420, 24 * (n + 1) + TOP_MARGIN + 25 + 18 * len(notes)),
                         margin=dict(l=160, r=60, t=TOP_MARGIN, b=60 + 18 * len(notes)),
                         barmode="group", bargap=0.25, bargroupgap=0.05,
                         legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", itemclick=False, itemdoubleclick=False),
                         shapes=shapes, annotations=annotations,
                         xaxis=dict(range=[0, 1.08], autorange=False, tickformat=".0%", title=dict(text=t("dist.axis")), fixedrange=True),
                         yaxis=dict(type="category", autorange="reversed", fixedrange=True, tickfont=dict(size=14)))
    # the contract the page and its tests read: the settings these numbers were computed with
    layout["meta"] = {"temperature": float(temperature), "top_k": int(top_k), "top_p": float(top_p), "min_p": float(min_p),
                      "repetition_penalty": float(repetition_penalty)}
    return {"data": bars, "layout": layout}

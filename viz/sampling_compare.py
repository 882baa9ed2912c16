"""Two or three sampling settings applied to the same step, side by side.

Each setting goes through Settings.stages and pipeline.sampling.apply_stages (the very code that
chose the token) on the step's captured logits. For each one the figure shows the exact final
probabilities of the step's top candidates, one bar for all other tokens (so the bars add up
to 1), and the share of `draws` seeded random draws that landed on each candidate.

The draws are pipeline.sampling.draw's inverse-CDF draws from the exact final distribution (one
uniform number per draw, all of them at once); temperature 0 is greedy
(every draw is the argmax, as pipeline.sampling.greedy_or_draw does). Every setting gets a
fresh generator with the same seed, so the same random numbers go through each setting and
the differences between the columns come from the distributions alone.

Without the step's full-vocabulary logits the distribution is rebuilt from the recorded top N
(viz.distribution.reshape): exact at the step's own settings, approximate otherwise.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pipeline.sampling import stages as sampling
from pipeline.trace.records import Settings, StepRecord

from viz.distribution import reshape, short_number
from viz.style import GEN_COLOR, MUTED, NEW_COLOR, PROMPT_COLOR, base_layout, plot_piece
from viz.text import count, decimal, pct, t, t_html, thousands

OTHER_COLOR = "#cbd5e0"


@dataclass(frozen=True)
class SettingSample:
    """One setting applied to one step. Arrays over the shown candidates are in the step's top
    order (by raw logit, descending); `counts` has one more entry: all other tokens."""

    temperature: float
    top_k: int
    top_p: float
    repetition_penalty: float
    label: str  # the setting in words
    ids: np.ndarray  # (n,) int64 shown candidate ids
    pieces: tuple[str, ...]
    probs: np.ndarray  # (n,) float64 exact final probability of each shown candidate
    other_prob: float  # final probability of every other token together
    counts: np.ndarray  # (n+1,) int64 draws that landed on each candidate, then on any other token
    draws: int
    entropy: float  # bits, of the final distribution
    n_kept: int  # tokens that can be drawn (non-zero final probability)
    greedy: bool
    exact: bool  # False: rebuilt from the recorded top N only
    source: str  # "logits" | "recorded" | "top-N"

    @property
    def freqs(self) -> np.ndarray:
        return self.counts / self.draws


def _label(temperature: float, k: int, p: float, rp: float) -> str:
    """The setting in words, in the language spoken (viz.text.speaking)."""
    if temperature == 0:
        s = t("sampling_compare.greedy")
    else:
        s = t("sampling_compare.setting", t=short_number(temperature), k=thousands(k) if k else t("common.off"),
              p=short_number(p) if p < 1 else t("common.off"))
    return t("sampling_compare.penalty", setting=s, p=short_number(rp)) if rp != 1.0 else s


def _one(step: StepRecord, s: Mapping, *, vocab_size: int, repetition_penalty: float, draws: int, seed: int, top: int) -> SettingSample:
    temp = float(s.get("temperature", 1.0))
    k = s.get("top_k", 0)
    k = int(k) if float(k).is_integer() else k
    p = float(s.get("top_p", 1.0))
    rp = float(s.get("repetition_penalty", repetition_penalty))
    stages = Settings(temperature=temp, top_k=k, top_p=p, repetition_penalty=rp).stages(step.context_ids)
    greedy = temp == 0
    n = max(1, min(int(top), len(step.top_ids)))
    ids = np.asarray(step.top_ids, np.int64)[:n]
    rng = np.random.default_rng(seed)
    if step.logits is not None:  # exact, over the full vocabulary
        res = sampling.apply_stages(step.logits, stages)
        final = res.final_probs  # (vocab,)
        if greedy:
            drawn = np.full(draws, int(np.argmax(res.final_logits)), np.int64)
        else:
            drawn = sampling.draw(final, rng, draws)
        probs = final[ids]
        counts = np.array([int(np.sum(drawn == i)) for i in ids] + [0], np.int64)
        counts[-1] = draws - counts[:-1].sum()
        entropy, n_kept, exact, source = sampling.entropy_bits(final), int(np.isfinite(res.final_logits).sum()), True, "logits"
    else:  # the recorded top N (exact at the step's own settings), the rest as one category
        r = reshape(step, temperature=temp, top_k=k, top_p=p, repetition_penalty=rp)
        cats = np.append(r.final_probs, max(0.0, 1.0 - float(r.final_probs.sum())))  # (N+1,)
        if greedy:
            drawn = np.full(draws, int(np.argmax(cats)), np.int64)
        else:
            drawn = sampling.draw(cats / cats.sum(), rng, draws)
        probs = r.final_probs[:n]
        counts = np.array([int(np.sum(drawn == j)) for j in range(n)] + [0], np.int64)
        counts[-1] = draws - counts[:-1].sum()
        entropy, n_kept, exact, source = r.final_entropy, r.n_kept, r.exact, r.source
    probs = np.asarray(probs, np.float64)
    return SettingSample(
        temperature=temp, top_k=int(k), top_p=p, repetition_penalty=rp, label=_label(temp, int(k), p, rp),
        ids=ids, pieces=tuple(step.top_pieces[:n]), probs=probs, other_prob=max(0.0, 1.0 - float(probs.sum())),
        counts=counts, draws=int(draws), entropy=float(entropy) + 0.0, n_kept=int(n_kept), greedy=greedy,
        exact=bool(exact), source=source,
    )


def compare_samples(step: StepRecord, settings: Sequence[Mapping], *, vocab_size: int, repetition_penalty: float = 1.0,
                    draws: int = 1000, seed: int = 0, top: int = 15) -> tuple[SettingSample, ...]:
    """The numbers behind the figure: one SettingSample per setting ({temperature, top_k, top_p},
    optionally repetition_penalty). Raises ValueError (SettingsError for a bad setting)."""
    if not 2 <= len(settings) <= 3:
        raise ValueError(f"compare two or three sampling settings, not {len(settings)}")
    if int(draws) != draws or draws < 1:
        raise ValueError(f"the number of draws must be a whole number, 1 or more, not {draws}")
    if int(top) != top or top < 1:
        raise ValueError(f"the number of candidates shown must be a whole number, 1 or more, not {top}")
    return tuple(_one(step, s, vocab_size=vocab_size, repetition_penalty=repetition_penalty, draws=int(draws),
                      seed=seed, top=int(top)) for s in settings)


def subplot_title(r: SettingSample) -> str:
    line = t("sampling_compare.entropy", bits=decimal(r.entropy, 2), survive=count(r.n_kept, "survivor"))
    if not r.exact and r.source in ("top-N", "range", "rest"):
        line += " · " + t("dist.approximate" if r.source == "top-N" else "sampling_compare.ranges" if r.source == "range"
                          else "sampling_compare.estimated")
    return f"<b>{html.escape(r.label, quote=False)}</b><br>{html.escape(line, quote=False)}"


def sampling_compare_figure(step: StepRecord, settings: Sequence[Mapping], *, vocab_size: int, repetition_penalty: float = 1.0,
                            draws: int = 1000, seed: int = 0, top: int = 15) -> go.Figure:
    """One column per setting: exact final probability of the step's top candidates (bars) beside
    the share of `draws` seeded draws that landed on each (histogram bars), plus one row for all
    other tokens. Subplot titles: the setting, entropy in bits, how many tokens survive."""
    results = compare_samples(step, settings, vocab_size=vocab_size, repetition_penalty=repetition_penalty,
                              draws=draws, seed=seed, top=top)
    n = results[0].ids.size
    chosen = [j for j in range(n) if int(results[0].ids[j]) == step.token_id]
    labels = []
    for j in range(n):
        lab = f"#{j + 1} {plot_piece(results[0].pieces[j], 14)}"
        labels.append(f"<b>{lab} {t('dist.mark_forced' if step.forced else 'dist.mark_sampled')}</b>" if chosen and j == chosen[0] else lab)
    rest = max(0, int(vocab_size) - n)
    labels.append(f"<i>{t('sampling_compare.others', n=thousands(rest))}</i>")
    fig = make_subplots(rows=1, cols=len(results), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[subplot_title(r) for r in results])
    xmax = max(max(float(r.probs.max(initial=0.0)), r.other_prob, float(r.freqs.max())) for r in results)
    xmax = min(1.0, xmax * 1.15 + 0.02)
    removed = t_html("sampling_compare.removed", removed=f"<b>{html.escape(t('dist.removed_word'))}</b>")
    for c, r in enumerate(results, start=1):
        exact = list(r.probs) + [r.other_prob]
        kept = [pp > 0 for pp in r.probs]
        hover = [t("dist.hover_token", piece=plot_piece(r.pieces[j], 40), id=int(r.ids[j])) + ("" if kept[j] else "<br>" + removed)
                 for j in range(n)] + [t("sampling_compare.rest_hover", n=n, tokens=count(rest, "token"))]
        colors = [(NEW_COLOR if chosen and j == chosen[0] else GEN_COLOR) if kept[j] else MUTED for j in range(n)] + [OTHER_COLOR]
        fig.add_trace(go.Bar(
            y=labels, x=exact, orientation="h", name=t("sampling_compare.exact"), legendgroup="exact", showlegend=c == 1,
            marker=dict(color=colors), customdata=hover, meta=dict(setting=c - 1, kind="exact"),
            hovertemplate="%{customdata}<br>" + t("sampling_compare.exact") + " %{x:.2%}<extra></extra>",
        ), row=1, col=c)
        counts = [int(x) for x in r.counts]
        fig.add_trace(go.Bar(
            y=labels, x=list(r.freqs), orientation="h", name=t("sampling_compare.draws", draws=thousands(r.draws), seed=seed),
            legendgroup="draws", showlegend=c == 1, marker=dict(color=PROMPT_COLOR, opacity=0.75), meta=dict(setting=c - 1, kind="draws"),
            customdata=[[h, k] for h, k in zip(hover, counts)],
            hovertemplate="%{customdata[0]}<br>" + t("sampling_compare.draws_hover", count="%{customdata[1]:,}", draws=thousands(r.draws),
                                                      share="%{x:.1%}") + "<extra></extra>",
        ), row=1, col=c)
        fig.update_xaxes(range=[0, xmax], autorange=False, tickformat=".0%", fixedrange=True, row=1, col=c)
    fig.update_yaxes(type="category", autorange="reversed", fixedrange=True, tickfont=dict(size=12))
    inexact = {r.source for r in results if not r.exact}
    notes = []
    if "top-N" in inexact:
        notes.append(t("sampling_compare.note_top_n", n=thousands(len(step.top_ids))))
    if "range" in inexact:
        notes.append(t("sampling_compare.note_ranges", n=thousands(len(step.top_ids))))
    if "rest" in inexact:
        notes.append(t("sampling_compare.note_rest", within=pct(0.01, 0)))
    title = t("sampling_compare.title", phase=step.phase, position=thousands(step.position + 1), n=len(results), draws=thousands(draws))
    if notes:
        title += "<br><sup>" + "; ".join(notes) + "</sup>"
    fig.update_layout(**base_layout(title, height=max(420, 24 * (n + 1) + 200),
                                    margin=dict(l=150, r=20, t=130, b=90),
                                    barmode="group", bargap=0.2, bargroupgap=0.05,
                                    legend=dict(orientation="h", x=0, y=-0.07, yanchor="top")))
    for a in fig.layout.annotations:  # subplot titles: smaller, two lines
        a.font = dict(size=12)
    return fig

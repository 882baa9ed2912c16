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

from pipeline import sampling
from pipeline.records import Settings, StepRecord

from .distribution import reshape
from .style import GEN_COLOR, MUTED, NEW_COLOR, PROMPT_COLOR, base_layout, plot_piece

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


def _label(t: float, k: int, p: float, rp: float) -> str:
    if t == 0:
        s = "temperature 0 (greedy)"
    else:
        s = f"temperature {t:g} · top-k {k if k else 'off'} · top-p {f'{p:g}' if p < 1 else 'off'}"
    if rp != 1.0:
        s += f" · repetition penalty {rp:g}"
    return s


def _one(step: StepRecord, s: Mapping, *, vocab_size: int, repetition_penalty: float, draws: int, seed: int, top: int) -> SettingSample:
    t = float(s.get("temperature", 1.0))
    k = s.get("top_k", 0)
    k = int(k) if float(k).is_integer() else k
    p = float(s.get("top_p", 1.0))
    rp = float(s.get("repetition_penalty", repetition_penalty))
    stages = Settings(temperature=t, top_k=k, top_p=p, repetition_penalty=rp).stages(step.context_ids)
    greedy = t == 0
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
        r = reshape(step, temperature=t, top_k=k, top_p=p, repetition_penalty=rp)
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
        temperature=t, top_k=int(k), top_p=p, repetition_penalty=rp, label=_label(t, int(k), p, rp),
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
    survive = "1 token survives" if r.n_kept == 1 else f"{r.n_kept:,} tokens survive"
    approx = {"top-N": " · approximate", "range": " · ranges", "rest": " · ≈ survivors"}.get(r.source, "") if not r.exact else ""
    return f"<b>{html.escape(r.label, quote=False)}</b><br>entropy {r.entropy:.2f} bits · {survive}{approx}"


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
        labels.append(f"<b>{lab} ◀ {'forced' if step.forced else 'sampled'}</b>" if chosen and j == chosen[0] else lab)
    rest = max(0, int(vocab_size) - n)
    labels.append(f"<i>other tokens ({rest:,})</i>")
    fig = make_subplots(rows=1, cols=len(results), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[subplot_title(r) for r in results])
    xmax = max(max(float(r.probs.max(initial=0.0)), r.other_prob, float(r.freqs.max())) for r in results)
    xmax = min(1.0, xmax * 1.15 + 0.02)
    for c, r in enumerate(results, start=1):
        exact = list(r.probs) + [r.other_prob]
        kept = [pp > 0 for pp in r.probs]
        hover = [f"{plot_piece(r.pieces[j], 40)} · id {int(r.ids[j])}" + ("" if kept[j] else "<br><b>removed</b> by this setting")
                 for j in range(n)] + [f"every token outside the top {n} ({rest:,} tokens)"]
        colors = [(NEW_COLOR if chosen and j == chosen[0] else GEN_COLOR) if kept[j] else MUTED for j in range(n)] + [OTHER_COLOR]
        fig.add_trace(go.Bar(
            y=labels, x=exact, orientation="h", name="exact probability", legendgroup="exact", showlegend=c == 1,
            marker=dict(color=colors), customdata=hover, meta=dict(setting=c - 1, kind="exact"),
            hovertemplate="%{customdata}<br>exact probability %{x:.2%}<extra></extra>",
        ), row=1, col=c)
        counts = [int(x) for x in r.counts]
        fig.add_trace(go.Bar(
            y=labels, x=list(r.freqs), orientation="h", name=f"share of {r.draws:,} draws (seed {seed})", legendgroup="draws",
            showlegend=c == 1, marker=dict(color=PROMPT_COLOR, opacity=0.75), meta=dict(setting=c - 1, kind="draws"),
            customdata=[[h, k] for h, k in zip(hover, counts)],
            hovertemplate="%{customdata[0]}<br>%{customdata[1]} of " + f"{r.draws:,}" + " draws (%{x:.1%})<extra></extra>",
        ), row=1, col=c)
        fig.update_xaxes(range=[0, xmax], autorange=False, tickformat=".0%", fixedrange=True, row=1, col=c)
    fig.update_yaxes(type="category", autorange="reversed", fixedrange=True, tickfont=dict(size=12))
    notes = []
    inexact = {r.source for r in results if not r.exact}
    if "top-N" in inexact:
        notes.append(f"approximate: the trace holds only the top {len(step.top_ids)} logits of this step, "
                     "so settings other than its own are applied to them alone")
    if "range" in inexact:
        notes.append(f"ranges: the trace holds only the top {len(step.top_ids)} logits of this step, so a number is "
                     "given as the range it must lie in")
    if "rest" in inexact:
        notes.append("≈: top-p cuts among the rarest tokens, whose count is estimated (within about 1%)")
    title = (f"The same step ({step.phase}, position {step.position + 1}) under {len(results)} settings: "
             f"exact probabilities and {draws:,} random draws")
    if notes:
        title += "<br><sup>" + "; ".join(notes) + "</sup>"
    fig.update_layout(**base_layout(title, height=max(420, 24 * (n + 1) + 200),
                                    margin=dict(l=150, r=20, t=130, b=90),
                                    barmode="group", bargap=0.2, bargroupgap=0.05,
                                    legend=dict(orientation="h", x=0, y=-0.07, yanchor="top")))
    for a in fig.layout.annotations:  # subplot titles: smaller, two lines
        a.font = dict(size=12)
    return fig

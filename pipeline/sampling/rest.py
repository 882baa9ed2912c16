"""The rest of the vocabulary: what a step keeps of the tokens outside its top candidates, so that a trace
saved without full-vocabulary logits still reshapes its distribution at every slider position within 1e-3
of the model's own computation (pipeline.sampling over the full logits).

`summarise` makes a step's RestRecord (pipeline.trace.records) from its full logits, after the step's repetition
penalty: the largest KEEP of the rest one by one (with the top candidates, top-k up to N + KEEP is exact);
at every temperature of GRID (the page's slider) the softmax's sum over the others and their mean (so the
denominator and the entropy are exact there); and a histogram of the others (count and mean per bin), which
says where top-p's cut falls among them: the probability kept is then exact within half a token's, the count
of tokens kept an estimate (`Shape.stages[i][4]`). `at` lays a step out at one temperature, largest first
(the candidates and the kept logits one by one, then the bins); `reshape` applies the stages to it with the
arithmetic of assets/viewer_sampling.js, which reads the same numbers from viz.viewer.sampling's tables. Min-p
keeps the tokens at least p times the largest: within the head exact, past it the bins' estimate (`min_p_count`).

An older trace has no RestRecord: pipeline.sampling.rest_bounds gives the range each number must lie in.

numpy only, no torch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pipeline.sampling import stages as sampling
from pipeline.sampling import grid as slider_grid
from pipeline.trace.records import RestRecord, StepRecord

GRID = slider_grid.TEMPERATURE.values[1:]  # the page's temperature slider; 0 (greedy) needs no sums
KEEP = 156  # the rest's largest logits kept one by one: with the top 100, top-k up to 256 is exact
MAX_KEEP = 2048  # more only while a penalised candidate lies below them (never past this)
WIDTH = 0.1  # histogram bins, in logit units
RANGE = 100.0  # logits further below the histogram's top go in its last bin (exp(-100 / 2) is nothing)
MOMENT_WIDTH, MOMENTS = 0.05, 8  # the grid's sums: bins this wide, expanded to this order (error < 1e-8)
EPS = 1e-12  # pipeline.sampling.TopP's tolerance on the cumulative probability


def summarise(logits: np.ndarray, top_ids: np.ndarray, *, penalty: float = 1.0, context_ids=()) -> RestRecord:
    """The RestRecord of a step's full logits (vocab,) outside `top_ids`, after the repetition penalty."""
    x = np.asarray(logits, np.float32)
    if penalty != 1.0:
        x = sampling.RepetitionPenalty(float(penalty), tuple(int(i) for i in context_ids))(x)
    ids = np.asarray(top_ids, np.int64)
    keep = np.ones(x.size, bool)
    keep[ids] = False
    floor = float(x[ids].min()) if ids.size else math.inf
    return of_values(x[keep], penalty=penalty, floor=floor)


def of_step(step: StepRecord) -> RestRecord | None:
    """The step's RestRecord: its own, else summarised from its full logits after its own repetition penalty (its
    stage's, over its context: what the generation applied), as pipeline.trace.files writes it; None without logits.
    (A generated step keeps its logits in memory and its summary is made only when the step is written: a file holds
    no logits. Made at every step, it was half of a decode step's record, ~1 ms a visitor a token on the loop's thread.)"""
    if step.rest is not None or step.logits is None:
        return step.rest
    pen = next((float(st.param) for st in step.stages if st.name == "repetition_penalty"), 1.0)
    return summarise(step.logits, step.top_ids, penalty=pen, context_ids=step.context_ids if pen != 1.0 else ())


def of_values(v: np.ndarray, *, penalty: float = 1.0, floor: float = math.inf) -> RestRecord:
    """The RestRecord of the rest's logits `v` (any order); `floor`: the smallest candidate's (penalised)
    logit: the rest's logits at or above it are kept one by one (up to MAX_KEEP), so the histogram lies below."""
    v = np.asarray(v, np.float32)
    k = min(max(KEEP, int(np.count_nonzero(v >= floor))), MAX_KEEP, v.size)
    if k < v.size:
        kth = sampling.kth_largest(v, k) if k else np.float32(np.inf)
        top = v[v >= kth] if k else v[:0]
        if top.size > MAX_KEEP:  # a tie of thousands: into the histogram with it
            top = v[v > kth]
        others = v[v < top.min()] if top.size else v
    else:
        top, others = v, v[:0]
    top = np.sort(top)[::-1]
    lse, mean, hi, counts, depths = summaries(others)
    return RestRecord(penalty=float(penalty), top=top.astype(np.float32), temperatures=np.asarray(GRID, np.float32), lse=lse,
                      mean=mean.astype(np.float32), hi=hi, width=WIDTH, counts=counts, depths=depths)


def means(rest: RestRecord) -> np.ndarray:
    """(B,) float64 each bin's mean logit."""
    return rest.hi - (np.arange(np.size(rest.counts)) + np.asarray(rest.depths, np.float64) / 255) * rest.width


def _moments(x: np.ndarray, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """(M, mid): M[k, b] = the sum of (x - mid[b])^k over the logits in bin b (MOMENT_WIDTH wide from `hi` down,
    every x within RANGE of it), k = 0..MOMENTS."""
    b = ((hi - x) / MOMENT_WIDTH).astype(np.int64)  # (n,)
    mid = hi - (np.arange(int(b.max()) + 1 if b.size else 0) + 0.5) * MOMENT_WIDTH
    dx, p, M = x - mid[b], np.ones(b.size), []
    for _ in range(MOMENTS + 1):
        M.append(np.bincount(b, p, minlength=mid.size))
        p *= dx
    return np.array(M).reshape(MOMENTS + 1, mid.size), mid


def summaries(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, np.ndarray]:
    """(lse, mean, hi, counts, depths) of the logits `v`: at each temperature t of GRID log sum exp(x / t) and
    the mean of x / t weighted by exp(x / t); and the histogram, bins WIDTH wide from the largest down, the
    last one holding everything more than RANGE below it. The sums come from the moments of MOMENT_WIDTH bins
    (a Taylor series in 1 / t about each bin's middle, to MOMENTS terms: relative error below 1e-8), so the
    vocabulary is read a few times, not once per temperature."""
    t = np.asarray(GRID, np.float64)
    if not v.size:
        return np.full(t.size, -np.inf), np.zeros(t.size), 0.0, np.zeros(0, np.uint16), np.zeros(0, np.uint8)
    x = v.astype(np.float64)
    hi = float(x.max())
    near = x > hi - RANGE
    M, mid = _moments(x[near], hi)
    far = x[~near]  # exp((x - hi) / 2) < 2e-22 each: summed as they are
    beta = 1.0 / t[:, None]  # (G, 1)
    fact = np.array([math.factorial(k) for k in range(MOMENTS + 1)], np.float64)
    pw = beta ** np.arange(MOMENTS + 1)  # (G, K+1)
    s = (pw / fact) @ M  # (G, bins): each bin's sum of exp(beta (x - mid))
    s1 = (pw[:, :-1] / fact[:-1]) @ M[1:]  # its derivative in beta: the sum of (x - mid) exp(beta (x - mid))
    w = np.exp(beta * (mid - hi))  # (G, bins)
    fin = far[np.isfinite(far)]  # (a logit of -inf: no probability at all)
    ef = np.exp(beta * (fin - hi))  # (G, n_far)
    z = (w * s).sum(1) + ef.sum(1)
    zx = (w * (mid * s + s1)).sum(1) + ef @ fin
    hc, hs = _histogram(M, mid, far, hi)
    return t ** -1 * hi + np.log(z), zx / z / t, hi, hc, hs


def _histogram(M: np.ndarray, mid: np.ndarray, far: np.ndarray, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """(counts, depths) of WIDTH bins, from the moments' bins (each WIDTH / MOMENT_WIDTH of them one bin): depth, how
    far below the bin's top edge its mean lies, in 255ths of WIDTH."""
    r = int(round(WIDTH / MOMENT_WIDTH))
    B = min(-(-mid.size // r), int(RANGE / WIDTH) + 1)
    idx = np.minimum(np.arange(mid.size) // r, B - 1)
    counts = np.bincount(idx, M[0], minlength=B)
    sums = np.bincount(idx, M[0] * mid + M[1], minlength=B)
    if far.size:
        counts[-1] += far.size
        sums[-1] += far.sum()
    depths = np.where(counts > 0, hi - np.arange(B) * WIDTH - sums / np.maximum(counts, 1), 0.5 * WIDTH)
    counts = np.rint(counts)
    depths = np.rint(np.clip(depths / WIDTH, 0, 1) * 255).astype(np.uint8)  # (the last bin's far tokens: at its floor)
    return counts.astype(np.uint16 if counts.max(initial=0) < 2**16 else np.uint32), depths


def usable(rest: RestRecord | None, penalty: float) -> bool:
    """Whether `rest` can reshape a step at this repetition penalty: made after it, and whole (a file from
    outside may hold anything: arrays that do not line up are not read)."""
    if rest is None or not np.isclose(rest.penalty, penalty, rtol=1e-9, atol=0):
        return False
    arrays = (rest.top, rest.temperatures, rest.lse, rest.mean, rest.counts, rest.depths)
    if not all(isinstance(a, np.ndarray) and a.ndim == 1 for a in arrays):
        return False
    G, B = rest.lse.size, rest.counts.size
    if rest.temperatures.size != G or rest.mean.size != G or rest.depths.size != B or not G or rest.counts.dtype.kind not in "iu":
        return False
    lse = rest.lse[rest.lse != -np.inf]  # -inf: nothing below `top`
    finite = all(np.all(np.isfinite(a)) for a in (rest.top, rest.mean, lse, rest.temperatures)) and rest.depths.dtype.kind in "iu"
    return bool(finite and np.all(rest.temperatures > 0) and np.all(rest.counts >= 0) and rest.width > 0 and math.isfinite(rest.hi))


# ---------------------------------------------------------------------------------------
# A step at one temperature, largest first, and the stages on it


def penalised_top(step: StepRecord, penalty: float) -> np.ndarray:
    """(N,) float32 the top candidates' logits after the repetition penalty (the context's ids among them)."""
    x = np.asarray(step.top_logits, np.float32)
    if penalty == 1.0:
        return x
    seen = set(int(i) for i in step.context_ids)
    return sampling.RepetitionPenalty(float(penalty), tuple(j for j, i in enumerate(step.top_ids) if int(i) in seen))(x)


def head(step: StepRecord, rest: RestRecord) -> tuple[np.ndarray, np.ndarray]:
    """(xs, ranks): the step's top candidates (after the rest's penalty) and the rest's kept logits, largest
    first (ties: the candidates first, by id), as float32; and each candidate's index in xs."""
    x = penalised_top(step, rest.penalty)
    vals = np.concatenate([x, np.asarray(rest.top, np.float32)])
    key = np.concatenate([np.asarray(step.top_ids, np.float64), np.full(np.size(rest.top), np.inf)])
    order = np.lexsort((key, -vals.astype(np.float64)))
    pos = np.empty(order.size, np.int64)
    pos[order] = np.arange(order.size)
    return vals[order], pos[: x.size]


@dataclass(frozen=True)
class Sorted:
    """A step's vocabulary at one temperature t > 0, largest first: the head one by one, then the bins."""

    q: np.ndarray  # (M,) float64 the head's logits / t (a float32 division, as the temperature stage's)
    e: np.ndarray  # (M,) exp(q - m)
    m: float  # q[0]
    z: float  # sum of exp(q - m) over the vocabulary
    ed: float  # sum of exp(q - m) (q - m) over it (the entropy's)
    be: np.ndarray  # (B,) each bin's sum of exp(q - m)
    bd: np.ndarray  # (B,) each bin's mean of q - m
    bc: np.ndarray  # (B,) tokens per bin
    bt: np.ndarray  # (B,) each bin's top edge, as q - m
    sw: float  # the bins' width, as q (width / t)
    exact: bool  # z and ed are the rest's recorded sums (t on its grid), not the histogram's

    @property
    def V(self) -> int:
        return int(self.q.size + self.bc.sum())


def _model(rest: RestRecord, t: float) -> np.ndarray:
    """(B,) the bins' sums of exp(x / t - hi / t) as the histogram alone has them (each token at its bin's mean)."""
    return np.asarray(rest.counts, np.float64) * np.exp((means(rest) - rest.hi) / t)


def _others(rest: RestRecord, t: float) -> tuple[float, float, bool]:
    """(log sum exp(x / t), mean of x / t) over the rest below its kept logits, and whether exact: the
    recorded sums on the grid; between grid points the histogram's, times the grid's own correction."""
    T = np.asarray(rest.temperatures, np.float64)
    at = np.flatnonzero(np.isclose(T, t, rtol=1e-6, atol=0))  # (float32: the grid is 0.05 apart)
    if at.size:
        return float(rest.lse[at[0]]), float(rest.mean[at[0]]), True
    if not np.asarray(rest.counts).sum():
        return -math.inf, 0.0, False
    model = [math.log(max(_model(rest, u).sum(), 1e-300)) + rest.hi / u for u in T]
    fix = np.interp(1.0 / t, 1.0 / T[::-1], (np.asarray(rest.lse) - model)[::-1])  # log(recorded / histogram)
    w = _model(rest, t)
    mean = float(w @ (means(rest) / t) / max(w.sum(), 1e-300))
    return math.log(max(w.sum(), 1e-300)) + rest.hi / t + float(fix), mean, False


def _tilt(s: float) -> float:
    """How far the mean of a bin's tokens moves, in bin widths, when each is weighted by exp(x / t) (s = width / t),
    its tokens taken as spread evenly over it: 1 / (1 - exp(-s)) - 1 / s - 1 / 2 (s / 12 for small s)."""
    return s / 12 if s < 1e-3 else 1.0 / -math.expm1(-s) - 1.0 / s - 0.5


def at(xs: np.ndarray, rest: RestRecord, t: float) -> Sorted:
    """The step laid out at temperature t > 0 (`xs` from `head`)."""
    q = (np.asarray(xs, np.float32) / np.float32(t)).astype(np.float64)  # (M,)
    m = float(q[0]) if q.size else 0.0
    e = np.exp(q - m)
    lse, mean, exact = _others(rest, t)
    zo = math.exp(lse - m) if lse > -math.inf else 0.0
    be = _model(rest, t) * math.exp(rest.hi / t - m) if np.size(rest.counts) else np.zeros(0)
    be = be * (zo / be.sum()) if be.sum() > 0 else be  # the bins share the others' sum as the histogram has it
    bd = (means(rest) + _tilt(rest.width / t) * rest.width) / t - m  # (each bin's mean weighted as its tokens are)
    return Sorted(q=q, e=e, m=m, z=float(e.sum()) + zo, ed=float(e @ (q - m)) + zo * (mean - m), be=be, bd=bd,
                  bc=np.asarray(rest.counts, np.int64), bt=(rest.hi - np.arange(bd.size) * rest.width) / t - m, sw=rest.width / t,
                  exact=exact)


def top_k_count(S: Sorted, k: int) -> int:
    """Tokens top-k keeps: the k largest and every tie of the k-th (within the head; past it, k: an estimate)."""
    M = S.q.size
    if k <= M:
        return k + int(np.count_nonzero(S.q[k:] >= S.q[k - 1]))  # sorted: the ties follow the k-th
    return min(k, S.V)


def prefix(S: Sorted, n: int) -> tuple[float, float]:
    """Sums of exp(q - m) and exp(q - m)(q - m) over the n largest (past the head: whole bins, then a share of one)."""
    M = S.q.size
    h = min(n, M)
    z, ed = float(S.e[:h].sum()), float(S.e[:h] @ (S.q[:h] - S.m))
    if n > M and S.bc.size:
        cc = np.cumsum(S.bc)
        b = min(int(np.searchsorted(cc, n - M, side="left")), cc.size - 1)
        j = min(n - M - (int(cc[b - 1]) if b else 0), int(S.bc[b]))
        share = j / S.bc[b] if S.bc[b] else 0.0
        z += float(S.be[:b].sum() + share * S.be[b])
        ed += float(S.be[:b] @ S.bd[:b] + share * S.be[b] * S.bd[b])
    return z, ed


def cut(S: Sorted, ps) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-p over the whole vocabulary (top-k off), for each p of `ps`: (n, tz, ted): the nucleus's size and the
    sums of exp(q - m) and exp(q - m)(q - m) over its part beyond the head (0 within it). In the head, TopP's own
    cumulative sum; beyond it the bins, each of a bin's tokens taken to hold the bin's mean probability: the
    probability kept is exact within half a token's, the count an estimate."""
    ps = np.atleast_1d(np.asarray(ps, np.float64)) - EPS
    M = S.q.size
    cum = np.cumsum(S.e / S.z)  # (M,) as TopP's cumsum (and the page's loop) adds them
    n = np.minimum(np.searchsorted(cum, ps, side="left") + 1, S.V)
    tz, ted = np.zeros(ps.size), np.zeros(ps.size)
    far = np.flatnonzero(n > M)
    if far.size:
        pb = S.be / S.z
        cb = (cum[-1] if M else 0.0) + np.cumsum(pb)  # (B,) cumulative probability at each bin's end
        cc, ce, ced = np.cumsum(S.bc), np.cumsum(S.be), np.cumsum(S.be * S.bd)
        b = np.searchsorted(cb, ps[far], side="left")  # the bin where each cut falls
        out = b >= cb.size
        b = np.minimum(b, cb.size - 1)
        before = np.where(b > 0, cb[b - 1], cum[-1] if M else 0.0)
        c = np.maximum(S.bc[b], 1)
        # within the bin its tokens are taken as spread evenly: the top fraction f of its width holds the share needed
        share = np.clip((ps[far] - before) / np.maximum(pb[b], 1e-300), 0, 1)
        f = np.where(out, 1.0, -np.log1p(-share * -np.expm1(-S.sw)) / S.sw)
        j = np.clip(np.ceil(f * c), 1, c)
        prev = lambda a: np.where(b > 0, a[b - 1], 0)  # noqa: E731  (the sum over the bins before)
        n[far] = M + prev(cc) + j
        # the probability kept: p, and half of one of the bin's tokens there for where within it the cut fell
        token = pb[b] / c * S.sw * np.exp(-f * S.sw) / -np.expm1(-S.sw)
        kept = np.where(out, cb[-1], np.maximum(ps[far], before) + 0.5 * token) * S.z
        tz[far] = kept - float(S.e.sum())
        u = np.maximum(f * S.sw, 1e-9)  # the part kept: its mean, weighted as its tokens are
        ted[far] = prev(ced) + (tz[far] - prev(ce)) * (S.bt[b] - u * (1 - (1 / -np.expm1(-u) - 1 / u)))
    return n, tz, ted


def nucleus(S: Sorted, p: float, alive: int, z_alive: float) -> tuple[int, float, float, bool]:
    """Top-p after the stages before it left `alive` tokens holding `z_alive`: (kept, their two sums, estimated)."""
    M = S.q.size
    if alive >= S.V:
        n, tz, ted = cut(S, [p])
        n, h = int(n[0]), min(int(n[0]), M)
        return n, float(S.e[:h].sum() + tz[0]), float(S.e[:h] @ (S.q[:h] - S.m) + ted[0]), n > M
    lim = min(alive, M)
    cum = np.cumsum(S.e[:lim] / z_alive)
    n = min(int(np.searchsorted(cum, p - EPS, side="left")) + 1, lim)
    return n, float(S.e[:n].sum()), float(S.e[:n] @ (S.q[:n] - S.m)), alive > M


def min_p_count(S: Sorted, p: float) -> int:
    """Tokens min-p keeps over the whole vocabulary when every token of the head does: the head, and the bins' share
    lying at or above the threshold q - m >= log p: an estimate. Within a bin the tokens' density is taken as linear in
    depth, 1 + a (u - 1/2) over u in [0, 1] from its top edge, its slope set by the bin's mean depth as exp(q - m) weighs
    it (`bd`: the count then matches the mass `prefix` gives it best), clipped to stay >= 0; the share above depth u is
    u + a (u^2 - u) / 2."""
    if not S.bc.size:
        return S.q.size
    u = np.clip((S.bt - math.log(p)) / S.sw, 0.0, 1.0)  # (B,) how deep into each bin the threshold lies
    a = np.clip(12.0 * (np.clip((S.bt - S.bd) / S.sw, 0.0, 1.0) - 0.5), -2.0, 2.0)
    return S.q.size + int(round(float((u + a * (u * u - u) / 2) @ S.bc)))


def min_p_keep(S: Sorted, p: float, alive: int, z_alive: float, ed_alive: float) -> tuple[int, float, float, bool]:
    """Min-p after the stages before it left `alive` tokens holding `z_alive`: (kept, their two sums, estimated).
    sampling.MinP's own test, probs >= p x the largest, on the head's exp(q - m) / z (the most likely is e = 1); when every
    alive token of the head passes and the bins are alive, the count past the head is min_p_count's estimate."""
    M = S.q.size
    lim = min(alive, M)
    n = int(np.count_nonzero(S.e[:lim] / z_alive >= p * (1.0 / z_alive)))  # (sorted: the passing ones come first)
    if n < lim or alive <= M:
        return n, float(S.e[:n].sum()), float(S.e[:n] @ (S.q[:n] - S.m)), False
    n = min(min_p_count(S, p), alive)
    if n >= alive:
        return alive, z_alive, ed_alive, alive > M
    z, ed = prefix(S, n)
    return n, z, ed, True


@dataclass(frozen=True)
class Shape:
    """A step's distribution under some settings, from its RestRecord."""

    final: np.ndarray  # (N,) each top candidate's probability in the distribution sampled from
    kept: np.ndarray  # (N,) bool: it survives every stage
    stages: tuple[tuple[str, float, int, float, bool], ...]  # (name, param, kept, mass, the count is an estimate)
    entropy: float  # bits, of the distribution sampled from
    exact: bool  # the temperature is on the rest's grid (the softmax's sum recorded, not estimated)


def reshape(step: StepRecord, rest: RestRecord, *, temperature: float, top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0) -> Shape:
    """The stages (the rest's repetition penalty, temperature, top-k, top-p, min-p) applied to the step laid out by `at`:
    assets/viewer_sampling.js's reshape, on the numbers viz.viewer.sampling gives it."""
    xs, ranks = head(step, rest)
    V = ranks.size + rest.size
    st = [("repetition_penalty", rest.penalty, V, 1.0, False)] if rest.penalty != 1.0 else []
    if temperature == 0:  # greedy: the first of the largest, with its raw probability kept
        S1 = at(xs, rest, 1.0)
        st.append(("temperature", 0.0, 1, 1.0 / S1.z, False))
        return Shape((ranks == 0).astype(np.float64), ranks == 0, tuple(st), 0.0, S1.exact)
    S = at(xs, rest, temperature)
    st.append(("temperature", float(temperature), V, 1.0, False))
    n, z, ed = V, S.z, S.ed
    k = int(round(top_k))
    if k >= V:
        st.append(("top_k", float(k), V, 1.0, False))
    elif k > 0:
        n = top_k_count(S, k)
        z, ed = prefix(S, n)
        st.append(("top_k", float(k), n, z / S.z, n > S.q.size))
    if top_p < 1.0:
        n, z2, ed, est = nucleus(S, top_p, n, z)
        st.append(("top_p", float(top_p), n, z2 / z, est))
        z = z2
    if min_p > 0:
        n, z2, ed, est = min_p_keep(S, min_p, n, z, ed)
        st.append(("min_p", float(min_p), n, z2 / z, est))
        z = z2
    kept = ranks < n
    final = np.where(kept, S.e[np.minimum(ranks, S.q.size - 1)] / z, 0.0)
    return Shape(final, kept, tuple(st), max(0.0, (math.log(z) - ed / z) * sampling.LOG2E), S.exact)

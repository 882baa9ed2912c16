"""The sampling tables of a step saved without its full-vocabulary logits (viz.viewer.sampling's module doc).

"rest": the step's summary of the rest of its vocabulary (pipeline.sampling.rest, made after its own repetition penalty
`pen`): the head is its candidates and the rest's kept logits, the sums exact on the grid, a nucleus or a min-p
cut past the head the histogram's estimate (within 1e-3). "range": an older step with neither, per grid
temperature the two ends of the rest's sum (`rlo`, `rhi`), from which the page computes the range each number
lies in as pipeline.sampling.rest_bounds does (no penalty). "top-N": the recorded top N alone. `alt` holds the tables
viz.distribution.reshape falls back to at another penalty: "range" at penalty 1, else "topn".
"""
from __future__ import annotations

import numpy as np

from pipeline.sampling import rest
from pipeline.sampling import rest_bounds
from pipeline.trace.records import RestRecord, StepRecord

from viz.viewer.grid import GUARD, MIN_PS, TEMPERATURES, TOP_PS, packed, scaled


def usable_ranges(step: StepRecord, vocab_size: int | None) -> bool:
    """Whether pipeline.sampling.rest_bounds can bound this step's numbers (with no penalty)."""
    return bool(vocab_size) and rest_bounds.rest_sums(step, vocab_size, 1.0) is not None


def range_tables(step: StepRecord, vocab_size: int) -> dict:
    """An older step's tables (pipeline.sampling.rest_bounds): its candidates, and per grid temperature the two ends of the
    rest's sum, as the page's reshape uses them (exp(. - q_max))."""
    x = np.asarray(step.top_logits, np.float32)
    lo, hi = [], []
    for t in TEMPERATURES:
        sums = rest_bounds.rest_sums(step, vocab_size, t) if t else (0.0, 0.0)
        m = float(scaled(x[:1], t)[0]) if t else 0.0
        lo.append(float(np.exp(sums[0] - m))), hi.append(float(np.exp(sums[1] - m)))
    return {"kind": "range", "exact": False, "pen": 1.0, "V": int(vocab_size), "M": int(x.size), "head": packed(x, "f4"),
            "ranks": packed(np.arange(x.size), "i4"), "rlo": packed(lo, "f8"), "rhi": packed(hi, "f8"),
            "p0": float(np.exp(np.float64(x[0]) - step.logsumexp)), "entropy1": float(step.entropy)}


def _top_p_rows(S: rest.Sorted, M: int) -> tuple[int, list, list, list]:
    """rest.cut's nuclei (top-k off) from the first that ends within GUARD of the head's end: (first top-p index,
    sizes, and the two sums over each whole nucleus, as rest.nucleus adds them)."""
    ns, tz, ted = rest.cut(S, TOP_PS[:-1])
    far = np.flatnonzero(ns > M - GUARD)
    j = int(far[0]) if far.size else len(TOP_PS) - 1
    h = np.minimum(ns[j:], M)
    ce = np.concatenate([[0.0], np.cumsum(S.e)])
    ced = np.concatenate([[0.0], np.cumsum(S.e * (S.q - S.m))])
    return j, ns[j:].tolist(), (ce[h] + tz[j:]).tolist(), (ced[h] + ted[j:]).tolist()


def _min_p_rows(S: rest.Sorted) -> tuple[list, list, list]:
    """Min-p over the whole vocabulary at each grid value from the smallest on, while every token of the head passes
    (its cut then lies past the head: rest.min_p_keep's estimate): kept count and the two sums."""
    n, z, ed = [], [], []
    for p in MIN_PS[1:]:
        k, zz, e, _ = rest.min_p_keep(S, p, S.V, S.z, S.ed)
        if k < S.q.size:
            break
        n.append(k), z.append(zz), ed.append(e)
    return n, z, ed


def rest_tables(step: StepRecord, r: RestRecord) -> dict:
    """The tables of a step from its rest of the vocabulary summarised (pipeline.sampling.rest), for every grid temperature."""
    xs, ranks = rest.head(step, r)
    M, V = xs.size, ranks.size + r.size
    z, ed, j0, mc = [], [], [], []
    tail, mtail = [[], [], []], [[], [], []]
    for t in TEMPERATURES:
        if t == 0:
            z.append(0.0), ed.append(0.0), j0.append(len(TOP_PS) - 1), mc.append(0)
            continue
        S = rest.at(xs, r, t)
        j, *rows = _top_p_rows(S, M)
        mrows = _min_p_rows(S)
        z.append(S.z), ed.append(S.ed), j0.append(j), mc.append(len(mrows[0]))
        for col, vals in zip(tail + mtail, rows + list(mrows)):
            col.extend(vals)
    return {
        "kind": "rest", "exact": False, "V": int(V), "M": int(M), "pen": float(r.penalty), "head": packed(xs, "f4"),
        "ctx": packed([], "f4"), "ranks": packed(ranks, "i2" if ranks.size and ranks.max() < 2**15 else "i4"), "z": packed(z, "f8"), "ed": packed(ed, "f8"),
        "tail": {"np": len(TOP_PS) - 1, "j0": packed(j0, "i4"), "nR": packed(tail[0], "i4"), "z": packed(tail[1], "f8"), "ed": packed(tail[2], "f8")},
        "minp": {"count": packed(mc, "i4"), "n": packed(mtail[0], "i4"), "z": packed(mtail[1], "f8"), "ed": packed(mtail[2], "f8")},
    }

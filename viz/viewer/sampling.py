"""What a browser needs to reshape a step's next-token distribution exactly as pipeline.sampling does.

The page's sliders take finitely many values (the grids below match ui/layout.py's sliders), so Python
precomputes, per step, the few numbers the browser cannot get from a short list. The repetition penalty
changes only the logits of the tokens already in the context, so a step with its full-vocabulary logits
ships the vocabulary split in two (kind "logits"):

- `ctx`: the context's tokens C (each once), their raw logits as float32, largest first (ties by id). The
  page penalises them itself, at any penalty, with the stage's float32 arithmetic.
- `head`: the largest M raw logits of the rest R, sorted by value descending with ties by id. M covers
  top-k's largest k with its ties, every recorded top candidate, and every token min-p can keep at any
  grid position (a token min-p keeps is at least min-p x the largest, so within log(0.01) of R's largest
  at temperature 2). `ranks`: each top candidate's place, in R's head (>= 0) or in `ctx` (-1 - index).
- `z[t]`, `ed[t]`: for every grid temperature t, the softmax sums over all of R, sum exp(q - q_R) and
  sum exp(q - q_R) (q - q_R) (for the entropy), q_R being R's largest: the page adds C's own.
- `tail`: the nuclei of top-p (top-k off) reaching the head's end or beyond, at the trace's own penalty
  `pen` (over the merged order): per grid temperature from index `j0[t]` of TOP_PS on, the kept tokens of R
  (`nR`, a prefix of R's order) and of C (`nC`, a prefix of ctx's), the nucleus's two sums in the frame of
  its largest logit, and `x`, the raw logit of its last token of R.
- `greedy`: per penalty of the bundle's `penalties`, the top candidate temperature 0 picks (-1: none of them).

At another penalty a nucleus past the head is not known exactly: the page interpolates between the trace's
own nuclei and says so (≈), see assets/viewer_sampling.js. Shipping the sorted rest of the vocabulary or a
table per penalty would make each step 4 to 20 times larger (docs/benchmarks.md).

A step without full logits (viz.viewer.sampling_rest): "rest" (its summary of the rest of the vocabulary,
pipeline.sampling.rest, made after its own penalty `pen`), "range" (an older step: pipeline.sampling.rest_bounds, no penalty),
"top-N" (the recorded top N alone, their context tokens penalised as C: `exact: false`); `alt` holds the
fallbacks viz.distribution.reshape takes at another penalty. `own`: the step's recorded numbers.
"""
from __future__ import annotations

import math

import numpy as np

from pipeline.sampling import rest
from pipeline.sampling import stages as sampling
from pipeline.trace.records import StepRecord

from viz.viewer.grid import GUARD, MIN_PS, PENALTIES, TEMPERATURES, TOP_K_MAX, TOP_P_EPS, TOP_PS, packed, scaled, unpacked
from viz.viewer.sampling_rest import range_tables, rest_tables, usable_ranges

__all__ = ["GUARD", "MIN_PS", "PENALTIES", "TEMPERATURES", "TOP_K_MAX", "TOP_P_EPS", "TOP_PS", "packed", "unpacked", "scaled"]

HEAD = 512  # logits of R shipped per step at least
HEAD_MAX = 4096  # at most this many for min-p's sake (past it min-p is approximate, said so)
PREFIX = 4096  # sorted tokens a step's top-p tables start from (more when the nucleus reaches further)
TAIL_PS = (*TOP_PS[:-1], 0.999)  # the tail table's top-p values: the slider's below 1, and one further point for the page's
# interpolation at another penalty (assets/viewer_sampling.js: beyond)


def ints(a) -> dict:
    """Whole numbers packed as int16 when they fit (most do: counts and places within a head or a context), else int32."""
    a = np.asarray(a, np.int64)
    return packed(a, "i2" if not a.size or (a.min() >= -2**15 and a.max() < 2**15) else "i4")


def sort_order(x: np.ndarray) -> np.ndarray:
    """Indices by value descending, ties by index ascending (np.argmax picks the first of a tie): a stable sort."""
    return np.argsort(-np.asarray(x, np.float64), kind="stable")


def penalised(x: np.ndarray, penalty: float, ids) -> np.ndarray:
    """The repetition-penalty stage itself on `x` (float32) over the token ids `ids`."""
    x = np.asarray(x, np.float32)
    return sampling.RepetitionPenalty(float(penalty), tuple(int(i) for i in ids))(x) if penalty != 1.0 else x


def head_size(xs: np.ndarray, ranks: np.ndarray, *, head: int) -> int:
    """Smallest M >= head holding the recorded top candidates (`ranks`: their places in `xs`, sorted descending)
    and, at every temperature, every token tied with the k-th largest for k up to TOP_K_MAX (top-k keeps ties)."""
    V = xs.size
    m = max(head, TOP_K_MAX + 1, int(ranks.max()) + 1 if ranks.size else 0)
    kc = min(TOP_K_MAX, V)
    for t in TEMPERATURES[1:]:
        q = scaled(xs, t)  # sorted descending too: division by t > 0 is monotone
        m = max(m, int(np.count_nonzero(q >= q[kc - 1])))
    return min(m, V)


def min_p_reach(xs: np.ndarray) -> int:
    """Tokens of `xs` (sorted descending) that min-p at its smallest step could keep at some grid temperature: those
    within log(min-p) of the largest at the largest temperature (the largest of all is never below xs[0])."""
    q = scaled(xs, TEMPERATURES[-1]).astype(np.float64)
    return int(np.count_nonzero(q - q[0] >= math.log(MIN_PS[1]) - 1e-6))


def context_order(x: np.ndarray, ctx) -> np.ndarray:
    """The context's token ids, each once, by raw logit descending, ties by id (the order any penalty keeps)."""
    c = np.unique(np.asarray(ctx, np.int64))
    c = c[(c >= 0) & (c < x.size)]
    return c[np.lexsort((c, -x[c].astype(np.float64)))]


def greedy_picks(x: np.ndarray, top: np.ndarray, corder: np.ndarray, r0: int, pens) -> list[int]:
    """Per penalty: the top candidate (its index in `top`) temperature 0 picks, np.argmax of the penalised logits
    (the first id of a tie) among R's largest `r0` and the context; -1 where it is none of them."""
    where = {int(i): j for j, i in enumerate(top)}
    ids = np.concatenate([[r0], corder]) if r0 >= 0 else corder
    out = []
    for pen in pens:
        v = np.concatenate([x[[r0]], penalised(x[corder], pen, range(corder.size))]) if r0 >= 0 else penalised(x[corder], pen, range(corder.size))
        out.append(where.get(int(ids[v == v.max()].min()), -1))
    return out


def _prefix(e: np.ndarray, order: np.ndarray, z: float, M: int, start: int = 0):
    """The sorted values of e, as far as the tail table's largest nucleus reaches (at least PREFIX tokens and the head),
    and their cumulative probability, as TopP's own cumsum adds them: a cumsum adds in order, so its first values are
    the whole cumsum's, and a longer one goes on from the last sum (the same additions). `start`: the length to try
    first (the reach at a lower temperature: a nucleus only grows with the temperature)."""
    V, reach = e.size, TAIL_PS[-1] - TOP_P_EPS
    L = min(V, max(PREFIX, M + GUARD, start))
    es = e[order[:L]]
    cum = np.cumsum(es / z)  # (not np.dot: it hands so small a sum to BLAS threads, whose start dwarfs it)
    while L < V and cum[-1] < reach:
        more = e[order[L:min(V, 4 * L)]]
        cum = np.concatenate([cum, np.cumsum(np.concatenate([cum[-1:], more / z]))[1:]])
        es, L = np.concatenate([es, more]), L + more.size
    return es, cum


def _tail(es, ds, cum, Z: float, cpos: np.ndarray, rpos: np.ndarray, xo: np.ndarray, Mh: int) -> tuple[int, list]:
    """First index of TAIL_PS whose nucleus (top-k off) ends within GUARD of the merged head's end (Mh) or beyond, and per
    value from there: kept tokens of R and of C, the nucleus's two sums, the raw logit of its last token of R.
    es, ds, cum: the merged order's values as far as the largest nucleus; cpos, rpos: the places of C's and R's
    tokens in that order; xo: the logits in that order."""
    ps = np.asarray(TAIL_PS)
    n = np.minimum(np.maximum(np.searchsorted(cum, ps - TOP_P_EPS, side="left") + 1, 1), cum.size)
    far = np.flatnonzero(n > Mh - GUARD)
    j0 = int(far[0]) if far.size else ps.size
    ns = n[j0:]
    if not ns.size:
        return j0, [[], [], [], [], []]
    nC = np.searchsorted(cpos, ns - 1, side="right")  # C's tokens among the first n
    nR = ns - nC
    last = rpos[np.maximum(nR, 1) - 1]
    ed = np.cumsum(es[:int(ns.max())] * ds[:int(ns.max())])[ns - 1]
    return j0, [nR.tolist(), nC.tolist(), (cum[ns - 1] * Z).tolist(), ed.tolist(), xo[last].tolist()]


def _split(x: np.ndarray, top: np.ndarray, ctx, pen: float) -> dict:
    """The vocabulary `x` split into the context C (`corder`: by raw logit) and the rest R (`rorder`), the merged order
    at the penalty `pen` (`order`, the places of C's and R's tokens in it: `c_at`, `r_at`), and each top candidate's
    place (`ranks`: in R's order, or -1 - its place in C's)."""
    V = x.size
    corder = context_order(x, ctx)
    isC = np.zeros(V, bool)
    isC[corder] = True
    x0 = penalised(x, pen, corder)
    order = sort_order(x0)  # the merged order at the trace's own penalty
    inC = isC[order]
    c_at, r_at = np.flatnonzero(inC), np.flatnonzero(~inC)
    rorder = order[r_at]  # R by raw logit (unpenalised: the same as x0 there)
    pos = np.full(V, -1, np.int64)
    pos[rorder] = np.arange(rorder.size)
    pos[corder] = -1 - np.arange(corder.size)
    return dict(corder=corder, x0=x0, order=order, c_at=c_at, r_at=r_at, rorder=rorder, ranks=pos[np.asarray(top, np.int64)])


def _per_temperature(sp: dict, Mh: int) -> tuple[list, list, list, list]:
    """At each grid temperature: R's two sums in the frame of R's largest (`z`, `ed`), and the tail table's rows."""
    x0, order, corder, rorder = sp["x0"], sp["order"], sp["corder"], sp["rorder"]
    xo, z, ed, j0, tail = x0[order], [], [], [], [[], [], [], [], []]
    reach = 0  # the prefix the last temperature's nuclei needed
    for t in TEMPERATURES:
        if t == 0:  # greedy needs no sums of its own
            z.append(0.0), ed.append(0.0), j0.append(len(TAIL_PS))
            continue
        q = scaled(x0, t).astype(np.float64)  # (V,) in vocabulary order, as the pipeline sums it
        m = q[order[0]]
        d = q - m
        e = np.exp(d)
        Z = e.sum()
        es, cum = _prefix(e, order, Z, Mh, reach)
        reach = es.size
        j, rows = _tail(es, d[order[:es.size]], cum, Z, sp["c_at"], sp["r_at"], xo, Mh)
        j0.append(j)
        for col, vals in zip(tail, rows):
            col.extend(vals)
        e[corder] = 0.0  # R's own sums, moved to the frame of R's largest
        zr, edr = e.sum(), (e * d).sum()
        mr = float(q[rorder[0]]) if rorder.size else m
        s = math.exp(m - mr)
        z.append(zr * s), ed.append(s * (edr + zr * (m - mr)))
    return z, ed, j0, tail


def vocab_tables(x: np.ndarray, top: np.ndarray, ctx, *, pen: float, pens, head: int = HEAD) -> dict:
    """The tables of one step's full-vocabulary logits `x` (V,), its top candidates' ids `top` and its context's ids
    `ctx`, at the trace's own penalty `pen` (the module doc)."""
    x = np.asarray(x, np.float32)
    sp = _split(x, top, ctx, pen)
    xs, ranks = x[sp["rorder"]], sp["ranks"]
    M = min(xs.size, max(head_size(xs, ranks[ranks >= 0], head=head), min(min_p_reach(xs) + 1, HEAD_MAX))) if xs.size else 0
    # (+1: the first that fails, so the page sees where min-p's cut falls)
    Mh = x.size if M == xs.size else int(sp["r_at"][M - 1]) + 1  # the merged head at the trace's penalty
    z, ed, j0, tail = _per_temperature(sp, Mh)
    return {
        "kind": "logits", "exact": True, "V": int(x.size), "M": int(M), "pen": float(pen),
        "head": packed(xs[:M], "f4"), "ctx": packed(x[sp["corder"]], "f4"), "ranks": ints(ranks),
        "z": packed(z, "f8"), "ed": packed(ed, "f8"),
        "tail": {"np": len(TAIL_PS), "j0": packed(j0, "i4"), "nR": packed(tail[0], "i4"), "nC": ints(tail[1]),
                 "z": packed(tail[2], "f8"), "ed": packed(tail[3], "f8"), "x": packed(tail[4], "f4")},
        "greedy": ints(greedy_picks(x, top, sp["corder"], int(sp["rorder"][0]) if sp["rorder"].size else -1, pens)),
    }


def top_n_tables(step: StepRecord, *, pens) -> dict:
    """The recorded top N alone, the context's ids among them penalised (viz.distribution.reshape's last resort): the
    whole of this small vocabulary is shipped, so the page sums it itself (no `z`, `ed` or tail)."""
    ids = np.asarray(step.top_ids, np.int64)
    seen = set(int(i) for i in step.context_ids)
    x = np.asarray(step.top_logits, np.float32)
    sp = _split(x, np.arange(ids.size), [j for j, i in enumerate(ids) if int(i) in seen], 1.0)
    r0 = int(sp["rorder"][0]) if sp["rorder"].size else -1
    return {"kind": "top-N", "exact": False, "V": int(x.size), "M": int(sp["rorder"].size), "pen": 1.0,
            "head": packed(x[sp["rorder"]], "f4"), "ctx": packed(x[sp["corder"]], "f4"), "ranks": ints(sp["ranks"]),
            "greedy": ints(greedy_picks(x, np.arange(ids.size), sp["corder"], r0, pens))}


def own(step: StepRecord) -> dict:
    """The step's recorded numbers: what its own settings give, read as they were computed."""
    return {"stages": [[st.name, float(st.param), int(st.kept), float(st.mass)] for st in step.stages],
            "final": packed(step.top_final_probs, "f4"), "entropy": float(step.final_entropy)}


def penalties(penalty: float) -> list[float]:
    """The penalty grid the page's slider takes, and the trace's own penalty."""
    return sorted(set(PENALTIES) | {float(penalty)})


def fallback_tables(step: StepRecord, vocab_size: int | None, *, pens) -> dict:
    """The tables of a step without full logits, in viz.distribution.reshape's order of sources (rest, range, top N)."""
    ranges = usable_ranges(step, vocab_size)
    if step.rest is not None and rest.usable(step.rest, step.rest.penalty):
        out = rest_tables(step, step.rest)
        out["alt"] = {"topn": top_n_tables(step, pens=pens)}
        if ranges and step.rest.penalty != 1.0:
            out["alt"]["range"] = range_tables(step, vocab_size)
        return out
    if ranges:
        return {**range_tables(step, vocab_size), "alt": {"topn": top_n_tables(step, pens=pens)}}
    return top_n_tables(step, pens=pens)


def step_tables(step: StepRecord, *, penalty: float = 1.0, head: int = HEAD, vocab_size: int | None = None, pens=None) -> dict:
    """The JSON-ready sampling data of one step (see the module doc); `penalty`: the trace's own."""
    pens = penalties(penalty) if pens is None else pens
    if step.logits is not None:
        out = vocab_tables(step.logits, step.top_ids, step.context_ids, pen=penalty, pens=pens, head=head)
    else:
        out = fallback_tables(step, vocab_size, pens=pens)
    out["own"] = own(step)
    return out


def sampling_bundle(steps, *, penalty: float = 1.0, min_p: float = 0.0, head: int = HEAD, vocab_size: int | None = None) -> dict:
    """The grids and every step's tables: what assets/viewer_sampling.js's reshape reads. `penalty`, `min_p`: the
    trace's own (what the offline page, with no slider for them, applies)."""
    pens = penalties(penalty)
    return {
        "temperatures": list(TEMPERATURES), "top_ps": list(TOP_PS), "top_k_max": TOP_K_MAX, "min_ps": list(MIN_PS),
        "penalties": pens, "penalty": float(penalty), "min_p": float(min_p), "eps": TOP_P_EPS, "log2e": float(sampling.LOG2E),
        "steps": [step_tables(s, penalty=penalty, head=head, vocab_size=vocab_size, pens=pens) for s in steps],
    }

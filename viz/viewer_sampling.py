"""What a browser needs to reshape a step's next-token distribution exactly as pipeline.sampling does.

The page's sliders take finitely many values (the grids below match app.py's sliders), so
Python precomputes, per step, the few numbers the browser cannot get from a short list:

- `head`: the largest M logits (after the trace's repetition penalty), sorted by value
  descending with ties by id, as float32. M covers top-k's largest k with its ties, and every
  recorded top candidate. Temperature, top-k and top-p inside the head are plain arithmetic
  on these numbers in assets/viewer_sampling.js.
- `z[t]`, `ed[t]`: for every temperature t of the grid, the softmax denominator over the full
  vocabulary, sum exp(q - q_max), and sum exp(q - q_max) (q - q_max) (for the entropy).
- `tail`: for every temperature and top-p value whose nucleus (top-k off) reaches beyond the
  head, the nucleus size and the two sums over its part beyond the head.
- `own`: the step's recorded numbers, what the page shows at the step's own settings.

`kind` says where they come from: "logits" (the step's full-vocabulary logits: exact); "rest" (a
step saved without them: its summary of the rest of the vocabulary, pipeline.rest: the head is its
candidates and the rest's kept logits, the sums exact on the grid, a nucleus past the head the
histogram's estimate, within 1e-3); "range" (an older step with neither: its candidates and the two
ends of the rest's sum per temperature, `rlo` and `rhi`, from which the page computes the range each
number lies in as pipeline.rest_bounds does); "top-N" (no vocabulary size to bound with, or a
repetition penalty: the recorded top N alone, `exact: false`).
"""
from __future__ import annotations

import base64

import numpy as np

from pipeline import rest, rest_bounds, sampling
from pipeline.records import RestRecord, StepRecord

TEMPERATURES = (0.0, *rest.GRID)  # app.py: Slider(0, 2, step=0.05)
TOP_PS = tuple(round(0.01 * i, 2) for i in range(1, 101))  # app.py: Slider(0.01, 1, step=0.01); 1 is off
TOP_K_MAX = 200  # app.py: Slider(0, 200, step=1); 0 is off
HEAD = 512  # logits shipped per step at least
GUARD = 8  # nuclei within this many tokens of the head's end are taken from the table, not recomputed
TOP_P_EPS = 1e-12  # pipeline.sampling.TopP's tolerance on the cumulative probability
PREFIX = 4096  # sorted tokens a step's top-p tables start from (more when the nucleus reaches further)


def packed(a: np.ndarray, dtype: str) -> dict:
    """A little-endian typed array as Plotly's own JSON form: {"dtype": "f4", "bdata": base64}."""
    arr = np.ascontiguousarray(np.asarray(a), dtype=np.dtype(dtype).newbyteorder("<"))
    return {"dtype": dtype, "bdata": base64.b64encode(arr.tobytes()).decode("ascii")}


def unpacked(d: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(d["bdata"]), dtype=np.dtype(d["dtype"]).newbyteorder("<"))


def penalised(step: StepRecord, penalty: float) -> tuple[np.ndarray, np.ndarray, bool]:
    """(logits after the repetition penalty (float32), their token ids, exact).

    Exact: the step's full-vocabulary logits. Otherwise the recorded top N, penalised where
    their ids occur in the context, as viz.distribution.reshape approximates."""
    if step.logits is not None:
        x, ids, ctx = np.asarray(step.logits, np.float32), np.arange(np.size(step.logits)), step.context_ids
    else:
        x, ids = np.asarray(step.top_logits, np.float32), np.asarray(step.top_ids, np.int64)
        seen = set(int(i) for i in step.context_ids)
        ctx = tuple(j for j, i in enumerate(ids) if int(i) in seen)
    if penalty != 1.0:
        x = sampling.RepetitionPenalty(float(penalty), tuple(int(i) for i in ctx))(x)
    return x, ids, step.logits is not None


def sort_order(x: np.ndarray) -> np.ndarray:
    """Indices by value descending, ties by index ascending (np.argmax picks the first of a tie)."""
    return np.lexsort((np.arange(x.size), -np.asarray(x, np.float64)))


def scaled(x: np.ndarray, t: float) -> np.ndarray:
    """The temperature stage itself (float32 division), t > 0."""
    return sampling.Temperature(float(t))(x)


def head_size(xs: np.ndarray, ranks: np.ndarray, *, head: int) -> int:
    """Smallest M >= head holding the recorded top candidates and, at every temperature, every
    token tied with the k-th largest for k up to TOP_K_MAX (top-k keeps ties)."""
    V = xs.size
    m = max(head, TOP_K_MAX + 1, int(ranks.max()) + 1 if ranks.size else 0)
    kc = min(TOP_K_MAX, V)
    for t in TEMPERATURES[1:]:
        q = scaled(xs, t)  # sorted descending too: division by t > 0 is monotone
        m = max(m, int(np.count_nonzero(q >= q[kc - 1])))
    return min(m, V)


def _sums(x: np.ndarray, order: np.ndarray, t: float, M: int):
    """At temperature t: (z, ed, e and d in sorted order, cumulative probability in sorted order),
    with pipeline.sampling.softmax's own arithmetic (the same sum, the same cumsum as TopP).

    The sorted values and their cumulative sum stop where it passes the largest top-p below 1 (at
    least PREFIX tokens and the head): a cumsum adds in order, so its first values are the whole
    cumsum's; top-p never looks further."""
    q = scaled(x, t).astype(np.float64)  # (V,) in vocabulary order, as the pipeline sums it
    m = q[order[0]]
    d = q - m
    e = np.exp(d)
    z = e.sum()
    V, reach = x.size, TOP_PS[-2] - TOP_P_EPS
    L = min(V, max(PREFIX, M + GUARD))
    while True:
        head = order[:L]
        es = e[head]
        cum = np.cumsum(es / z)  # (not np.dot: it hands so small a sum to BLAS threads, whose start dwarfs it)
        if L == V or cum[-1] >= reach:
            break
        L = min(V, 4 * L)
    return float(z), float((e * d).sum()), es, d[head], cum


def _tail(es, ds, cum, M: int, V: int) -> tuple[int, list, list, list]:
    """First top-p index whose nucleus (top-k off) ends within GUARD of the head or beyond, and per
    top-p value from there: nucleus size, sum of e and of e*d over its part beyond the head.
    es, ds, cum: the sorted values as far as the largest nucleus (see _sums)."""
    ps = np.asarray(TOP_PS[:-1])  # 1.0 is off
    n = np.searchsorted(cum, ps - TOP_P_EPS, side="left") + 1
    n = np.minimum(np.maximum(n, 1), V)
    far = np.flatnonzero(n > M - GUARD)
    j0 = int(far[0]) if far.size else ps.size
    ns = n[j0:]
    beyond = np.maximum(ns - M, 0)
    if not ns.size:
        return j0, [], [], []
    b = int(beyond.max())
    ce = np.concatenate([[0.0], np.cumsum(es[M:M + b])])  # ce[i]: sum of the first i tail values
    ced = np.concatenate([[0.0], np.cumsum(es[M:M + b] * ds[M:M + b])])
    return j0, ns.tolist(), ce[beyond].tolist(), ced[beyond].tolist()


def step_tables(step: StepRecord, *, penalty: float = 1.0, head: int = HEAD, vocab_size: int | None = None) -> dict:
    """The JSON-ready sampling data of one step (see the module docstring)."""
    if step.logits is None and rest.usable(step.rest, penalty):
        out = rest_tables(step, step.rest)
    elif step.logits is None and vocab_size and penalty == 1.0 and rest_bounds.rest_sums(step, vocab_size, 1.0):
        out = range_tables(step, vocab_size)
    else:
        out = vocab_tables(step, penalty=penalty, head=head)
    out["own"] = own(step)
    return out


def own(step: StepRecord) -> dict:
    """The step's recorded numbers: what its own settings give, read as they were computed."""
    return {"stages": [[st.name, float(st.param), int(st.kept), float(st.mass)] for st in step.stages],
            "final": packed(step.top_final_probs, "f4"), "entropy": float(step.final_entropy)}


def range_tables(step: StepRecord, vocab_size: int) -> dict:
    """An older step's tables (pipeline.rest_bounds): its candidates, and per grid temperature the two ends of the
    rest's sum, as the page's reshape uses them (exp(. - q_max))."""
    x = np.asarray(step.top_logits, np.float32)
    lo, hi = [], []
    for t in TEMPERATURES:
        sums = rest_bounds.rest_sums(step, vocab_size, t) if t else (0.0, 0.0)
        m = float(scaled(x[:1], t)[0]) if t else 0.0
        lo.append(float(np.exp(sums[0] - m))), hi.append(float(np.exp(sums[1] - m)))
    return {"kind": "range", "exact": False, "V": int(vocab_size), "M": int(x.size), "head": packed(x, "f4"),
            "ranks": packed(np.arange(x.size), "i4"), "rlo": packed(lo, "f8"), "rhi": packed(hi, "f8"),
            "p0": float(np.exp(np.float64(x[0]) - step.logsumexp)), "entropy1": float(step.entropy)}


def rest_tables(step: StepRecord, r: RestRecord) -> dict:
    """The tables of a step from its rest of the vocabulary summarised (pipeline.rest), for every grid temperature."""
    xs, ranks = rest.head(step, r)
    M, V = xs.size, ranks.size + r.size
    z, ed, j0, n, zt, edt = [], [], [], [], [], []
    nP = len(TOP_PS) - 1  # p = 1 is off
    for t in TEMPERATURES:
        if t == 0:
            z.append(0.0), ed.append(0.0), j0.append(nP)
            continue
        S = rest.at(xs, r, t)
        ns, tz, ted = rest.cut(S, TOP_PS[:-1])
        far = np.flatnonzero(ns > M - GUARD)
        j = int(far[0]) if far.size else nP
        z.append(S.z), ed.append(S.ed), j0.append(j), n.extend(ns[j:].tolist()), zt.extend(tz[j:].tolist()), edt.extend(ted[j:].tolist())
    return {
        "kind": "rest", "exact": False, "V": int(V), "M": int(M), "head": packed(xs, "f4"), "ranks": packed(ranks, "i4"),
        "z": packed(z, "f8"), "ed": packed(ed, "f8"),
        "tail": {"j0": packed(j0, "i4"), "n": packed(n, "i4"), "z": packed(zt, "f8"), "ed": packed(edt, "f8")},
    }


def vocab_tables(step: StepRecord, *, penalty: float = 1.0, head: int = HEAD) -> dict:
    """The tables from the step's full-vocabulary logits, else from its recorded top N alone."""
    x, ids, exact = penalised(step, penalty)
    V = x.size
    order = sort_order(x)
    pos = np.empty(V, np.int64)
    pos[order] = np.arange(V)
    at = np.asarray(step.top_ids, np.int64) if exact else np.arange(len(ids))  # each top candidate's index in x
    ranks = pos[at]  # (N,) rank of each top candidate
    xs = x[order]
    M = head_size(xs, ranks, head=head)
    z, ed, j0, n, zt, edt = [], [], [], [], [], []
    for t in TEMPERATURES:
        if t == 0:  # greedy needs no sums of its own
            z.append(0.0), ed.append(0.0), j0.append(len(TOP_PS) - 1)
            continue
        zt_, ed_, es, ds, cum = _sums(x, order, t, M)
        z.append(zt_), ed.append(ed_)
        j, n_, a, b = _tail(es, ds, cum, M, V)
        j0.append(j), n.extend(n_), zt.extend(a), edt.extend(b)
    return {
        "kind": "logits" if exact else "top-N", "exact": bool(exact), "V": int(V), "M": int(M),
        "head": packed(xs[:M], "f4"), "ranks": packed(ranks, "i4"),
        "z": packed(z, "f8"), "ed": packed(ed, "f8"),
        "tail": {"j0": packed(j0, "i4"), "n": packed(n, "i4"), "z": packed(zt, "f8"), "ed": packed(edt, "f8")},
    }


def sampling_bundle(steps, *, penalty: float = 1.0, head: int = HEAD, vocab_size: int | None = None) -> dict:
    """The grids and every step's tables: what assets/viewer_sampling.js's reshape reads."""
    return {
        "temperatures": list(TEMPERATURES), "top_ps": list(TOP_PS), "top_k_max": TOP_K_MAX,
        "penalty": float(penalty), "eps": TOP_P_EPS, "log2e": float(sampling.LOG2E),
        "steps": [step_tables(s, penalty=penalty, head=head, vocab_size=vocab_size) for s in steps],
    }

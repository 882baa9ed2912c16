"""A line-by-line Python mirror of assets/viewer_sampling.js's reshape for the kinds "logits", "top-N" and "rest"
(its tables from viz.viewer.sampling), so the tables can be checked against pipeline.sampling without a browser.
The browser's own numbers are checked in tests/browser/test_reshape_minp_penalty.py."""
from __future__ import annotations

import math

import numpy as np

from viz.viewer.grid import unpacked

f32 = np.float32


def grid_index(grid, v) -> int:
    return int(np.argmin(np.abs(np.asarray(grid) - v)))


def _tables(d: dict) -> dict:
    if "_p" not in d:
        g = None  # (none for the top N alone)
        if "tail" in d:
            t = d["tail"]
            g = {k: unpacked(t[k]) for k in ("j0", "nR", "z", "ed")}
            g["np"] = t["np"]
            g["nC"] = unpacked(t["nC"]) if "nC" in t else np.zeros(g["nR"].size, np.int32)
            g["x"] = unpacked(t["x"]) if "x" in t else np.zeros(g["nR"].size, np.float32)
        d["_p"] = dict(head=unpacked(d["head"]), ctx=unpacked(d["ctx"]), ranks=unpacked(d["ranks"]),
                       z=unpacked(d["z"]) if "z" in d else None, ed=unpacked(d["ed"]) if "ed" in d else None,
                       greedy=unpacked(d["greedy"]) if "greedy" in d else None, tail=g,
                       minp={k: unpacked(v) for k, v in d["minp"].items()} if "minp" in d else None)
    return d["_p"]


def penalised(x: np.ndarray, pen: float) -> np.ndarray:
    """The repetition penalty on every entry, float32 (the page's arithmetic: JS Math.fround)."""
    if pen == 1:
        return x
    return np.where(x < 0, (x * f32(pen)).astype(f32), (x / f32(pen)).astype(f32))


def layout(S: dict, d: dict, P: dict, t: int, pen: float) -> dict:
    """The head of R and the context at temperature index t (> 0) and penalty pen, merged largest first."""
    Tf = f32(S["temperatures"][t])
    qR = (P["head"] / Tf).astype(f32).astype(np.float64)
    qC = (penalised(P["ctx"], pen) / Tf).astype(f32).astype(np.float64)
    M, nCtx = qR.size, qC.size
    mR = qR[0] if M else -math.inf
    m = max(mR, qC.max() if nCtx else -math.inf)
    eR, eC = np.exp(qR - m), np.exp(qC - m)
    if P["z"] is None:  # the top N alone: all of R is here
        Z, ED = eR.sum() + eC.sum(), (eR * (qR - m)).sum() + (eC * (qC - m)).sum()
    else:
        s = math.exp(mR - m) if M else 0.0
        Z = P["z"][t] * s + eC.sum()
        ED = s * (P["ed"][t] + P["z"][t] * (mR - m)) + (eC * (qC - m)).sum()
    whole = M == d["V"] - nCtx
    cut = -math.inf if whole else qR[M - 1]
    nCh = int(np.count_nonzero(qC >= cut))
    q, e, src = [], [], []  # merged: the head of R and the context above its end
    i = j = 0
    while i < M or j < nCh:
        if j >= nCh or (i < M and qR[i] >= qC[j]):
            q.append(qR[i]), e.append(eR[i]), src.append(i)
            i += 1
        else:
            q.append(qC[j]), e.append(eC[j]), src.append(-1 - j)
            j += 1
    return dict(qR=qR, qC=qC, eR=eR, eC=eC, m=m, Z=Z, ED=ED, q=np.array(q), e=np.array(e), src=np.array(src, np.int64),
                nR=d["V"] - nCtx, nCtx=nCtx)


def _prefix(L: dict, n: int) -> dict:
    e, q, src = L["e"][:n], L["q"][:n], L["src"][:n]
    z, ed = 0.0, 0.0
    for a, b in zip(e, q):  # in order, as the page adds
        z += a
        ed += a * (b - L["m"])
    return dict(n=n, nR=int(np.count_nonzero(src >= 0)), nC=int(np.count_nonzero(src < 0)), z=z, ed=ed)


def top_k(d, L, k, alive, stages):
    V = d["V"]
    if k >= V:
        stages.append(("top_k", k, V, 1.0, False))
        return alive
    q = L["q"]
    kth, n = q[k - 1], k
    while n < q.size and q[n] >= kth:
        n += 1
    out = _prefix(L, n)
    stages.append(("top_k", k, n, out["z"] / alive["z"], False))
    return out


def _offset(S, g, t) -> int:
    """Where temperature t's rows start in the tail table (each holds the top-p values from j0[t] to np)."""
    return int(sum(g["np"] - g["j0"][u] for u in range(t)))


def top_p(S, d, P, L, t, j, alive, pen, stages):
    p, V = S["top_ps"][j], d["V"]
    g = P["tail"]
    if g is not None and alive["n"] == V and abs(pen - d["pen"]) <= 1e-9 * pen and j >= int(g["j0"][t]):
        j0 = int(g["j0"][t])
        at = _offset(S, g, t) + j - j0
        nR, nC = int(g["nR"][at]), int(g["nC"][at])
        out = dict(n=nR + nC, nR=nR, nC=nC, z=float(g["z"][at]), ed=float(g["ed"][at]))
        approx = d["kind"] == "rest" and out["n"] > d["M"]
    else:
        lim, c, n, tau = min(alive["n"], L["q"].size), 0.0, 0, p - S["eps"]
        while n < lim:
            c += L["e"][n] / alive["z"]
            n += 1
            if c >= tau:
                break
        approx = c < tau and alive["n"] > lim
        out = beyond(S, d, P, L, t, tau) if approx else _prefix(L, n)
    stages.append(("top_p", p, out["n"], out["z"] / alive["z"], approx))
    return out


def _curve(S, d, P, L, t) -> list:
    """Points (kept of R, their two sums, the cut's q) on R's cumulative sums past the head, in the frame of L: the head's
    end, the trace's own nuclei at temperature t (their context part taken off), all of R."""
    Tf, M, g = f32(S["temperatures"][t]), P["head"].size, P["tail"]
    qC0 = (penalised(P["ctx"], d["pen"]) / Tf).astype(f32).astype(np.float64)
    m0 = max(L["qR"][0], qC0.max() if qC0.size else -math.inf)
    eC0 = np.exp(qC0 - m0)
    cz, ced = np.concatenate([[0.0], np.cumsum(eC0)]), np.concatenate([[0.0], np.cumsum(eC0 * (qC0 - m0))])
    sh, m = math.exp(m0 - L["m"]), L["m"]
    pts = [(M, L["eR"].sum(), (L["eR"] * (L["qR"] - m)).sum(), L["qR"][M - 1])]
    j0, off = int(g["j0"][t]), _offset(S, g, t)
    for at in range(off, off + g["np"] - j0):
        nR, nC = int(g["nR"][at]), int(g["nC"][at])
        F, E = g["z"][at] - cz[nC], g["ed"][at] - ced[nC]
        if nR > pts[-1][0]:
            pts.append((nR, F * sh, sh * (E + F * (m0 - m)), float(f32(g["x"][at] / Tf))))
    zr = L["Z"] - L["eC"].sum()
    pts.append((L["nR"], zr, L["ED"] - (L["eC"] * (L["qC"] - m)).sum(), -math.inf))
    return pts


def beyond(S, d, P, L, t, tau) -> dict:
    """A nucleus past the head at another penalty than the tables': R's kept count and sums between the two points of
    its cumulative sums around the cut, the context's tokens above the cut added (approximate: said so on the page)."""
    pts, y = _curve(S, d, P, L, t), tau * L["Z"]
    G = [F + L["eC"][L["qC"] >= x].sum() for _, F, _, x in pts]
    i = next((i for i in range(1, len(pts)) if G[i] >= y), len(pts) - 1)
    (n0, F0, E0, x0), (n1, F1, E1, x1) = pts[i - 1], pts[i]
    f = min(1.0, max(0.0, (y - G[i - 1]) / max(G[i] - G[i - 1], 1e-300)))
    qc = x0 + f * (x1 - x0) if x1 > -math.inf else -math.inf
    kc = L["qC"] >= qc
    nR = min(n1, max(n0 + 1, int(round(n0 + f * (n1 - n0)))))
    F, E = F0 + f * (F1 - F0), E0 + f * (E1 - E0)
    ec, qcs = L["eC"][kc], L["qC"][kc]
    return dict(n=nR + int(kc.sum()), nR=nR, nC=int(kc.sum()), z=F + ec.sum(), ed=E + (ec * (qcs - L["m"])).sum())


def min_p(S, d, P, L, t, mp, alive, stages):
    lim = min(alive["n"], L["q"].size)
    e, za = L["e"], alive["z"]
    n = 0
    while n < lim and e[n] / za >= mp * (1 / za):
        n += 1
    approx = False
    if n < lim or alive["n"] <= L["q"].size:
        out = _prefix(L, n)
    elif P["minp"] is not None:
        cnt, i = P["minp"]["count"], grid_index(S["min_ps"], mp) - 1
        at = int(sum(cnt[:t])) + i
        nt = int(P["minp"]["n"][at]) if i < cnt[t] else lim
        if nt >= alive["n"]:
            out, approx = dict(alive), alive["n"] > d["M"]
        else:
            out, approx = dict(n=nt, nR=nt, nC=0, z=float(P["minp"]["z"][at]), ed=float(P["minp"]["ed"][at])), True
    else:
        out, approx = dict(alive), True
    stages.append(("min_p", mp, out["n"], out["z"] / alive["z"], approx))
    return out


def reshape(S: dict, s: int, T: float, k: int, p: float, mp: float = 0.0, pen: float | None = None) -> dict:
    d = S["steps"][s]
    P = _tables(d)
    pen = S["penalty"] if pen is None else S["penalties"][grid_index(S["penalties"], pen)]
    t = grid_index(S["temperatures"], T)
    p = S["top_ps"][grid_index(S["top_ps"], p)]
    mp = S["min_ps"][grid_index(S["min_ps"], mp)]
    stages = [("repetition_penalty", pen, d["V"], 1.0, False)] if pen != 1 else []
    N = P["ranks"].size
    if S["temperatures"][t] == 0:
        L1 = layout(S, d, P, S["temperatures"].index(1.0), pen)
        stages.append(("temperature", 0.0, 1, 1 / L1["Z"], False))
        g = P["greedy"]
        win = int(g[grid_index(S["penalties"], pen)]) if g is not None else int(np.flatnonzero(P["ranks"] == 0)[0])
        final = (np.arange(N) == win).astype(np.float64)
        return dict(stages=stages, final=final, entropy=0.0)
    L = layout(S, d, P, t, pen)
    stages.append(("temperature", S["temperatures"][t], d["V"], 1.0, False))
    alive = dict(n=d["V"], nR=L["nR"], nC=L["nCtx"], z=L["Z"], ed=L["ED"])
    if k > 0:
        alive = top_k(d, L, k, alive, stages)
    if p < 1:
        alive = top_p(S, d, P, L, t, grid_index(S["top_ps"], p), alive, pen, stages)
    if mp > 0:
        alive = min_p(S, d, P, L, t, mp, alive, stages)
    final = np.zeros(N)
    for i, r in enumerate(P["ranks"]):
        kept = r < alive["nR"] if r >= 0 else -1 - r < alive["nC"]
        final[i] = (L["eR"][r] if r >= 0 else L["eC"][-1 - r]) / alive["z"] if kept else 0.0
    H = (math.log(alive["z"]) - alive["ed"] / alive["z"]) * S["log2e"]
    return dict(stages=stages, final=final, entropy=max(0.0, H))

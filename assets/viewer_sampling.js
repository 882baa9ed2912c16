/* Reshaping a step's next-token distribution in the browser, with pipeline.sampling's arithmetic.
 *
 * `reshape` reads viz/viewer/sampling.py's tables (the bundle's `sampling`) and recomputes, for any position of the
 * temperature / top-k / top-p / min-p / repetition-penalty sliders, what pipeline.sampling would: each candidate's
 * final probability, what each stage kept and the probability it held, the entropy. Stages in transformers' order:
 * repetition penalty -> temperature -> top-k -> top-p -> min-p. The penalty lowers the context's tokens, which the
 * tables ship apart (`ctx`); they are penalised here with the stage's float32 arithmetic and merged with the head of
 * the rest of the vocabulary. At the step's own settings it gives the step's recorded numbers, as
 * viz.distribution.reshape does. A step's `kind` says where its tables come from: "logits" (exact; a top-p nucleus
 * reaching past the head at another penalty than the trace's is interpolated, `approx`, shown with ≈), "rest"
 * (the rest of the vocabulary summarised: a count past the head is an estimate, `approx`), "range" (an older step:
 * viewer_sampling_range.js) or "top-N"; `alt`, the fallbacks at another penalty. Needs viewer_text.js (decode).
 */
(function (root) {
  'use strict';

  const { decode } = root.LLMViewer;
  const close = (a, b) => Math.abs(a - b) <= 1e-9 + 1e-6 * Math.abs(b);

  // The grid point nearest v (the tables hold the sliders' grids only).
  function gridIndex(grid, v) {
    let best = 0;
    for (let i = 1; i < grid.length; i++) if (Math.abs(grid[i] - v) < Math.abs(grid[best] - v)) best = i;
    return best;
  }

  // Where each temperature's rows start in a table of per-temperature rows (counts[t] rows at temperature t).
  function offsets(counts) {
    const off = new Int32Array(counts.length);
    for (let t = 1; t < counts.length; t++) off[t] = off[t - 1] + counts[t - 1];
    return off;
  }

  // A table decoded once (kept on it, not enumerable: not in JSON).
  function prepared(S, d) {
    if (d._p) return d._p;
    let tail = null; // (none for the top N alone: the page has all of it)
    if (d.tail) {
      const g = d.tail, j0 = decode(g.j0), nP = g.np; // rows per temperature from j0 on: the top-p values up to index np
      tail = { j0, nP, off: offsets(Array.from(j0, (j) => nP - j)), nR: decode(g.nR), z: decode(g.z), ed: decode(g.ed) };
      tail.nC = g.nC ? decode(g.nC) : new Int32Array(tail.nR.length);
      tail.x = g.x ? decode(g.x) : null;
    }
    let minp = null;
    if (d.minp) {
      const count = decode(d.minp.count);
      minp = { count, off: offsets(count), n: decode(d.minp.n), z: decode(d.minp.z), ed: decode(d.minp.ed) };
    }
    const p = { V: d.V, M: d.M, kind: d.kind, pen: d.pen, head: decode(d.head), ctx: decode(d.ctx), ranks: decode(d.ranks),
                z: d.z ? decode(d.z) : null, ed: d.ed ? decode(d.ed) : null, greedy: d.greedy ? decode(d.greedy) : null, tail, minp, memo: {} };
    Object.defineProperty(d, '_p', { value: p });
    return p;
  }

  // The context's logits after the repetition penalty, as float32 (pipeline.sampling.RepetitionPenalty).
  function penalisedCtx(ctx, pen) {
    const out = new Float64Array(ctx.length), pf = Math.fround(pen);
    for (let i = 0; i < ctx.length; i++) out[i] = pen === 1 ? ctx[i] : ctx[i] < 0 ? Math.fround(ctx[i] * pf) : Math.fround(ctx[i] / pf);
    return out;
  }

  // The step at temperature index t (> 0) and penalty pen: R's head and the context (q = logit / T as float32, e =
  // exp(q - m)), their sums, and both merged largest first (the context's tokens below the head's end left out,
  // unless the head is all of R). src[i]: the merged token's place in R's head (>= 0) or in ctx (-1 - place).
  function layout(S, d, t, pen) {
    const key = `${t}|${pen}`;
    if (d.memo.key === key) return d.memo.L;
    const Tf = Math.fround(S.temperatures[t]), M = d.M, xc = penalisedCtx(d.ctx, pen), nCtx = xc.length;
    const qR = new Float64Array(M), qC = new Float64Array(nCtx), eR = new Float64Array(M), eC = new Float64Array(nCtx);
    for (let i = 0; i < M; i++) qR[i] = Math.fround(d.head[i] / Tf); // float32 division, as numpy does
    for (let i = 0; i < nCtx; i++) qC[i] = Math.fround(xc[i] / Tf);
    const mR = M ? qR[0] : -Infinity, m = Math.max(mR, nCtx ? qC[0] : -Infinity); // (ctx sorted: its largest first)
    let Z = 0, ED = 0;
    if (M && d.z) { const s = Math.exp(mR - m); Z = d.z[t] * s; ED = s * (d.ed[t] + d.z[t] * (mR - m)); }
    for (let i = 0; i < M; i++) eR[i] = Math.exp(qR[i] - m);
    if (!d.z) for (let i = 0; i < M; i++) { Z += eR[i]; ED += eR[i] * (qR[i] - m); } // (the top N alone: all of R is here)
    for (let i = 0; i < nCtx; i++) { eC[i] = Math.exp(qC[i] - m); Z += eC[i]; ED += eC[i] * (qC[i] - m); }
    const cut = M === d.V - nCtx ? -Infinity : qR[M - 1];
    let nCh = 0;
    while (nCh < nCtx && qC[nCh] >= cut) nCh++;
    const q = new Float64Array(M + nCh), e = new Float64Array(M + nCh), src = new Int32Array(M + nCh);
    for (let i = 0, j = 0, n = 0; n < M + nCh; n++) {
      if (j >= nCh || (i < M && qR[i] >= qC[j])) { q[n] = qR[i]; e[n] = eR[i]; src[n] = i++; } else { q[n] = qC[j]; e[n] = eC[j]; src[n] = -1 - j++; }
    }
    const L = { qR, qC, eR, eC, m, Z, ED, q, e, src, nR: d.V - nCtx, nCtx };
    d.memo = { key, L };
    return L;
  }

  // The first n merged tokens: how many of R and of the context, the sums of e and e * (q - m).
  function prefix(L, n) {
    let z = 0, ed = 0, nR = 0;
    for (let i = 0; i < n; i++) { z += L.e[i]; ed += L.e[i] * (L.q[i] - L.m); if (L.src[i] >= 0) nR++; }
    return { n, nR, nC: n - nR, z, ed };
  }

  function topK(d, L, k, alive, stages) {
    if (k >= d.V) { stages.push({ name: 'top_k', param: k, kept: d.V, mass: 1 }); return alive; }
    const kth = L.q[k - 1];
    let n = k;
    while (n < L.q.length && L.q[n] >= kth) n++; // ties with the k-th are kept (Python made the head hold them all)
    const out = prefix(L, n);
    stages.push({ name: 'top_k', param: k, kept: n, mass: out.z / alive.z });
    return out;
  }

  function topP(S, d, L, t, j, pen, alive, stages) {
    const g = d.tail, tau = S.top_ps[j] - S.eps;
    let out, approx = false;
    if (g && alive.n === d.V && close(pen, d.pen) && j >= g.j0[t]) { // the nucleus reaches the head's end: Python's table
      const at = g.off[t] + j - g.j0[t];
      out = { n: g.nR[at] + g.nC[at], nR: g.nR[at], nC: g.nC[at], z: g.z[at], ed: g.ed[at] };
      approx = d.kind === 'rest' && out.n > d.M; // past the head of a summarised rest, the count is the histogram's estimate
    } else { // inside the head: the smallest prefix whose cumulative probability reaches p
      const lim = Math.min(alive.n, L.q.length);
      let c = 0, n = 0;
      while (n < lim) { c += L.e[n] / alive.z; n++; if (c >= tau) break; }
      approx = c < tau && alive.n > lim;
      out = approx ? beyondHead(S, d, L, t, tau) : prefix(L, n);
    }
    stages.push({ name: 'top_p', param: S.top_ps[j], kept: out.n, mass: out.z / alive.z, approx });
    return out;
  }

  // Points on R's cumulative sums past the head, in L's frame: [kept of R, sum e, sum e (q - m), the cut's q]: the head's
  // end, the trace's own nuclei at temperature t (their context part, at the trace's penalty, taken off), all of R.
  function curve(S, d, L, t) {
    const g = d.tail, Tf = Math.fround(S.temperatures[t]), M = d.M, m = L.m, xc = penalisedCtx(d.ctx, d.pen);
    const qC0 = Array.from(xc, (x) => Math.fround(x / Tf)), m0 = Math.max(L.qR[0], qC0.length ? qC0[0] : -Infinity);
    const cz = [0], ced = [0];
    qC0.forEach((q, i) => { const e = Math.exp(q - m0); cz.push(cz[i] + e); ced.push(ced[i] + e * (q - m0)); });
    const head = prefix({ e: L.eR, q: L.qR, m, src: new Int32Array(M) }, M), sh = Math.exp(m0 - m);
    const pts = [[M, head.z, head.ed, L.qR[M - 1]]];
    for (let at = g.off[t]; at < g.off[t] + g.nP - g.j0[t]; at++) {
      const F = g.z[at] - cz[g.nC[at]], E = g.ed[at] - ced[g.nC[at]];
      if (g.nR[at] > pts[pts.length - 1][0]) pts.push([g.nR[at], F * sh, sh * (E + F * (m0 - m)), Math.fround(g.x[at] / Tf)]);
    }
    let zc = 0, edc = 0;
    L.eC.forEach((e, i) => { zc += e; edc += e * (L.qC[i] - m); });
    pts.push([L.nR, L.Z - zc, L.ED - edc, -Infinity]);
    return pts;
  }

  // A nucleus past the head at another penalty than the tables': R's kept count and sums between the two points of its
  // cumulative sums around the cut, the context's tokens above the cut added. Approximate, and said so (≈).
  function beyondHead(S, d, L, t, tau) {
    if (!d.tail.x) return prefix(L, L.q.length); // (a summarised rest: never past its head but by a rounding)
    const pts = curve(S, d, L, t), y = tau * L.Z;
    const above = (x) => { let z = 0, ed = 0, n = 0; L.qC.forEach((q, i) => { if (q >= x) { z += L.eC[i]; ed += L.eC[i] * (q - L.m); n++; } }); return [z, ed, n]; };
    const G = pts.map(([, F, , x]) => F + above(x)[0]);
    let i = 1;
    while (i < pts.length - 1 && G[i] < y) i++;
    const [n0, F0, E0, x0] = pts[i - 1], [n1, F1, E1, x1] = pts[i];
    const f = Math.min(1, Math.max(0, (y - G[i - 1]) / Math.max(G[i] - G[i - 1], 1e-300)));
    const [zc, edc, nC] = above(x1 > -Infinity ? x0 + f * (x1 - x0) : -Infinity);
    const nR = Math.min(n1, Math.max(n0 + 1, Math.round(n0 + f * (n1 - n0))));
    return { n: nR + nC, nR, nC, z: F0 + f * (F1 - F0) + zc, ed: E0 + f * (E1 - E0) + edc };
  }

  // Min-p: sampling.MinP's test, prob >= p x the largest (e = 1), on the merged head. Every alive token of the head
  // passing with more alive past it: a summarised rest's table (an estimate), else (a head capped) kept all (≈).
  function minP(S, d, L, t, mp, alive, stages) {
    const lim = Math.min(alive.n, L.q.length), za = alive.z;
    let n = 0, out, approx = false;
    while (n < lim && L.e[n] / za >= mp * (1 / za)) n++;
    if (n < lim || alive.n <= L.q.length) out = prefix(L, n);
    else {
      const T = d.minp, i = gridIndex(S.min_ps, mp) - 1, at = T ? T.off[t] + i : -1;
      const nt = T && i < T.count[t] ? T.n[at] : alive.n;
      if (nt >= alive.n) { out = alive; approx = d.kind !== 'rest' || alive.n > d.M; } else {
        out = { n: nt, nR: nt, nC: 0, z: T.z[at], ed: T.ed[at] };
        approx = true;
      }
    }
    stages.push({ name: 'min_p', param: mp, kept: out.n, mass: out.z / alive.z, approx });
    return out;
  }

  function finish(stages, final, kept, entropy, kind) {
    let cutoff = 0;
    kept.forEach((x, i) => { if (x) cutoff = i + 1; });
    const approx = stages.some((st) => st.approx);
    return { stages, final, kept, entropy, exact: (kind === 'logits' || kind === 'recorded') && !approx, kind, cutoff,
             nKept: stages[stages.length - 1].kept, approx };
  }

  function greedy(S, d, pen, stages) { // temperature 0: the first of the largest penalised logits, probability 1
    const L1 = layout(S, d, S.temperatures.indexOf(1), pen), N = d.ranks.length;
    stages.push({ name: 'temperature', param: 0, kept: 1, mass: 1 / L1.Z });
    const win = d.greedy ? d.greedy[gridIndex(S.penalties, pen)] : d.ranks.indexOf(0);
    const kept = Array.from({ length: N }, (_, i) => i === win);
    return finish(stages, Float64Array.from(kept, (x) => (x ? 1 : 0)), kept, 0, d.kind);
  }

  // The stages of one table under (grid temperature index t, top-k, top-p, min-p, penalty).
  function computed(S, d, t, k, p, mp, pen) {
    const N = d.ranks.length, stages = [];
    if (pen !== 1) stages.push({ name: 'repetition_penalty', param: pen, kept: d.V, mass: 1 });
    if (S.temperatures[t] === 0) return greedy(S, d, pen, stages);
    const L = layout(S, d, t, pen);
    stages.push({ name: 'temperature', param: S.temperatures[t], kept: d.V, mass: 1 });
    let alive = { n: d.V, nR: L.nR, nC: L.nCtx, z: L.Z, ed: L.ED };
    if (k > 0) alive = topK(d, L, k, alive, stages);
    if (p < 1) alive = topP(S, d, L, t, gridIndex(S.top_ps, p), pen, alive, stages);
    if (mp > 0) alive = minP(S, d, L, t, mp, alive, stages);
    const final = new Float64Array(N), kept = new Array(N);
    for (let i = 0; i < N; i++) {
      const r = d.ranks[i];
      kept[i] = r >= 0 ? r < alive.nR : -1 - r < alive.nC;
      final[i] = kept[i] ? (r >= 0 ? L.eR[r] : L.eC[-1 - r]) / alive.z : 0;
    }
    const H = (Math.log(alive.z) - alive.ed / alive.z) * S.log2e;
    return finish(stages, final, kept, Math.max(0, H), d.kind);
  }

  // The step's own settings (the stages it recorded, compared as viz.distribution._same does): its recorded numbers.
  function recorded(S, d, T, k, p, mp, pen) {
    const want = [];
    if (pen !== 1) want.push(['repetition_penalty', pen]);
    want.push(['temperature', T]);
    if (T > 0 && k > 0) want.push(['top_k', k]);
    if (T > 0 && p < 1) want.push(['top_p', p]);
    if (T > 0 && mp > 0) want.push(['min_p', mp]);
    const own = d.own;
    if (!own || own.stages.length !== want.length || !own.stages.every((st, i) => st[0] === want[i][0] && close(want[i][1], st[1]))) return null;
    const final = Float64Array.from(decode(own.final)), N = final.length, last = own.stages[own.stages.length - 1];
    const penalised = own.stages.some((st) => st[0] === 'repetition_penalty'); // then the kept ones need not be a prefix
    const kept = Array.from(final, (v, i) => (penalised ? v > 0 : i < (last ? last[2] : N)));
    const stages = own.stages.map(([name, param, n, mass]) => ({ name, param, kept: n, mass }));
    return finish(stages, final, kept, own.entropy, 'recorded');
  }

  // The tables viz.distribution.reshape would use at this penalty: the step's own, a rest summarised after another
  // penalty's fallbacks (ranges at penalty 1, else the top N alone).
  function source(d, pen) {
    if (d.kind === 'logits' || d.kind === 'top-N' || (d.kind === 'rest' && close(pen, d.pen))) return d;
    if (pen === 1 && d.kind === 'range') return d;
    if (pen === 1 && d.alt && d.alt.range) return d.alt.range;
    return d.alt ? d.alt.topn : d;
  }

  /* The step's distribution under (temperature, top-k, top-p, min-p, repetition penalty), each snapped to its grid
   * (min-p and the penalty default to the trace's own: the offline page has no slider for them): final probabilities
   * of its recorded top candidates (in their order), which of them survive, each stage's kept count and mass, the
   * entropy. */
  function reshape(S, s, temperature, k, p, minp, penalty) {
    const d = S.steps[s], t = gridIndex(S.temperatures, temperature);
    k = Math.round(k);
    p = S.top_ps[gridIndex(S.top_ps, p)];
    const mp = S.min_ps[gridIndex(S.min_ps, minp === undefined || minp === null ? S.min_p : minp)];
    const pen = S.penalties[gridIndex(S.penalties, penalty === undefined || penalty === null ? S.penalty : penalty)];
    const own = recorded(S, d, S.temperatures[t], k, p, mp, pen);
    if (own) return own;
    const src = source(d, pen);
    if (src.kind === 'range') return root.LLMViewer.rangedShape(S, src, t, k, p, mp);
    return computed(S, prepared(S, src), t, k, p, mp, pen);
  }

  root.LLMViewer = Object.assign(root.LLMViewer || {}, { gridIndex, reshape, finish, samplingTables: prepared });
})(typeof window !== 'undefined' ? window : globalThis);

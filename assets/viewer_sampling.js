/* Reshaping a step's next-token distribution in the browser, with pipeline.sampling's arithmetic.
 *
 * `reshape` reads viz/viewer_sampling.py's tables (the bundle's `sampling`) and recomputes, for any
 * temperature / top-k / top-p on the sliders' grids, what pipeline.sampling would: each candidate's final
 * probability, what each stage kept, the entropy (tested equal in Chromium, tests/browser). The
 * repetition penalty is applied in Python, fixed per trace. At the step's own settings it gives the step's
 * recorded numbers, as viz.distribution.reshape does. A step's `kind` says where its tables come from:
 * "logits" (exact), "rest" (the rest of the vocabulary summarised: a count past the head is an estimate,
 * `approx`), "range" (an older step: every number the range it must lie in, pipeline.rest_bounds) or "top-N".
 * Needs viewer_text.js (decode).
 */
(function (root) {
  'use strict';

  const { decode } = root.LLMViewer;

  // The grid point nearest v (the tables hold the sliders' grids only).
  function gridIndex(grid, v) {
    let best = 0;
    for (let i = 1; i < grid.length; i++) if (Math.abs(grid[i] - v) < Math.abs(grid[best] - v)) best = i;
    return best;
  }

  // A table decoded once (kept on it), and where each temperature's row starts in the top-p tail table.
  function prepared(S, d) {
    if (!d._p) {
      const j0 = decode(d.tail.j0);
      const off = new Int32Array(j0.length);
      const nP = S.top_ps.length - 1; // p = 1 is off
      for (let t = 1; t < j0.length; t++) off[t] = off[t - 1] + (nP - j0[t - 1]);
      Object.defineProperty(d, '_p', { value: { V: d.V, M: d.M, kind: d.kind, head: decode(d.head), ranks: decode(d.ranks), z: decode(d.z),
        ed: decode(d.ed), j0, off, tn: decode(d.tail.n), tz: decode(d.tail.z), ted: decode(d.tail.ed) } }); // (not enumerable: not in JSON)
    }
    return d._p;
  }

  function preparedRange(d) {
    if (!d._p) Object.defineProperty(d, '_p', { value: { V: d.V, M: d.M, head: decode(d.head), rlo: decode(d.rlo), rhi: decode(d.rhi), p0: d.p0, entropy1: d.entropy1 } });
    return d._p;
  }

  // Sums of e and e*d over the first n sorted tokens of the head.
  function headSums(e, q, m, n) {
    let z = 0, ed = 0;
    for (let i = 0; i < n; i++) { z += e[i]; ed += e[i] * (q[i] - m); }
    return [z, ed];
  }

  function topK(d, q, e, m, k, Z, stages) {
    if (k >= d.V) { stages.push({ name: 'top_k', param: k, kept: d.V, mass: 1 }); return null; }
    const kth = q[k - 1];
    let n = k;
    while (n < d.M && q[n] >= kth) n++; // ties with the k-th are kept (Python made the head hold them all)
    const [z, ed] = headSums(e, q, m, n);
    stages.push({ name: 'top_k', param: k, kept: n, mass: z / Z });
    return { kept: n, z, ed };
  }

  function topP(d, S, t, j, q, e, m, alive, stages) {
    let n, z, ed;
    if (alive.kept === d.V && j >= d.j0[t]) { // the nucleus reaches the head's end: Python's table
      const at = d.off[t] + j - d.j0[t];
      n = d.tn[at];
      [z, ed] = headSums(e, q, m, Math.min(n, d.M));
      z += d.tz[at]; ed += d.ted[at];
    } else { // inside the head: the smallest prefix whose cumulative probability reaches p
      const lim = Math.min(alive.kept, d.M), p = S.top_ps[j] - S.eps;
      let c = 0;
      n = 0;
      while (n < lim) { c += e[n] / alive.z; n++; if (c >= p) break; }
      [z, ed] = headSums(e, q, m, n);
    }
    // past the head of a summarised rest, the count is the histogram's estimate
    stages.push({ name: 'top_p', param: S.top_ps[j], kept: n, mass: z / alive.z, approx: d.kind === 'rest' && n > d.M });
    return { kept: n, z, ed };
  }

  // The stages of one table under (grid temperature index t, top-k, top-p).
  function computed(S, d, t, k, p) {
    const N = d.ranks.length, stages = [];
    if (S.penalty !== 1) stages.push({ name: 'repetition_penalty', param: S.penalty, kept: d.V, mass: 1 });
    const T = S.temperatures[t];
    const final = new Float64Array(N), kept = new Array(N);
    if (T === 0) { // greedy: the first of the largest logits, probability 1
      stages.push({ name: 'temperature', param: 0, kept: 1, mass: 1 / d.z[S.temperatures.indexOf(1)] });
      for (let i = 0; i < N; i++) { kept[i] = d.ranks[i] === 0; final[i] = kept[i] ? 1 : 0; }
      return finish(stages, final, kept, 0, d.kind);
    }
    const Tf = Math.fround(T), M = d.M, q = new Float64Array(M), e = new Float64Array(M);
    for (let i = 0; i < M; i++) q[i] = Math.fround(d.head[i] / Tf); // float32 division, as numpy does
    const m = q[0];
    for (let i = 0; i < M; i++) e[i] = Math.exp(q[i] - m);
    stages.push({ name: 'temperature', param: T, kept: d.V, mass: 1 });
    let alive = { kept: d.V, z: d.z[t], ed: d.ed[t] };
    if (k > 0) alive = topK(d, q, e, m, k, alive.z, stages) || alive;
    if (p < 1) alive = topP(d, S, t, gridIndex(S.top_ps, p), q, e, m, alive, stages);
    for (let i = 0; i < N; i++) { const r = d.ranks[i]; kept[i] = r < alive.kept; final[i] = kept[i] ? e[r] / alive.z : 0; }
    const H = (Math.log(alive.z) - alive.ed / alive.z) * S.log2e;
    return finish(stages, final, kept, Math.max(0, H), d.kind);
  }

  function finish(stages, final, kept, entropy, kind) {
    let cutoff = 0;
    kept.forEach((x, i) => { if (x) cutoff = i + 1; });
    const approx = stages.some((st) => st.approx);
    return { stages, final, kept, entropy, exact: kind === 'logits' || kind === 'recorded', kind, cutoff, nKept: stages[stages.length - 1].kept, approx };
  }

  // The step's own settings (the stages it recorded, compared as viz.distribution._same does): its recorded numbers.
  function recorded(S, d, T, k, p) {
    const want = [];
    if (S.penalty !== 1) want.push(['repetition_penalty', S.penalty]);
    want.push(['temperature', T]);
    if (T > 0 && k > 0) want.push(['top_k', k]);
    if (T > 0 && p < 1) want.push(['top_p', p]);
    const own = d.own, close = (a, b) => Math.abs(a - b) <= 1e-9 + 1e-6 * Math.abs(b);
    if (!own || own.stages.length !== want.length || !own.stages.every((st, i) => st[0] === want[i][0] && close(want[i][1], st[1]))) return null;
    const final = Float64Array.from(decode(own.final)), N = final.length, last = own.stages[own.stages.length - 1];
    const penalised = own.stages.some((st) => st[0] === 'repetition_penalty'); // then the kept ones need not be a prefix
    const kept = Array.from(final, (v, i) => (penalised ? v > 0 : i < (last ? last[2] : N)));
    const stages = own.stages.map(([name, param, n, mass]) => ({ name, param, kept: n, mass }));
    return finish(stages, final, kept, own.entropy, 'recorded');
  }

  // An older step (kind "range", pipeline.rest_bounds.ranged): the range each number lies in, from its candidates
  // and the two ends of the rest's sum (rlo, rhi); each number the middle of its range, the ranges kept for the words.
  function firstReach(Sc, target, lim) { // candidates the smallest prefix holding target takes (0: none of the first lim)
    for (let i = 0; i < lim; i++) if (Sc[i] >= target) return i + 1;
    return 0;
  }

  function rangeResult(stages, lo, hi, kept, entropy) {
    for (const st of stages) { st.kept = st.keptRange[1]; st.mass = (st.massRange[0] + st.massRange[1]) / 2; }
    const r = finish(stages, lo.map((v, i) => (v + hi[i]) / 2), kept, entropy ? (entropy[0] + entropy[1]) / 2 : NaN, 'range');
    return Object.assign(r, { finals: [lo, hi], entropyRange: entropy, entropyKnown: entropy !== null });
  }

  function rangeEntropy(S, d, q, e, z, rest, T, k, p) { // exact where the kept tokens are known candidates
    if (T === 1 && (k === 0 || k >= d.V) && p >= 1) return [d.entropy1, d.entropy1];
    if (rest || z[0] !== z[1] || z[2] !== z[3]) return null;
    let ed = 0;
    for (let i = 0; i < z[2]; i++) ed += e[i] * (q[i] - q[0]);
    const H = Math.max(0, (Math.log(z[0]) - ed / z[0]) * S.log2e);
    return [H, H];
  }

  function rangeTopK(d, q, e, Sc, r, k, z, stages) { // -> [z, rest]: within the candidates exact, else a range
    const N = d.M, V = d.V;
    let nk = V, rest = true;
    if (k <= N) { nk = k; for (let i = k; i < N; i++) if (q[i] >= q[k - 1]) nk++; }
    let out;
    if (nk < N) { out = [Sc[nk - 1], Sc[nk - 1], nk, nk]; rest = false; } else {
      const j = Math.max(k - N, 0);
      out = [Sc[N - 1] + r[0] * j / (V - N), Sc[N - 1] + Math.min(r[1], (j || V - N) * e[N - 1]), Math.max(k, N), k > N ? k : V];
    }
    stages.push({ name: 'top_k', param: k, keptRange: [out[2], out[3]], massRange: [out[0] / z[1], Math.min(1, out[1] / z[0])] });
    return [out, rest];
  }

  function rangeTopP(S, d, e, Sc, z, rest, p, stages) { // -> [z, always kept, maybe kept]
    const N = d.M, tau = p - S.eps, lim = rest ? N : z[2], ends = [];
    for (const [zz, extra] of [[z[0], 0], [z[1], e[N - 1]]]) { // past the candidates: one token at most the last's size
      const n = firstReach(Sc, tau * zz, lim);
      ends.push(n ? [n, Sc[n - 1]] : rest ? [0, tau * zz + extra] : [lim, Sc[lim - 1]]);
    }
    const [[na, A], [nb, B]] = ends, count = [na || N + 1, nb || z[3]];
    stages.push({ name: 'top_p', param: p, keptRange: count, massRange: [Math.max(tau, A / z[1]), Math.min(1, B / z[0])] }); // (it keeps p at least)
    return [[A, B, count[0], count[1]], na || N, nb || N];
  }

  function rangedShape(S, d, t, k, p) {
    const N = d.M, V = d.V, T = S.temperatures[t], idx = Array.from({ length: N }, (_, i) => i);
    if (T === 0) { // greedy: exact
      const one = Float64Array.from(idx, (i) => (i === 0 ? 1 : 0));
      return rangeResult([{ name: 'temperature', param: 0, keptRange: [1, 1], massRange: [d.p0, d.p0] }], one, one, idx.map((i) => i === 0), [0, 0]);
    }
    const Tf = Math.fround(T), q = new Float64Array(N), e = new Float64Array(N), Sc = new Float64Array(N);
    for (let i = 0; i < N; i++) q[i] = Math.fround(d.head[i] / Tf);
    let acc = 0;
    for (let i = 0; i < N; i++) { e[i] = Math.exp(q[i] - q[0]); acc += e[i]; Sc[i] = acc; }
    const r = [d.rlo[t], d.rhi[t]], stages = [{ name: 'temperature', param: T, keptRange: [V, V], massRange: [1, 1] }];
    let z = [Sc[N - 1] + r[0], Sc[N - 1] + r[1], V, V], rest = true;
    if (k >= V) stages.push({ name: 'top_k', param: k, keptRange: [V, V], massRange: [1, 1] });
    else if (k > 0) [z, rest] = rangeTopK(d, q, e, Sc, r, k, z, stages);
    let always = Math.min(z[3], N), maybe = always;
    if (p < 1) [z, always, maybe] = rangeTopP(S, d, e, Sc, z, rest, p, stages);
    const lo = Float64Array.from(idx, (i) => (i < always ? e[i] / z[1] : 0));
    const hi = Float64Array.from(idx, (i) => (i < maybe ? e[i] / Math.max(z[0], Sc[i]) : 0));
    return rangeResult(stages, lo, hi, idx.map((i) => i < maybe), rangeEntropy(S, d, q, e, z, rest, T, k, p));
  }

  /* The step's distribution under (temperature, top-k, top-p): final probabilities of its recorded top
   * candidates (in their order), which of them survive, each stage's kept count and mass, the entropy.
   * Order of the stages: repetition penalty (in Python) -> temperature -> top-k -> top-p. */
  function reshape(S, s, temperature, k, p) {
    const d = S.steps[s], t = gridIndex(S.temperatures, temperature);
    k = Math.round(k);
    p = S.top_ps[gridIndex(S.top_ps, p)];
    const own = recorded(S, d, S.temperatures[t], k, p);
    if (own) return own;
    if (d.kind === 'range') return rangedShape(S, preparedRange(d), t, k, p);
    return computed(S, prepared(S, d), t, k, p);
  }

  root.LLMViewer = Object.assign(root.LLMViewer || {}, { gridIndex, reshape });
})(typeof window !== 'undefined' ? window : globalThis);

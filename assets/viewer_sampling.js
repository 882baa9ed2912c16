/* Reshaping a step's next-token distribution in the browser, with pipeline.sampling's arithmetic.
 *
 * `reshape` reads viz/viewer_sampling.py's tables (the bundle's `sampling`) and recomputes, for any
 * temperature / top-k / top-p on the sliders' grids, what pipeline.sampling would: each candidate's final
 * probability, what each stage kept, the entropy (tested equal in Chromium, tests/browser). The
 * repetition penalty is applied in Python, fixed per trace. Needs viewer_text.js (decode).
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

  // A step's tables decoded once, and where each temperature's row starts in the top-p tail table.
  function prepared(S, s) {
    S._cache = S._cache || {};
    if (!S._cache[s]) {
      const d = S.steps[s];
      const j0 = decode(d.tail.j0);
      const off = new Int32Array(j0.length);
      const nP = S.top_ps.length - 1; // p = 1 is off
      for (let t = 1; t < j0.length; t++) off[t] = off[t - 1] + (nP - j0[t - 1]);
      S._cache[s] = { V: d.V, M: d.M, exact: d.exact, head: decode(d.head), ranks: decode(d.ranks), z: decode(d.z), ed: decode(d.ed),
                      j0, off, tn: decode(d.tail.n), tz: decode(d.tail.z), ted: decode(d.tail.ed) };
    }
    return S._cache[s];
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
    stages.push({ name: 'top_p', param: S.top_ps[j], kept: n, mass: z / alive.z });
    return { kept: n, z, ed };
  }

  /* The step's distribution under (temperature, top-k, top-p): final probabilities of its recorded top
   * candidates (in their order), which of them survive, each stage's kept count and mass, the entropy.
   * Order of the stages: repetition penalty (in Python) -> temperature -> top-k -> top-p. */
  function reshape(S, s, temperature, k, p) {
    const d = prepared(S, s);
    const N = d.ranks.length, stages = [];
    if (S.penalty !== 1) stages.push({ name: 'repetition_penalty', param: S.penalty, kept: d.V, mass: 1 });
    const t = gridIndex(S.temperatures, temperature), T = S.temperatures[t];
    const final = new Float64Array(N), kept = new Array(N);
    if (T === 0) { // greedy: the first of the largest logits, probability 1
      stages.push({ name: 'temperature', param: 0, kept: 1, mass: 1 / d.z[S.temperatures.indexOf(1)] });
      for (let i = 0; i < N; i++) { kept[i] = d.ranks[i] === 0; final[i] = kept[i] ? 1 : 0; }
      return finish(stages, final, kept, 0, d.exact);
    }
    const Tf = Math.fround(T), M = d.M, q = new Float64Array(M), e = new Float64Array(M);
    for (let i = 0; i < M; i++) q[i] = Math.fround(d.head[i] / Tf); // float32 division, as numpy does
    const m = q[0];
    for (let i = 0; i < M; i++) e[i] = Math.exp(q[i] - m);
    stages.push({ name: 'temperature', param: T, kept: d.V, mass: 1 });
    let alive = { kept: d.V, z: d.z[t], ed: d.ed[t] };
    k = Math.round(k);
    if (k > 0) alive = topK(d, q, e, m, k, alive.z, stages) || alive;
    if (p < 1) alive = topP(d, S, t, gridIndex(S.top_ps, p), q, e, m, alive, stages);
    for (let i = 0; i < N; i++) { const r = d.ranks[i]; kept[i] = r < alive.kept; final[i] = kept[i] ? e[r] / alive.z : 0; }
    const H = (Math.log(alive.z) - alive.ed / alive.z) * S.log2e;
    return finish(stages, final, kept, Math.max(0, H), d.exact);
  }

  function finish(stages, final, kept, entropy, exact) {
    let cutoff = 0;
    kept.forEach((x, i) => { if (x) cutoff = i + 1; });
    return { stages, final, kept, entropy, exact, cutoff, nKept: stages[stages.length - 1].kept };
  }

  root.LLMViewer = Object.assign(root.LLMViewer || {}, { gridIndex, reshape });
})(typeof window !== 'undefined' ? window : globalThis);

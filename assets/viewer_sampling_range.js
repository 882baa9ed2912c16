/* An older step's distribution as ranges (kind "range", pipeline.sampling.rest_bounds.ranged): a step saved with neither its
 * full logits nor a summary of the rest of its vocabulary. From its candidates and the two ends of the rest's sum
 * (viz.viewer.sampling_rest's `rlo`, `rhi`), the range each number lies in; each number the middle of its range,
 * the ranges kept for the words. No repetition penalty (at another, viewer_sampling.js takes the top N alone).
 * Needs viewer_text.js (decode) and viewer_sampling.js (finish); viewer_sampling.js's reshape calls it.
 */
(function (root) {
  'use strict';

  const { decode } = root.LLMViewer;

  function preparedRange(d) {
    if (!d._p) Object.defineProperty(d, '_p', { value: { V: d.V, M: d.M, head: decode(d.head), rlo: decode(d.rlo), rhi: decode(d.rhi), p0: d.p0, entropy1: d.entropy1 } });
    return d._p;
  }

  function firstReach(Sc, target, lim) { // candidates the smallest prefix holding target takes (0: none of the first lim)
    for (let i = 0; i < lim; i++) if (Sc[i] >= target) return i + 1;
    return 0;
  }

  function rangeResult(stages, lo, hi, kept, entropy) {
    for (const st of stages) { st.kept = st.keptRange[1]; st.mass = (st.massRange[0] + st.massRange[1]) / 2; }
    const r = root.LLMViewer.finish(stages, lo.map((v, i) => (v + hi[i]) / 2), kept, entropy ? (entropy[0] + entropy[1]) / 2 : NaN, 'range');
    return Object.assign(r, { finals: [lo, hi], entropyRange: entropy, entropyKnown: entropy !== null });
  }

  function rangeEntropy(S, d, q, e, z, rest, T, k, p, mp) { // exact where the kept tokens are known candidates
    if (T === 1 && (k === 0 || k >= d.V) && p >= 1 && !(mp > 0)) return [d.entropy1, d.entropy1];
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

  // pipeline.sampling.rest_bounds._min_p: the candidates at least mp times the first's pass; one failing, the rest fails too
  function rangeMinP(e, Sc, z, rest, always, maybe, mp, stages) { // -> [z, always, maybe, rest]
    const N = Sc.length;
    let n = 0;
    for (let i = 0; i < N; i++) if (e[i] >= mp) n++;
    let out;
    if (n < N || !(rest && z[3] > N)) {
      const lo = Math.min(always, n), hi = Math.min(maybe, n);
      out = [[lo, hi], [Sc[lo - 1], Sc[hi - 1]], [Sc[lo - 1], Sc[hi - 1], lo, hi], lo, hi, false];
    } else out = [[always, z[3]], [Sc[always - 1], z[1]], [Sc[always - 1], z[1], always, z[3]], always, maybe, true];
    stages.push({ name: 'min_p', param: mp, keptRange: out[0], massRange: [out[1][0] / z[1], Math.min(1, out[1][1] / z[0])] });
    return out.slice(2);
  }

  function rangedShape(S, d, t, k, p, mp) {
    d = preparedRange(d);
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
    if (mp > 0) [z, always, maybe, rest] = rangeMinP(e, Sc, z, rest, always, maybe, mp, stages);
    const lo = Float64Array.from(idx, (i) => (i < always ? e[i] / z[1] : 0));
    const hi = Float64Array.from(idx, (i) => (i < maybe ? e[i] / Math.max(z[0], Sc[i]) : 0));
    return rangeResult(stages, lo, hi, idx.map((i) => i < maybe), rangeEntropy(S, d, q, e, z, rest, T, k, p, mp));
  }

  root.LLMViewer = Object.assign(root.LLMViewer || {}, { rangedShape });
})(typeof window !== 'undefined' ? window : globalThis);

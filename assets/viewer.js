/* The step viewer: scrub, Play and the sampling sliders, all in the browser, with no request.
 *
 * It reads a bundle written by viz/viewer.py: one Plotly figure per panel (built by viz/) with a
 * frame per step, and viz/viewer_sampling.py's tables, from which `reshape` recomputes the next-token
 * distribution for any slider position with pipeline.sampling's arithmetic (tested equal in Chromium).
 */
(function (root) {
  'use strict';

  // 1. Plotly's typed-array JSON form {dtype, bdata} -> a typed array (little-endian, as written).
  const TYPES = { f4: Float32Array, f8: Float64Array, i4: Int32Array, u1: Uint8Array, i1: Int8Array, i2: Int16Array, u2: Uint16Array };
  function decode(spec) {
    if (!spec || spec.bdata === undefined) return spec;
    const bin = atob(spec.bdata);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new TYPES[spec.dtype](bytes.buffer);
  }

  // 2. Numbers written as Python writes them: f'{y:.{f}f}' rounds exact ties to even (toFixed rounds them up).
  function fixed(y, f) {
    const t = y * Math.pow(2, f + 1); // y is an exact tie at f digits iff y * 2^(f+1) is an odd integer
    if (Number.isInteger(t) && Math.abs(t) < 2 ** 52 && Math.abs(t % 2) === 1) {
      const k = Math.floor(y * Math.pow(10, f));
      return ((k % 2 === 0 ? k : k + 1) / Math.pow(10, f)).toFixed(f);
    }
    return y.toFixed(f);
  }
  const pct = (v, f) => fixed(v * 100, f) + '%'; // Python's '%' format multiplies by 100 first, then rounds
  const thousands = (n) => Math.round(n).toLocaleString('en-US');
  const tokens = (k) => thousands(k) + ' token' + (k === 1 ? '' : 's');

  // 3. Reshaping: repetition penalty (applied in Python, fixed per trace) -> temperature -> top-k -> top-p.
  function gridIndex(grid, v) {
    let best = 0;
    for (let i = 1; i < grid.length; i++) if (Math.abs(grid[i] - v) < Math.abs(grid[best] - v)) best = i;
    return best;
  }

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
   * candidates (in their order), which of them survive, each stage's kept count and mass, the entropy. */
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

  // 4. The distribution figure of a step under a reshaping: viz.distribution's figure, patched.
  function cutText(r, n) { // one line per filtering stage
    const parts = [];
    for (const st of r.stages) {
      if (st.name === 'top_p') parts.push(`top-p ${st.param} keeps ${tokens(st.kept)} holding ${pct(st.mass, 1)} of the probability`);
      else if (st.name === 'top_k') parts.push(`top-k ${st.param} keeps ${tokens(st.kept)} (${pct(st.mass, 1)})`);
      else if (st.name === 'temperature' && st.param === 0) parts.push('temperature 0: greedy, only the most likely token');
    }
    if (r.cutoff >= n && parts.length) parts[parts.length - 1] += ` (more than the ${n} shown)`;
    return parts;
  }

  // A frame's {zwin: [lo, n, size]}: its window of the attention bands (viz/viewer_attention.py, windowed
  // there too): rows lo .. lo+n-1 over keys lo .. lo+size-1, then size-n blank rows, each head's window a
  // tile of one matrix as panel.tiles say (viz.attention tiled, tile_labels); labels from lo.
  const TAG = '\u200b'; // viz.attention.TAG: a tile's labels read the same as the first tile's, kept apart
  function tileLabels(labels, count, gap) {
    const out = [];
    for (let t = 0; t < count; t++) {
      if (t) for (let i = 0; i < gap; i++) out.push(`gap ${t}.${i}`);
      for (const lab of labels) out.push(lab + TAG.repeat(t));
    }
    return out;
  }

  function band(panel, i) {
    panel._bands = panel._bands || {};
    if (!panel._bands[i]) {
      const spec = panel.data[i].z, [K, T, w] = String(spec.shape).split(',').map(Number); // shape "heads, T, w"
      panel._bands[i] = { flat: decode(spec), K, T, w, cols: panel.tiles.cols, gap: panel.tiles.gap, rows: new Map() };
    }
    return panel._bands[i];
  }

  function windowed(panel, i, [lo, n, size]) {
    const b = band(panel, i), step = size + b.gap, tileRows = Math.ceil(b.K / b.cols);
    const W = b.cols * step - b.gap, blank = new Array(W).fill(null), z = [];
    for (let R = 0; R < tileRows * step - b.gap; R++) {
      const r = Math.floor(R / step), q = R % step; // tile row r, its row q (q >= size: between tiles)
      if (q >= n) { z.push(blank); continue; }
      const key = `${lo}|${size}|${R}`;
      let row = b.rows.get(key);
      if (!row) {
        row = new Array(W).fill(null);
        const pos = lo + q;
        for (let c = 0; c < b.cols && r * b.cols + c < b.K; c++) {
          const at = ((r * b.cols + c) * b.T + pos) * b.w;
          for (let j = 0; j <= q; j++) { // keys up to the row's own position
            const k = lo + j - (pos - b.w + 1), v = k >= 0 && k < b.w ? b.flat[at + k] : NaN;
            row[c * step + j] = Number.isNaN(v) ? null : v;
          }
        }
        if (b.rows.size > 4096) b.rows.clear();
        b.rows.set(key, row);
      }
      z.push(row);
    }
    const labels = panel.data[i].x.slice(lo, lo + size);
    return { z, x: tileLabels(labels, b.cols, b.gap), y: tileLabels(labels, tileRows, b.gap) };
  }

  // base with what a frame moved put in, nested objects merged: what did not move stays the same object
  const plain = (x) => x !== null && typeof x === 'object' && !Array.isArray(x) && x.bdata === undefined;
  function deepMerged(base, moved) {
    const out = Object.assign({}, base);
    for (const [k, v] of Object.entries(moved)) out[k] = plain(v) && plain(base[k]) ? deepMerged(base[k], v) : v;
    return out;
  }

  // Plotly decodes a typed array given as {dtype, bdata} at every redraw: the 2D ones a figure keeps (the
  // grid's heads per cell) are decoded here once, as rows.
  function decoded(panel) {
    if (panel._decoded) return;
    panel._decoded = true;
    panel.data = panel.data.map((tr) => {
      const out = Object.assign({}, tr);
      for (const [k, v] of Object.entries(tr)) {
        const shape = v && v.bdata !== undefined && v.shape !== undefined ? String(v.shape).split(',').map(Number) : [];
        if (shape.length !== 2) continue;
        const flat = decode(v);
        out[k] = Array.from({ length: shape[0] }, (_, r) => flat.subarray(r * shape[1], (r + 1) * shape[1]));
      }
      return out;
    });
  }

  function merged(panel, s) {
    decoded(panel);
    const fr = panel.frames[s], data = panel.data.slice();
    fr.traces.forEach((i, j) => { // a frame holds what moves
      const { zwin, ...moved } = fr.data[j];
      data[i] = Object.assign(deepMerged(panel.data[i], moved), zwin ? windowed(panel, i, zwin) : {});
    });
    return { data, layout: Object.assign({}, panel.layout, fr.layout) };
  }

  function distFigure(bundle, s, r) {
    const P = bundle.panels['dist-plot'], st = bundle.dist_style, c = P.candidates[s];
    const { data, layout } = merged(P, s);
    const n = c.labels.length - 1; // the last bar is the rest of the vocabulary
    const show = (k) => r.kept[k] || k === c.rank;
    const labels = c.labels.map((lab, k) => (k < n && !show(k) ? st.removed_label.replace('{}', lab) : lab));
    const hover = c.hover.map((h, k) => (k < n && !r.kept[k] ? h + st.removed_hover : h));
    const fin = Array.from(r.final.slice(0, n));
    let sum = 0;
    fin.forEach((v) => { sum += v; });
    fin.push(Math.max(0, 1 - sum));
    const raw = Object.assign({}, data[0], { y: labels, customdata: hover,
      marker: Object.assign({}, data[0].marker, { color: labels.map((_, k) => (k < n ? (r.kept[k] ? st.kept_color : st.removed_color) : st.rest_color)) }) });
    const bar = Object.assign({}, data[1], { y: labels, customdata: hover, x: fin, text: fin.map((v) => (v >= 0.005 ? pct(v, 0) : '')) });
    const shapes = [], notes = (layout.annotations || []).filter((a) => a.name !== 'cut-off'), annotations = [];
    if (r.cutoff > 0 && r.cutoff < n) {
      const y = r.cutoff - 0.5;
      shapes.push(Object.assign({}, st.cut_line, { y0: y, y1: y }));
      annotations.push(Object.assign({}, st.cut_label, { y }));
    }
    const lines = [`entropy ${fixed(c.entropy, 2)} bits raw → ${fixed(r.entropy, 2)} bits sampled from` + (r.exact ? '' : ' (approximate)')]
      .concat(cutText(r, n));
    const title = `Next token at position ${c.position}` + lines.map((line) => `<br><sup>${line}</sup>`).join('');
    const out = Object.assign({}, layout, { shapes, annotations: annotations.concat(notes),
      title: Object.assign({}, layout.title, { text: title }), datarevision: `${s}|${r.key}`, meta: Object.assign({}, layout.meta, r.used) });
    return { data: [raw, bar].concat(data.slice(2)), layout: out };
  }

  // A panel's figure at a step; the distribution reshaped for state {t, k, p} (the app's page uses this too).
  function figureFor(bundle, id, s, state) {
    if (id !== 'dist-plot') return merged(bundle.panels[id], s);
    const S = bundle.sampling, r = reshape(S, s, state.t, state.k, state.p);
    r.key = `${state.t}|${state.k}|${state.p}`; // and the settings reshape used, named in layout.meta (DESIGN.md):
    r.used = { temperature: S.temperatures[gridIndex(S.temperatures, state.t)], top_k: Math.round(state.k), top_p: S.top_ps[gridIndex(S.top_ps, state.p)] };
    return distFigure(bundle, s, r);
  }

  // 5. The page: panels, the step slider, Play, the sampling sliders, the text. No request of any kind.
  // A step's figure is the panel's figure with the step's frame merged in, drawn by Plotly.react, which
  // redraws only what changed (measured 4-5x faster here than Plotly.animate with redraw: true).
  const PLAY_FPS = 12; // steps per second while playing
  const react = (el, fig) => root.LLMViewer.react(el, fig); // assets/viewer_plot.js, loaded first (reshaping needs none)

  // A slider as the app's: #id holds a range input and a number input that follow each other.
  function slider(id, { min, max, step, value }, onChange) {
    const box = document.getElementById(id);
    const range = box.querySelector('input[type=range]'), num = box.querySelector('input[type=number]');
    for (const el of [range, num]) Object.assign(el, { min, max, step, value });
    const set = (v, from) => {
      v = Math.min(max, Math.max(min, Number(v)));
      if (!Number.isFinite(v)) return;
      if (from !== range) range.value = v;
      if (from !== num) num.value = v;
      onChange(v);
    };
    range.addEventListener('input', () => set(range.value, range));
    num.addEventListener('change', () => set(num.value, num));
    return { set: (v) => set(v, null), get: () => Number(range.value) };
  }

  // The panels' plots and what each shows; panels in view are redrawn first, the others after,
  // one at a time, giving way whenever the step or a slider moves again.
  function panels(bundle) {
    const ids = Object.keys(bundle.panels), els = {}, key = {}, inView = new Set(ids);
    const ready = Promise.all(ids.map((id) => {
      els[id] = document.querySelector(`#${id} .plot`);
      key[id] = null;
      const h = bundle.panels[id].layout.height; // its size while off screen (viewer.css: content-visibility)
      if (h) els[id].style.containIntrinsicHeight = `auto ${h}px`;
      return react(els[id], merged(bundle.panels[id], 0)); // the first step: a panel's own figure may be another step's
    }));
    if (typeof IntersectionObserver !== 'undefined') {
      const seen = new IntersectionObserver((entries) => entries.forEach((e) => {
        const id = e.target.parentElement.id;
        if (e.isIntersecting) inView.add(id); else inView.delete(id);
      }));
      ids.forEach((id) => seen.observe(els[id]));
    }
    const order = () => ids.filter((id) => inView.has(id)).concat(ids.filter((id) => !inView.has(id)));
    return { ids, els, key, ready, order, inView };
  }

  // The generated text with the step on screen highlighted, later steps dimmed, and a line naming the step.
  function textView(bundle) {
    const n = bundle.n_steps, spans = Array.from(document.querySelectorAll('#output .step'));
    const label = document.getElementById('step-label'), stopLine = document.querySelector('#output .stop-reason');
    return (s) => {
      spans.forEach((el) => {
        const i = Number(el.dataset.step);
        el.classList.toggle('current', i === s);
        el.classList.toggle('future', i > s);
      });
      if (stopLine) stopLine.hidden = s !== n - 1; // why it stopped: only with the last step on screen
      const st = bundle.steps[s];
      label.innerHTML = `step <b>${s}</b> of ${n - 1} · ${st.phase} · position ${st.position} · token <b>${st.piece}</b>`;
    };
  }

  // Temperature, top-k and top-p sliders on the grids the sampling tables were computed for.
  function samplingSliders(S, state, onChange) {
    const T = S.temperatures, Ps = S.top_ps;
    slider('temperature', { min: T[0], max: T[T.length - 1], step: T[1] - T[0], value: state.t },
      (v) => { state.t = T[gridIndex(T, v)]; onChange(); });
    slider('top-k', { min: 0, max: S.top_k_max, step: 1, value: state.k }, (v) => { state.k = Math.round(v); onChange(); });
    slider('top-p', { min: Ps[0], max: Ps[Ps.length - 1], step: Ps[1] - Ps[0], value: state.p },
      (v) => { state.p = Ps[gridIndex(Ps, v)]; onChange(); });
  }

  /* Play, paced by drawing: the next step once the panels on screen show the one before, and no sooner
   * than 1/PLAY_FPS after it. Every step is shown (a slower machine plays slower, never skipping).
   * drawn(): the step on screen is drawn; advance(): move to the next step, false once that was the last. */
  function player({ drawn, advance, stopped }) {
    let timer = null, last = 0;
    const stop = () => { if (timer === null) return; clearTimeout(timer); timer = null; stopped(); };
    const tick = () => {
      if (!drawn()) { timer = setTimeout(tick, 4); return; }
      const wait = last + 1000 / PLAY_FPS - performance.now();
      if (wait > 1) { timer = setTimeout(tick, wait); return; }
      last = performance.now();
      if (advance()) timer = setTimeout(tick, 0); else stop();
    };
    const start = () => { if (timer === null) { last = performance.now(); timer = setTimeout(tick, 0); } };
    return { start, stop, playing: () => timer !== null };
  }

  // The page's Play button: from step 0 again once at the last step; it stops when a person drags the slider.
  // While it plays only the panels on screen are drawn; `caughtUp` draws the others once it stops.
  function playButton(stepSlider, state, n, drawn, caughtUp) {
    const play = document.getElementById('play');
    const p = player({ drawn, advance: () => { stepSlider.set(state.step + 1); return state.step < n - 1; },
                       stopped: () => { play.textContent = '▶ Play'; caughtUp(); } });
    play.addEventListener('click', () => {
      if (p.playing()) return p.stop();
      if (state.step >= n - 1) stepSlider.set(0);
      play.textContent = '⏸ Pause';
      p.start();
    });
    document.querySelector('#step-slider input[type=range]').addEventListener('input', (e) => { if (!e.llmPlay) p.stop(); });
    return p.playing;
  }

  function mount(bundle) {
    const S = bundle.sampling, n = bundle.n_steps, own = bundle.settings;
    const state = { step: 0, t: S.temperatures[gridIndex(S.temperatures, own.temperature)],
                    k: Math.min(Math.round(own.top_k), S.top_k_max), p: S.top_ps[gridIndex(S.top_ps, own.top_p)] };
    const P = panels(bundle), drawText = textView(bundle);
    let busy = true, dirty = false; // busy until the plots exist

    const wanted = (id) => (id === 'dist-plot' ? `${state.step}|${state.t}|${state.k}|${state.p}` : String(state.step));
    function draw(id) {
      const k = wanted(id);
      return react(P.els[id], figureFor(bundle, id, state.step, state)).then(() => { P.key[id] = k; });
    }

    const pause = () => new Promise((ok) => setTimeout(ok, 0)); // lets slider events in between panels
    async function render() {
      if (busy) { dirty = true; return; }
      busy = true;
      do {
        dirty = false;
        drawText(state.step);
        for (const id of P.order()) {
          if (dirty) break;
          if (P.key[id] === wanted(id) || (playing() && !P.inView.has(id))) continue;
          await draw(id);
          await pause();
        }
      } while (dirty);
      busy = false;
      api.rendered = state.step;
      document.dispatchEvent(new CustomEvent('viewer:rendered', { detail: { step: state.step } }));
    }

    const stepSlider = slider('step-slider', { min: 0, max: n - 1, step: 1, value: 0 }, (v) => { state.step = Math.round(v); render(); });
    samplingSliders(S, state, render);
    const playing = playButton(stepSlider, state, n, () => !busy && api.rendered === state.step, render);
    // settled(): resolves once every panel shows the step (and the settings) on screen
    const settled = () => new Promise((ok) => {
      const done = () => { if (!busy && api.rendered === state.step) { document.removeEventListener('viewer:rendered', done); ok(state.step); } };
      document.addEventListener('viewer:rendered', done);
      done();
    });
    const api = { state, render, settled, playing, show: (s) => { stepSlider.set(s); return settled(); } };
    root.LLMViewer.page = api;
    P.ready.then(() => { busy = false; render(); });
    return api;
  }

  root.LLMViewer = Object.assign(root.LLMViewer || {}, { decode, fixed, pct, gridIndex, reshape, distFigure, merged, cutText, figureFor, player, mount });
})(typeof window !== 'undefined' ? window : globalThis);

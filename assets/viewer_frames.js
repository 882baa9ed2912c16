/* A panel's figure at a step: the panel's figure with the step's frame merged in (viz/viewer/frames.py
 * wrote each frame as only what moves), the attention panel's window cut from its bands, and the
 * distribution reshaped for the sampling sliders and patched into viz.distribution's figure.
 * Needs viewer_text.js and viewer_sampling.js.
 */
(function (root) {
  'use strict';

  const { decode, fixed, pct, tokens, gridIndex, reshape } = root.LLMViewer;
  const { t, thousands, local } = root.LLMText;
  const range = (lo, hi) => t('common.range', { lo, hi });
  // numbers a person reads, with the language's decimal mark (viz.text.decimal; viz.distribution.short_number)
  const dec = (x, f) => local(fixed(x, f)), short = (x) => local(String(x));

  // A frame's {zwin: [lo, n, size]}: its window of the attention bands (viz/viewer/attention.py, windowed
  // there too): rows lo .. lo+n-1 over keys lo .. lo+size-1, then size-n blank rows, each head's window a
  // tile of one matrix as panel.tiles say (viz.attention tiled, tile_labels); labels from lo.
  const TAG = '\u200b'; // viz.attention.TAG: a tile's labels read the same as the first tile's, kept apart
  function tileLabels(labels, count, gap) {
    const out = [];
    for (let tile = 0; tile < count; tile++) {
      if (tile) for (let i = 0; i < gap; i++) out.push(`gap ${tile}.${i}`);
      for (const lab of labels) out.push(lab + TAG.repeat(tile));
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
    // positions past the step's context are not written yet: "k ?" (viz.attention's labels; their tokens are to come)
    const labels = panel.data[i].x.slice(lo, lo + size).map((lab, j) => (j < n ? lab : `${lo + j} ?`));
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

  // The distribution figure of a step under a reshaping: viz.distribution's figure, patched, its words written
  // as viz.distribution writes them (kept_words, share_words, bar_text, entropy_words, final_words), from the
  // catalogue (stage.*, common.range: locales/en.json, assets/text.js).
  function keptWords(st) {
    if (st.keptRange && st.keptRange[0] !== st.keptRange[1]) return range(thousands(st.keptRange[0]), tokens(st.keptRange[1]));
    return (st.approx ? '\u2248' : '') + tokens(st.kept);
  }
  function removedWords(st) { // the probability a stage removed, never below 0 (viz.distribution.removed_words)
    const gone = (m) => Math.max(0, 1 - m), [a, b] = (st.massRange || [st.mass, st.mass]).map(gone);
    return pct(b, 1) !== pct(a, 1) ? range(pct(b, 1), pct(a, 1)) : pct(gone(st.mass), 1);
  }
  const barText = (lo, hi) => (hi < 0.005 ? '' : pct(lo, 0) === pct(hi, 0) ? pct(hi, 0) : `${fixed(lo * 100, 0)}\u2013${pct(hi, 0)}`);
  function entropyWords(r) {
    if (r.kind === 'range' && !r.entropyKnown) return '?';
    const e = r.entropyRange;
    if (e && fixed(e[0], 2) !== fixed(e[1], 2)) return range(dec(e[0], 2), dec(e[1], 2));
    return (r.approx ? '\u2248' : '') + dec(r.entropy, 2);
  }
  function finalWords(r, n) { // the sampled-from bars' labels and hover numbers, the rest of the vocabulary last
    const ends = r.finals || [r.final, r.final], lo = [], hi = [];
    for (let k = 0; k < n; k++) { lo.push(Math.min(ends[0][k], ends[1][k])); hi.push(Math.max(ends[0][k], ends[1][k])); }
    const rests = ends.map((f) => { let sum = 0; for (let k = 0; k < n; k++) sum += f[k]; return Math.max(0, 1 - sum); });
    lo.push(Math.min(...rests)); hi.push(Math.max(...rests));
    return [lo.map((a, k) => barText(a, hi[k])), lo.map((a, k) => (pct(a, 2) === pct(hi[k], 2) ? pct(hi[k], 2) : range(pct(a, 2), pct(hi[k], 2))))];
  }
  function cutText(r, n) { // the chain of stages, in order: what each kept and the probability it removed
    const parts = [];
    for (const st of r.stages) {
      const kept = keptWords(st), removed = removedWords(st);
      if (st.name === 'top_k') parts.push(t('stage.top_k', { k: st.param, kept, removed }));
      else if (st.name === 'top_p') parts.push(t('stage.top_p', { p: short(st.param), kept, removed }));
      else if (st.name === 'min_p') parts.push(t('stage.min_p', { p: short(st.param), kept, removed }));
      else if (st.name === 'repetition_penalty') parts.push(t('stage.repetition_penalty', { p: short(st.param) }));
      else if (st.name === 'temperature' && st.param === 0) parts.push(t('stage.greedy'));
    }
    if (r.cutoff >= n && parts.length) { // (viz.distribution: more kept than shown, or, a penalty reordering them, some kept lower)
      const last = [...r.stages].reverse().find((st) => ['top_k', 'top_p', 'min_p'].includes(st.name));
      parts[parts.length - 1] = t(!last || last.kept > n ? 'stage.more_than_shown' : 'stage.beyond_shown', { line: parts[parts.length - 1], n });
    }
    return parts;
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
    const [text, hovertext] = finalWords(r, n);
    const bar = Object.assign({}, data[1], { y: labels, customdata: hover, x: fin, text, hovertext });
    const shapes = [], notes = (layout.annotations || []).filter((a) => a.name !== 'cut-off'), annotations = [];
    if (r.cutoff > 0 && r.cutoff < n) {
      const y = r.cutoff - 0.5;
      shapes.push(Object.assign({}, st.cut_line, { y0: y, y1: y }));
      annotations.push(Object.assign({}, st.cut_label, { y }));
    }
    const entropy = t(r.kind === 'top-N' ? 'stage.entropy_approx' : 'stage.entropy', { raw: dec(c.entropy, 2), sampled: entropyWords(r) });
    const lines = [entropy].concat(cutText(r, n));
    const title = st.title.replace('{step}', c.step).replace('{position}', c.position) + lines.map((line) => st.subtitle.replace('{}', line)).join('');
    const out = Object.assign({}, layout, { shapes, annotations: annotations.concat(notes),
      title: Object.assign({}, layout.title, { text: title }), datarevision: `${s}|${r.key}`, meta: Object.assign({}, layout.meta, r.used) });
    return { data: [raw, bar].concat(data.slice(2)), layout: out };
  }

  // A panel's figure at a step; the distribution reshaped for state {t, k, p, mp, pen} (the app's page uses this too;
  // min-p and the penalty left out: the trace's own, as on the offline page, which has no slider for them).
  function figureFor(bundle, id, s, state) {
    if (id !== 'dist-plot') return merged(bundle.panels[id], s);
    const S = bundle.sampling, mp = state.mp ?? S.min_p, pen = state.pen ?? S.penalty, r = reshape(S, s, state.t, state.k, state.p, mp, pen);
    r.key = `${state.t}|${state.k}|${state.p}` + (state.mp == null && state.pen == null ? '' : `|${mp}|${pen}`); // (offline: the first three)
    // and the settings reshape used, named in layout.meta (viz/distribution.py, the figure's contract):
    r.used = { temperature: S.temperatures[gridIndex(S.temperatures, state.t)], top_k: Math.round(state.k), top_p: S.top_ps[gridIndex(S.top_ps, state.p)],
               min_p: S.min_ps[gridIndex(S.min_ps, mp)], repetition_penalty: S.penalties[gridIndex(S.penalties, pen)] };
    return distFigure(bundle, s, r);
  }

  root.LLMViewer = Object.assign(root.LLMViewer || {}, { merged, cutText, entropyWords, finalWords, distFigure, figureFor });
})(typeof window !== 'undefined' ? window : globalThis);

/* A figure on a phone (assets/viewer_plot.js draws it): its title and its legend's entries in lines that fit the
 * figure's width (Plotly wraps neither, and a phone cut them at both ends), by words (a language written without
 * spaces: by characters); the title's top margin grown by the lines added. Loaded before viewer_plot.js.
 */
(function (root) {
  'use strict';

  /* A phone: a figure's title wider than the figure (Plotly does not wrap it, and cuts it at both ends) in lines that
   * fit, by words (a language written without spaces: by characters), the top margin grown by the lines added. A line
   * is wrapped when it is plain text or one tag around plain text (<sup>…</sup>, <span style='font-size:13px'>…</span>: in
   * its smaller type). */
  const CJK = /[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]/;
  // a language written without spaces: by characters (each twice as wide), a Latin word among them kept whole, and no
  // line begun by a closing mark ("：", "，", "）"...: it stays at the end of the line before, as Chinese typesetting does)
  const UNITS = /[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]|[^\s\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]+|\s+/g;
  const CLOSING = /^[、。，．：；！？）」』】》〉〕｝”’…·%)\]}.,:;!?]/;
  function fitWide(text, per) {
    const out = [];
    let line = '', w = 0;
    for (const u of text.match(UNITS)) {
      const uw = CJK.test(u) ? 2 : u.length;
      if (line && w + uw > per && !CLOSING.test(u) && u.trim()) { out.push(line.trimEnd()); line = ''; w = 0; }
      if (!line && !u.trim()) continue;
      line += u;
      w += uw;
    }
    if (line) out.push(line.trimEnd());
    return out;
  }
  function fitLine(text, per) {
    if (CJK.test(text)) return fitWide(text, per);
    if (text.length <= per) return [text];
    const out = [];
    let line = '';
    for (const w of text.split(' ')) {
      if (line && (line + ' ' + w).length > per) { out.push(line); line = w; } else line = line ? `${line} ${w}` : w;
    }
    if (line) out.push(line);
    return out;
  }
  const LINE = /^(<(sup|sub|b|i|span)(?: style='font-size:(\d+)px')?>)?([^<>]*)(<\/\2>)?$/; // (plain text, or one tag around it)
  const wideLen = (s) => Array.from(s).reduce((n, c) => n + (CJK.test(c) ? 2 : 1), 0); // (its width in half-widths)

  /* Python wraps a sentence of a language written without spaces in lines (viz.style.plot_lines) that a phone may find
   * too wide: such a run of lines in one type is joined and wrapped anew as a whole (line by line left a character or
   * two alone on a line). Returns the lines and how many fewer there are. */
  function rejoined(lines, perOf) {
    const out = [];
    let fewer = 0;
    for (const line of lines) {
      const m = LINE.exec(line), prev = out.length ? LINE.exec(out[out.length - 1]) : null;
      if (m && prev && (m[1] || '') === (prev[1] || '') && CJK.test(m[4]) && CJK.test(prev[4]) && wideLen(prev[4]) > perOf(prev)) {
        // (a space where Python's break took one, or a Latin word meets a character: "比特 top-p", as Python writes it)
        const glue = (CJK.test(prev[4].slice(-1)) && CJK.test(m[4][0])) || CLOSING.test(m[4]) ? '' : ' ';
        out[out.length - 1] = `${prev[1] || ''}${prev[4]}${glue}${m[4]}${prev[5] || ''}`;
        fewer += 1;
      } else out.push(line);
    }
    return { lines: out, fewer };
  }
  const CAP_SHIFT = 0.7;
  function wrappedTitle(layout, width) {
    const title = layout.title, text = title && (typeof title === 'string' ? title : title.text);
    if (!text || !width) return;
    const size = (title.font && title.font.size) || 17;
    const scale = (m) => (m[3] ? Number(m[3]) / size : m[2] === 'sup' || m[2] === 'sub' ? 0.7 : 1);
    const perOf = (m) => Math.max(12, Math.floor((width - 20) / (size * scale(m) * 0.56)));
    const run = rejoined(text.split('<br>'), perOf);
    let added = -run.fewer * size * 1.3;
    const lines = run.lines.flatMap((line) => {
      const m = LINE.exec(line);
      if (!m || Boolean(m[1]) !== Boolean(m[5])) return [line];
      const parts = fitLine(m[4].replace(/&amp;/g, '&'), perOf(m)).map((x) => `${m[1] || ''}${x.replace(/&/g, '&amp;')}${m[5] || ''}`);
      added += (parts.length - 1) * size * scale(m) * 1.3;
      return parts;
    });
    if (lines.join('<br>') === text) return;
    // one line become several, or several one: the title's 0.7 em Plotly lifts a title of several lines by (viz/style.py CAP_SHIFT)
    const shift = ((lines.length > 1) - text.includes('<br>')) * Math.round(CAP_SHIFT * size), was = typeof title === 'string' ? { text: title } : title;
    const pad = Object.assign({}, was.pad, { t: ((was.pad && was.pad.t) || 0) + shift });
    layout.title = Object.assign({}, was, { text: lines.join('<br>') }, shift ? { pad } : {});
    layout.margin = Object.assign({}, layout.margin, { t: ((layout.margin && layout.margin.t) || 80) + Math.max(0, Math.ceil(added)) + shift });
  }

  // and each trace's legend entry, each of its lines (a name the server broke in two had a line too long at 320 px):
  // Plotly wraps none, and a language's longer words ran past a phone's edge
  function wrappedLegend(data, layout, width) {
    const size = (layout.legend && layout.legend.font && layout.legend.font.size) || 14;
    const per = Math.max(12, Math.floor((width - 60) / (size * 0.56)));
    return data.map((tr) => {
      const lines = tr && typeof tr.name === 'string' ? tr.name.split('<br>') : [];
      if (!lines.length || lines.some((l) => /[<>]/.test(l)) || lines.every((l) => l.length <= per)) return tr;
      return Object.assign({}, tr, { name: lines.flatMap((l) => fitLine(l, per)).join('<br>') });
    });
  }

  /* Panels side by side (x and x2: the KV cache and the timing; x, x2, x3: sampling under three settings) one over
   * the other: on a phone each was a third of the width or less, their titles ran into each other and the timing's
   * note over the left panel. The notes placed on the page (xref/yref "paper") move with their panel; the figure grows
   * to hold them all. Two panels that share one y axis (the logit lens: its top-5 table and the chosen token's
   * probability, a row per depth) are rowsStacked. Returns the traces (the same, or those moved to the lower rows). */
  const TOP = [0.58, 1], BOTTOM = [0, 0.4], GAP = 0.16; // (three or more: the gap holds a panel's title of four lines)
  const bands = (n) => (n === 2 ? [TOP, BOTTOM] : Array.from({ length: n }, (_, k) => {
    const h = (1 - GAP * (n - 1)) / n, top = 1 - k * (h + GAP);
    return [Math.max(0, top - h), top];
  }));
  function stacked(data, layout) {
    const xs = [];
    for (let k = 1; layout[k === 1 ? 'xaxis' : `xaxis${k}`]; k += 1) xs.push(k === 1 ? '' : String(k));
    const doms = xs.map((k) => layout[`xaxis${k}`].domain);
    if (xs.length < 2 || !layout.yaxis || doms.some((d, i) => !d || (i && doms[i - 1][1] > d[0]))) return data;
    if (!layout.yaxis2) return xs.length === 2 ? rowsStacked(data, layout) : data;
    if (xs.some((k) => !layout[`yaxis${k}`])) return data;
    const to = bands(xs.length), grow = xs.length === 2 ? 1.8 : 0.9 * xs.length;
    const spot = (x, y) => { // (a point on the page, in its panel's share, where it now is)
      const at = doms.findIndex((d) => x <= d[1] + 1e-6), i = at < 0 ? doms.length - 1 : at, d = doms[i], b = to[i]; // (past the last: the last)
      return [(x - d[0]) / (d[1] - d[0] || 1), b[0] + y * (b[1] - b[0])];
    };
    xs.forEach((k, i) => {
      layout[`xaxis${k}`] = Object.assign({}, layout[`xaxis${k}`], { domain: [0, 1] });
      layout[`yaxis${k}`] = Object.assign({}, layout[`yaxis${k}`], { domain: to[i] }, i ? { showticklabels: true } : {}); // (each its rows' names)
    });
    layout.annotations = (layout.annotations || []).map((n) => {
      if (n.xref !== 'paper' || n.yref !== 'paper' || typeof n.x !== 'number' || typeof n.y !== 'number') return n;
      const [x, y] = spot(n.x, Math.min(1, n.y));
      return Object.assign({}, n, { x, y: n.y > 1 ? y + (n.y - 1) : y });
    });
    layout.height = Math.round((layout.height || 400) * grow);
    if (layout.legend && layout.legend.y < 0) { // (as far below, from the left edge: further right it took the plot's width away)
      layout.legend = Object.assign({}, layout.legend, { y: layout.legend.y / grow, x: 0, xanchor: 'left' });
    }
    return data;
  }

  /* The right panel below the left one, on rows of its own (yaxis2, a copy of the shared rows): its traces, notes and
   * the lines drawn across both panels follow it; its title (on the page's top edge) moves to the top of its panel. */
  const ROWS_TOP = [0.4, 1], ROWS_BOTTOM = [0, 0.32];
  function rowsStacked(data, layout) {
    if (!data.some((tr) => tr && tr.xaxis === 'x2' && (tr.yaxis || 'y') === 'y')) return data;
    layout.xaxis = Object.assign({}, layout.xaxis, { domain: [0, 1] });
    layout.xaxis2 = Object.assign({}, layout.xaxis2, { domain: [0, 1], anchor: 'y2' });
    layout.yaxis = Object.assign({}, layout.yaxis, { domain: ROWS_TOP });
    layout.yaxis2 = Object.assign({}, layout.yaxis, { domain: ROWS_BOTTOM, anchor: 'x2' });
    const right = (n) => n.xref === 'x2' || n.xref === 'x2 domain';
    layout.annotations = (layout.annotations || []).map((n) => (!right(n) ? n
      : n.yref === 'y' ? Object.assign({}, n, { yref: 'y2' })
        : n.yref === 'paper' && n.y >= 1 ? Object.assign({}, n, { y: ROWS_BOTTOM[1] + (n.y - 1) }) : n));
    layout.shapes = (layout.shapes || []).flatMap((s) => (s.xref === 'paper' && s.yref === 'y' // (a line across both panels)
      ? [Object.assign({}, s, { xref: 'x domain' }), Object.assign({}, s, { xref: 'x2 domain', yref: 'y2' })] : [s]));
    layout.height = Math.round((layout.height || 400) * 1.6);
    return data.map((tr) => (tr && tr.xaxis === 'x2' ? Object.assign({}, tr, { yaxis: 'y2' }) : tr));
  }

  /* A note written for one panel (xref "x2 domain": the KV figure's timing, the logit lens's "prediction forms
   * here") in lines as wide as that panel: on a phone it ran over the other panel's cells and the axis's numbers. A
   * note placed on the page (xref "paper": RoPE's fastest and slowest pair) in lines that end before the figure's edge. */
  const plotArea = (layout, width) => width - ((layout.margin || {}).l ?? 80) - ((layout.margin || {}).r ?? 80);
  function plotWidth(layout, width, axis) { // (the px of axis 'x', 'x2', ...)
    const d = (layout[axis && axis !== 'x' ? 'xaxis' + axis.slice(1) : 'xaxis'] || {}).domain || [0, 1];
    return plotArea(layout, width) * (d[1] - d[0]);
  }
  function room(layout, width, n) { // (the width a note has: its panel's, or on the page, from where it is to the edge)
    const m = /^(x\d*) domain$/.exec(n.xref || '');
    if (m) return plotWidth(layout, width, m[1]);
    if (n.xref !== 'paper' || typeof n.x !== 'number') return null;
    const at = ((layout.margin || {}).l ?? 80) + n.x * plotArea(layout, width);
    return n.xanchor === 'left' ? width - at - 4 : n.xanchor === 'right' ? at - 4 : 2 * Math.min(at, width - at) - 8;
  }
  /* A note in a panel's top corner (yref "y2 domain": the timing's figures) over the panel's tallest bars, Python left
   * room for its lines (viz/kv.py _headroom): wrapped in more lines, the axis's top is raised as much. */
  function raised(layout, n, was, now, size) {
    const m = /^y(\d*) domain$/.exec(n.yref || ''), key = m && `yaxis${m[1]}`, ax = key && layout[key];
    if (!ax || n.yanchor !== 'top' || !Array.isArray(ax.range) || ax.autorange || ax.type === 'log') return;
    const mg = layout.margin || {}, d = ax.domain || [0, 1];
    const panel = ((layout.height || 400) - (mg.t ?? 100) - (mg.b ?? 80)) * (d[1] - d[0]), need = (k) => k * size * 1.35 + 16;
    if (panel - need(now) < 40) return;
    const [lo, hi] = ax.range;
    layout[key] = Object.assign({}, ax, { range: [lo, lo + (hi - lo) * (panel - need(was)) / (panel - need(now))] });
  }
  function notesFitted(layout, width) {
    let below = 0;
    layout.annotations = (layout.annotations || []).map((n) => {
      const px = room(layout, width, n), was = typeof n.text === 'string' ? n.text.split('<br>') : [];
      const parts = was.map((line) => /^(<(b|i|sup|sub)>)?([^<>]*)(<\/\2>)?$/.exec(line)); // (plain, or one tag around plain)
      if (!px || !was.length || parts.some((m) => !m || Boolean(m[1]) !== Boolean(m[4]))) return n;
      const size = (n.font && n.font.size) || 12, per = Math.max(8, Math.floor(px / (size * 0.6)));
      const lines = parts.flatMap((m) => fitLine(m[3], per).map((x) => `${m[1] || ''}${x}${m[4] || ''}`));
      if (n.yref === 'paper' && n.y <= 0 && n.yanchor === 'top') below = Math.max(below, (lines.length - was.length) * size * 1.3);
      if (lines.length > was.length) raised(layout, n, was.length, lines.length, size);
      return lines.length > was.length ? Object.assign({}, n, { text: lines.join('<br>') }) : n;
    });
    if (below) { // (a note under the plot grew downwards: the figure grows as much, below)
      layout.margin = Object.assign({}, layout.margin, { b: ((layout.margin && layout.margin.b) ?? 80) + Math.ceil(below) });
      if (layout.height) layout.height += Math.ceil(below);
    }
  }

  /* A table's words (a heatmap's text) cut to its cells' width on a phone, with "…" (the whole word is in the hover):
   * longer ones ran over their neighbours. */
  const ESC = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#x27;': "'", '&#39;': "'" };
  const unescaped = (s) => s.replace(/&(amp|lt|gt|quot|#x27|#39);/g, (m) => ESC[m]);
  const escaped = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  function cutToCell(text, per) {
    const m = /^(<b>)?(.*?)(<\/b>)?$/.exec(text), word = unescaped(m[2]);
    const chars = Array.from(word), wide = (c) => (CJK.test(c) ? 2 : 1); // (by characters, not UTF-16 halves; CJK's twice as wide)
    if (/<|>/.test(m[2]) || wideLen(word) <= per) return text;
    let kept = '', n = 0;
    for (const c of chars) { if (n + wide(c) > Math.max(1, per - 1)) break; kept += c; n += wide(c); }
    return `${m[1] || ''}${escaped(kept || chars[0])}…${m[3] || ''}`;
  }
  function cellsFitted(data, layout, width) {
    return data.map((tr) => {
      if (!tr || tr.type !== 'heatmap' || !Array.isArray(tr.text) || !Array.isArray(tr.x) || !tr.x.length) return tr;
      const size = (tr.textfont && tr.textfont.size) || 12, cell = plotWidth(layout, width, tr.xaxis) / tr.x.length;
      const per = Math.max(2, Math.floor(cell / (size * 0.62)));
      let cut = false;
      const text = tr.text.map((row) => (Array.isArray(row) ? row.map((c) => {
        const x = typeof c === 'string' ? cutToCell(c, per) : c;
        cut = cut || x !== c;
        return x;
      }) : row));
      return cut ? Object.assign({}, tr, { text }) : tr; // (the same trace when no word was cut)
    });
  }

  /* The figures Gradio draws itself (gr.Plot: the "Inside the model" tab's, with Gradio's own Plotly.js, root.Plotly)
   * fitted as the viewer's are, in a window narrower than NARROW_WINDOW only (title, legend, notes, a table's words;
   * in a figure narrower than STACK_BELOW, its panels): looked at twice a second, and drawn again once where that changes them (each layout
   * Gradio draws is a new object: el._phoneSeen is the last one looked at). The viewer's own figures
   * (assets/viewer_plot.js, el._themed) are fitted as it draws them. */
  const STACK_BELOW = 560, FIGURE_AT_LEAST = 200; // (narrower: not a figure on a phone, but Gradio's empty plot beside the viewer's)
  const NARROW_WINDOW = 1000; // (a window narrower, or a page zoomed to 200%: words fitted, as assets/viewer_plot.js's NARROW)
  function fitGradioFigures() {
    setInterval(() => root.innerWidth < NARROW_WINDOW && document.querySelectorAll('.js-plotly-plot').forEach((el) => {
      const P = root.Plotly, layout = el.layout; // (the cheap checks first: a width read may cost the page a layout)
      if (el._themed || !P || !P.react || !layout || el._phoneSeen === layout || !Array.isArray(el.data) || !el.data.length
          || !el.data.every(Boolean)) return;
      const w = el.clientWidth;
      if (w < FIGURE_AT_LEAST) return; // (looked at again when Gradio draws it anew)
      el._phoneSeen = layout;
      const fitted = JSON.parse(JSON.stringify(layout));
      if (!fitted.height && el._fullLayout) fitted.height = el._fullLayout.height; // (as drawn, when the layout names none)
      const moved = w < STACK_BELOW ? stacked(el.data.slice(), fitted) : el.data.slice();
      wrappedTitle(fitted, w); notesFitted(fitted, w);
      const data = cellsFitted(wrappedLegend(moved, fitted, w), fitted, w);
      if (data.every((tr, i) => tr === el.data[i]) && JSON.stringify(fitted) === JSON.stringify(layout)) return;
      el._phoneSeen = fitted; // (Plotly.react keeps the layout it is given)
      Promise.resolve().then(() => P.react(el, data, fitted)).catch(() => {}); // (drawn as Gradio drew it, if Plotly will not)
    }), 500);
  }
  if (root.document && root.setInterval) fitGradioFigures();

  root.LLMViewerPhone = { wrappedTitle, wrappedLegend, fitLine, stacked, cellsFitted, notesFitted, STACK_BELOW };
})(typeof window !== 'undefined' ? window : globalThis);

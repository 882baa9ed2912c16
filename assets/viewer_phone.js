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
  function fitLine(text, per) {
    if (text.length <= per) return [text];
    if (CJK.test(text)) { const n = Math.max(4, Math.floor(per / 2)), out = []; for (let i = 0; i < text.length; i += n) out.push(text.slice(i, i + n)); return out; }
    const out = [];
    let line = '';
    for (const w of text.split(' ')) {
      if (line && (line + ' ' + w).length > per) { out.push(line); line = w; } else line = line ? `${line} ${w}` : w;
    }
    if (line) out.push(line);
    return out;
  }
  function wrappedTitle(layout, width) {
    const title = layout.title, text = title && (typeof title === 'string' ? title : title.text);
    if (!text || !width) return;
    const size = (title.font && title.font.size) || 17;
    let added = 0;
    const lines = text.split('<br>').flatMap((line) => {
      const m = /^(<(sup|sub|b|i|span)(?: style='font-size:(\d+)px')?>)?([^<>]*)(<\/\2>)?$/.exec(line);
      if (!m || Boolean(m[1]) !== Boolean(m[5])) return [line];
      const k = m[3] ? Number(m[3]) / size : m[2] === 'sup' || m[2] === 'sub' ? 0.7 : 1, per = Math.max(12, Math.floor((width - 20) / (size * k * 0.56)));
      const parts = fitLine(m[4].replace(/&amp;/g, '&'), per).map((x) => `${m[1] || ''}${x.replace(/&/g, '&amp;')}${m[5] || ''}`);
      added += (parts.length - 1) * size * k * 1.3;
      return parts;
    });
    if (!added) return;
    layout.title = Object.assign({}, typeof title === 'string' ? { text: title } : title, { text: lines.join('<br>') });
    layout.margin = Object.assign({}, layout.margin, { t: ((layout.margin && layout.margin.t) || 80) + Math.ceil(added) });
  }

  // and each trace's legend entry: Plotly wraps none, and a language's longer words ran past a phone's edge
  function wrappedLegend(data, layout, width) {
    const size = (layout.legend && layout.legend.font && layout.legend.font.size) || 14;
    const per = Math.max(12, Math.floor((width - 60) / (size * 0.56)));
    return data.map((tr) => (tr && typeof tr.name === 'string' && !/[<>]/.test(tr.name) && tr.name.length > per
      ? Object.assign({}, tr, { name: fitLine(tr.name, per).join('<br>') }) : tr));
  }

  /* Two panels side by side (x and x2: the KV cache and the timing, ...) one over the other: on a phone each was a
   * third of the width, their titles ran into each other and the timing's note over the left panel. The notes placed
   * on the page (xref/yref "paper") move with their panel; the figure grows to hold both. */
  const TOP = [0.58, 1], BOTTOM = [0, 0.4];
  function stacked(layout) {
    const a = layout.xaxis && layout.xaxis.domain, b = layout.xaxis2 && layout.xaxis2.domain;
    if (!a || !b || a[1] > b[0] || layout.xaxis3 || !layout.yaxis || !layout.yaxis2) return;
    const spot = (x, y) => { // (a point on the page, in the left or right panel's share, where it now is)
      const [d, to] = x <= a[1] + 1e-6 ? [a, TOP] : [b, BOTTOM];
      return [(x - d[0]) / (d[1] - d[0] || 1), to[0] + y * (to[1] - to[0])];
    };
    layout.xaxis = Object.assign({}, layout.xaxis, { domain: [0, 1] });
    layout.xaxis2 = Object.assign({}, layout.xaxis2, { domain: [0, 1] });
    layout.yaxis = Object.assign({}, layout.yaxis, { domain: TOP });
    layout.yaxis2 = Object.assign({}, layout.yaxis2, { domain: BOTTOM });
    layout.annotations = (layout.annotations || []).map((n) => {
      if (n.xref !== 'paper' || n.yref !== 'paper' || typeof n.x !== 'number' || typeof n.y !== 'number') return n;
      const [x, y] = spot(n.x, Math.min(1, n.y));
      return Object.assign({}, n, { x, y: n.y > 1 ? y + (n.y - 1) : y });
    });
    layout.height = Math.round((layout.height || 400) * 1.8);
    if (layout.legend && layout.legend.y < 0) layout.legend = Object.assign({}, layout.legend, { y: layout.legend.y / 1.8 }); // (as far below)
  }

  root.LLMViewerPhone = { wrappedTitle, wrappedLegend, fitLine, stacked };
})(typeof window !== 'undefined' ? window : globalThis);

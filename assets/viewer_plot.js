/* Drawing a panel's figure with Plotly fast enough to follow the step slider (used by viewer.js and app_viewer.js).
 *
 * Plotly.react redraws what changed, but a redraw of the data also redraws things that never change
 * from step to step: each of them is kept out of that per-step work here, drawn as Plotly draws it.
 *   - the config, given with a plot's first drawing only;
 *   - the plot's size, which Plotly would measure at every redraw (unmeasured);
 *   - the colour scale, drawn once as its own small Plotly figure over the plot's right margin
 *     (withoutScale, drawScale): Plotly would draw and measure a colour bar at every redraw of the
 *     data, a large part of a heatmap panel's redraw, though it never changes.
 * Loaded just after Plotly.js, before the viewer's other scripts.
 */
(function (root) {
  'use strict';

  // The mode bar's camera saves the panel's whole figure, its colour scale included (Plotly's own would
  // save the plot as drawn here, without it).
  const config = () => ({ displaylogo: false, responsive: true, modeBarButtonsToRemove: ['lasso2d', 'select2d', 'toImage'],
    modeBarButtonsToAdd: [{ name: 'saveImage', title: root.LLMText.t('viewer.save_png'), icon: plotly().Icons.camera, click: (el) => saveImage(el) }] });
  const SCALE_CONFIG = { staticPlot: true, displayModeBar: false, responsive: false };
  const SCALE_WIDTH = 80; // px of the plot's right margin that the colour scale takes
  const clone = (x) => JSON.parse(JSON.stringify(x)); // Plotly writes into the layout it is given
  // The Plotly.js loaded just before this file (assets/vendor's cartesian bundle, the copy an exported page inlines),
  // kept: in the app, Gradio later loads its own copy over window.Plotly, and a plot must be redrawn by
  // the Plotly that drew it.
  let pinned = root.Plotly;
  const plotly = () => pinned || (pinned = root.Plotly);

  // What a heatmap's own colour scale is made of (its colour bar included).
  const SCALE_KEYS = ['colorscale', 'reversescale', 'zmin', 'zmax', 'zmid', 'zauto', 'colorbar'];

  /* The figure's colour scale taken out of it: {data, scale}, layout changed in place (a copy): its
   * colour bar hidden, its right margin made room for the scale's own figure, `scale` (null when there
   * is none to take out). Only a scale with a fixed range is taken out (the same at every step); one
   * fitted to each step's data stays. */
  function withoutScale(data, layout) {
    const ax = layout.coloraxis;
    let out = data, scale = null;
    if (ax && ax.showscale !== false && ax.cmin !== undefined && ax.cmax !== undefined) {
      layout.coloraxis = Object.assign({}, ax, { showscale: false });
      scale = scaleFigure({ type: 'heatmap', z: [[0]], opacity: 0, coloraxis: 'coloraxis' }, ax, layout.font);
    } else {
      const i = data.findIndex((t) => t.type === 'heatmap' && !t.coloraxis && t.showscale !== false && t.zmin !== undefined && t.zmax !== undefined);
      if (i < 0) return { data, scale };
      const own = { type: 'heatmap', z: [[0]], opacity: 0, showscale: true };
      SCALE_KEYS.forEach((k) => { if (data[i][k] !== undefined) own[k] = data[i][k]; });
      out = data.slice();
      out[i] = Object.assign({}, data[i], { showscale: false });
      scale = scaleFigure(own, null, layout.font);
    }
    const m = layout.margin || {};
    layout.margin = Object.assign({}, m, { r: (m.r === undefined ? 80 : m.r) + SCALE_WIDTH }); // (80: Plotly's default)
    return { data: out, scale };
  }

  // The colour scale's own figure: an invisible cell whose colour bar sits at its left edge, no axes, the
  // scale's colours from the trace (or from `coloraxis`). Its height and top and bottom margins are the
  // plot's, set once the plot is drawn (drawScale).
  function scaleFigure(trace, coloraxis, font) {
    const bar = Object.assign({}, (coloraxis || trace).colorbar, { x: 0, xanchor: 'left', xref: 'paper', xpad: 0 });
    const hidden = { visible: false, fixedrange: true };
    const layout = { width: SCALE_WIDTH, font, paper_bgcolor: 'rgba(0,0,0,0)', plot_bgcolor: 'rgba(0,0,0,0)',
                     xaxis: hidden, yaxis: hidden, showlegend: false };
    if (coloraxis) layout.coloraxis = Object.assign({}, coloraxis, { showscale: true, colorbar: bar });
    return { data: [Object.assign({}, trace, coloraxis ? {} : { colorbar: bar }, { hoverinfo: 'skip' })], layout };
  }

  /* The colour scale over the plot's right margin, aligned with its plot area (drawn again only when it
   * or the plot's height and margins change). It lies inside the plot's own drawing, under the layers
   * Plotly draws on top (its mode bar, the hover labels), so a hover label is never hidden by it. */
  function drawScale(el, scale, template) {
    const paper = el._fullLayout._paperdiv.node();
    let box = paper.querySelector(':scope > .colour-scale');
    if (!scale) {
      if (box) { plotly().purge(box); box.remove(); }
      return null;
    }
    const size = el._fullLayout._size, fig = clone(scale);
    Object.assign(fig.layout, { height: el._fullLayout.height, margin: { l: 0, r: 0, t: size.t, b: size.b, autoexpand: false } });
    const key = JSON.stringify(fig);
    if (box && box.dataset.key === key) return null;
    if (!box) {
      box = document.createElement('div');
      box.className = 'colour-scale';
      Object.assign(box.style, { position: 'absolute', top: '0', right: '0', width: `${SCALE_WIDTH}px`, pointerEvents: 'none' });
      const bar = el._fullLayout._modebardiv; // (the mode bar's box; the hover labels' layer follows it)
      paper.insertBefore(box, bar ? bar.node() : null);
    }
    box.dataset.key = key;
    if (template) fig.layout.template = template;
    return plotly().react(box, fig.data, fig.layout, SCALE_CONFIG);
  }

  /* The page's theme, for the figures: in the app, Gradio's (the class `dark` on <body>, set from `?__theme`
   * or the system's preference); in the exported page, the system's (prefers-color-scheme). */
  const doc = typeof document !== 'undefined' ? document : null;
  function dark() {
    if (!doc || !doc.body) return false;
    if (doc.body.classList.contains('dark')) return true;
    const gradio = doc.querySelector('gradio-app, .gradio-container');
    return !gradio && !!(root.matchMedia && root.matchMedia('(prefers-color-scheme: dark)').matches);
  }

  // Colours: '#rgb', '#rrggbb', 'rgb(a)(...)' and the few names the figures use -> [r, g, b, a]; WCAG contrast.
  const NAMED = { white: [255, 255, 255, 1], black: [0, 0, 0, 1], transparent: [0, 0, 0, 0] };
  function rgba(c) {
    if (typeof c !== 'string') return null;
    const s = c.trim().toLowerCase();
    if (NAMED[s]) return NAMED[s];
    let m = s.match(/^#([0-9a-f]{3}|[0-9a-f]{6})$/);
    if (m) {
      const h = m[1].length === 3 ? m[1].replace(/./g, (x) => x + x) : m[1], n = parseInt(h, 16);
      return [n >> 16, (n >> 8) & 255, n & 255, 1];
    }
    m = s.match(/^rgba?\(([^)]+)\)$/);
    if (!m) return null;
    const v = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
  }
  const hex = (c) => '#' + c.slice(0, 3).map((x) => Math.round(x).toString(16).padStart(2, '0')).join('');
  const lin = (x) => { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); };
  const lum = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const contrast = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const MIN_CONTRAST = 4.6; // WCAG AA's 4.5:1 for text, with a little to spare for rounding

  /* A text colour that reads on `bg` (at least MIN_CONTRAST): the colour itself when it does, else the
   * same colour mixed towards white (on a dark background) or black (on a light one) until it does. */
  const readableCache = new Map();
  function readable(colour, bg) {
    const key = colour + '|' + bg;
    if (readableCache.has(key)) return readableCache.get(key);
    const c = rgba(colour), b = rgba(bg);
    let out = colour;
    if (c && b && c[3] > 0 && contrast(c, b) < MIN_CONTRAST) {
      const to = lum(b) < 0.18 ? [255, 255, 255] : [0, 0, 0];
      for (let t = 0.05; t <= 1.0001; t += 0.05) {
        const mix = [0, 1, 2].map((i) => c[i] + (to[i] - c[i]) * t);
        out = hex(mix);
        if (contrast(mix, b) >= MIN_CONTRAST) break;
      }
    }
    readableCache.set(key, out);
    return out;
  }
  // every `color:#...` inside a label's inline HTML (greyed candidates, ...) made readable on bg
  const readableHtml = (s, bg) => (typeof s === 'string' && s.indexOf('color:') >= 0
    ? s.replace(/color:\s*(#[0-9a-fA-F]{3,6}|rgba?\([^)]*\))/g, (all, c) => 'color:' + readable(c, bg)) : s);

  /* The page's colours for figures. Dark: the paper is the colour of what the plot sits on (the panel's
   * own background), the text light, the grid faint; light: the figures' own (viz/style.py). */
  const DARK_TEXT = '#e5e7eb', DARK_GRID = '#374151', DARK_LINE = '#4b5563', DARK_PAPER = '#111827';
  function backdrop(el) {
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c && c[3] >= 1) return hex(c);
    }
    return null;
  }
  function theme(el) {
    const isDark = dark();
    const behind = el && el.parentElement ? backdrop(el.parentElement) : null;
    const k = doc && doc.body && doc.body.classList.contains('present') ? PRESENT : 1;
    const phone = !!(root.innerWidth && root.innerWidth < PHONE);
    const narrow = !!(root.innerWidth && root.innerWidth < NARROW); // (a small window, or a page zoomed to 200%: titles wrapped)
    return isDark ? { dark: true, paper: behind && lum(rgba(behind)) < 0.2 ? behind : DARK_PAPER, k, phone, narrow }
      : { dark: false, paper: behind || '#ffffff', k, phone, narrow };
  }

  // The figure's template in the dark: the same object for the same template and paper (react compares
  // templates by identity: a new object at every step would redraw the whole figure).
  const darkTemplates = new WeakMap(), NO_TEMPLATE = {};
  function darkTemplate(template, paper) {
    const key = template || NO_TEMPLATE;
    let byPaper = darkTemplates.get(key);
    if (!byPaper) darkTemplates.set(key, (byPaper = new Map()));
    if (byPaper.has(paper)) return byPaper.get(paper);
    const t = template ? clone(template) : {};
    const axis = { gridcolor: DARK_GRID, linecolor: DARK_LINE, zerolinecolor: DARK_LINE, tickcolor: DARK_LINE };
    const l = (t.layout = t.layout || {});
    Object.assign(l, { paper_bgcolor: paper, plot_bgcolor: paper, font: Object.assign({}, l.font, { color: DARK_TEXT }) });
    l.xaxis = Object.assign({}, l.xaxis, axis);
    l.yaxis = Object.assign({}, l.yaxis, axis);
    l.coloraxis = Object.assign({}, l.coloraxis, { colorbar: Object.assign({}, (l.coloraxis || {}).colorbar, { outlinecolor: DARK_LINE }) });
    byPaper.set(paper, t);
    return t;
  }

  // A trace's text colours and labels made readable on the paper; the same trace object back when nothing
  // changes, and the same copy for the same trace and paper (arrays Plotly compares keep their identity).
  const traceCache = new WeakMap();
  function readableTrace(trace, bg) {
    let byBg = traceCache.get(trace);
    if (byBg && byBg.has(bg)) return byBg.get(bg);
    let out = trace;
    const tf = trace.textfont;
    if (tf && tf.color !== undefined && /text/.test(trace.mode || '') ) {
      const color = Array.isArray(tf.color) ? tf.color.map((c) => readable(c, bg)) : readable(tf.color, bg);
      out = Object.assign({}, out, { textfont: Object.assign({}, tf, { color }) });
    }
    ['x', 'y'].forEach((k) => {
      const v = trace[k];
      if (Array.isArray(v) && v.some((s) => typeof s === 'string' && s.indexOf('color:') >= 0)) {
        out = out === trace ? Object.assign({}, trace) : out;
        out[k] = v.map((s) => readableHtml(s, bg));
      }
    });
    if (!byBg) traceCache.set(trace, (byBg = new Map()));
    byBg.set(bg, out);
    return out;
  }

  /* The figure in the page's theme: {data, layout, template}, layout changed in place (a copy). Every text
   * colour the figure names (annotations, legend, tick labels, a trace's text) is made readable on the
   * paper, in both themes; in the dark, the paper, plot, text and grid take the page's colours. */
  function themed(data, layout, template, th) {
    const bg = th.paper;
    if (th.dark) {
      template = darkTemplate(template, bg);
      layout.paper_bgcolor = layout.plot_bgcolor = bg;
      layout.font = Object.assign({}, layout.font, { color: DARK_TEXT });
      Object.keys(layout).forEach((k) => {
        if (!/^[xy]axis\d*$/.test(k) || !layout[k]) return;
        const a = layout[k] = Object.assign({}, layout[k]);
        ['gridcolor', 'linecolor', 'zerolinecolor'].forEach((c) => { if (a[c] !== undefined) a[c] = c === 'gridcolor' ? DARK_GRID : DARK_LINE; });
      });
    }
    const fix = (font) => (font && font.color !== undefined && !Array.isArray(font.color)
      ? Object.assign({}, font, { color: readable(font.color, bg) }) : font);
    if (layout.title && layout.title.font) layout.title = Object.assign({}, layout.title, { font: fix(layout.title.font) });
    if (layout.legend && layout.legend.font) layout.legend = Object.assign({}, layout.legend, { font: fix(layout.legend.font) });
    if (Array.isArray(layout.annotations)) {
      layout.annotations = layout.annotations.map((a) => {
        const out = Object.assign({}, a), box = rgba(a.bgcolor);
        if (th.dark && box && box[3] > 0 && lum(box) > 0.2) out.bgcolor = bg; // a light box behind a note: the paper's colour
        const nb = rgba(out.bgcolor), on = nb && nb[3] > 0.5 ? hex(nb) : bg;
        out.text = readableHtml(a.text, on);
        if (a.font && a.font.color !== undefined && !Array.isArray(a.font.color)) out.font = Object.assign({}, a.font, { color: readable(a.font.color, on) });
        return out;
      });
    }
    Object.keys(layout).forEach((k) => {
      const a = layout[k];
      if (/^[xy]axis\d*$/.test(k) && a && Array.isArray(a.ticktext)) layout[k] = Object.assign({}, a, { ticktext: a.ticktext.map((s) => readableHtml(s, bg)) });
    });
    return { data: data.map((t) => readableTrace(t, bg)), layout, template };
  }

  /* The presenter view (the class `present` on <body>, assets/page.js): every text of the figure larger by
   * k (13 px becomes 18), its margins wider and the figure taller to hold it. */
  const PRESENT = 1.4;
  function enlarged(data, layout, k) {
    if (k === 1) return data;
    const big = (f) => (f && f.size ? Object.assign({}, f, { size: Math.round(f.size * k) }) : f);
    const px = (s) => (typeof s === 'string' ? s.replace(/font-size:\s*(\d+)px/g, (_, n) => `font-size:${Math.round(n * k)}px`) : s);
    layout.font = Object.assign({}, layout.font, { size: Math.round(((layout.font && layout.font.size) || 12) * k) });
    if (layout.title) {
      const pad = Object.assign({}, layout.title.pad, { t: Math.round(((layout.title.pad && layout.title.pad.t) || 0) * k + 8) });
      layout.title = Object.assign({}, layout.title, { font: big(layout.title.font), text: px(layout.title.text), pad });
    }
    if (layout.legend) layout.legend = Object.assign({}, layout.legend, { font: big(layout.legend.font) });
    if (Array.isArray(layout.annotations)) layout.annotations = layout.annotations.map((a) => Object.assign({}, a, { font: big(a.font), text: px(a.text) }));
    Object.keys(layout).forEach((key) => {
      const a = layout[key];
      if (!/^[xy]axis\d*$/.test(key) || !a) return;
      const title = a.title && typeof a.title === 'object' ? Object.assign({}, a.title, { font: big(a.title.font) }) : a.title;
      layout[key] = Object.assign({}, a, { tickfont: big(a.tickfont), title });
    });
    const m = layout.margin || {};
    layout.margin = Object.assign({}, m, { l: Math.round((m.l || 80) * k), t: Math.round((m.t || 100) * k), b: Math.round((m.b || 80) * k) });
    if (layout.height) layout.height = Math.round(layout.height * (1 + (k - 1) / 2));
    return data.map((t) => (t.textfont ? Object.assign({}, t, { textfont: big(t.textfont) }) : t));
  }

  /* A phone (the page's one-column width, assets/style.css): the distribution's labels short enough for the bars to
   * use the width ("#3 Paris ◀" and "rest (49,132)"), the whole label kept in the bar's hover. The rest's label is
   * the catalogue's dist.rest_n in the language spoken (its count of tokens read back, written dist.rest_short). */
  const PHONE = 600, NARROW = 1000, SHORT = 8;
  function restCount(s) {
    const T = root.LLMText, body = s.replace(/^<i>|<\/i>$/g, '');
    if (!T || !T.has('dist.rest_n')) return null;
    const [pre, post] = T.t('dist.rest_n', { tokens: '\u0000' }).split('\u0000');
    if (!body.startsWith(pre) || !body.endsWith(post) || body.length <= pre.length + post.length) return null;
    const n = /\d[\d,.\s\u00a0\u202f]*/.exec(body.slice(pre.length, body.length - post.length));
    return n ? n[0].trim() : null;
  }
  function shortLabel(s) {
    const rest = restCount(s);
    if (rest !== null) return `<i>${root.LLMText.t('dist.rest_short', { n: rest })}</i>`;
    const m = /^(<[^>]+>)?(#\d+ )(.*?)( ◀ [^<]+)?(<\/[^>]+>)?$/.exec(s);
    if (!m) return s;
    const chars = m[3].match(/&[#\w]+;|./gsu) || [];
    const piece = chars.length > SHORT ? chars.slice(0, SHORT - 1).join('') + '…' : m[3];
    return `${m[1] || ''}${m[2]}${piece}${m[4] ? ' ◀' : ''}${m[5] || ''}`;
  }
  function narrowed(data, layout) {
    const labels = data[0] && data[0].y;
    if (!Array.isArray(labels) || !layout.yaxis) return;
    layout.yaxis = Object.assign({}, layout.yaxis, { tickvals: labels, ticktext: labels.map(shortLabel),
      tickfont: Object.assign({}, layout.yaxis.tickfont, { size: 13 }) }); // (13 px: the page's least for figure text)
    layout.margin = Object.assign({}, layout.margin, { l: 92, r: 30 });
    // the cut-off line's word inside the plot, over its line (outside it, the 30 px margin cut it)
    if (Array.isArray(layout.annotations)) {
      layout.annotations = layout.annotations.map((a) => (a && a.name === 'cut-off' ? Object.assign({}, a, { xanchor: 'right', yanchor: 'bottom' }) : a));
    }
  }

  function saveImage(el) {
    const fig = el._whole, full = el._fullLayout;
    return plotly().downloadImage({ data: fig.data, layout: Object.assign(clone(fig.layout), fig.template ? { template: fig.template } : {}) },
      { format: 'png', filename: 'newplot', width: full.width, height: full.height });
  }

  /* Plotly reads a plot's clientWidth and clientHeight at every redraw, only to learn whether the plot
   * was drawn while hidden (then it sizes its paper in pixels, not 100%). Read while the page holds
   * another panel's new drawing, that forces the browser to lay the page out there and then, once per
   * panel. Our panels always give their height, and Plotly's resize handler sets the width in pixels
   * too, so the answer changes nothing a person sees: it is given once, after the first drawing. */
  function unmeasured(el) {
    if (el._context && !el._context._hasZeroWidth) el._context._hasZeroHeight = el._context._hasZeroWidth = true;
  }

  /* Plotly.react of a panel's figure at a step. Plotly redraws only what changed, judged per attribute;
   * two attributes are kept out of that judgement, as each made every step a redraw of the whole figure:
   * the template, compared by identity (the panel's own object is given each time, not a copy), and
   * layout.meta (a change of it redraws everything), written on the plot once it is drawn. A step that
   * changes only shapes (the KV panel's ring and bar outline) redraws only those. */
  const STACK_BELOW = root.LLMViewerPhone.STACK_BELOW; // (a figure narrower draws two panels one over the other)
  function react(el, fig) {
    const { meta, template: own, ...rest } = fig.layout;
    const th = el._theme || (el._theme = theme(el)); // (measured once: a style read per step would cost a layout)
    const t = themed(fig.data, clone(rest), own, th), template = t.template;
    t.data = enlarged(t.data, t.layout, th.k);
    if (th.phone && el.closest && el.closest('#dist-plot')) narrowed(t.data, t.layout);
    if (th.narrow) { // (the width measured once, as the theme is)
      const w = el._width || (el._width = el.clientWidth);
      if (w && w < STACK_BELOW) t.data = root.LLMViewerPhone.stacked(t.data, t.layout); // (side by side, one over the other)
      root.LLMViewerPhone.wrappedTitle(t.layout, w); root.LLMViewerPhone.notesFitted(t.layout, w); // (assets/viewer_phone.js)
      t.data = root.LLMViewerPhone.cellsFitted(root.LLMViewerPhone.wrappedLegend(t.data, t.layout, w), t.layout, w);
    }
    const layout = Object.assign(t.layout, template ? { template } : {});
    el._whole = { data: fig.data, layout: rest, template: own }; // (what the camera saves)
    el._themed = { dark: th.dark, paper: th.paper, k: th.k, fig }; // (drawn again in the other theme or size by retheme)
    const { data, scale } = withoutScale(t.data, layout);
    // the config once, with the first drawing: given again, Plotly deep-copies and compares it every redraw
    const given = el._fullLayout ? undefined : config();
    return plotly().react(el, data, layout, given).then(() => {
      el.layout.meta = meta;
      unmeasured(el);
      toolbar(el);
      return drawScale(el, scale, template);
    }).then((drawn) => {
      if (root.LLMFigureText) root.LLMFigureText.label(el, fig); // (a screen reader's words for it: assets/figure_text.js)
      return drawn;
    });
  }

  /* A plot's mode bar is one Tab stop, a toolbar (WAI-ARIA's pattern): its first button in the Tab order, the others
   * on the arrow keys, Home and End (eight stops a plot were eight a keyboard passed on the way to the next panel). */
  function toolbar(el) {
    const bar = el.querySelector('.modebar'), btns = bar ? [...bar.querySelectorAll('.modebar-btn')] : [];
    if (!btns.length) return;
    const at = Math.max(0, btns.findIndex((b) => b.getAttribute('tabindex') === '0'));
    btns.forEach((b, i) => { const want = i === at ? '0' : '-1'; if (b.getAttribute('tabindex') !== want) b.setAttribute('tabindex', want); }); // (a step's redraw writes nothing)
    if (bar.dataset.toolbar) return;
    Object.assign(bar.dataset, { toolbar: '1' });
    bar.setAttribute('role', 'toolbar');
    bar.addEventListener('keydown', (e) => {
      const all = [...bar.querySelectorAll('.modebar-btn')], i = all.indexOf(document.activeElement);
      const to = { ArrowRight: i + 1, ArrowDown: i + 1, ArrowLeft: i - 1, ArrowUp: i - 1, Home: 0, End: all.length - 1 }[e.key];
      if (i < 0 || to === undefined) return;
      e.preventDefault();
      const next = all[(to + all.length) % all.length];
      all.forEach((b) => b.setAttribute('tabindex', b === next ? '0' : '-1'));
      next.focus();
    });
  }

  /* Each drawn panel again in the new theme when the page's theme changes (Gradio's class on <body>, or
   * the system's preference): only those drawn in the other one. */
  function retheme() {
    if (!doc) return;
    doc.querySelectorAll('.js-plotly-plot').forEach((el) => {
      const was = el._themed;
      if (!was || !el._fullLayout) return;
      const th = theme(el);
      if (th.dark !== was.dark || th.paper !== was.paper || th.k !== was.k) { el._theme = th; react(el, was.fig); }
    });
  }
  if (doc && typeof MutationObserver !== 'undefined') {
    let pending = null;
    const later = () => { if (!pending) pending = setTimeout(() => { pending = null; retheme(); }, 50); };
    const watch = () => new MutationObserver(later).observe(doc.body, { attributes: true, attributeFilter: ['class'] });
    if (doc.body) watch(); else doc.addEventListener('DOMContentLoaded', watch);
    const mq = root.matchMedia && root.matchMedia('(prefers-color-scheme: dark)');
    if (mq && mq.addEventListener) mq.addEventListener('change', later);
  }

  root.LLMViewer = Object.assign(root.LLMViewer || {}, { react, plotly, dark, readable });
})(typeof window !== 'undefined' ? window : globalThis);

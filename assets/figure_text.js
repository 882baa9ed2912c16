/* A figure in words, for a screen reader: what a sighted student reads off a panel's plot at this step, in the page's
 * language (the catalogue's a11y.* sentences). assets/viewer_plot.js gives it to every plot it draws, at every step:
 * the plot's drawing becomes one image (role="img") named by its title and
 *   - bars with their numbers written on them (the distribution): each bar's label and its number, in order (a bar
 *     too short for its number: the number its hover gives);
 *   - a heatmap (attention, the logit lens, the residual stream): for each row, the column it is largest in, and how large;
 *   - labelled points (the embeddings): their names.
 * (Before, a screen reader named the plot by every tick label of its axes, read as words, and no number at all.)
 * Loaded after text.js, before viewer_plot.js.
 */
(function (root) {
  'use strict';

  const MAX_ROWS = 12; // a heatmap's rows said; the rest counted
  const MAX_POINTS = 20;

  // Plotly's text with its markup read as a person reads it: a line break a pause, tags gone, entities decoded.
  function plain(s) {
    return String(s === undefined || s === null ? '' : s).replace(/<br\s*\/?>/gi, ' · ').replace(/<[^>]*>/g, '')
      .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&')
      .replace(/[ \t\r\n]+/g, ' ').trim(); // (not \s: a French '5 %' keeps its narrow no-break space)
  }

  const T = () => root.LLMText; // (text.js, loaded before)
  const t = (key, vars) => T().t(key, vars);
  const more = (n) => (n > 0 ? ' ' + t('a11y.more', { n: T().thousands(n) }) : '');

  function bars(trace) {
    const horizontal = trace.orientation === 'h';
    const labels = horizontal ? trace.y : trace.x, texts = trace.text;
    if (!Array.isArray(labels) || !Array.isArray(texts)) return null;
    const values = horizontal ? trace.x : trace.y, hover = Array.isArray(trace.hovertext) ? trace.hovertext : [];
    // a bar too short for its number to be written on it: the number its hover gives, or its length
    const value = (i) => plain(texts[i]) || plain(hover[i]) || (typeof values[i] === 'number' ? T().pct(values[i], null) : '');
    return labels.map((lab, i) => t('a11y.value', { label: plain(lab), value: value(i) })).join('; ');
  }

  // a heatmap's first rows (those said): each row's largest cell's column, or -1
  function largest(rows) {
    return rows.map((row) => {
      let best = -1;
      for (let j = 0; j < row.length; j++) if (typeof row[j] === 'number' && Number.isFinite(row[j]) && (best < 0 || row[j] > row[best])) best = j;
      return best;
    });
  }

  function heatmap(trace) {
    const z = trace.z;
    if (!Array.isArray(z) || !z.length || !(Array.isArray(z[0]) || ArrayBuffer.isView(z[0]))) return null;
    const rows = z.slice(0, MAX_ROWS), xs = trace.x || [], ys = trace.y || [];
    const bests = largest(rows);
    // probabilities (every cell said between 0 and 1) as percentages, other numbers as they are
    const unit = rows.every((row) => Array.prototype.every.call(row, (v) => typeof v !== 'number' || !Number.isFinite(v) || (v >= 0 && v <= 1)));
    const said = rows.map((row, i) => (bests[i] < 0 ? null : t('a11y.row_most', {
      row: plain(ys[i] === undefined ? i : ys[i]), col: plain(xs[bests[i]] === undefined ? bests[i] : xs[bests[i]]),
      value: unit ? T().pct(row[bests[i]], null) : T().local(T().fixed(row[bests[i]], 2)) }))).filter(Boolean);
    return said.length ? said.join('; ') + more(z.length - MAX_ROWS) : null;
  }

  function points(trace) {
    const all = Array.isArray(trace.text) ? trace.text : [];
    const names = all.slice(0, MAX_POINTS).map(plain).filter(Boolean); // (a few thousand points: only those said are read)
    if (!names.length) return null;
    return t('a11y.points', { names: names.join(', ') }) + more(all.length - MAX_POINTS);
  }

  /* The words for a figure {data, layout}: its title, then what each of its traces shows (a bar trace without
   * numbers written on it, a legend's marker, says nothing). */
  function describe(fig) {
    if (!T()) return '';
    const layout = fig.layout || {}, title = layout.title && typeof layout.title === 'object' ? layout.title.text : layout.title;
    const parts = [];
    for (const tr of fig.data || []) {
      if (tr.visible === false) continue;
      const kind = tr.type || 'scatter';
      const said = kind === 'bar' ? bars(tr) : kind === 'heatmap' ? heatmap(tr) : kind === 'scatter' || kind === 'scattergl' ? points(tr) : null;
      if (said) parts.push(said);
    }
    const notes = (layout.annotations || []).filter((a) => a.name === 'notes').map((a) => plain(a.text)); // (what a chart says under it)
    return [plain(title), ...parts, ...notes].filter(Boolean).join('. ');
  }

  /* The plot `el` named by its figure's words: its drawing (Plotly's first <svg>) one image of that name, its other
   * layers (the title, the legend, the colour scale: said in the words) hidden from a screen reader. (Not the plot's
   * own element: it holds the mode bar's buttons, and an image holds no control.) */
  function label(el, fig) {
    if (!el || !el.querySelectorAll) return;
    const words = describe(fig) || t('a11y.figure');
    el.querySelectorAll('svg.main-svg').forEach((svg, i) => {
      if (i === 0) {
        svg.setAttribute('role', 'img');
        svg.setAttribute('aria-label', words);
      } else svg.setAttribute('aria-hidden', 'true');
    });
  }

  root.LLMFigureText = { describe, label, plain };
})(typeof window !== 'undefined' ? window : globalThis);

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
    modeBarButtonsToAdd: [{ name: 'saveImage', title: 'Download plot as a PNG', icon: plotly().Icons.camera, click: (el) => saveImage(el) }] });
  const SCALE_CONFIG = { staticPlot: true, displayModeBar: false, responsive: false };
  const SCALE_WIDTH = 80; // px of the plot's right margin that the colour scale takes
  const clone = (x) => JSON.parse(JSON.stringify(x)); // Plotly writes into the layout it is given
  // The Plotly.js loaded just before this file (the plotly package's, the copy an exported page inlines),
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
  function react(el, fig) {
    const { meta, template, ...rest } = fig.layout;
    const layout = Object.assign(clone(rest), template ? { template } : {});
    el._whole = { data: fig.data, layout: rest, template }; // (what the camera saves)
    const { data, scale } = withoutScale(fig.data, layout);
    // the config once, with the first drawing: given again, Plotly deep-copies and compares it every redraw
    const given = el._fullLayout ? undefined : config();
    return plotly().react(el, data, layout, given).then(() => {
      el.layout.meta = meta;
      unmeasured(el);
      return drawScale(el, scale, template);
    });
  }

  root.LLMViewer = Object.assign(root.LLMViewer || {}, { react, plotly });
})(typeof window !== 'undefined' ? window : globalThis);

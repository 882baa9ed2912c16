/* Colour by: the written text coloured by each token's number, in the browser, with no request. The "Colour by"
 * radio (#colour-by: a gr.Radio on the page, ui/layout.py; native radios on the offline page, viz/output.py) picks
 * the mode: token boundaries (two alternating shades), probability, surprise, entropy, or none.
 *
 * viz/output.py writes each token's numbers on its span: data-step; data-prob, its probability in the distribution
 * it was drawn from; data-surprise, -log2 of its probability at temperature 1 (bits); data-entropy, the entropy of
 * the step's distribution at temperature 1 (bits). This module is the one home of the scales: each mode's bin edges,
 * and one palette per theme, one hue from light to dark (readable with colour-vision deficiency), the text on every
 * shade at least 4.5:1 (tests/unit/test_colour_by.py). It paints the spans (`data-cb`: the shade's index; the text
 * block's `data-colour-by`: the mode), draws the legend (#colour-legend .cb-host) and writes the number of the token
 * hovered or tapped into it. The page's text is redrawn by the server during a run: it is painted again as it
 * comes (before the browser draws it). Guess first: the step's hidden token stays hidden whatever its colour
 * (assets/style.css, viewer.css), and the legend forgets a token once it is no longer on screen.
 */
(function (root) {
  'use strict';

  const MODES = ['boundaries', 'prob', 'surprise', 'entropy', 'none'];
  const PROB_EDGES = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9];
  const BIT_EDGES = [0.5, 1, 2, 3, 4, 6, 8]; // (surprise and entropy on one scale: a step's entropy is its expected surprise)
  const T = () => root.LLMText;
  // a number of bits as viz/output.py writes it (to 2 decimals, with the language's decimal mark: viz.text.decimal)
  const bits = (x) => root.LLMText.t('colour.bits', { n: Number.isFinite(x) ? T().local(T().fixed(x, 2)) : '∞' });
  const edge = (x) => T().local(String(x)); // a bin edge: 0.5 (French 0,5)
  const SCALES = {
    // tick: an edge as the legend writes it (lo: as the start of a range, '5–10%'); value: a token's number as the readout does
    prob: { attr: 'prob', edges: PROB_EDGES, tick: (x) => T().pct(x, 0), lo: (x) => String(Math.round(x * 100)),
            value: (x) => T().pct(x, null), what: () => root.LLMText.t('colour.legend.prob') },
    surprise: { attr: 'surprise', edges: BIT_EDGES, tick: edge, lo: edge, value: bits, what: () => root.LLMText.t('colour.legend.surprise') },
    entropy: { attr: 'entropy', edges: BIT_EDGES, tick: edge, lo: edge, value: bits, what: () => root.LLMText.t('colour.legend.entropy') },
  };
  // [background, text] of each shade, lowest first. Light: from the page's white to dark blue; dark: from the page's
  // dark to light blue (more: more contrast with the page, in either theme). Boundaries: the two shades the text had.
  const LIGHT = [['#e6effa', '#111827'], ['#d4e4f4', '#111827'], ['#b3cfea', '#111827'], ['#8bb5dc', '#111827'],
                 ['#5f96cb', '#111827'], ['#3a76b6', '#ffffff'], ['#215a9a', '#ffffff'], ['#0e3b73', '#ffffff']];
  const DARK = [['#1c2b45', '#f3f4f6'], ['#1e375a', '#f3f4f6'], ['#204571', '#f3f4f6'], ['#255589', '#f3f4f6'],
                ['#2f67a6', '#f3f4f6'], ['#4a84c2', '#0b0f19'], ['#78a6d8', '#0b0f19'], ['#b0cdee', '#0b0f19']];
  const SHADES = { light: { a: ['#e6f0ff', '#1a202c'], b: ['#fff0d9', '#1a202c'] }, dark: { a: ['#1e3356', '#f3f4f6'], b: ['#4a3718', '#f3f4f6'] } };

  // the shade of a value: how many edges it reaches (NaN: none)
  function bin(edges, x) {
    if (Number.isNaN(x)) return null;
    let i = 0;
    while (i < edges.length && x >= edges[i]) i++;
    return i;
  }

  // The style sheet of the shades: the app's dark theme is Gradio's class `dark` on <body>; the offline page follows
  // the system (its <html> gets `cb-media`). A later step (the offline page's `.future`) is never coloured; in the
  // boundaries mode the offline page's step on screen keeps its own mark (`.current`).
  function css() {
    const rule = (pre, sel, c) => `${pre}[data-colour-by] ${sel} { background: ${c[0]} !important; color: ${c[1]} !important; }`;
    const sheet = (pre, pal, sh) => pal.map((c, i) => rule(pre, `[data-cb="${i}"]:not(.future)`, c))
      .concat(['a', 'b'].map((k) => rule(pre, `[data-cb="${k}"]:not(.current):not(.future)`, sh[k]))).join('\n');
    return [
      '[data-colour-by] [data-cb] { border-radius: 3px; -webkit-box-decoration-break: clone; box-decoration-break: clone; }',
      '[data-colour-by="none"] .step:not(.current):not(.future) { background: transparent !important; }',
      sheet('', LIGHT, SHADES.light), sheet('.dark ', DARK, SHADES.dark),
      `@media (prefers-color-scheme: dark) {\n${sheet('.cb-media ', DARK, SHADES.dark)}\n}`,
      '.cb-legend { font-size: 15px; line-height: 1.45; margin: 4px 0; }',
      '.cb-moved { margin-top: 4px; font-weight: 600; }',
      '.cb-row { display: flex; flex-wrap: wrap; align-items: center; gap: 2px 14px; margin: 3px 0; }',
      '.cb-scale { display: flex; flex-wrap: wrap; gap: 2px; }',
      '.cb-scale [data-cb] { padding: 1px 5px; font-size: 14px; font-variant-numeric: tabular-nums; white-space: nowrap; }',
      '.cb-readout { font-weight: 600; }',
      '.colour-by { display: flex; flex-wrap: wrap; gap: 4px 14px; align-items: center; margin: 8px 0 2px 0; font-size: 15px; }',
      '.colour-by .cb-label { font-weight: 600; }',
      '.colour-by label { display: inline-flex; align-items: center; gap: 5px; cursor: pointer; }',
    ].join('\n');
  }

  function install() {
    if (document.getElementById('colour-by-style')) return;
    const el = document.createElement('style');
    el.id = 'colour-by-style';
    el.textContent = css();
    (document.head || document.documentElement).appendChild(el);
  }

  // the mode the radio shows: Gradio's radio marks its choice aria-checked (each of its inputs has a name of its own,
  // so the one clicked is :checked before the one it replaces is not); the offline page's are a plain radio group.
  // `picked`: the input a person just picked (its change event comes before Gradio marks it).
  function mode(picked) {
    const r = picked && picked.checked ? picked
      : document.querySelector('#colour-by input[aria-checked="true"]') || document.querySelector('#colour-by input[type=radio]:checked');
    return r && MODES.includes(r.value) ? r.value : 'boundaries';
  }

  // the element holding the text's spans: the app's .gen-text, the offline page's #output
  const textBlock = () => document.querySelector('#output .gen-text') || document.querySelector('#output:has(> [data-step])');

  function paintSpan(el, m) {
    const sc = SCALES[m];
    let cb = null;
    if (m === 'boundaries') cb = Number(el.dataset.step) % 2 ? 'b' : 'a';
    else if (sc) cb = bin(sc.edges, Number(el.dataset[sc.attr]));
    if (cb === null) delete el.dataset.cb; else el.dataset.cb = String(cb);
  }

  function paint(picked) {
    if (!document.querySelector('gradio-app')) document.documentElement.classList.add('cb-media'); // (the offline page)
    const m = mode(picked instanceof Element ? picked : null), box = textBlock();
    if (box) {
      box.dataset.colourBy = m;
      box.querySelectorAll('[data-step]').forEach((el) => paintSpan(el, m));
    }
    drawLegend(m);
    forget();
  }

  function rangeText(sc, i) {
    const e = sc.edges;
    if (i === 0) return root.LLMText.t('colour.below', { hi: sc.tick(e[0]) });
    if (i === e.length) return root.LLMText.t('colour.above', { lo: sc.tick(e[e.length - 1]) });
    return root.LLMText.t('colour.between', { lo: sc.lo(e[i - 1]), hi: sc.tick(e[i]) });
  }

  const legendHost = () => document.querySelector('#colour-legend .cb-host');

  // The legend of a scale: what it measures, its shades with their ranges, the number of the token read. None for
  // token boundaries and none (the text's own shades say it all).
  function drawLegend(m) {
    const host = legendHost();
    if (!host || host.dataset.mode === m) return;
    host.dataset.mode = m;
    host.textContent = '';
    const sc = SCALES[m];
    if (!sc) return;
    const box = Object.assign(document.createElement('div'), { className: 'cb-legend' });
    box.dataset.colourBy = m;
    const what = Object.assign(document.createElement('div'), { className: 'cb-what', textContent: sc.what() });
    const scale = Object.assign(document.createElement('div'), { className: 'cb-scale' });
    for (let i = 0; i <= sc.edges.length; i++) {
      const sw = Object.assign(document.createElement('span'), { textContent: rangeText(sc, i) });
      sw.dataset.cb = String(i);
      scale.appendChild(sw);
    }
    const readout = Object.assign(document.createElement('div'), { className: 'cb-readout', textContent: root.LLMText.t('colour.hint') });
    const row = Object.assign(document.createElement('div'), { className: 'cb-row' });
    row.append(scale, readout);
    const note = Object.assign(document.createElement('div'), { className: 'cb-moved', textContent: root.LLMText.t('colour.moved'), hidden: true });
    box.append(what, row, note);
    host.appendChild(box);
    sayMoved();
  }

  // The colours are the run's own probabilities: once the sampling sliders show other settings than the run's (the
  // chart reshaped to them), the legend says so ("a greedy run says 100% where the chart now says 77%")
  const SETTINGS = [['temperature', 'temperature'], ['top-k', 'top_k'], ['top-p', 'top_p'], ['min-p', 'min_p'], ['repetition-penalty', 'repetition_penalty']];
  function moved() {
    const b = root.LLMApp && root.LLMApp.state && root.LLMApp.state.bundle, s = b && b.settings;
    if (!s || !root.LLMValues) return false;
    return SETTINGS.some(([id, k]) => { const v = root.LLMValues.number(id); return Number.isFinite(v) && typeof s[k] === 'number' && Math.abs(v - s[k]) > 1e-9; });
  }
  function sayMoved() {
    const n = document.querySelector('#colour-legend .cb-moved');
    if (n) n.hidden = !(mode() === 'prob' && moved());
  }

  // The token hovered or tapped: its number in the legend (its title says every number: a hover, or a tap on the page)
  let read = null;
  function readToken(e) {
    const el = e.target.closest && e.target.closest('#output [data-step]');
    const sc = SCALES[mode()], out = document.querySelector('#colour-legend .cb-readout');
    if (!el || !sc || !out || !visible(el)) return;
    read = el;
    out.textContent = root.LLMText.t('colour.readout', { piece: JSON.stringify(el.textContent), step: el.dataset.step,
                                                value: sc.value(Number(el.dataset[sc.attr])) });
  }

  const visible = (el) => el.isConnected && el.checkVisibility({ visibilityProperty: true }) && !el.classList.contains('future');

  // A token read that is no longer on screen (another step, Guess first, a new text) is forgotten: the legend never
  // tells the number of a token the page hides.
  function forget() {
    if (read === null || visible(read)) return;
    read = null;
    const out = document.querySelector('#colour-legend .cb-readout');
    if (out) out.textContent = root.LLMText.t('colour.hint');
  }
  const forgetSoon = () => requestAnimationFrame(forget); // (once the page's own scripts have hidden what they hide)

  // The server redraws the app's text (a run's steps, another trace): painted again as it comes. The text's element
  // is looked for again every 250 ms (Gradio may make a new one).
  let watched = null;
  const watch = typeof MutationObserver === 'undefined' ? null : new MutationObserver(() => paint());
  function follow() {
    const o = document.getElementById('output');
    if (o && o !== watched && watch) { watch.disconnect(); watch.observe((watched = o), { childList: true, subtree: true }); paint(); }
    else if (legendHost() && !legendHost().dataset.mode) paint(); // (the legend's place drawn after the text)
  }

  install();
  document.addEventListener('change', (e) => { if (e.target.closest && e.target.closest('#colour-by')) paint(e.target); else forgetSoon(); }, true);
  document.addEventListener('input', () => { forgetSoon(); sayMoved(); }, true);
  document.addEventListener('pointerover', readToken, true);
  document.addEventListener('click', readToken, true);
  ['llmapp:rendered', 'viewer:rendered'].forEach((type) => document.addEventListener(type, () => { forgetSoon(); sayMoved(); }));
  setInterval(follow, 250);
  if (document.readyState !== 'loading') follow(); else document.addEventListener('DOMContentLoaded', follow);

  root.LLMColourBy = { MODES, SCALES, LIGHT, DARK, SHADES, bin, mode, paint };
})(typeof window !== 'undefined' ? window : globalThis);

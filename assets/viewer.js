/* The step viewer's page: scrub, Play and the sampling sliders, all in the browser, with no request.
 *
 * It reads a bundle written by viz/viewer/bundle.py: one Plotly figure per panel (built by viz/) with a frame
 * per step, and viz/viewer/sampling.py's tables, from which the distribution is reshaped for any slider
 * position (viewer_sampling.js). The offline page (viz/viewer/page.py) mounts it; the app's page uses
 * its figures and Play (assets/app_viewer.js). Loaded last of the viewer's scripts: needs
 * viewer_plot.js, viewer_text.js, viewer_sampling.js and viewer_frames.js.
 */
(function (root) {
  'use strict';

  const { gridIndex, merged, figureFor } = root.LLMViewer;

  // A step's figure (viewer_frames.js) is drawn by Plotly.react, which redraws only what changed;
  // Plotly.animate with redraw: true would redraw the whole figure at every step.
  const PLAY_FPS = 12; // steps per second while playing
  const react = (el, fig) => root.LLMViewer.react(el, fig); // viewer_plot.js, looked up when drawing (reshaping needs none)

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

  const escapeText = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

  // The generated text with the step on screen highlighted, later steps dimmed, and a line naming the step (the
  // catalogue's viewer.step_line, its sentence escaped, the step and the token in bold).
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
      const st = bundle.steps[s], { thousands } = root.LLMText; // (the step's piece: HTML already, viz.style.plot_piece)
      label.innerHTML = root.LLMText.parts('viewer.step_line', { step: { b: String(s) }, last: thousands(n - 1), phase: st.phase,
        position: thousands(st.position), piece: { b: st.piece } })
        .map((part) => (typeof part === 'string' ? escapeText(part) : `<b>${part.b}</b>`)).join('');
    };
  }

  // Temperature, top-k, top-p, min-p and repetition-penalty sliders on the grids the sampling tables were computed for
  // (the app's five: ui/layout.py; the penalty's grid holds the trace's own value too).
  function samplingSliders(S, state, onChange) {
    const T = S.temperatures, Ps = S.top_ps, Ms = S.min_ps, Pens = S.penalties;
    slider('temperature', { min: T[0], max: T[T.length - 1], step: T[1] - T[0], value: state.t },
      (v) => { state.t = T[gridIndex(T, v)]; onChange(); });
    slider('top-k', { min: 0, max: S.top_k_max, step: 1, value: state.k }, (v) => { state.k = Math.round(v); onChange(); });
    slider('top-p', { min: Ps[0], max: Ps[Ps.length - 1], step: Ps[1] - Ps[0], value: state.p },
      (v) => { state.p = Ps[gridIndex(Ps, v)]; onChange(); });
    if (Ms && document.getElementById('min-p')) {
      slider('min-p', { min: Ms[0], max: Ms[Ms.length - 1], step: Ms[1] - Ms[0], value: state.mp }, (v) => { state.mp = Ms[gridIndex(Ms, v)]; onChange(); });
    }
    if (Pens && document.getElementById('repetition-penalty')) {
      slider('repetition-penalty', { min: 1, max: 2, step: 0.05, value: state.pen }, (v) => { state.pen = Pens[gridIndex(Pens, v)]; onChange(); });
    }
  }

  /* Play, paced by drawing: the next step once the panels on screen show the one before, and no sooner
   * than 1/PLAY_FPS after it. Every step is shown (a slower machine plays slower, never skipping).
   * drawn(): the step on screen is drawn; advance(): move to the next step, false once that was the last;
   * fps(): the steps per second wanted now (a page's speed control; PLAY_FPS without one). */
  function player({ drawn, advance, stopped, fps }) {
    let timer = null, last = 0;
    const stop = () => { if (timer === null) return; clearTimeout(timer); timer = null; stopped(); };
    const tick = () => {
      if (!drawn()) { timer = setTimeout(tick, 4); return; }
      const wait = last + 1000 / ((fps && fps()) || PLAY_FPS) - performance.now();
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
                       stopped: () => { play.textContent = root.LLMText.t('button.play'); caughtUp(); } });
    play.addEventListener('click', () => {
      if (p.playing()) return p.stop();
      if (state.step >= n - 1) stepSlider.set(0);
      play.textContent = root.LLMText.t('button.pause');
      p.start();
    });
    document.querySelector('#step-slider input[type=range]').addEventListener('input', (e) => { if (!e.llmPlay) p.stop(); });
    return p.playing;
  }

  function mount(bundle) {
    const S = bundle.sampling, n = bundle.n_steps, own = bundle.settings;
    const state = { step: 0, t: S.temperatures[gridIndex(S.temperatures, own.temperature)],
                    k: Math.min(Math.round(own.top_k), S.top_k_max), p: S.top_ps[gridIndex(S.top_ps, own.top_p)],
                    mp: S.min_ps ? S.min_ps[gridIndex(S.min_ps, own.min_p || 0)] : 0,
                    pen: S.penalties ? S.penalties[gridIndex(S.penalties, own.repetition_penalty || 1)] : 1 };
    const P = panels(bundle), drawText = textView(bundle);
    let busy = true, dirty = false; // busy until the plots exist

    const wanted = (id) => (id === 'dist-plot' ? `${state.step}|${state.t}|${state.k}|${state.p}|${state.mp}|${state.pen}` : String(state.step));
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

  root.LLMViewer = Object.assign(root.LLMViewer || {}, { player, mount });
})(typeof window !== 'undefined' ? window : globalThis);

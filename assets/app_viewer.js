/* The step viewer inside the app (ui/viewer_wiring.py sends it its data).
 *
 * With a bundle of the trace on screen, the panels that follow the step (viz.panels: distribution,
 * embeddings, attention, attention overview, KV) are drawn here, in the browser: the step slider, Play and the
 * sampling sliders (temperature, top-k, top-p, min-p, repetition penalty) cost the server nothing. Each figure is viz/'s, from the bundle
 * (LLMViewer.figureFor in viewer_frames.js). The viewer's plot sits first inside each gr.Plot block
 * (`#dist-plot > .viewer-plot`), which it hides while the viewer shows; while a generation streams,
 * the server's own figures show instead. The text, the token chips and the speculative rounds the
 * server drew hold every step, marked with data-step: the viewer shows the step's part of them and
 * writes the step's token counts and KV summary from the bundle. Only the open "Inside the model" tab
 * needs the server (the model computes it for the step): once the step slider settles, and only while
 * that panel is on screen (or once it scrolls into view), one hidden button asks for it.
 */
(function (root) {
  'use strict';

  // the element ids of the panels that follow the step, from viz.panels (ui/viewer_wiring.py: head_html)
  const IDS = Object.freeze([...(root.LLMAppPanels || [])]);
  const SAMPLING = '#temperature, #top-k, #top-p, #min-p, #repetition-penalty';
  const SLIDERS = `#step-slider, ${SAMPLING}`; // the sliders the page answers itself
  const PLAY = () => root.LLMText.t('button.play'), PAUSE = () => root.LLMText.t('button.pause'); // (read when shown: the page's language)

  const st = { bundle: null, key: null, liveT: 0, step: 0, t: 0.7, k: 0, p: 0.9, mp: null, pen: null, drawn: {}, // (mp, pen null: the trace's own) busy: false, dirty: false, dragging: false,
               settleTimer: null, settleMs: 300, sliceMs: 150, rendered: -1, insideStale: true, insideInView: false, // (never drawn yet)
               textStep: -1 };

  // Plotly.js loaded and Gradio's page built (the first message, named in the page's head, comes before either)
  const ready = () => new Promise((ok) => {
    const go = () => (root.LLMViewer && root.LLMViewer.plotly() && document.getElementById(IDS[0] || 'dist-plot') ? ok() : setTimeout(go, 30));
    go();
  });

  function host(id) { // the viewer's plot: the first child of the gr.Plot block
    const block = document.getElementById(id);
    if (!block) return null;
    let el = block.querySelector(':scope > .viewer-plot');
    if (!el) {
      el = document.createElement('div');
      el.className = 'viewer-plot';
      block.prepend(el);
    }
    return el;
  }

  function numberOf(id, fallback) {
    const v = root.LLMValues.number(id);
    return Number.isFinite(v) ? v : fallback;
  }

  function showViewer(id, on) { // the viewer's plot in this panel (on), or the server's
    const b = document.getElementById(id);
    if (b) { b.classList.toggle('viewer-on', on); b.classList.remove('viewer-stale'); }
  }

  // Observers of the page's blocks: each block observed once by each (again after Gradio re-creates one).
  const observedBy = new WeakMap();
  function observe(obs, id, opts) {
    const el = document.getElementById(id);
    if (!obs || !el) return;
    if (!observedBy.has(obs)) observedBy.set(obs, new WeakSet());
    if (!observedBy.get(obs).has(el)) { observedBy.get(obs).add(el); obs.observe(el, opts); }
  }
  const SUBTREE = { childList: true, subtree: true };

  // A generation starts. The viewer's plots stay, dimmed, until the server's first streamed figure of that panel
  // arrives (showing the server's old plots at once would redraw five figures as the first token should appear).
  function unmount() {
    stopPlay();
    st.bundle = null; st.key = null; st.drawn = {};
    IDS.forEach((id) => {
      const b = document.getElementById(id);
      if (!b) return;
      if (b.classList.contains('viewer-on')) { b.classList.add('viewer-stale'); awaitServerPlot(b); } else reveal(b);
    });
  }

  // The server's plot shows in this panel. The viewer's is kept, hidden (assets/style.css), for the next
  // bundle: drawn anew, a plot costs far more than redrawn (the embeddings' WebGL cloud: 200 ms against 20).
  const reveal = (b) => b.classList.remove('viewer-on', 'viewer-stale');

  // A stale panel shows the server's plot once the server draws one in it: each panel watched until then only (Gradio's
  // Plotly touches hundreds of nodes a figure: watched for the whole run, they cost 100 ms in a streamed update).
  let waits = [];
  function awaitServerPlot(b) {
    if (typeof MutationObserver === 'undefined') return;
    const mine = b.querySelector(':scope > .viewer-plot');
    const obs = new MutationObserver((records) => {
      if (st.bundle) return obs.disconnect();
      const theirs = records.some((r) => !(mine && mine.contains(r.target)));
      if (theirs && b.querySelector(':scope > :not(.viewer-plot) .js-plotly-plot')) { obs.disconnect(); reveal(b); }
    });
    obs.observe(b, SUBTREE);
    waits.push(obs);
  }

  function mount(m) {
    st.bundle = m.bundle; st.key = m.key; st.url = m.url; st.drawn = {}; st.textStep = -1; st.fresh = true;
    // (watching the viewer's own redraws would make a record of every node Plotly touches, at every step move)
    waits.forEach((obs) => obs.disconnect());
    waits = [];
    TEXT_IDS.forEach((id) => observe(textWatch, id, SUBTREE));
    IDS.forEach((id) => { observe(panelWatch, id); observe(nearWatch, id); });
    observe(insideWatch, 'panel-inside');
    st.step = Math.round(numberOf('step-slider', m.bundle.n_steps - 1));
    readSampling();
    render();
    if (playWanted) { wantPlay(false); togglePlay(); } // pressed before the bundle came
  }

  // The distribution is reshaped with what the temperature / top-k / top-p / min-p / repetition-penalty fields show, however they came to
  // show it: typed or dragged (onInput), or written by the page with no event at all (a link's settings,
  // an example's or a loaded trace's own: Gradio sets the inputs' `value`), so the distribution is never
  // computed with other settings than the fields show.
  function readSampling() { // true when the fields differ from what the distribution was drawn with
    const t = numberOf('temperature', st.t), k = Math.round(numberOf('top-k', st.k)), p = numberOf('top-p', st.p);
    const mp = numberOf('min-p', st.mp), pen = numberOf('repetition-penalty', st.pen);
    const moved = t !== st.t || k !== st.k || p !== st.p || mp !== st.mp || pen !== st.pen;
    st.t = t; st.k = k; st.p = p; st.mp = mp; st.pen = pen;
    return moved;
  }

  let fieldsSet = false; // a check queued: the fields' inputs had a value written by a script
  function watchSampling() {
    const proto = root.HTMLInputElement && root.HTMLInputElement.prototype;
    const d = proto && Object.getOwnPropertyDescriptor(proto, 'value');
    if (!d || !d.set || !d.configurable) return;
    Object.defineProperty(proto, 'value', Object.assign({}, d, { set(v) {
      d.set.call(this, v);
      if (fieldsSet || !this.closest || !this.closest(SAMPLING)) return;
      fieldsSet = true;
      queueMicrotask(() => { fieldsSet = false; if (readSampling()) render(); }); // (both inputs written by then)
    } }));
  }

  // The text, chips, counts, KV summary and speculative round of the step on screen (assets/step_text.js), from the
  // server's HTML of the whole trace and the bundle's per-step HTML. Nothing is shown while that HTML is not yet this
  // whole trace's.
  const TEXT_IDS = ['output', 'tokens-html', 'kv-summary', 'spec-rounds'];
  // (the server redrew one of them: show the step on screen in it again)
  const textWatch = typeof MutationObserver === 'undefined' ? null : new MutationObserver(() => { st.textStep = -1; showText(); });

  function showText() {
    const b = st.bundle;
    const gen = document.querySelector('#output .gen-text');
    if (!b || !b.html || !gen) return;
    const n = b.n_steps_in_trace, s = Math.min(st.step, n - 1);
    if (Number(gen.dataset.steps) !== n || document.querySelectorAll('#tokens-html .tok[data-step]').length !== n) return;
    if (s === st.textStep) return; // (already shown: a sampling slider moved, not the step)
    st.textStep = s;
    root.LLMStepText.show(b.html, s, n); // (assets/step_text.js)
    if (textWatch) textWatch.takeRecords(); // (our own writes are not the server's)
  }

  // The open "Inside the model" tab follows the step from the server: asked once the slider is still,
  // while the panel is on screen; a step past the bundle's frames is asked for at once (its figures).
  function askServer() {
    const b = st.bundle;
    if (!st.insideStale || !b) return;
    if (!st.insideInView && st.step < b.n_steps) return;
    st.insideStale = false;
    root.LLMBridge.send('settled');
  }

  // Which step panels are on screen (`inView`: drawn first, and the only ones drawn while Play runs or a slider is
  // dragged) and within a screen of it (`near`: drawn after those, each in a task of its own). A panel further away is
  // drawn as it comes near: a page opens with its first screen's figures only (1 s sooner here; a phone's none). Once Tab
  // is pressed every panel is drawn, so that each figure's toolbar is a Tab stop (assets/viewer_plot.js).
  const IO = typeof IntersectionObserver === 'undefined' ? null : IntersectionObserver;
  const inView = new Set(IO ? [] : IDS), near = new Set(IO ? [] : IDS);
  let everyPanel = !IO;
  const watching = (set, opts) => IO && new IO((entries) => entries.forEach((e) => {
    if (e.isIntersecting) { set.add(e.target.id); if (st.bundle) render(); } else set.delete(e.target.id);
  }), opts);
  const panelWatch = watching(inView), nearWatch = watching(near, { rootMargin: '100% 0px' });
  const due = (id) => everyPanel || near.has(id) || inView.has(id); // (a panel drawn now, or once Play and a drag end)
  const drawOrder = () => IDS.filter((id) => inView.has(id)).concat(playing() || st.dragging ? [] : IDS.filter((id) => !inView.has(id) && due(id)));
  document.addEventListener('keydown', (e) => { if (e.key === 'Tab' && !everyPanel) { everyPanel = true; render(); } }, true);

  const insideWatch = IO && new IO((entries) => entries.forEach((e) => {
    st.insideInView = e.isIntersecting;
    if (e.isIntersecting) askServer();
  }));

  const giveWay = () => new Promise((ok) => setTimeout(ok));
  const painted = () => new Promise((ok) => { // once the next frame is on screen (a page in the background has none: 100 ms)
    let done = false;
    const go = () => { if (!done) { done = true; setTimeout(ok); } };
    requestAnimationFrame(go);
    setTimeout(go, 100);
  });
  // every panel on screen shows the step (and sampling settings): told once per render, for onScreen()
  const shownOnScreen = () => document.dispatchEvent(new CustomEvent('llmapp:on-screen', { detail: { step: st.step } }));

  const wanted = (id) => (id === 'dist-plot' ? `${st.step}|${st.t}|${st.k}|${st.p}|${st.mp}|${st.pen}` : String(st.step));

  // Draws what is out of date, panel by panel, giving way whenever the step or a slider moves again.
  async function render() {
    if (!st.bundle) return;
    if (st.busy) { st.dirty = true; return; }
    st.busy = true;
    let slice = performance.now();
    try {
      do {
        st.dirty = false;
        const b = st.bundle;
        if (!b) break;
        showText();
        const inside = st.step < b.n_steps; // a step past the bundle's frames is drawn by the server
        if (!inside) { IDS.forEach((id) => showViewer(id, false)); break; }
        let seen = true; // (the panels on screen come first in drawOrder)
        // a panel not drawn for this step yet, off screen or of a later step, hidden till it is (a class's answers: no scrolling to them)
        const later = (id) => parseInt(st.drawn[id], 10) > st.step;
        IDS.forEach((id) => document.getElementById(id)?.classList.toggle('viewer-behind', st.drawn[id] !== wanted(id) && (!inView.has(id) || later(id))));
        for (const id of drawOrder()) {
          if (st.dirty || b !== st.bundle) break;
          const w = wanted(id);
          const el = host(id);
          if (!el) continue;
          showViewer(id, true); // (before drawing: Plotly measures its text in a plot on screen)
          if (st.drawn[id] === w) continue;
          // a panel off screen is drawn in a task of its own, once those on screen show: a move that comes meanwhile
          // waits for one panel no one sees at most, not for all of them
          if (seen && !inView.has(id)) { seen = false; shownOnScreen(); await painted(); slice = performance.now(); if (st.dirty) break; }
          await root.LLMViewer.react(el, root.LLMViewer.figureFor(b, id, st.step, { t: st.t, k: st.k, p: st.p, mp: st.mp, pen: st.pen }));
          st.drawn[id] = w;
          document.getElementById(id)?.classList.remove('viewer-behind');
          // the page gives way between panels when a new trace is drawn (each shows as soon as it is drawn), after each
          // panel off screen (no one waits for it), and whenever this drawing has held the page 150 ms (a yield costs a
          // step a frame)
          if (st.fresh || !seen || performance.now() - slice > st.sliceMs) { await giveWay(); slice = performance.now(); }
        }
        if (seen && !st.dirty) shownOnScreen();
      } while (st.dirty);
    } finally {
      st.busy = false;
      st.fresh = false;
    }
    st.rendered = st.step;
    const shown = IDS.filter((id) => st.drawn[id] === wanted(id)); // (while playing: the panels on screen)
    document.dispatchEvent(new CustomEvent('llmapp:rendered', { detail: { step: st.step, shown } }));
  }

  // What the server draws for the step follows once the slider has been still a moment.
  function settleSoon() {
    clearTimeout(st.settleTimer);
    st.settleTimer = setTimeout(() => { st.insideStale = true; askServer(); }, st.settleMs);
  }

  function onInput(e) {
    const el = e.target;
    if (!el || !el.matches || !el.matches('input')) return;
    const box = el.closest(SLIDERS);
    if (!box) return;
    if (el.type === 'range' ? e.type !== 'input' : e.type !== 'change') return; // a drag, or a typed number committed
    const v = Number(el.value);
    if (!Number.isFinite(v)) return;
    if (box.id === 'step-slider') {
      if (!e.llmPlay) stopPlay();
      st.step = Math.max(0, Math.round(v));
      settleSoon();
    } else if (box.id === 'temperature') st.t = v;
    else if (box.id === 'top-k') st.k = Math.round(v);
    else if (box.id === 'min-p') st.mp = v;
    else if (box.id === 'repetition-penalty') st.pen = v;
    else st.p = v;
    render();
  }

  // as a drag would: Gradio's slider keeps the value, the viewer draws it
  const setStep = (s) => root.LLMValues.setStep(s, { release: false, play: true });

  // While playing, the slider's thumb and number move without Gradio's slider hearing of each step (its
  // update is slow enough to hold Play back); setStep tells it once Play stops.
  function showStep(s) {
    if (!root.LLMValues.showStep(s)) return;
    st.step = s;
    render();
  }

  function playLabel(text) { const b = document.getElementById('play'); if (b) b.textContent = text; }

  // Play: viewer.js's player, paced by the panels on screen (the others catch up when it stops). Pressed
  // while the page has no bundle yet (the page just opened, or a run is streaming), it starts once the
  // bundle is there, so the press is not lost; the button says so meanwhile.
  let play = null, playWanted = false;
  const playing = () => play !== null && play.playing();
  function stopPlay() { if (play) play.stop(); }
  function wantPlay(on) { playWanted = on; playLabel(on ? PAUSE() : PLAY()); }

  // The speed control beside Play (ui/layout.py): steps per second, read at every step (a change applies at once)
  const SPEEDS = { slow: 1, normal: 4, fast: 12 };
  const playSpeed = () => SPEEDS[root.LLMValues.read('play-speed')] || SPEEDS.normal;

  function togglePlay() {
    if (playing()) return stopPlay();
    const b = st.bundle;
    if (!b) return wantPlay(!playWanted);
    if (b.n_steps < 2) return;
    const n = b.n_steps;
    if (st.step >= n - 1) setStep(0);
    playLabel(PAUSE());
    play = root.LLMViewer.player({
      drawn: () => !st.busy && st.rendered === st.step && st.bundle === b,
      advance: () => { if (st.bundle !== b) return false; showStep(st.step + 1); return st.step < n - 1; },
      stopped: () => { playLabel(PLAY()); setStep(st.step); }, // Gradio's slider told once; the panels off screen catch up
      fps: playSpeed,
    });
    play.start();
  }

  // A message names its bundle or panel by URL (a file the server wrote once). Its file is fetched as soon as
  // the message comes (the page's first one while Plotly.js loads and Gradio builds the page); the
  // messages are then taken in order, once both are done.
  let fetched = { url: null, got: null }; // (the page's first bundle is named twice: in its head and on load)
  function fetchOf(url) {
    if (fetched.url !== url) {
      const got = fetch(url).then((r) => { if (!r.ok) throw new Error(`viewer data ${r.status}`); return r.json(); });
      got.catch(() => {}); // (reported when the message is taken)
      fetched = { url, got };
    }
    return fetched.got;
  }

  function parse(text) {
    let m;
    try { m = JSON.parse(text); } catch (err) { return null; }
    if (!m || typeof m !== 'object') return null;
    if ((m.kind === 'bundle' || m.kind === 'panel') && m.url) m.got = fetchOf(m.url);
    return m;
  }

  async function receive(m) {
    if (!m) return;
    if (m.kind === 'live') { st.liveT = Math.max(st.liveT, m.t); unmount(); return; }
    if (m.kind !== 'bundle' && m.kind !== 'panel') return;
    if (m.kind === 'bundle' ? m.t < st.liveT : !(st.bundle && m.key === st.key)) return;
    if (m.kind === 'bundle' && st.bundle && m.key === st.key && m.url === st.url) return; // (the same bundle again)
    if (m.got) m[m.kind] = await m.got;
    if (m.kind === 'bundle') { if (m.t >= st.liveT) mount(m); } // (a run may have started meanwhile)
    else if (st.bundle && m.key === st.key) {
      st.bundle.panels[m.id] = m.panel;
      delete st.drawn[m.id];
      render();
    }
  }

  let chain = Promise.resolve();
  function drain() { // messages in the order they came, once Plotly has loaded
    const box = root.LLMAppInbox || [];
    while (box.length) {
      const m = parse(box.shift());
      chain = chain.then(ready).then(() => receive(m)).catch((err) => console.warn('viewer:', err));
    }
  }

  // A promise of the step on screen, kept once `test` holds (checked again at each `type` event)
  const when = (type, test) => new Promise((ok) => {
    const done = () => { if (test()) { document.removeEventListener(type, done); ok(st.step); } };
    document.addEventListener(type, done);
    done();
  });
  // settled(): every panel that is drawn shows the step (and the sampling settings): those near the screen, or all once
  // Tab was pressed; onScreen(): the panels on screen do (those off screen may still be drawing)
  const settled = () => when('llmapp:rendered', () => st.bundle && !st.busy && st.rendered === st.step && IDS.every((id) => !due(id) || st.drawn[id] === wanted(id)));
  const onScreen = () => when('llmapp:on-screen', () => st.bundle && IDS.every((id) => !inView.has(id) || st.drawn[id] === wanted(id)));

  watchSampling();
  document.addEventListener('input', onInput, true);
  document.addEventListener('change', onInput, true);
  document.addEventListener('click', (e) => { if (e.target.closest && e.target.closest('#play')) togglePlay(); }, true);
  // Any other control (but Play's speed) pressed during Play stops it first, so Gradio's slider holds the step on screen
  // before the control's event reads it (re-sample from this step, a branch, a link); a Play still
  // waiting for its bundle is called off. A slider held down: a drag moves at the pace of what is on
  // screen (waiting for all five figures at each move would make the thumb lag the pointer); let go,
  // every panel catches up.
  const held = (el) => el.type === 'range' && el.closest(SLIDERS);
  document.addEventListener('pointerdown', (e) => {
    const el = e.target.closest && e.target.closest('button, input, textarea, select, [role=option]');
    if (el && !el.closest('#play, #play-speed')) { stopPlay(); if (playWanted) wantPlay(false); }
    if (el && held(el)) st.dragging = true;
  }, true);
  const letGo = () => { if (st.dragging) { st.dragging = false; render(); } };
  ['pointerup', 'pointercancel'].forEach((type) => root.addEventListener(type, letGo, true));
  document.addEventListener('change', (e) => { if (e.target.matches && held(e.target)) letGo(); }, true);
  root.LLMApp = { state: st, drain, settled, onScreen, mounted: () => st.bundle !== null, render, playing, due: (id) => !IDS.includes(id) || due(id) };
  root.LLMBridge.on(['live', 'bundle', 'panel'], (m, text) => { (root.LLMAppInbox = root.LLMAppInbox || []).push(text); drain(); }); // (the first: in the head)
  drain();
})(window);

/* How the page behaves beyond Gradio's own (from the page's head; start() runs once Gradio has drawn it: assets/page.js):
 * a tap shows what a hover shows, the presenter view, figures drawn when first seen, the text box keeping its end in
 * view, the prompt focused once, the tour pointing at its stage's panel, Gradio's empty plots named as images.
 */
(function (root) {
  'use strict';

  // A tap (or click) on a piece of the text, a token chip or a glossary word shows what its hover shows: a phone has no hover.
  function tapTip(e) {
    let tip = document.getElementById('piece-tip');
    const el = e.target.closest && e.target.closest('#output [data-step][title], #tokens-html .tok[title], abbr.term[title]');
    // (a piece the page hides, Guess first's token of the step on screen, tells nothing: assets/colour_by.js reads the same)
    if (!el || !el.checkVisibility()) { if (tip) tip.hidden = true; return; }
    if (!tip) {
      tip = document.createElement('div');
      tip.id = 'piece-tip';
      tip.setAttribute('role', 'tooltip');
      document.body.appendChild(tip);
    }
    tip.textContent = el.getAttribute('title');
    const r = el.getBoundingClientRect();
    tip.style.left = Math.max(4, Math.min(r.left, innerWidth - 324)) + 'px';
    tip.style.top = (r.bottom + 6) + 'px';
    tip.hidden = false;
  }

  // The presenter view (?view=present, or the button): the lesson alone, large (assets/style.css; the figures are
  // enlarged by assets/viewer_plot.js).
  function present(on) {
    document.body.classList.toggle('present', on);
    const b = document.getElementById('present-toggle');
    if (b) b.textContent = root.LLMText.t(on ? 'button.present_leave' : 'button.present');
    const url = new URL(root.location.href);
    if (on) url.searchParams.set('view', 'present'); else url.searchParams.delete('view');
    history.replaceState(history.state, '', url);
  }

  // Figures no event redraws (ui/layout.py's static figures: the cost curve of speculative decoding), drawn once with the
  // viewer's Plotly.js (assets/viewer_plot.js) when they first scroll into view: a gr.Plot would make Gradio load its own
  // copy as the page opens, and drawn at once they would hold back the first screen's.
  function staticFigures() {
    const drawn = new IntersectionObserver((entries) => entries.forEach((e) => {
      if (!e.isIntersecting || !root.LLMViewer || !root.LLMViewer.plotly()) return; // (looked at again below)
      drawn.unobserve(e.target);
      root.LLMViewer.react(e.target, JSON.parse(e.target.dataset.figure));
    }));
    setInterval(() => document.querySelectorAll('.static-figure:not(.js-plotly-plot)').forEach((el) => { drawn.unobserve(el); drawn.observe(el); }), 1000);
  }

  // The text box keeps its end (the step on screen, the newest token) in view when its text outgrows it (style.css).
  // Only the box is watched: watching the whole page, every node Plotly touched read the box's height, a layout of the
  // page forced again and again at each step move (12 ms of a 1440x1800 move).
  function keepEnd() {
    const watch = new MutationObserver(() => {
      const o = document.getElementById('output');
      if (o && o.scrollHeight > o.clientHeight + 2) o.scrollTop = o.scrollHeight;
    });
    let endOf = null;
    setInterval(() => {
      const o = document.getElementById('output');
      if (o && o !== endOf) { watch.disconnect(); watch.observe((endOf = o), { subtree: true, childList: true, attributes: true, attributeFilter: ['hidden'] }); }
    }, 250);
  }

  // The prompt box takes the focus once, when the page opens. (Gradio's own autofocus focuses it again whenever the
  // box redraws, which could pull keystrokes meant for another field into it.)
  function focusPrompt(tries) {
    const box = root.LLMValues.box('prompt');
    if (box) { if (!document.activeElement || document.activeElement === document.body) box.focus(); }
    else if (tries > 0) setTimeout(() => focusPrompt(tries - 1), 200);
  }

  // The tour points at its stage's panel (the bridge's "tour": ui/listeners.py): the card beside the page on a wide
  // screen (assets/style.css), the page narrowed and its plots taking the new width
  function tourFocus(m) {
    document.querySelectorAll('.tour-focus').forEach((e) => e.classList.remove('tour-focus'));
    const b = document.body.classList, was = b.contains('touring'), on = !!m.target && innerWidth >= 1300;
    b.toggle('touring', on);
    if (on !== was) dispatchEvent(new Event('resize'));
    const el = m.target ? document.getElementById(m.target) : null;
    const still = root.matchMedia && root.matchMedia('(prefers-reduced-motion: reduce)').matches; // (no glide for who asked for none)
    if (el) { el.classList.add('tour-focus'); el.scrollIntoView({ behavior: still ? 'auto' : 'smooth', block: 'center' }); }
  }

  // Gradio's empty plot names a plain <div> ("Empty value": a name on no role, which a screen reader need not read):
  // made an image of that name. A dropdown's open list of options scrolls, so Chromium gives it a Tab stop of its own;
  // it closes as its box loses the focus, and the focus fell to the page's body: out of the Tab order (its options
  // are the arrow keys' in the box).
  function emptyNamed() {
    let soon = null;
    const lists = () => document.querySelectorAll('ul[role=listbox]:not([tabindex])').forEach((e) => e.setAttribute('tabindex', '-1'));
    const mark = () => { soon = null; document.querySelectorAll('.empty[aria-label]:not([role])').forEach((e) => e.setAttribute('role', 'img')); spoken(); };
    // (a list opens as its box takes the focus, and the next Tab may come at once: marked as it is drawn)
    new MutationObserver(() => { lists(); if (!soon) soon = setTimeout(mark, 100); }).observe(document.body, { subtree: true, childList: true });
    mark();
  }

  // Gradio names a slider's number box, its track and its reset button in English whatever the page speaks ("number
  // input for Température"): named again in the page's language (its label kept, from Gradio's own name)
  const GRADIO = [[/^number input for (.*)$/s, 'number'], [/^range slider for (.*)$/s, 'slider'], [/^Reset to default value$/, 'reset']];
  function spoken() {
    if (!root.LLMText) return; // (its words not loaded yet, or not at all: a page whose server went away)
    const lang = document.documentElement.lang || 'en', t = root.LLMText.t;
    for (const e of document.querySelectorAll('input[aria-label], button[aria-label]')) {
      const name = e.getAttribute('aria-label'), d = e.dataset, hit = GRADIO.find(([rx]) => rx.test(name));
      if (name === d.a11ySet && d.a11yLang === lang) continue;
      if (hit) Object.assign(d, { a11yKind: hit[1], a11yLabel: hit[0].exec(name)[1] || '' });
      else if (name !== d.a11ySet) continue; // (not Gradio's words, nor ours: left as it is)
      const label = d.a11yLabel, said = d.a11yKind === 'number' ? t('a11y.number_for', { label })
        : d.a11yKind === 'slider' ? t('a11y.slider_for', { label }) : t('a11y.reset');
      e.setAttribute('aria-label', said);
      Object.assign(d, { a11ySet: said, a11yLang: lang });
    }
  }

  function start() {
    document.addEventListener('click', tapTip);
    const hideTip = () => { const tip = document.getElementById('piece-tip'); if (tip) tip.hidden = true; };
    document.addEventListener('scroll', hideTip, { capture: true, passive: true });
    document.addEventListener('input', hideTip, true); // (a step moved from the keyboard: the piece read may be hidden now)
    if (new URLSearchParams(root.location.search).get('view') === 'present') present(true);
    document.addEventListener('click', (e) => {
      if (e.target.closest && e.target.closest('#present-toggle')) present(!document.body.classList.contains('present'));
    }, true);
    // a prompt that is one special token alone (a real text's "<|endoftext|>": the model reads from the start of a
    // document) is no prompt a class reads: the projector leaves it out (assets/style.css body.present.prompt-special)
    const special = () => {
      const box = document.querySelector('#prompt textarea');
      document.body.classList.toggle('prompt-special', !!box && /^\s*<\|[^|<>]{1,40}\|>\s*$/.test(box.value));
    };
    ['llmapp:rendered', 'llmapp:on-screen', 'input'].forEach((t) => document.addEventListener(t, special, true));
    staticFigures();
    keepEnd();
    focusPrompt(50);
    emptyNamed();
    root.LLMBridge.on('tour', tourFocus);
  }

  root.LLMPageView = { start, present };
})(window);

/* The step's part of the text the server drew for a whole trace (assets/app_viewer.js calls it at each step).
 *
 * The generated text, the token chips and the speculative rounds hold every step, marked with data-step
 * (viz.output, viz.tokens, viz.speculative): the step's part of them is shown, the rest hidden. The step's token
 * counts and KV summary are the bundle's per-step HTML (`html.counts[s]`, `html.kv[s]`).
 */
(function (root) {
  'use strict';

  // Steps after s hidden; the step s marked with `mark`
  function upTo(selector, s, mark) {
    document.querySelectorAll(selector).forEach((el) => {
      const i = Number(el.dataset.step);
      el.hidden = i > s;
      el.classList.toggle(mark, i === s);
    });
  }

  // Step s of a trace of n steps, with the bundle's per-step HTML
  function show(html, s, n) {
    upTo('#output .gen-text [data-step]', s, 'at-step');
    const stop = document.querySelector('#output .stop-reason');
    if (stop) stop.hidden = s !== n - 1; // why it stopped: only with the last step on screen
    upTo('#tokens-html .tok[data-step]', s, 'hl');
    document.querySelectorAll('#tokens-html [data-named-at]').forEach((el) => { // a character cut across chips: named
      const named = s >= Number(el.dataset.namedAt); //   once its last chip is on screen (viz/char_parts.py)
      el.hidden = el.classList.contains('open') ? named : !named;
    });
    const counts = document.querySelector('#tokens-html .tok-counts');
    if (counts && counts.innerHTML !== html.counts[s]) counts.innerHTML = html.counts[s];
    const kv = document.querySelector('#kv-summary .kv-summary');
    if (kv && kv.dataset.step !== String(s)) {
      kv.outerHTML = html.kv[s];
      document.querySelector('#kv-summary .kv-summary').dataset.step = s;
    }
    document.querySelectorAll('#spec-rounds .spec-round[data-first]').forEach((el) => {
      const f = Number(el.dataset.first);
      el.classList.toggle('on-screen', f <= s && s < f + Number(el.dataset.steps));
    });
  }

  root.LLMStepText = { show };
})(window);

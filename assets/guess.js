/* Guess first (the "Guess first" box beside the step slider, or a link's guess=1): while it is on, the step on
 * screen keeps its answer hidden (the step's token in the text and chips, the distribution, the embeddings'
 * marked token, the logit lens) until a guess for that step is rated (ui/listeners.py: rate_guess writes
 * #guess-result). Moving to another step hides it again; Play stops at each step not yet revealed. A running
 * score of the guesses rated on this trace sits under the result ("You: 2 of 4; the model's top pick: 3 of 4.",
 * then how many were in the model's top 5). Follows assets/app_viewer.js (LLMApp).
 */
(function (root) {
  'use strict';

  const seen = new Map(); // step -> {rank, chosen} of the trace on screen
  const opened = new Set(); // steps shown without a guess of this page's (a class's reveal: assets/room.js)
  let key = null, linked = new URLSearchParams(root.location.search).get('guess') === '1';

  const box = () => root.LLMValues.checkbox('guess-toggle');
  const on = () => { const b = box(); return !!(b && b.checked); };
  const app = () => root.LLMApp && root.LLMApp.state && root.LLMApp.state.bundle ? root.LLMApp : null;

  function score() {
    const el = document.getElementById('guess-score') || Object.assign(document.createElement('p'), { id: 'guess-score' });
    const res = document.getElementById('guess-result');
    if (res && el.parentNode !== res.parentNode) res.after(el);
    const all = [...seen.values()], top5 = all.filter((g) => g.rank && g.rank <= 5).length, same = all.filter((g) => g.chosen).length;
    // the student's score beside the model's over the steps they guessed: right when the guess was the token that came
    // next; the model's top pick right when its most likely token was (data-top of the rating: viz/guess.py)
    const alone = root.LLMText.t('guess.score_alone', { right: same, steps: all.length, model: all.filter((g) => g.top).length });
    el.replaceChildren(...(all.length ? [Object.assign(document.createElement('b'), { textContent: alone }),
      ` ${root.LLMText.t('guess.score', { top5, steps: root.LLMText.count(all.length, 'step'), same })}`] : []));
    Object.assign(el.dataset, { right: same, steps: all.length, model: all.filter((g) => g.top).length });
  }

  // The sentences drawn over what is hidden (assets/style.css's ::after), in the page's language: CSS holds no words
  let said = null;
  function notes() {
    const lang = document.documentElement.lang || '';
    if (said === lang) return;
    said = lang;
    const t = root.LLMText.t, words = { alone: t('guess.hidden_alone'), class: t('guess.hidden_class'), room: t('guess.hidden_room') };
    Object.entries(words).forEach(([k, w]) => document.documentElement.style.setProperty(`--hidden-${k}`, JSON.stringify(w)));
  }

  function update() {
    notes();
    const a = app();
    if (a && a.state.key !== key) { key = a.state.key; seen.clear(); opened.clear(); }
    const guessing = on();
    document.body.classList.toggle('guessing', guessing);
    const step = a ? a.state.step : null, res = document.getElementById('guess-result');
    const hide = guessing && a !== null && !seen.has(step) && !opened.has(step);
    document.body.classList.toggle('guess-hidden', hide);
    const tour = document.getElementById('tour'); // (it tells the step's token: off until the guess, and said to be off)
    if (tour) { if (hide) tour.setAttribute('aria-disabled', 'true'); else tour.removeAttribute('aria-disabled'); }
    // (the verdict said once, as it is written; in a class, the room's own verdict is said instead: assets/room_tools.js)
    if (res) res.setAttribute('aria-live', document.body.classList.contains('in-room') ? 'off' : 'polite');
    if (res) res.classList.toggle('other-step', !res.querySelector(`.guess-result[data-step="${step}"]`) && !res.querySelector('.guess-refused'));
    if (hide && a.playing()) document.getElementById('play')?.click(); // Play waits for a guess at each step
    score();
  }

  // a rating came: the step it rates is revealed (its numbers on #guess-result itself, for tests and tools)
  function rated() {
    const res = document.getElementById('guess-result'), r = res && res.querySelector('.guess-result');
    if (!r) return;
    ['step', 'rank', 'prob', 'chosen', 'top'].forEach((k) => { res.dataset[k] = r.dataset[k] || ''; });
    const a = app();
    if (a && r.dataset.step !== '' && Number(r.dataset.step) === a.state.step) {
      seen.set(a.state.step, { rank: Number(r.dataset.rank) || null, chosen: r.dataset.chosen === '1', top: r.dataset.top === '1' });
    }
    update();
  }

  // (the page's own rating: it takes the place of a class room's, assets/room_tools.js)
  root.LLMBridge.on('rated', () => requestAnimationFrame(() => { document.querySelector('#guess-result > .room-rating')?.remove(); rated(); }));
  const linkOn = (tries) => { // a link's guess=1: Guess first on, once its box is drawn
    if (linked && box()) { linked = false; if (!on()) box().click(); } else if (linked && tries > 0) setTimeout(() => linkOn(tries - 1), 100);
  };
  root.LLMBridge.whenDrawn(() => linkOn(300));

  // for assets/room.js: Guess first on or off (as a click on its box would), a step shown without a guess
  root.LLMGuess = {
    setOn(want) { const b = box(); if (b && b.checked !== want) b.click(); },
    reveal(step) { opened.add(step); update(); },
    show(html) { // a class room's rating of the student's own guess (assets/room_tools.js), read as the page's own
      const res = document.getElementById('guess-result');
      if (!res) return;
      const own = res.querySelector(':scope > .room-rating') || res.insertBefore(Object.assign(document.createElement('div'), { className: 'room-rating' }), res.firstChild);
      own.innerHTML = html; // (written by the server's viz/guess.py, as Gradio's rating is: every text escaped there)
      rated();
    },
  };

  ['llmapp:on-screen', 'llmapp:rendered'].forEach((t) => document.addEventListener(t, update));
  // A guess is typed as meant: a phone's keyboard neither capitalises its first letter nor "corrects" a word piece
  // (spaces and capitals do not change a verdict in a class either: ui/rooms/scores.py), before the first keystroke
  function plain(input) {
    if (!input || input.dataset.plain) return;
    Object.entries({ autocapitalize: 'off', autocorrect: 'off', autocomplete: 'off', spellcheck: 'false' }).forEach(([k, v]) => input.setAttribute(k, v));
    input.dataset.plain = '1';
  }
  const plainAll = () => document.querySelectorAll('#guess-input input, #guess-input textarea, input#guess-input').forEach(plain);
  document.addEventListener('focusin', (e) => { if (e.target.closest && e.target.closest('#guess-input')) plain(e.target); }, true);
  document.addEventListener('llmapp:rendered', plainAll);
  const mo = new MutationObserver(() => { plainAll(); if (document.querySelector('#guess-input [data-plain]')) mo.disconnect(); });
  mo.observe(document.documentElement, { childList: true, subtree: true }); // (until Gradio has drawn the box)
  document.addEventListener('change', (e) => { if (e.target.closest && e.target.closest('#guess-toggle')) update(); }, true);
  document.addEventListener('input', (e) => { if (e.target.closest && e.target.closest('#step-slider')) update(); }, true);
})(window);

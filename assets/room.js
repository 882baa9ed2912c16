/* A class as one room, on the page (the rooms: ui/rooms.py; their JSON API: ui/rooms_api.py, docs/rooms.md).
 *
 * The teacher's page: "Start a class" shows the room's card (viz/room.py: code, QR, Reveal, Next step, End);
 * this script tells the room the step on the teacher's screen (and a new trace, through the hidden #class-sync),
 * turns Guess first on, and draws the room's guesses (#class-chart): how many have guessed, then, on Reveal,
 * the room's answers beside the model's top candidates, each answer with a button that hides it.
 * A student's page (?room=CODE): joins (the room's trace comes onto the page through the hidden #room-join), turns
 * Guess first on and follows the room's step; a guess goes to the room (it may be changed until the reveal), and
 * on the reveal the page shows the step, rates the student's own guess and draws the room's chart. "Explore on my
 * own" stops following (no server cost); "Follow the teacher" again. Polls never faster than once a second, with
 * the room's ETag (an unchanged room: a 304 and no JSON). Every guess shows as the characters typed.
 * The teacher's card offers the gallery's lesson (a step each click, on every screen); the teacher's tab keeps the
 * room's code and key (sessionStorage), so a reloaded teacher's page gets its room, trace and step back.
 */
(function (root) {
  'use strict';

  const POLL_MS = 1000, STUDENT_POLL_MS = 2000;
  const API = 'api/rooms/'; // (relative: a page served under a path prefix keeps it)
  const code = (new URLSearchParams(root.location.search).get('room') || '').toUpperCase().replace(/[^A-Z0-9]/g, '').slice(0, 12);
  const me = (() => {
    try {
      let id = localStorage.getItem('llmviz-student');
      if (!id) { id = (crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2)); localStorage.setItem('llmviz-student', id); }
      return id;
    } catch (err) { return `s${String(Math.random()).slice(2, 14)}`; }
  })();

  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  const pct = (p) => (p === null || p === undefined ? '?' : p >= 0.1 ? `${Math.round(p * 100)}%` : p >= 0.001 ? `${(p * 100).toFixed(1)}%` : '<0.1%');
  const shown = (piece) => `“${piece}”`;
  const app = () => (root.LLMApp && root.LLMApp.mounted() ? root.LLMApp : null);

  // the step slider moved as a drag would (assets/app_viewer.js draws it); again when the slider shows another step
  // than the page (a trace just loaded sets the slider's value once more, after the page has moved on): the server
  // reads the slider's value (a guess's rating, Re-sample, the tour), the page draws its own step
  function setStep(s) {
    const r = document.querySelector('#step-slider input[type=range]'), a = app();
    if (!r || (Number(r.value) === s && (!a || a.state.step === s))) return;
    r.value = s;
    r.dispatchEvent(new Event('input', { bubbles: true }));
  }

  async function call(path, opts) {
    const r = await fetch(API + path, opts);
    if (r.status === 304) return { status: 304 };
    let body = null;
    try { body = await r.json(); } catch (err) { /* (no JSON: the status says it) */ }
    return { status: r.status, body, etag: r.headers.get('ETag') };
  }
  const post = (path, body, key) => call(path, { method: 'POST', body: JSON.stringify(body || {}),
    headers: Object.assign({ 'Content-Type': 'application/json' }, key ? { 'X-Room-Key': key } : {}) });

  // -- the room's chart (the teacher's #class-chart, a student's #room-chart) --------------------------------
  function bars(title, rows, label, value, width, hide) {
    const box = el('div', 'room-col');
    box.append(el('p', 'room-col-title', title));
    rows.forEach((r) => {
      const row = el('div', 'room-row' + (r.mark ? ' room-mark' : ''));
      row.append(el('span', 'room-label', label(r)));
      const track = el('span', 'room-track'), bar = el('span', 'room-bar'); // (the bar a share of its track: bars in proportion)
      bar.style.width = `${Math.max(2, width(r) * 100)}%`;
      track.append(bar);
      row.append(track, el('span', 'room-value', value(r)));
      if (hide) { const b = el('button', 'room-hide', '✕'); b.title = 'Hide this answer from the chart'; b.onclick = () => hide(r); row.append(b); }
      box.append(row);
    });
    return box;
  }

  // (the number is the model's for the favourite's first token: said so when the guess is more than that token)
  const favourite = (fav, p) => (fav.piece && fav.piece.trim() !== fav.text.trim()
    ? `the room's favourite ${shown(fav.text)} begins with the model's token ${shown(fav.piece)}, which it gave ${pct(p)}.`
    : `the model gave the room's favourite ${shown(fav.text)} ${pct(p)}.`);

  function drawChart(box, s, hide) {
    if (!box) return;
    box.replaceChildren();
    if (s.phase !== 'revealed') {
      box.append(el('p', 'room-count', `${s.guesses} of ${s.students} ${s.students === 1 ? 'student has' : 'students have'} guessed step ${s.step}.`));
      return;
    }
    const n = s.room.reduce((a, r) => a + r.count, 0), most = Math.max(1, ...s.room.map((r) => r.count));
    const top = s.model[0], fav = s.room[0];
    box.append(el('p', 'room-summary', n ? `${Math.round(s.top_share * 100)}% of the room guessed the model's most likely token ${shown(top.piece)}; `
      + favourite(fav, s.favourite_prob) + ` It wrote ${shown(s.sampled.piece)}.` : 'No guesses at this step.'));
    const cols = el('div', 'room-cols');
    const pmax = Math.max(...s.model.map((m) => m.prob));
    cols.append(bars(`The room (${n} ${n === 1 ? 'guess' : 'guesses'})`, s.room.map((r) => Object.assign({ mark: r.token_id === top.token_id }, r)),
      (r) => r.text, (r) => String(r.count), (r) => r.count / most, hide),
    bars('The model (temperature 1)', s.model.map((m) => Object.assign({ mark: m.token_id === s.sampled.token_id }, m)),
      (m) => m.piece, (m) => pct(m.prob), (m) => m.prob / pmax));
    box.append(cols);
  }

  // -- the teacher ----------------------------------------------------------------------------------------
  let T = null; // {code, key, etag, step, key of the trace the room has, state}
  function teacherTick() {
    const c = document.querySelector('#class-info .class-card[data-code]');
    document.body.classList.toggle('teaching', !!c);
    document.body.classList.toggle('class-shown', !!document.querySelector('#class-info .class-card')); // (a card, or why there is none)
    if (!c) { T = null; return; }
    const a = app();
    if (!T || T.code !== c.dataset.code) {
      T = { code: c.dataset.code, key: c.dataset.key, etag: null, step: null, trace: a ? a.state.key : null, state: null };
      root.LLMGuess && root.LLMGuess.setOn(true); // the projector keeps the answer hidden until Reveal
      keepRoom({ code: T.code, key: T.key });
      markLesson(Number(kept('llmviz-lesson')));
    }
    if (a && a.state.key !== T.trace) { T.trace = a.state.key; T.step = null; document.getElementById('class-sync')?.click(); }
    else if (a && !a.playing() && T.state && a.state.step !== T.state.step && a.state.step !== T.step) {
      T.step = a.state.step;
      post(`${T.code}/step`, { step: a.state.step }, T.key);
    }
    call(`${T.code}`, { headers: Object.assign({ 'X-Room-Key': T.key }, T.etag ? { 'If-None-Match': T.etag } : {}) }).then((r) => {
      if (!T || r.status === 304) return;
      if (r.status !== 200) { if (r.status === 404 || r.status === 410) keepRoom(null); drawEnded(document.getElementById('class-chart'), r.body); return; }
      T.etag = r.etag; T.state = r.body;
      if (r.body.closed) { keepRoom(null); drawEnded(document.getElementById('class-chart'), { error: 'This class has ended.' }); return; }
      if (r.body.phase === 'revealed' && a && a.state.step === r.body.step) root.LLMGuess && root.LLMGuess.reveal(r.body.step);
      drawChart(document.getElementById('class-chart'), r.body, (row) => post(`${T.code}/hide`, row.token_id !== null ? { token_id: row.token_id } : { text: row.text }, T.key));
    }).catch(() => {});
  }

  function drawEnded(box, body) { if (box) box.replaceChildren(el('p', 'room-ended', (body && body.error) || 'The class cannot be reached.')); }

  // -- the teacher's tab keeps its room (code and key) and the lesson's step: a reloaded page gets them back --------
  const kept = (k) => { try { return sessionStorage.getItem(k); } catch (err) { return null; } };
  const keepIt = (k, v) => { try { if (v === null) sessionStorage.removeItem(k); else sessionStorage.setItem(k, v); } catch (err) { /* private mode */ } };
  const keepRoom = (r) => { keepIt('llmviz-teacher', r ? JSON.stringify(r) : null); if (!r) keepIt('llmviz-lesson', null); };

  function ask(boxId, goId, value) { // a hidden box and button of the page's (ui/layout.py): the server does the rest
    const box = document.querySelector(`#${boxId} textarea, #${boxId} input`), go = document.getElementById(goId);
    if (!box || !go) return false;
    box.value = value;
    box.dispatchEvent(new Event('input', { bubbles: true }));
    setTimeout(() => go.click(), 60);
    return true;
  }

  function resume() { // once the page shows its first trace (else that trace would come after the room's)
    const saved = kept('llmviz-teacher'), t0 = Date.now();
    if (!saved) return;
    const tryIt = () => {
      if ((!app() && Date.now() - t0 < 15000) || !ask('class-resume', 'class-resume-go', saved)) { setTimeout(tryIt, 200); return; }
      setTimeout(() => { if (!document.querySelector('#class-info .class-card[data-code]')) keepRoom(null); }, 15000); // (it had ended)
    };
    tryIt();
  }

  // the lesson (viz/room.py): a step opens on the teacher's screen, and so in the room; "Next in the lesson"
  function markLesson(i) {
    const items = [...document.querySelectorAll('#class-lesson li')];
    items.forEach((li, k) => li.classList.toggle('lesson-now', k === i));
    return items;
  }
  function openLesson(i) {
    const items = markLesson(i), b = items[i] && items[i].querySelector('.lesson-open');
    if (b && ask('lesson-pick', 'lesson-go', b.dataset.pick)) keepIt('llmviz-lesson', String(i));
  }

  document.addEventListener('click', (e) => {
    const l = e.target.closest && e.target.closest('.lesson-open, #lesson-next');
    if (l && T) {
      const items = [...document.querySelectorAll('#class-lesson li')], now = items.findIndex((li) => li.classList.contains('lesson-now'));
      openLesson(l.id === 'lesson-next' ? Math.min(now + 1, items.length - 1) : items.findIndex((li) => li.contains(l)));
      return;
    }
    const b = e.target.closest && e.target.closest('#class-reveal, #class-next, #class-close');
    if (!b || !T) return;
    const a = app();
    if (b.id === 'class-reveal') post(`${T.code}/reveal`, {}, T.key).then(() => { if (a) root.LLMGuess.reveal(a.state.step); });
    else if (b.id === 'class-next' && a) setStep(Math.min(a.state.bundle.n_steps - 1, a.state.step + 1));
    else if (b.id === 'class-close') { keepRoom(null); post(`${T.code}/close`, {}, T.key); }
  });

  // -- a student --------------------------------------------------------------------------------------------
  const S = { joined: null, following: true, etag: null, state: null, revealed: null, ended: false, asked: 0, drawn: null };
  const mine = (step) => { try { return localStorage.getItem(`llmviz-guess-${code}-${S.joined}-${step}`); } catch (err) { return null; } };
  const keep = (step, text) => { try { localStorage.setItem(`llmviz-guess-${code}-${S.joined}-${step}`, text); } catch (err) { /* private mode */ } };

  function bar() {
    const host = document.getElementById('room-bar');
    if (!host) return null;
    let b = host.querySelector(':scope > .room-inner');
    if (!b) { // (a box of our own inside Gradio's block: its own nodes stay as Gradio made them)
      const follow = el('button', '', ''); follow.id = 'room-follow';
      follow.onclick = () => { S.following = !S.following; S.etag = null; status(); };
      b = el('div', 'room-inner');
      b.append(el('p', 'room-status'), follow, el('p', 'room-note'), Object.assign(el('div', 'class-chart'), { id: 'room-chart' }));
      host.append(b);
      document.body.classList.add('in-room');
    }
    return b;
  }
  function status(text) {
    const b = bar();
    if (!b) return;
    if (text !== undefined) b.querySelector('.room-status').textContent = text;
    b.querySelector('#room-follow').textContent = S.following ? 'Explore on my own' : 'Follow the teacher';
    b.querySelector('#room-follow').hidden = S.ended;
    const send = document.getElementById('guess-submit');
    if (send && (!S.following || S.ended)) send.textContent = 'Reveal'; // (exploring: a guess is rated here, at once)
  }
  const note = (text) => { const b = bar(); if (b) b.querySelector('.room-note').textContent = text; };

  const join = () => ask('room-join', 'room-join-go', code);

  function studentTick() {
    if (S.ended || !S.following) return;
    call(`${code}?student=${encodeURIComponent(me)}`, { headers: S.etag ? { 'If-None-Match': S.etag } : {} }).then((r) => {
      if (r.status === 304) { rejoin(); return follow(); }
      if (r.status !== 200) { S.ended = true; status((r.body && r.body.error) || 'The class cannot be reached.'); return; }
      S.etag = r.etag; S.state = r.body;
      if (r.body.closed) { S.ended = true; status('This class has ended: the text stays here to explore.'); return; }
      rejoin();
      status(`In class ${code}: following the teacher, step ${r.body.step}.`);
      follow();
    }).catch(() => status('The class cannot be reached just now: trying again.'));
  }

  function rejoin() { // the room's trace onto this page (once it differs from the one joined; a join a few seconds at most)
    const t = S.state && S.state.trace;
    if (t && t !== S.joined && Date.now() - S.asked > 5000 && join()) { S.joined = t; S.asked = Date.now(); S.revealed = null; }
  }

  function follow() { // the room's step and phase on this page
    const s = S.state, a = app();
    if (!s || !a || !S.following) return;
    root.LLMGuess && root.LLMGuess.setOn(true);
    const btn = document.getElementById('guess-submit');
    if (btn && btn.textContent !== 'Send') btn.textContent = 'Send'; // (the teacher reveals)
    setStep(s.step);
    const box = document.querySelector('#guess-input textarea, #guess-input input');
    const was = mine(s.step);
    if (box && was && !box.value && s.phase === 'guessing') box.value = was;
    const at = `${s.trace}|${s.step}`;
    if (s.phase === 'revealed' && a.state.step === s.step && S.revealed !== at) {
      S.revealed = at;
      root.LLMGuess.reveal(s.step);
      // (the student's own guess rated on the page: send() lets this click through, the step being revealed)
      if (was && box) { box.value = was; box.dispatchEvent(new Event('input', { bubbles: true })); setTimeout(() => document.getElementById('guess-submit')?.click(), 80); }
    }
    if (S.drawn !== s.version) { S.drawn = s.version; drawChart(document.getElementById('room-chart'), s, null); }
  }

  // a student's guess goes to the room while following (Reveal or Enter), until the teacher reveals
  function send(e) {
    if (!code || !S.following || S.ended || !S.state || S.state.phase !== 'guessing') return;
    e.preventDefault(); e.stopPropagation();
    const box = document.querySelector('#guess-input textarea, #guess-input input'), text = box ? box.value : '';
    const step = S.state.step;
    post(`${code}/guesses`, { student: me, text }).then((r) => {
      if (r.status === 200) { keep(step, text); note(`Sent: ${shown(r.body.text)}. You can change it until the teacher reveals.`); } else note((r.body && r.body.error) || 'Not sent.');
    }).catch(() => note('Not sent: the class cannot be reached just now.'));
  }
  document.addEventListener('click', (e) => { if (e.target.closest && e.target.closest('#guess-submit')) send(e); }, true);
  document.addEventListener('keydown', (e) => { if (e.key === 'Enter' && e.target.closest && e.target.closest('#guess-input')) send(e); }, true);

  // (a student's page every 2 s: a room of 500 costs the server 250 requests a second, most of them a 304)
  setInterval(() => { if (code) studentTick(); else teacherTick(); }, code ? STUDENT_POLL_MS : POLL_MS);
  // the teacher's card shows the moment the server sends it (the room's state follows at the next poll)
  const cardWatch = new MutationObserver(() => { const c = document.body.classList.contains('class-shown'); if (!c && document.querySelector('#class-info .class-card')) teacherTick(); });
  const watchCard = () => { const i = document.getElementById('class-info'); if (i) cardWatch.observe(i, { childList: true, subtree: true }); else setTimeout(watchCard, 500); };
  if (!code) { watchCard(); resume(); }
})(window);

/* A class as one room, on the page (the rooms: ui/rooms/rooms.py; their JSON API: ui/rooms/api.py, docs/rooms.md).
 *
 * The teacher's page: "Start a class" shows the room's card (viz/room.py: code, QR, Reveal, Next step, End);
 * this script tells the room the step on the teacher's screen (and a new trace: the bridge's "class_sync", ui/bridge.py),
 * turns Guess first on, and draws the room's guesses (#class-chart): how many have guessed, then, on Reveal,
 * the room's answers beside the model's top candidates, each answer with a button that hides it.
 * A student's page (?room=CODE): joins (the room's trace comes onto the page through the bridge's "join"; until it
 * is on screen the page shows only "Joining class ABC DEF…", never its own example), turns Guess first on and follows
 * the room's step under the line "Class ABC DEF · step 10 · What comes next?" (the guess box right under it); a guess
 * goes to the room (it may be changed until the reveal; a new step starts with an empty box), and on the reveal the
 * page shows the step, the student's own guess as the room rated it, and the room's chart. "Explore on my own" stops following
 * (no server cost); "Follow the teacher" again. The start page's "Join a class" box opens ?room=CODE for a code that
 * has a class, and says why not right under it (a wrong ?room= link too). Polls at most once a second, with the
 * room's ETag (unchanged: a 304, no JSON). Every guess shows as the characters typed.
 * The teacher's card offers the gallery's lesson (a step each click, on every screen; "Next in the lesson" in the
 * controls); the teacher's tab keeps the room's code and key and its place in the lesson (sessionStorage), so a
 * reloaded teacher's page gets its room, trace and step back. The teacher's tools and the class's score (options,
 * results, running score, summary card, marks, a student's own score): assets/room_tools.js (LLMRoomTools).
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
  const shown = (piece) => root.LLMText.t('common.quote', { text: piece }); // (the page's words: locales/en.json, room.*)
  const app = () => (root.LLMApp && root.LLMApp.mounted() ? root.LLMApp : null);
  const { kept, keepIt, keepRoom, markLesson } = root.LLMRoomTeacher; // (assets/room_teacher.js, loaded before this)

  // the step slider moved as a drag would (assets/app_viewer.js draws it); again when the slider shows another step
  // than the page (a trace just loaded sets the slider's value once more, after the page has moved on): the server
  // reads the slider's value (a guess's rating, Re-sample, the tour), the page draws its own step
  function setStep(s) {
    const v = root.LLMValues.step(), a = app();
    if (v === null || (v === s && (!a || a.state.step === s))) return;
    root.LLMValues.setStep(s, { release: false });
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
  // Both columns on one absolute scale, a bar's track being 100%: the room's share of its guesses, the model's
  // probability (at a flat step its 2% is a sliver beside the 95% of a confident one). The server writes what is
  // read (ui/rooms/rooms.py): a token's `label` as the distribution writes it (viz.style.visible: "·Paris", bytes as
  // "<0xF0>"); its probability (`prob`) written here in the page's language, with the digits its size needs (as
  // viz.fmt.pct does; a favourite outside the model's kept candidates: "less than" its bound, `below`); an answer is
  // shown as typed, as text.
  function bars(title, rows, label, value, share, hide) {
    const box = el('div', 'room-col');
    box.append(el('p', 'room-col-title', title));
    rows.forEach((r) => {
      const row = el('div', 'room-row' + (r.mark ? ' room-mark' : ''));
      row.append(el('span', 'room-label', label(r)));
      const track = el('span', 'room-track'), bar = el('span', 'room-bar');
      bar.style.width = `${Math.min(100, share(r) * 100)}%`; // (a share of 100%; the stylesheet keeps a sliver visible)
      track.append(bar);
      row.append(track, el('span', 'room-value', value(r)));
      if (hide) { const b = el('button', 'room-hide', '✕'); b.title = root.LLMText.t('room.hide_answer'); b.onclick = () => hide(r); row.append(b); }
      box.append(row);
    });
    return box;
  }

  const pctOf = (x) => root.LLMRoomTools.pctOf(x), favourite = (favs, n, shares) => root.LLMRoomTools.favourite(favs, n, shares, shown);
  const BYTES = /<0x[0-9A-F]{2}>/;

  function drawChart(box, s, hide) {
    if (!box) return;
    box.replaceChildren();
    if (s.phase !== 'revealed') {
      box.append(el('p', 'room-count', root.LLMText.t(s.students === 1 ? 'room.count_one' : 'room.count_other', { guesses: s.guesses, students: s.students, step: s.step })));
      return;
    }
    const n = s.room.reduce((a, r) => a + r.count, 0), top = s.model[0], shares = !!(s.options && s.options.hide_counts); // (shares only)
    box.append(el('p', 'room-summary', n ? root.LLMText.t(s.real_text ? 'room.summary_text' : 'room.summary', { share: root.LLMText.pct(s.top_share, 0), token: shown(top.label),
      favourite: favourite(s.favourites, n, shares), sampled: shown(s.sampled.label) }) : root.LLMText.t('room.no_guesses')));
    const cols = el('div', 'room-cols'), hideRow = hide && ((r) => hide(r.by_text ? Object.assign({}, r, { token_id: null }) : r));
    // the real token when it is not among the model's top candidates: its own row, after them ("⋯ ·of"), never a footnote
    const outside = !s.model.some((m) => m.token_id === s.sampled.token_id) && typeof s.sampled.prob === 'number';
    const modelRows = s.model.map((m) => Object.assign({ mark: m.token_id === s.sampled.token_id }, m))
      .concat(outside ? [Object.assign({ mark: true, outside: true }, s.sampled)] : []);
    cols.append(bars(shares ? root.LLMText.t('room.options_col_room') : root.LLMText.t('room.col_room', { guesses: root.LLMText.count(n, 'guess') }),
      s.room.map((r) => Object.assign({ mark: r.token_id === top.token_id }, r)),
      (r) => r.text, (r) => (shares ? root.LLMText.pct(r.count / n, 0) : root.LLMText.thousands(r.count)), (r) => r.count / n, hideRow),
    bars(root.LLMText.t('room.col_model'), modelRows, (m) => (m.outside ? `⋯ ${m.label}` : m.label), pctOf, (m) => m.prob));
    box.append(cols);
    if (root.LLMRoomTools) root.LLMRoomTools.marks(box, s); // the class's answer and the model's top pick: right or wrong
    if ([...s.model, s.sampled].some((m) => BYTES.test(m.label))) {
      box.append(el('p', 'room-bytes', root.LLMText.t('room.bytes_note')));
    }
  }

  // -- the teacher ----------------------------------------------------------------------------------------
  let T = null; // {code, key, etag, step, key of the trace the room has, state}
  function teacherTick() {
    const c = document.querySelector('#class-info .class-card[data-code]');
    document.body.classList.toggle('teaching', !!c);
    document.body.classList.toggle('class-shown', !!document.querySelector('#class-info .class-card')); // (a card, or why there is none)
    root.LLMRoomTeacher.codeChip(c && c.dataset.code);
    if (!c) { T = null; return; }
    const a = app();
    if (!T || T.code !== c.dataset.code) {
      T = { code: c.dataset.code, key: c.dataset.key, etag: null, step: null, trace: a ? a.state.key : null, state: null };
      root.LLMGuess && root.LLMGuess.setOn(true); // the projector keeps the answer hidden until Reveal
      keepRoom({ code: T.code, key: T.key });
      root.LLMRoomTeacher.forgetLink(); // (a reload gets the room's text back, never the link's: it would become the room's)
      const [room, i] = (kept('llmviz-lesson') || '').split(':'); // (this room's place in the lesson; a new room's: none yet)
      markLesson(room === T.code && i !== '' ? Number(i) : -1);
    }
    // another text on the teacher's screen: the room's now (at its first step, unless a lesson's step: ui/rooms/rooms.py
    // set_trace), and the page goes where the room is once the room has it (until then, no step is sent)
    if (a && a.state.key !== T.trace) { T.trace = a.state.key; T.step = null; T.fresh = { was: T.state && T.state.trace, at: Date.now() }; ask('class_sync'); }
    else if (T.fresh && Date.now() - T.fresh.at > 15000) T.fresh = null;
    else if (a && !T.fresh && !a.playing() && T.state && a.state.step !== T.state.step && a.state.step !== T.step) {
      T.step = a.state.step;
      post(`${T.code}/step`, { step: a.state.step }, T.key);
    }
    call(`${T.code}`, { headers: Object.assign({ 'X-Room-Key': T.key }, T.etag ? { 'If-None-Match': T.etag } : {}) }).then((r) => {
      if (!back(answered(r), (t) => drawEnded(document.getElementById('class-chart'), { error: t }))) return;
      if (!T || r.status === 304) return;
      if (r.status !== 200) { if (r.status === 404 || r.status === 410) keepRoom(null); drawEnded(document.getElementById('class-chart'), { error: why(r, null) }); return; }
      T.etag = r.etag; teacherSees(r.body, a);
    }).catch(() => back(false, (t) => drawEnded(document.getElementById('class-chart'), { error: t })));
  }
  function teacherSees(body, a) { // the room's state on the teacher's page: a poll's answer, or the Reveal's own
    T.state = body; root.LLMRoomTeacher.setState(body);
    if (T.fresh && body.trace !== T.fresh.was) { // the room's new text: the teacher's own opens at the room's first step (a
      T.fresh = null; //  gallery text at the page's step, which the page tells the room as before)
      if (!body.example) { T.step = body.step; setStep(body.step); }
    }
    if (body.closed) { keepRoom(null); drawEnded(document.getElementById('class-chart'), { error: root.LLMText.t('room.ended') }); return; }
    if (body.phase === 'revealed' && a && a.state.step === body.step) root.LLMGuess && root.LLMGuess.reveal(body.step);
    drawChart(document.getElementById('class-chart'), body, (row) => post(`${T.code}/hide`, row.token_id !== null ? { token_id: row.token_id } : { text: row.text }, T.key));
    if (root.LLMRoomTools) root.LLMRoomTools.teacher(T, body); // the running score, the summary card, the options
  }

  // why the API refused, in the page's language: a class that has ended (410) said here, any other refusal as the
  // server wrote it (in the language of the page that asked: ui/rooms/api.py), else `otherwise`
  const why = (r, otherwise) => (r.status === 410 ? root.LLMText.t('room.ended') : (r.body && r.body.error) || otherwise);
  function drawEnded(box, body) { if (box) box.replaceChildren(el('p', 'room-ended', (body && body.error) || root.LLMText.t('room.unreachable'))); }
  // -- the server restarted (its rooms kept on disk: docs/rooms.md): a poll with no answer, or not the API's (a proxy's 502, the
  // server's own 404 before app.py adds the API) marks it lost; the first to work then asks Gradio's app id: another, the page reloads
  let lost = false;
  const answered = (r) => r.status === 200 || r.status === 304 || !!(r.body && r.body.error); // (the API's refusals say why)
  function back(ok, say, spread) { // (true: the answer is the API's, to read)
    if (!ok) { lost = true; say(root.LLMText.t('room.restart_lost')); return false; }
    if (!lost) return true;
    lost = false;
    const cfg = root.gradio_config || {};
    fetch(`${String(cfg.api_prefix || '/gradio_api').slice(1)}/app_id`).then((r) => r.json()).then((d) => {
      if (d.app_id !== cfg.app_id) {
        say(root.LLMText.t('room.restart_back'));
        keepIt('llmviz-reconnect', code || 'teacher'); // (the reloaded page says "Reconnecting", not "Joining")
        setTimeout(() => root.location.reload(), Math.random() * (spread || 0));
      }
    }).catch(() => { lost = true; });
    return true;
  }

  function ask(kind, data) { // the server does the rest (the bridge: ui/bridge.py)
    root.LLMBridge.send(kind, data);
    return true;
  }

  function openLesson(i) {
    const items = markLesson(i), b = items[i] && items[i].querySelector('.lesson-open');
    if (b && ask('lesson', { pick: b.dataset.pick })) keepIt('llmviz-lesson', `${T.code}:${i}`);
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
    if (b.id === 'class-reveal') post(`${T.code}/reveal`, {}, T.key).then((r) => { // (its answer: the room's state, drawn at once)
      if (a) root.LLMGuess.reveal(a.state.step);
      if (T && r.status === 200 && r.body && r.body.phase === 'revealed') teacherSees(r.body, app());
    });
    else if (b.id === 'class-next' && a) setStep(Math.min(a.state.bundle.n_steps - 1, a.state.step + 1));
    else if (b.id === 'class-close') { keepRoom(null); post(`${T.code}/close`, {}, T.key); }
  });

  // -- a student --------------------------------------------------------------------------------------------
  // (a class's page shows the page's own example no moment: until the room's trace is on screen only "Joining" does)
  const T0 = Date.now(), spacedCode = code.length === 6 ? `${code.slice(0, 3)} ${code.slice(3)}` : code;
  if (code) document.documentElement.classList.add('room-joining');
  const S = { joined: null, following: true, etag: null, state: null, revealed: null, ended: false, asked: 0, drawn: null,
    want: null, at: null, refusal: null, news: null, newsStep: null };
  // a guess kept by the room's text and step as its state named them at the send (not S.joined, which lags a new text: lost on a reload)
  const mine = (trace, step) => { try { return localStorage.getItem(`llmviz-guess-${code}-${trace}-${step}`); } catch (err) { return null; } };
  const keep = (trace, step, text) => { try { localStorage.setItem(`llmviz-guess-${code}-${trace}-${step}`, text); } catch (err) { /* private mode */ } };
  const guessBox = () => root.LLMValues.box('guess-input');

  function bar() {
    const host = document.getElementById('room-bar');
    if (!host) return null;
    let b = host.querySelector(':scope > .room-inner');
    if (!b) { // (a box of our own inside Gradio's block: its own nodes stay as Gradio made them)
      const follow = el('button', '', ''); follow.id = 'room-follow';
      follow.onclick = () => { S.following = !S.following; S.etag = null; status(); };
      b = el('div', 'room-inner');
      b.append(el('p', 'room-status'), follow, Object.assign(el('p', 'room-note'), { role: 'status' }), Object.assign(el('div', 'class-chart'), { id: 'room-chart' }));
      host.append(b);
      document.body.classList.add('in-room');
    }
    return b;
  }
  function headline(text) { // above the guess box: "Class ABC DEF · step 10 · What comes next?"
    const h = document.getElementById('room-head'), p = h && (h.querySelector(':scope > .room-headline') || h.appendChild(el('p', 'room-headline')));
    if (p && p.textContent !== text) p.textContent = text;
  }
  // the guess box's label and its button name one act: Reveal alone (the page's own words), Send to the class, Rate after
  let alone = null;
  function words(act) {
    const btn = document.getElementById('guess-submit'), lab = root.LLMValues.label('guess-input');
    if (!btn || !lab) return;
    alone = alone || [lab.textContent, btn.textContent];
    const [label, button] = act === 'send' ? [root.LLMText.t('label.guess_send'), root.LLMText.t('button.guess_send')]
      : act === 'rate' ? [root.LLMText.t('label.guess_rate'), root.LLMText.t('button.guess_rate')] : alone;
    if (btn.textContent !== button) btn.textContent = button;
    if (lab.textContent !== label) lab.textContent = label;
  }
  function status(text) {
    const b = bar();
    if (!b) return;
    if (text !== undefined) b.querySelector('.room-status').textContent = text;
    b.querySelector('#room-follow').textContent = root.LLMText.t(S.following ? 'room.explore' : 'room.follow');
    b.querySelector('#room-follow').hidden = S.ended;
    document.body.classList.toggle('room-following', S.following && !S.ended);
    if (!S.following || S.ended) { words('alone'); headline(root.LLMText.t(S.ended ? 'room.head_ended' : 'room.head_exploring', { code: spacedCode })); } // (a guess rated here)
  }
  const note = (text) => { const b = bar(); if (b) b.querySelector('.room-note').textContent = text; };
  const following = () => root.LLMText.t('room.following');
  const sentNote = (text, phase) => root.LLMText.t(phase === 'guessing' ? 'room.sent' : 'room.your_guess', { guess: shown(text) });
  const join = () => ask('join', { code });

  function studentTick() {
    if (S.ended || !S.following) return;
    call(`${code}?student=${encodeURIComponent(me)}`, { headers: S.etag ? { 'If-None-Match': S.etag } : {} }).then((r) => {
      if (!back(answered(r), status, 2000)) return; // (a class's pages reload within 2 s of each other)
      if (r.status === 304) { rejoin(); return follow(); }
      if (r.status !== 200) { S.ended = true; if (S.joined === null && (r.status === 404 || r.status === 410)) S.refusal = r; else status(why(r, root.LLMText.t('room.unreachable'))); return; }
      S.etag = r.etag; S.state = r.body;
      if (r.body.closed) { S.ended = true; status(root.LLMText.t('room.ended_explore')); return; }
      rejoin();
      status(following());
      follow();
    }).catch(() => back(false, status));
  }

  function rejoin() { // the room's trace onto this page, once the page's own first trace is in (else that would come after it)
    const t = S.state && S.state.trace, opened = S.opened || Date.now() - T0 > 15000;
    if (t && t !== S.joined && opened && Date.now() - S.asked > 5000 && join()) {
      if (S.joined) { S.news = newText(S.joined); S.newsStep = null; } // (the teacher gave the class another text: said, once)
      S.joined = t; S.asked = Date.now(); S.revealed = null; S.want = null;
    }
  }
  function newText(was) { // "The teacher has started a new text ... On the last one you had 3 of 5 right."
    let sc = null;
    try { sc = JSON.parse(localStorage.getItem(`llmviz-score-${code}-${was}`) || 'null'); } catch (err) { sc = null; }
    const steps = sc ? Object.keys(sc).length : 0, right = sc ? Object.values(sc).reduce((n, v) => n + v, 0) : 0;
    return steps ? root.LLMText.t('room.new_text_score', { right, steps }) : root.LLMText.t('room.new_text');
  }
  function news(s) { // the line that says so, over the new text's first step
    const b = bar();
    if (!b) return;
    if (S.news && S.newsStep === null) S.newsStep = s.step;
    const show = !!S.news && s.step === S.newsStep;
    let p = b.querySelector(':scope > .room-news');
    if (show && !p) { p = el('p', 'room-news'); p.setAttribute('role', 'status'); b.prepend(p); }
    if (p) { p.textContent = show ? S.news : ''; p.hidden = !show; }
    if (!show) S.news = null;
  }
  // the join's trace (its viewer bundle's key, ui/wiring.py) is the one the page follows, once on screen
  root.LLMBridge.on('bundle', (m) => { if (m.joined) S.want = m.key; if (m.opened) S.opened = true; });

  function joining() { // every 200 ms until the room's trace is on screen (Gradio draws the page after this script runs)
    if (S.refusal) return refused(S.refusal);
    if (S.ended) { document.documentElement.classList.remove('room-joining'); return true; }
    headline(root.LLMText.t(reconnecting ? 'room.reconnecting' : 'room.joining', { code: spacedCode }));
    if (S.state) status(following()); // (the first answer may come before Gradio has drawn the bar)
    rejoin();
    const a = app();
    if (!(a && S.want && a.state.key === S.want) && Date.now() - T0 < 30000) return false;
    document.documentElement.classList.remove('room-joining');
    follow();
    return true;
  }
  function refused(r) { // a code with no class (or an ended one): said in the start page's join box, the code there to correct
    const box = document.getElementById('join-code'), msg = document.getElementById('join-msg');
    if (!box || !msg) return false;
    document.documentElement.classList.remove('room-joining');
    box.value = spacedCode;
    msg.textContent = r.status === 404 ? noClass(spacedCode) : r.status === 410 ? root.LLMText.t('room.that_ended')
      : (r.body && r.body.error) || root.LLMText.t('room.that_ended');
    return true;
  }

  function follow() { // the room's step and phase on this page (once the room's trace is on it)
    const s = S.state, a = app();
    if (!s || !a || !S.following) return;
    if (S.want === null && S.asked && Date.now() - S.asked > 15000) S.want = a.state.key; // (no word of the join: the page as it is)
    if (a.state.key !== S.want) return;
    root.LLMGuess && root.LLMGuess.setOn(true);
    setStep(s.step);
    headline(root.LLMText.t(s.phase === 'revealed' ? 'room.head_revealed' : 'room.head_guessing', { code: spacedCode, step: s.step }));
    guessFocus();
    news(s);
    words(s.phase === 'guessing' ? 'send' : 'rate');
    fresh(s);
    const at = `${s.trace}|${s.step}`, was = mine(s.trace, s.step), box = guessBox();
    if (s.phase === 'revealed' && a.state.step === s.step && S.revealed !== at) {
      S.revealed = at;
      root.LLMGuess.reveal(s.step);
      // (the student's own guess as the room rated it, shown as the page shows a rating: never rated again)
      if (was && box) { box.value = was; box.dispatchEvent(new Event('input', { bubbles: true })); root.LLMRoomTools.rating(`${API}${code}/rating?student=${encodeURIComponent(me)}`, s.step); }
    }
    if (S.drawn !== s.version) {
      S.drawn = s.version; drawChart(document.getElementById('room-chart'), s, null);
      if (root.LLMRoomTools) root.LLMRoomTools.student(bar(), `${code}-${s.trace}`, s, mine(s.trace, s.step)); // right or not; "You: 3 of 5 right"
    }
  }
  // the focus in the guess box as the room's first step shows, if nothing has it (once: not on a touch screen, it opens the keyboard)
  const guessFocus = () => { const b = guessBox(); if (b && !S.focused && (S.focused = 1) && !root.matchMedia('(pointer: coarse)').matches && document.activeElement === document.body) b.focus(); };
  function fresh(s) { // a new step: an empty box and no note; a step this student guessed (a reload): the guess, said sent
    const at = `${s.trace}|${s.step}|${s.phase}`, box = guessBox();
    if (S.at === at || !box) return;
    const was = mine(s.trace, s.step), moved = !S.at || !S.at.startsWith(`${s.trace}|${s.step}|`);
    S.at = at;
    if (moved) { box.value = s.phase === 'guessing' ? was || '' : ''; box.dispatchEvent(new Event('input', { bubbles: true })); }
    note(was ? sentNote(was, s.phase) : '');
  }

  // a student's guess goes to the room while following (Send or Enter), until the teacher reveals
  function send(e) {
    if (!code || !S.following || S.ended || !S.state || S.state.phase !== 'guessing') return;
    e.preventDefault(); e.stopPropagation();
    const box = guessBox(), text = box ? box.value : '', step = S.state.step, trace = S.state.trace;
    post(`${code}/guesses`, { student: me, text }).then((r) => {
      if (r.status === 200) {
        keep(trace, step, text); note(sentNote(r.body.text, 'guessing'));
        if (root.LLMRoomTools) root.LLMRoomTools.sent(`${code}-${trace}-${step}`, r.body); // (its ids: right or not, at the reveal)
      } else note(why(r, root.LLMText.t('room.not_sent')));
    }).catch(() => note(root.LLMText.t('room.not_sent_unreachable')));
  }
  document.addEventListener('click', (e) => { if (e.target.closest && e.target.closest('#guess-submit')) send(e); }, true);
  document.addEventListener('keydown', (e) => { if (e.key === 'Enter' && e.target.closest && e.target.closest('#guess-input')) send(e); }, true);

  // -- the start page's "Join a class" box (viz/room.py join_box_html): the code checked, then ?room=CODE opened ----
  const noClass = (c) => root.LLMText.t('room.no_class', { code: c });
  async function joinTyped(e) {
    if (e) e.preventDefault();
    root.LLMJoinAsked = false;
    const box = document.getElementById('join-code'), msg = document.getElementById('join-msg');
    const c = String(box.value).toUpperCase().replace(/[^A-Z0-9]/g, ''), nice = `${c.slice(0, 3)} ${c.slice(3)}`;
    const say = (t) => { msg.textContent = t; box.focus(); };
    if (c.length !== 6) return say(root.LLMText.t(c ? 'room.code_length_n' : 'room.code_length', { n: c.length }));
    const r = await call(c).catch(() => ({ status: 0 }));
    if (r.status === 200 && !r.body.closed) { // (the class's link: the page's language and theme kept, nothing else of its link)
      const u = new URL(root.location.href), theme = u.searchParams.get('__theme'), lang = u.searchParams.get('lang');
      u.search = `?room=${c}${lang ? `&lang=${encodeURIComponent(lang)}` : ''}${theme ? `&__theme=${encodeURIComponent(theme)}` : ''}`;
      u.hash = ''; root.location.assign(u.href); return;
    }
    say(r.status === 404 ? noClass(nice) : r.status === 410 || (r.body && r.body.closed) ? root.LLMText.t('room.class_ended', { code: nice })
      : (r.body && r.body.error) || root.LLMText.t('room.unreachable_try'));
  }
  document.addEventListener('submit', (e) => { if (e.target && e.target.id === 'join-form') joinTyped(e); }, true);
  if (!code && root.LLMJoinAsked) joinTyped(); // (a code typed before this script was there: ui/layout.py keeps it asked)

  // (a student's page every 2 s: a room of 500 costs the server 250 requests a second, most of them a 304)
  setInterval(() => { if (code) studentTick(); else teacherTick(); }, code ? STUDENT_POLL_MS : POLL_MS);
  // the teacher's card shows the moment the server sends it (the room's state follows at the next poll)
  root.LLMBridge.on('class_card', () => requestAnimationFrame(() => teacherTick())); // (the bridge's "class_card": ui/wiring.py)
  // a page reloaded by a restart (back) says "Reconnecting to class …" until it is back in the room
  const reconnecting = kept('llmviz-reconnect') === (code || 'teacher');
  keepIt('llmviz-reconnect', null);
  if (!code) root.LLMRoomTeacher.resume(); else { studentTick(); const j = setInterval(() => { if (joining()) clearInterval(j); }, 200); }
})(window);

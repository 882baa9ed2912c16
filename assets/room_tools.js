/* The teacher's tools and the class's score in a class room (issue 36), called by assets/room.js (LLMRoomTools):
 *
 * - marks(box, state): beside the room's chart after a reveal (every page), the class's answer and the model's top
 *   pick, each right or wrong against the token that came next (the state's `score`: ui/rooms/scores.py);
 * - teacher(T, state): on the teacher's card, after each reveal the running score ("So far: class 2 of 3 · SmolLM2
 *   3 of 3", from GET /api/rooms/{code}/summary), the round's summary card (#class-summary, in the chart's place:
 *   opened by "Round summary", and by itself once the text's last step is revealed; its own button closes it), and
 *   the projector's options
 *   (rude words in the answers, shares only) as the room has them;
 * - the options' controls (POST /api/rooms/{code}/options) and Download results (GET .../results.csv with the
 *   teacher's key, saved as a file "class-ABC123-results.csv");
 * - sent(at, answer), student(bar, at, state, guess): a student's own guess right or not after the reveal (its
 *   first tokens `ids` against the revealed `sampled.token_id`) and their running score ("You: 3 of 5 right"), kept in
 *   the browser's storage with their guesses; rating(url, step): the room's whole rating of it, in the rating box.
 * Every sentence is the catalogue's (room.score_*, room.options_*, room.csv_*: locales/en.json).
 */
(function (root) {
  'use strict';

  const API = 'api/rooms/';
  const { t } = root.LLMText;
  const pct = (x) => root.LLMText.pct(x, 0);
  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  const shown = (piece) => t('common.quote', { text: piece });
  const card = () => document.querySelector('#class-info .class-card[data-code]');
  // a model's name as a class says it: "HuggingFaceTB/SmolLM2-135M-Instruct" -> "SmolLM2"
  const short = (id) => String(id || '').split('/').pop().split('-')[0];
  const bits = (x) => (x === null || x === undefined ? '–' : root.LLMText.local(root.LLMText.fixed(x, 1))); // (French 4,7)
  const mark = (ok) => (ok === null || ok === undefined ? '–' : ok ? '✓' : '✗');

  // -- the marks beside the chart -------------------------------------------------------------------------------
  function marks(box, s) {
    if (!box || !s.score || s.phase !== 'revealed') return;
    const p = el('p', 'room-marks'), sc = s.score, favs = s.favourites || [];
    if (sc.class_right !== null && favs.length) {
      const text = favs.map((f) => shown(f.text)).join(' / ');
      if (sc.class_split || favs.length > 1) p.append(el('span', 'room-judged is-split', t('room.score_class_split', { text })));
      else {
        p.append(el('span', `room-judged ${sc.class_right ? 'is-right' : 'is-wrong'}`,
          t(sc.class_right ? 'room.score_class_right' : 'room.score_class_wrong', { text })));
      }
    }
    if (s.model && s.model.length) {
      p.append(el('span', `room-judged ${sc.model_right ? 'is-right' : 'is-wrong'}`,
        t(sc.model_right ? 'room.score_model_right' : 'room.score_model_wrong', { token: shown(s.model[0].label) })));
    }
    box.append(p);
  }

  // -- the teacher's card: the running score and the summary card ------------------------------------------------
  const R = { at: null, code: null, asked: null, summary: null, open: false, auto: null, options: null };

  function teacher(T, s) {
    options(s.options);
    if (R.at && (R.at !== s.trace || R.code !== T.code)) { R.summary = null; R.auto = null; R.asked = null; show(false); } // (a new round)
    R.at = s.trace;
    R.code = T.code;
    // the summary asked once a reveal (a step's score is fixed when it is revealed), and once a text on a page that has none
    const ask = s.phase === 'revealed' ? `${s.trace}|${s.step}` : R.summary ? null : `${s.trace}|`;
    if (ask === null || R.asked === ask) return draw();
    R.asked = ask;
    fetchSummary().then(() => {
      // the text's last step revealed: the summary card opens by itself (once; "Back to the chart" closes it)
      const last = `${s.trace}|${s.step}`;
      if (s.phase === 'revealed' && s.step === s.n_steps - 1 && R.auto !== last) { R.auto = last; show(true); }
    });
  }

  function fetchSummary() {
    const trace = R.at;
    return fetch(API + encodeURIComponent(R.code) + '/summary').then((r) => (r.ok ? r.json() : null)).then((sum) => {
      if (sum && R.at === trace) { R.summary = sum; draw(); }
    }).catch(() => {});
  }

  function totals(sum) { // (the class's and the model's counts over the same steps: those anyone guessed)
    const x = sum.totals, n = x.steps_guessed || 0;
    return { n, classRight: x.class_right, share: pct(x.class_share_right), model: n ? x.model_right_guessed : x.model_right, all: x.steps };
  }

  function draw() {
    const line = document.getElementById('class-score'), sum = R.summary;
    if (line && !sum) line.textContent = '';
    if (!line || !sum) return;
    const x = totals(sum), name = short(sum.model);
    line.textContent = x.n ? t('room.score_so_far', { share: x.share, class_right: x.classRight, steps: x.n, model: name, model_right: x.model }) : '';
    const box = document.getElementById('class-summary');
    if (box && R.open) box.replaceChildren(...summaryCard(sum));
  }

  function summaryCard(sum) {
    const x = totals(sum), name = short(sum.model), tot = sum.totals, st = sum.study || {};
    const close = el('button', 'summary-close', t('room.score_summary_hide'));
    close.id = 'class-summary-close';
    if (!x.all) return [close, el('p', 'summary-none', t('room.score_card_none'))];
    const out = [close, el('p', 'summary-title', t('room.score_card_title', { steps: root.LLMText.count(x.all, 'step') }))];
    const big = el('div', 'summary-big');
    // the share of students right first (what a study of people measures), the most common answer second
    if (x.n) big.append(el('p', 'summary-class', t('room.score_card_class', { share: x.share })));
    if (x.n) big.append(el('p', 'summary-plurality', t('room.score_card_plurality', { right: x.classRight, steps: x.n })));
    big.append(el('p', 'summary-model', t('room.score_card_model', { model: name, right: x.model, steps: x.n || x.all })));
    const real = sum.real_text; // (the study's figures are for real text: a text the model wrote is not compared with them)
    if (real && st.people !== undefined) big.append(el('p', 'summary-study', t('room.score_card_people', { share: pct(st.people) })));
    if (real && st.model !== undefined) big.append(el('p', 'summary-study', t('room.score_card_study_model', { name: st.model_name || '', share: pct(st.model) })));
    if (!real) big.append(el('p', 'summary-study', t('room.score_card_generated')));
    out.push(big);
    if (real && st.name) { // (the study's source right under its figures: on the projector's screen, not under the steps' list)
      const a = el('a', '', t('room.score_card_source', { name: st.name }));
      if (/^https:\/\//.test(st.url || '')) { a.href = st.url; a.target = '_blank'; a.rel = 'noopener'; }
      const p = el('p', 'summary-source'); p.append(a); out.push(p);
    }
    if (tot.class_bits !== null && tot.class_bits !== undefined) {
      out.push(el('p', 'summary-bits', t('room.score_card_bits', { class_bits: bits(tot.class_bits), model: name, model_bits: bits(tot.model_bits_guessed) })));
    }
    (sum.earlier || []).forEach((e) => { // the room's earlier texts (their steps and rows: the results' CSV)
      const x2 = e.totals, n2 = x2.steps_guessed || 0;
      if (n2) out.push(el('p', 'summary-earlier', t('room.score_card_earlier', { n: e.text, share: pct(x2.class_share_right), steps: n2,
        model: name, model_right: x2.model_right_guessed })));
    });
    const steps = el('ul', 'summary-steps');
    sum.steps.forEach((k) => steps.append(el('li', '', t('room.score_card_step', { step: k.step, token: shown(k.real.label),
      class_mark: k.class_split ? '–' : mark(k.class_right), model: name, model_mark: mark(k.model_right) }))));
    out.push(steps);
    return out;
  }

  function show(on) { // the summary card in the chart's place, or the chart again
    R.open = on;
    const c = card(), box = document.getElementById('class-summary');
    if (c) c.classList.toggle('summary-on', on);
    if (box) { box.hidden = !on; box.tabIndex = 0; if (!on) box.replaceChildren(); } // (it may scroll: a keyboard reaches it)
    if (on && R.code) { draw(); fetchSummary(); } // (what is shown at once, then the newest)
  }

  // -- the projector's options and Download results ----------------------------------------------------------------
  function options(o) { // the controls as the room has them (not while the teacher is changing one)
    if (!o) return;
    const p = document.getElementById('class-profanity'), h = document.getElementById('class-hide-counts');
    if (p && document.activeElement !== p && p.value !== o.profanity) p.value = o.profanity;
    if (h && h.checked !== !!o.hide_counts) h.checked = !!o.hide_counts;
    R.options = o;
  }
  const say = (text) => { const m = document.getElementById('class-tools-msg'); if (m) m.textContent = text; };

  async function setOption(body) {
    const c = card();
    if (!c) return;
    say('');
    try {
      const r = await fetch(`${API}${encodeURIComponent(c.dataset.code)}/options`, { method: 'POST', body: JSON.stringify(body),
        headers: { 'Content-Type': 'application/json', 'X-Room-Key': c.dataset.key } });
      if (!r.ok) { const b = await r.json().catch(() => ({})); say(t('room.options_failed', { error: b.error || String(r.status) })); options(R.options); }
    } catch (err) { say(t('room.options_failed', { error: t('room.unreachable') })); }
  }

  async function download() {
    const c = card();
    if (!c) return;
    say('');
    try {
      const r = await fetch(`${API}${encodeURIComponent(c.dataset.code)}/results.csv`, { headers: { 'X-Room-Key': c.dataset.key } });
      if (!r.ok) { const b = await r.json().catch(() => ({})); say(t('room.csv_failed', { error: b.error || String(r.status) })); return; }
      const url = URL.createObjectURL(await r.blob()), a = el('a');
      a.href = url; a.download = `class-${c.dataset.code}-results.csv`;
      document.body.append(a); a.click(); a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (err) { say(t('room.csv_failed', { error: t('room.unreachable') })); }
  }

  document.addEventListener('change', (e) => {
    if (e.target.id === 'class-profanity') setOption({ profanity: e.target.value });
    else if (e.target.id === 'class-hide-counts') setOption({ hide_counts: e.target.checked });
  });
  document.addEventListener('click', (e) => {
    const b = e.target.closest && e.target.closest('#class-download, #class-summary-show, #class-summary-close');
    if (!b) return;
    if (b.id === 'class-download') download(); else show(b.id === 'class-summary-show');
  });

  // -- a student's own score ----------------------------------------------------------------------------------------
  const read = (k) => { try { return JSON.parse(localStorage.getItem(k) || 'null'); } catch (err) { return null; } };
  const write = (k, v) => { try { localStorage.setItem(k, JSON.stringify(v)); } catch (err) { /* private mode */ } };

  function sent(at, answer) { // the guess's first tokens (each spelling's; in other capitals), kept with the guess: `at` names room, text and step
    if (answer && Array.isArray(answer.ids)) write(`llmviz-ids-${at}`, answer.ids);
    if (answer && Array.isArray(answer.case_ids)) write(`llmviz-case-${at}`, answer.case_ids);
  }

  function student(bar, at, s, guess) {
    if (!bar) return;
    const own = bar.querySelector(':scope > .room-own') // (said as it is written: the verdict, at the reveal)
      || bar.insertBefore(Object.assign(el('p', 'room-own'), { role: 'status' }), bar.querySelector('#room-chart'));
    const tally = bar.querySelector(':scope > .room-tally') || bar.insertBefore(el('p', 'room-tally'), own.nextSibling);
    const scores = read(`llmviz-score-${at}`) || {}, ids = read(`llmviz-ids-${at}-${s.step}`), caps = read(`llmviz-case-${at}-${s.step}`) || [];
    own.textContent = '';
    own.className = 'room-own';
    bar.classList.remove('own-shown');
    if (s.phase === 'revealed' && s.sampled && Array.isArray(ids) && guess) {
      const exact = ids.includes(s.sampled.token_id), right = exact || caps.includes(s.sampled.token_id); // (ui/rooms/scores.py is_right)
      scores[s.step] = right ? 1 : 0;
      write(`llmviz-score-${at}`, scores);
      own.textContent = t(exact ? 'room.score_you_right' : right ? 'room.score_you_right_caps' : 'room.score_you_wrong',
        { guess: shown(guess), token: shown(s.sampled.label) });
      own.classList.add(right ? 'is-right' : 'is-wrong');
      bar.classList.add('own-shown'); // (it says the guess: room.js's "Your guess: ..." would say it twice)
    }
    const steps = Object.keys(scores).length, right = Object.values(scores).reduce((a, v) => a + v, 0);
    tally.textContent = steps ? t('room.score_you', { right, steps }) : '';
    Object.assign(tally.dataset, { right, steps });
  }

  // a student's own guess after the reveal, as the room rated it when it was sent (GET .../rating: ui/rooms/ratings.py),
  // shown in the page's rating box (assets/guess.js): the page never rates it again
  async function rating(url, step) {
    const r = await fetch(url).catch(() => null);
    const body = r && r.ok ? await r.json().catch(() => null) : null;
    if (body && body.html && body.step === step) root.LLMGuess.show(body.html);
  }

  // The reveal's words (assets/room.js): a probability in the page's language, with the digits its size needs (as
  // viz.fmt.pct does; a favourite outside the model's kept candidates: "less than" its bound, `below`), and the
  // sentence naming the class's favourite answer(s) beside the model's number for it
  const pctOf = (x) => (typeof x.prob === 'number' ? root.LLMText.pct(x.prob, null)
    : typeof x.below === 'number' ? root.LLMText.t('room.less_than', { pct: root.LLMText.pct(x.below, null) }) : x.pct);
  const listed = (xs) => (xs.length < 2 ? xs.join('') : root.LLMText.t('room.list_and', { items: xs.slice(0, -1).join(', '), last: xs[xs.length - 1] }));
  // (the number is the model's for an answer's first token: said so when the answer is more than that token)
  const beyond = (f) => f.piece && f.piece.trim() !== f.text.trim();
  function favourite(favs, n, shares, shown) {
    const f = favs[0];
    if (favs.length === 1) {
      return root.LLMText.t(beyond(f) ? 'room.favourite_token' : 'room.favourite', { text: shown(f.text), token: shown(f.label), pct: pctOf(f) });
    }
    const tied = (rest) => (shares ? root.LLMText.t('room.options_tied', { share: root.LLMText.pct(f.count / n, 0), rest }) // (hide counts)
      : root.LLMText.t('room.tied', { guesses: root.LLMText.count(f.count, 'guess'), rest }));
    if (favs.every((g) => beyond(g) && g.token_id === f.token_id)) { // (emoji that begin with the same bytes)
      return tied(root.LLMText.t('room.tied_token', { texts: listed(favs.map((g) => shown(g.text))), token: shown(f.label), pct: pctOf(f) }));
    }
    const each = favs.map((g) => root.LLMText.t(beyond(g) ? 'room.each_token' : 'room.each', { text: shown(g.text), token: shown(g.label), pct: pctOf(g) }));
    return tied(root.LLMText.t('room.tied_model', { each: listed(each) }));
  }

  const revealed = () => (R.summary && R.summary.steps ? R.summary.steps.length : 0); // (this text's revealed steps)
  root.LLMRoomTools = { marks, teacher, sent, student, rating, pctOf, favourite, download, revealed };
})(window);

/* The teacher's page in a class, besides the room's own polling (assets/room.js): the class code in the screen's
 * corner outside presenter view, the question before a new text replaces one the class has guessed on (its results
 * kept: ui/rooms/rooms.py set_trace), and the teacher's address kept to the page's own settings (a reload gets the room's
 * text back, never a link's); the tab's keeping of its room and the lesson's step, and its resume after a reload; the
 * lesson's list; the QR code's size. room.js calls it as LLMRoomTeacher (loaded before it) and gives it each poll's state
 * (setState).
 */
(function (root) {
  'use strict';

  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  let state = null; // the room's state as the teacher's page last read it
  const room = () => state;
  const setState = (s) => { state = s; };

  // the class code in the screen's corner while the teacher works outside presenter view (typing a prompt, say): the
  // class can still join (presenter view has the code at the top: assets/style.css)
  function codeChip(c) {
    let chip = document.getElementById('class-code-chip');
    if (!c) { if (chip) chip.remove(); return; }
    if (!chip) { chip = el('p', ''); chip.id = 'class-code-chip'; document.body.append(chip); }
    const text = `${root.LLMText.t('room.code_lead')} ${c.slice(0, 3)} ${c.slice(3)}`;
    if (chip.textContent !== text) chip.textContent = text;
  }

  // -- a new text while the class has results of this one: the teacher is asked first (a <dialog>: the keyboard's
  // focus kept in it, Esc keeps the text), the results' file offered; the results stay either way (ui/rooms/rooms.py set_trace)
  let allowed = false;
  function askNewText(e) {
    const trigger = e.type === 'click' ? e.target.closest && e.target.closest('#generate, #step')
      : e.key === 'Enter' && !e.shiftKey && e.target.closest && e.target.closest('#prompt') ? document.getElementById('generate') : null;
    const tools = root.LLMRoomTools, results = room() && (room().guesses > 0 || (tools && tools.revealed() > 0));
    if (!trigger || !results || allowed) { allowed = false; return; }
    e.preventDefault(); e.stopImmediatePropagation();
    const t = root.LLMText.t, d = document.getElementById('new-text-ask') || document.body.appendChild(el('dialog', 'new-text-ask'));
    d.id = 'new-text-ask';
    const go = el('button', 'lg primary', t('room.new_text_go')), keep = el('button', 'lg secondary', t('room.new_text_keep')),
      csv = el('button', 'lg secondary', t('room.csv_button')), row = el('p', 'new-text-buttons');
    row.append(go, csv, keep);
    // the settings it will be written with, as the fields hold them now (a real text leaves its own there: temperature 1)
    const V = root.LLMValues, num = (id) => root.LLMText.local(String(V.number(id)));
    const settings = el('p', 'new-text-settings', t('room.new_text_settings', { temperature: num('temperature'), top_k: num('top-k'), top_p: num('top-p') }));
    d.replaceChildren(el('p', '', t('room.new_text_ask')), settings, row);
    go.onclick = () => { d.close(); allowed = true; trigger.click(); };
    keep.onclick = () => d.close();
    csv.onclick = () => tools && tools.download();
    d.showModal();
    keep.focus();
  }
  document.addEventListener('click', askNewText, true);
  document.addEventListener('keydown', askNewText, true);

  // The teacher's address keeps what the page's own scripts read (the language, presenter view, Guess first, the
  // theme) and loses what a link asks the server for (an example, a step, a prompt): reloaded, the page gets its
  // room's text back, and a link's text coming after it would have become the room's (a restart, then the poem again)
  const OWN = ['lang', 'view', 'guess', '__theme'];
  function forgetLink() {
    const u = new URL(root.location.href), keep = new URLSearchParams();
    u.searchParams.forEach((v, k) => { if (OWN.includes(k)) keep.append(k, v); });
    if (keep.toString() === u.searchParams.toString()) return;
    u.search = keep.toString();
    history.replaceState(history.state, '', u.toString());
  }

  // whether the address asks the server for anything (an example, a step, a prompt): a resume waits for it
  const linkAsks = () => [...new URLSearchParams(root.location.search).keys()].some((k) => !OWN.includes(k));

  // -- the teacher's tab keeps its room (code and key) and the lesson's step: a reloaded page gets them back --------
  const kept = (k) => { try { return sessionStorage.getItem(k); } catch (err) { return null; } };
  const keepIt = (k, v) => { try { if (v === null) sessionStorage.removeItem(k); else sessionStorage.setItem(k, v); } catch (err) { /* private mode */ } };
  const keepRoom = (r) => { keepIt('llmviz-teacher', r ? JSON.stringify(r) : null); if (!r) keepIt('llmviz-lesson', null); };

  function resume() { // once the page shows its first trace and its link's (else they would come after the room's)
    const saved = kept('llmviz-teacher'), t0 = Date.now();
    if (!saved) return;
    // the page's own first trace came (its bundle says so), as rejoin() waits for: mounted is not enough; and what its
    // link asks for, when it asks for anything (the server says "link" once it has opened it)
    let opened = false, linked = !linkAsks();
    root.LLMBridge.on('bundle', (m) => { if (m.opened) opened = true; });
    root.LLMBridge.on('link', () => { linked = true; });
    const tryIt = () => { // (a busy server may take a while to send the page its first trace: the room's comes after it)
      const ready = (root.LLMApp && root.LLMApp.mounted()) && ((opened && linked) || Date.now() - t0 > 15000);
      if (!ready && Date.now() - t0 < 90000) { setTimeout(tryIt, 200); return; }
      root.LLMBridge.send('resume', { saved }); // (the server does the rest: ui/class_room.py resume_class)
      setTimeout(() => { if (!document.querySelector('#class-info .class-card[data-code]')) keepRoom(null); }, 15000); // (it had ended)
    };
    tryIt();
  }

  // the lesson (viz/room.py): a step opens on the teacher's screen, and so in the room; "Next in the lesson" opens the
  // step after the one open (on a new card: the first), and at the last one says that the lesson is over
  function markLesson(i) {
    const items = [...document.querySelectorAll('#class-lesson li')], next = document.getElementById('lesson-next');
    const where = document.getElementById('lesson-where'), over = items.length > 0 && i >= items.length - 1;
    items.forEach((li, k) => li.classList.toggle('lesson-now', k === i));
    if (next) { next.disabled = over; next.textContent = root.LLMText.t(over ? 'room.lesson_over' : 'room.lesson_next'); }
    const title = items[i] ? items[i].querySelector('.lesson-open').textContent : '';
    if (where) {
      where.textContent = !items.length ? '' : i < 0 ? root.LLMText.t('room.lesson_has', { n: items.length })
        : root.LLMText.t(over ? 'room.lesson_at_last' : 'room.lesson_at', { i: i + 1, n: items.length, title });
    }
    return items;
  }
  // presenter view: the join QR, large, in the screen's corner ("QR code"); a click on it folds it again
  document.addEventListener('click', (e) => {
    const q = e.target.closest && e.target.closest('#class-qr-show, .qr-big .class-qr'), card = q && q.closest('.class-card');
    if (card) {
      const big = card.classList.toggle('qr-big');
      card.querySelector('#class-qr-show').textContent = root.LLMText.t(big ? 'room.qr_hide' : 'room.qr_button');
    }
  });

  root.LLMRoomTeacher = { codeChip, forgetLink, linkAsks, setState, kept, keepIt, keepRoom, resume, markLesson };
})(window);

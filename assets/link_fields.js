/* A link's fields on the page (ui/links.py), from the page's head: written in the browser at once, no server waited for.
 *
 *   LLMLinkFields.early(TABLES)        the page is being drawn: each of the link's fields (read from the address, checked
 *                                      against TABLES: the server's own ranges) goes in the moment it exists, before it is
 *                                      painted, as a person's input would (Gradio's state follows)
 *   LLMLinkFields.open(TABLES, values) the page-open event: the fields' values (the order of ui/links.py's FIELDS) with the
 *                                      link's own written in, through Gradio; from now on every field a person touches is noted
 *   bridge "link" {fields: {KEY: V}}   the server's values for the fields (an example's settings), each written only into a
 *                                      field nobody has touched since the page opened
 */
(function (root) {
  'use strict';

  const KEYS = ['prompt', 'mode', 'system', 'temperature', 'top_k', 'top_p', 'min_p', 'repetition_penalty', 'seed', 'max_new'];
  const touched = {}, held = {};
  let tables = null, linkOf = {}, writing = false, opened = false;

  const same = (x, y) => (typeof y === 'number' ? Number(x) === y : String(x ?? '') === String(y ?? ''));
  // a field nobody has touched: no input of a person's seen, and it holds the page's own value (or the link's)
  const untouched = (k, v) => !touched[k] && (!tables || !tables.defaults || !(k in tables.defaults) || same(v, tables.defaults[k])
                                              || (k in linkOf && same(v, linkOf[k])));

  function watchTouches() { // a person's own input (isTrusted): a script's write is not one
    const sel = Object.entries(tables.ids || {}).map(([k, id]) => [k, '#' + id]);
    const note = (e) => {
      if (!e.isTrusted || writing || !e.target || !e.target.closest) return; // (a click of ours may count as trusted)
      for (const [k, s] of sel) if (e.target.closest(s)) touched[k] = true;
    };
    ['input', 'change', 'keydown', 'paste', 'drop'].forEach((type) => document.addEventListener(type, note, true));
  }

  function setTables(t) {
    if (!tables && t) { tables = t; watchTouches(); }
  }

  function linkValues(t) { // the link's fields (by C key), each checked as the server checks it (it warns of the rest)
    const q = new URLSearchParams(root.location.search), got = {};
    for (const name of ['prompt', 'system']) {
      const v = q.get(name);
      if (v !== null && v.length <= t.max_text) got[name] = v;
    }
    const mode = (q.get('mode') || '').trim().toLowerCase();
    if (t.modes && Object.prototype.hasOwnProperty.call(t.modes, mode)) got.mode = t.modes[mode];
    for (const [name, [key, kind, lo, hi]] of Object.entries(t.numbers || {})) {
      const s = q.get(name);
      if (s === null || s.trim() === '') continue;
      const v = Number(s);
      if (!Number.isFinite(v) || (kind === 'int' && !Number.isInteger(v)) || v < lo || v > hi) continue;
      got[key] = v;
    }
    return got;
  }

  function write(k, v) { // true once done (or left alone: a person typed there first)
    const id = (tables.ids || {})[k], root_ = document.getElementById(id);
    if (!root_) return false;
    if (k === 'mode') {
      const radios = Array.from(root_.querySelectorAll('input[type=radio]'));
      const r = radios.find((x) => x.value === v), on = radios.find((x) => x.checked);
      if (!r) return false;
      if (!r.checked && (!on || untouched(k, on.value))) r.click();
      return true;
    }
    const box = root.LLMValues.box(id);
    if (!box) return false;
    if (untouched(k, box.value)) root.LLMValues.write(id, v);
    return true;
  }

  function writeAll(want) { // the fields of `want` that exist now, each once; what is left
    writing = true;
    try {
      for (const k of Object.keys(want)) {
        if (touched[k] || write(k, want[k])) {
          if (!touched[k] && k !== 'mode') hold(k, want[k]);
          delete want[k];
        }
      }
    } finally { writing = false; }
    return want;
  }

  // Gradio may write a field's own value once more after creating it (a slider's number box, a task later): a field
  // written is looked at again before each frame until the page-open event has written the link's values through
  // Gradio (its state holds them then), and written again when it holds the page's default once more
  function hold(k, v) {
    if (!Object.keys(held).length) requestAnimationFrame(look);
    held[k] = [v, Date.now()];
  }

  function look() {
    writing = true;
    try {
      for (const [k, [v, t]] of Object.entries(held)) {
        const box = root.LLMValues.box((tables.ids || {})[k]);
        if (touched[k] || opened || Date.now() - t > 10000) delete held[k];
        else if (box && !same(box.value, v) && tables.defaults && k in tables.defaults && same(box.value, tables.defaults[k])) write(k, v);
      }
    } finally { writing = false; }
    if (Object.keys(held).length) requestAnimationFrame(look);
  }

  function early(t) {
    setTables(t);
    const want = (linkOf = linkValues(t)), t0 = Date.now();
    // a new element is seen before it is painted (an observer's callback runs right after the change)
    const seen = new MutationObserver(() => { if (!Object.keys(writeAll(want)).length || Date.now() - t0 > 60000) seen.disconnect(); });
    seen.observe(document.body, { childList: true, subtree: true });
    if (!Object.keys(writeAll(want)).length) seen.disconnect();
  }

  function open(t, values) {
    setTables(t);
    opened = true;
    linkOf = linkValues(t);
    const out = values.slice();
    for (const [k, v] of Object.entries(linkOf)) { const i = KEYS.indexOf(k); if (i >= 0 && i < out.length && untouched(k, out[i])) out[i] = v; }
    return out;
  }

  function fields(m) { // the server's values: into the fields nobody has touched
    if (!tables || !m || typeof m.fields !== 'object') return;
    writing = true;
    try {
      for (const [k, v] of Object.entries(m.fields)) {
        const box = root.LLMValues.box((tables.ids || {})[k]);
        if (k === 'mode' || (box && untouched(k, box.value))) write(k, v);
      }
    } finally { writing = false; }
  }

  root.LLMLinkFields = { early, open, fields };
  if (root.LLMBridge) root.LLMBridge.on('link', (m) => { if (m.fields && Object.keys(m.fields).length) fields(m); });
})(window);

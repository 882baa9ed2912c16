(text, ...values) => {
  // What a link asks the page to do (ui/links.py sends it as JSON: a constant, or a hidden box's value).
  // With the fields' values after it (prompt, mode, system, temperature, top_k, top_p, seed, max_new: the
  // order of ui/links.py's FIELDS), it returns them, changed as asked, at once (no server is waited for):
  //   {"open": TABLES}             the page is being drawn: the link's own fields (read from the address,
  //                                checked against TABLES, the same ranges the server checks) go in now, and
  //                                from now on the page notes every field a person touches
  //   {"fields": {KEY: VALUE}}     the server's values for the fields (an example's settings), each written
  //                                only into a field nobody has touched since the page opened
  //   anything else                the values as they are
  // Without values it returns nothing, and acts on its own time:
  //   {"copy": URL}                put URL on the clipboard (the link box shows it too, for where that is
  //                                denied); the button says "Copied" when it did
  //   {"copy": URL, "parent": {"origin": O, "queryString": Q}}
  //                                inside a Hugging Face Space's frame: also ask the Space's page (at O) to
  //                                show Q in its address bar, by the message Spaces document for it
  //   {"run": true, "step": N, "branch": [[S, R], ...]}
  //                                click Generate, as a person would; then force the candidate of rank R at
  //                                step S and generate on (each pair in turn); then move the step slider to N
  //   {"step": N}                  move the step slider to N on the trace on screen
  let a;
  try { a = JSON.parse(text || '{}'); } catch (err) { a = {}; }
  if (!a || typeof a !== 'object') a = {};
  const KEYS = ['prompt', 'mode', 'system', 'temperature', 'top_k', 'top_p', 'seed', 'max_new'];
  const touched = (window.__llmTouched = window.__llmTouched || {});
  const tables = a.open || a.early || window.__llmTables; // (kept for the server's later values)
  if (a.open || a.early) window.__llmTables = tables;
  if (tables && !window.__llmTouchWatch) { // a person's own input (isTrusted): a script's write is not one
    window.__llmTouchWatch = true;
    const sel = Object.entries(tables.ids || {}).map(([k, id]) => [k, '#' + id]);
    const note = (e) => {
      if (!e.isTrusted || window.__llmWriting || !e.target || !e.target.closest) return; // (a click of ours may count as trusted)
      for (const [k, s] of sel) if (e.target.closest(s)) touched[k] = true;
    };
    ['input', 'change', 'keydown', 'paste', 'drop'].forEach((type) => document.addEventListener(type, note, true));
  }
  const same = (x, y) => (typeof y === 'number' ? Number(x) === y : String(x ?? '') === String(y ?? ''));
  // a field nobody has touched: no input of a person's seen, and it holds the page's own value (or the link's)
  const untouched = (k, v) => !touched[k] && (!tables || !tables.defaults || !(k in tables.defaults) || same(v, tables.defaults[k])
                                              || (k in linkOf && same(v, linkOf[k])));
  let linkOf = {};
  const linkValues = (t) => { // the link's fields (by C key), each checked as the server checks it (it warns of the rest)
    const q = new URLSearchParams(location.search), got = {};
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
  };
  if (a.early) {
    // The page is being drawn: each field gets the link's value the moment it exists, before Gradio's own
    // load event (which comes once every component is there, seconds later on a busy machine) writes them
    // again through Gradio (the "open" action). As a person's input would, so Gradio's state follows.
    const want = (linkOf = linkValues(a.early)), ids = a.early.ids || {}, t0 = Date.now();
    const write = (k, v) => { // true once done (or left alone: a person typed there first)
      const root = document.getElementById(ids[k]);
      if (!root) return false;
      if (k === 'mode') {
        const radios = Array.from(root.querySelectorAll('input[type=radio]'));
        const r = radios.find((x) => x.value === v), on = radios.find((x) => x.checked);
        if (!r) return false;
        if (!r.checked && (!on || untouched(k, on.value))) r.click();
        return true;
      }
      const box = root.querySelector('textarea, input[type=number], input[type=text]');
      if (!box) return false;
      if (!untouched(k, box.value)) return true;
      const proto = box.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
      Object.getOwnPropertyDescriptor(proto, 'value').set.call(box, String(v));
      box.dispatchEvent(new Event('input', { bubbles: true }));
      const range = root.querySelector('input[type=range]');
      if (range) { range.value = String(v); range.dispatchEvent(new Event('input', { bubbles: true })); }
      return true;
    };
    // a new element is seen before it is painted (an observer's callback runs right after the change)
    const seen = new MutationObserver(() => tick());
    // Gradio may write a field's own value once more after creating it (a slider's number box, a task later): a
    // field written is looked at again before each frame, until the page-open event has written the link's values
    // through Gradio (its state holds them then), and written again when it holds the page's default once more
    const held = {}, look = () => {
      window.__llmWriting = true;
      try {
        for (const [k, [v, t]] of Object.entries(held)) {
          const box = document.getElementById(ids[k])?.querySelector('textarea, input[type=number], input[type=text]');
          if (touched[k] || window.__llmOpened || Date.now() - t > 10000) delete held[k];
          else if (box && !same(box.value, v) && tables.defaults && k in tables.defaults && same(box.value, tables.defaults[k])) write(k, v);
        }
      } finally { window.__llmWriting = false; }
      if (Object.keys(held).length) requestAnimationFrame(look);
    };
    const tick = () => {
      window.__llmWriting = true;
      try {
        for (const k of Object.keys(want)) {
          if (touched[k] || write(k, want[k])) {
            if (!touched[k] && k !== 'mode') { if (!Object.keys(held).length) requestAnimationFrame(look); held[k] = [want[k], Date.now()]; }
            delete want[k];
          }
        }
      } finally { window.__llmWriting = false; }
      if (!Object.keys(want).length || Date.now() - t0 > 60000) seen.disconnect();
    };
    seen.observe(document.body, { childList: true, subtree: true });
    tick();
    return;
  }
  if (values.length) {
    const out = values.slice();
    if (a.open) {
      window.__llmOpened = true;
      linkOf = linkValues(a.open);
      for (const [k, v] of Object.entries(linkOf)) { const i = KEYS.indexOf(k); if (i >= 0 && i < out.length && untouched(k, out[i])) out[i] = v; }
    } else if (a.fields && typeof a.fields === 'object') {
      for (const [k, v] of Object.entries(a.fields)) {
        const i = KEYS.indexOf(k);
        if (i >= 0 && i < out.length && untouched(k, out[i])) out[i] = v;
      }
    }
    return out;
  }
  const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
  const until = async (cond, ms) => {
    const t0 = Date.now();
    while (!cond()) { if (Date.now() - t0 > ms) return false; await sleep(100); }
    return true;
  };
  const app = () => window.LLMApp;
  const key = () => (app() && app().mounted() ? app().state.key : null);
  const loading = () => /still loading/i.test(Array.from(document.querySelectorAll('.toast-body')).map((t) => t.innerText).join(' '));
  const modelReady = () => { const t = document.querySelector('#model-info')?.innerText || ''; return t.startsWith('Model:') || t.includes('failed'); };
  const setStep = (n) => { // as a drag would (the step viewer in assets/app_viewer.js draws it)
    const r = document.querySelector('#step-slider input[type=range]');
    if (!r) return;
    r.value = Math.max(0, Math.min(n, Number(r.max)));
    r.dispatchEvent(new Event('input', { bubbles: true }));
    r.dispatchEvent(new Event('change', { bubbles: true }));
  };
  const say = (btn, words) => { // the button's own words for a moment ("Copied"), then its label again
    if (!btn) return;
    const walk = document.createTreeWalker(btn, NodeFilter.SHOW_TEXT);
    let node = null;
    while (walk.nextNode()) if (walk.currentNode.nodeValue.trim()) node = walk.currentNode;
    if (!node) return;
    if (btn.__label === undefined) btn.__label = node.nodeValue;
    node.nodeValue = words;
    clearTimeout(btn.__sayTimer);
    btn.__sayTimer = setTimeout(() => { node.nodeValue = btn.__label; }, 2500);
  };
  // an action is taken once: the page-open chain reads the hidden box at its end, and a "Copy link" clicked
  // meanwhile wrote its own action there (copied, and told to the Space's page, twice)
  const acted = (window.__llmActed = window.__llmActed || new Set());
  if (a.n !== undefined) { if (acted.has(a.n)) return; acted.add(a.n); }
  (async () => {
    if (a.copy) {
      const box = document.querySelector('#link-box input, #link-box textarea');
      const btn = document.getElementById('copy-link');
      const p = a.parent;
      // the page's own ways of showing it go with the link: the presenter view, Guess first
      const own = [['view', 'present', 'present'], ['guess', '1', 'guessing']].filter(([, , c]) => document.body.classList.contains(c));
      const withOwn = (q) => { if (!own.length) return q; const u = new URLSearchParams(q); own.forEach(([k, v]) => u.set(k, v)); return u.toString(); };
      const url = new URL(a.copy, location.href);
      if (own.length) { url.search = withOwn(url.search); if (box) box.value = url.toString(); }
      if (p && window.parent !== window) {
        // (a page of another origin gets nothing: the browser checks `origin`)
        try { window.parent.postMessage({ queryString: withOwn(p.queryString) }, p.origin); } catch (err) { /* a bad origin: the link still copies */ }
      }
      let copied = false;
      try { await navigator.clipboard.writeText(own.length ? url.toString() : a.copy); copied = true; } catch (err) { /* denied: the box shows the link */ }
      say(btn, copied ? '✓ Copied' : 'Copy it from the box');
      if (box) { box.focus(); box.select(); }
      return;
    }
    const branches = Array.isArray(a.branch) ? a.branch : [];
    if (a.run) {
      await until(() => key() !== null, 15000); // the trace on screen first, so its bundle is not taken for this run's
      const before = key();
      document.getElementById('generate')?.click();
      // the model still loading: the app warns; this run goes once the model is there, once
      const done = () => key() !== null && key() !== before;
      await until(() => done() || loading(), 600000);
      if (!done() && loading()) {
        await until(modelReady, 600000);
        document.getElementById('generate')?.click();
      }
      if (!(await until(done, 600000))) return;
      for (const [s, r] of branches) { // as a click on the candidate's bar at step s would
        setStep(s);
        await sleep(400);
        const box = document.querySelector('#branch-request textarea, #branch-request input');
        const go = document.getElementById('branch-go');
        if (!box || !go) return;
        box.value = (Number(r) - 1) + '|' + Date.now();
        box.dispatchEvent(new Event('input', { bubbles: true }));
        await sleep(100);
        const was = key();
        go.click();
        if (!(await until(() => key() !== null && key() !== was, 600000))) return;
      }
      if (a.step === null || a.step === undefined) return;
    } else if (a.step === null || a.step === undefined) {
      return;
    } else if (!(await until(() => key() !== null, 60000))) return;
    await sleep(50);
    setStep(a.step);
  })();
}

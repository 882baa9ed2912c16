/* What a link asks the page to do, and "Copy link" (ui/links.py), from the page's head: the bridge's "link" messages.
 *
 *   {"copy": URL}                    put URL on the clipboard (the link box shows it too, for where that is denied);
 *                                    the button says "Copied" when it did
 *   {"copy": URL, "parent": {"origin": O, "queryString": Q}}
 *                                    inside a Hugging Face Space's frame: also ask the Space's page (at O) to show Q in
 *                                    its address bar, by the message Spaces document for it
 *   {"go": URL}                      the page again at URL (the language picker: assets/language.js), with the page's own
 *                                    ways of showing it (the presenter view, Guess first)
 *   {"run": true, "step": N, "branch": [[S, R], ...]}
 *                                    click Generate, as a person would; then force the candidate of rank R at step S and
 *                                    generate on (each pair in turn); then move the step slider to N
 *   {"step": N}                      move the step slider to N on the trace on screen
 */
(function (root) {
  'use strict';

  const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
  const until = async (cond, ms) => {
    const t0 = Date.now();
    while (!cond()) { if (Date.now() - t0 > ms) return false; await sleep(100); }
    return true;
  };
  const key = () => (root.LLMApp && root.LLMApp.mounted() ? root.LLMApp.state.key : null);
  // the model line says the model is there ("Model: …", model.lead_live) or failed ("Model failed to load: …", model.failed's
  // words before its {error}), in the page's language
  const modelReady = () => {
    const line = (document.querySelector('#model-info')?.innerText || '').trim(), T = root.LLMText;
    const failed = T.t('model.failed', { error: '\u0000' }).split('\u0000')[0].trim();
    return line.startsWith(T.t('model.lead_live')) || (failed !== '' && line.includes(failed));
  };

  function say(btn, words) { // the button's own words for a moment ("Copied"), then its label again
    if (!btn) return;
    const walk = document.createTreeWalker(btn, NodeFilter.SHOW_TEXT);
    let node = null;
    while (walk.nextNode()) if (walk.currentNode.nodeValue.trim()) node = walk.currentNode;
    if (!node) return;
    if (btn.__label === undefined) btn.__label = node.nodeValue;
    node.nodeValue = words;
    clearTimeout(btn.__sayTimer);
    btn.__sayTimer = setTimeout(() => { node.nodeValue = btn.__label; }, 2500);
  }

  // the page's own ways of showing it go with a link: the presenter view, Guess first
  const ownFields = () => [['view', 'present', 'present'], ['guess', '1', 'guessing']].filter(([, , c]) => document.body.classList.contains(c));
  const withOwnFields = (q) => { const u = new URLSearchParams(q); ownFields().forEach(([k, v]) => u.set(k, v)); return u.toString(); };

  function go(a) {
    const url = new URL(a.go, root.location.href);
    url.search = withOwnFields(url.search);
    root.location.assign(url.toString());
  }

  // the sliders moved since the run are a what-if: the link writes the text as it was made, and says so under the link
  function movedNote(box, on) {
    const host = document.getElementById('link-box');
    if (!host) return;
    let n = document.getElementById('link-moved');
    if (!n) { n = document.createElement('p'); n.id = 'link-moved'; n.className = 'link-moved'; n.setAttribute('role', 'status'); host.after(n); }
    n.textContent = on ? root.LLMText.t('links.sliders_left_out') : '';
    n.hidden = !on;
  }

  async function copy(a) {
    const box = root.LLMValues.box('link-box'), btn = document.getElementById('copy-link'), p = a.parent;
    const own = ownFields(), withOwn = (q) => (own.length ? withOwnFields(q) : q);
    const url = new URL(a.copy, root.location.href);
    if (own.length) { url.search = withOwn(url.search); if (box) box.value = url.toString(); }
    if (p && root.parent !== root) {
      // (a page of another origin gets nothing: the browser checks `origin`)
      try { root.parent.postMessage({ queryString: withOwn(p.queryString) }, p.origin); } catch (err) { /* a bad origin: the link still copies */ }
    }
    let copied = false;
    try { await navigator.clipboard.writeText(own.length ? url.toString() : a.copy); copied = true; } catch (err) { /* denied: the box shows the link */ }
    say(btn, root.LLMText.t(copied ? 'button.copy_link_done' : 'button.copy_link_failed'));
    movedNote(box, !!a.moved);
    if (box) { box.focus(); box.select(); }
  }

  async function generate() { // Generate clicked as a person would; true once its trace is on screen
    await until(() => key() !== null, 15000); // the trace on screen first, so its bundle is not taken for this run's
    const before = key(), refused = root.LLMBridge.last('refused'), was = refused ? refused.n : null;
    // (a run refused while the model loads: the server says so, the bridge's "refused", ui/generation.py)
    const loading = () => { const m = root.LLMBridge.last('refused'); return !!(m && m.n !== was && m.loading); };
    document.getElementById('generate')?.click();
    // the model still loading: the app warns; this run goes once the model is there, once
    const done = () => key() !== null && key() !== before;
    await until(() => done() || loading(), 600000);
    if (!done() && loading()) {
      await until(modelReady, 600000);
      document.getElementById('generate')?.click();
    }
    return until(done, 600000);
  }

  async function branches(pairs) { // as a click on the candidate's bar at step s would; true once each is on screen
    for (const [s, r] of pairs) {
      root.LLMValues.setStep(s);
      await sleep(400);
      const was = key();
      root.LLMBridge.send('branch', { rank: Number(r) - 1 });
      if (!(await until(() => key() !== null && key() !== was, 600000))) return false;
    }
    return true;
  }

  async function act(a) {
    if (a.go) return go(a);
    if (a.copy) return copy(a);
    if (a.run) {
      if (!(await generate()) || !(await branches(Array.isArray(a.branch) ? a.branch : []))) return;
    } else if (a.step === null || a.step === undefined || !(await until(() => key() !== null, 60000))) return;
    if (a.step === null || a.step === undefined) return;
    await sleep(50);
    root.LLMValues.setStep(a.step);
  }

  if (root.LLMBridge) root.LLMBridge.on('link', act);
})(window);

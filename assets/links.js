(text) => {
  // What a link asks the page to do once it has opened (ui/links.py sends it as JSON in a hidden box):
  //   {"copy": URL}                put URL on the clipboard (the link box shows it too, for where that is denied)
  //   {"copy": URL, "parent": {"origin": O, "queryString": Q}}
  //                                inside a Hugging Face Space's frame: also ask the Space's page (at O) to
  //                                show Q in its address bar, by the message Spaces document for it
  //   {"run": true, "step": N}     click Generate, as a person would; then move the step slider to N
  //   {"step": N}                  move the step slider to N on the trace on screen
  // It returns at once; the waiting happens on its own (a generation can take a while).
  let a;
  try { a = JSON.parse(text || '{}'); } catch (err) { return; }
  if (!a || typeof a !== 'object') return;
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
  };
  (async () => {
    if (a.copy) {
      const box = document.querySelector('#link-box input, #link-box textarea');
      const p = a.parent;
      if (p && window.parent !== window) {
        // (a page of another origin gets nothing: the browser checks `origin`)
        try { window.parent.postMessage({ queryString: p.queryString }, p.origin); } catch (err) { /* a bad origin: the link still copies */ }
      }
      try { await navigator.clipboard.writeText(a.copy); } catch (err) { /* denied: the box shows the link */ }
      if (box) { box.focus(); box.select(); }
      return;
    }
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
      if (a.step === null || a.step === undefined || !(await until(done, 600000))) return;
    } else if (a.step === null || a.step === undefined) {
      return;
    } else if (!(await until(() => key() !== null, 60000))) return;
    await sleep(50);
    setStep(a.step);
  })();
}

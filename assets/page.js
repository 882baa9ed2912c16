() => {
  // A click (a tap) on a candidate bar of the next-token distribution offers a branch there, and asks first
  // (a branch runs the model on): yes puts the bar's rank into a hidden box, then a hidden button sends it.
  const branch = (rank) => {
    const box = document.querySelector('#branch-request textarea, #branch-request input');
    const go = document.querySelector('#branch-go');
    if (!box || !go) return;
    box.value = rank + '|' + Date.now();
    box.dispatchEvent(new Event('input', { bubbles: true }));
    setTimeout(() => go.click(), 60);
  };
  const ask = (rank, label, own) => {
    let q = document.getElementById('branch-confirm');
    if (!q) {
      q = document.createElement('div');
      q.id = 'branch-confirm';
      q.setAttribute('role', 'dialog');
      q.innerHTML = '<p></p><button id="branch-confirm-yes" class="lg primary">Branch here</button>'
        + '<button id="branch-confirm-no" class="lg secondary">Cancel</button>';
      document.body.appendChild(q);
      q.querySelector('#branch-confirm-no').addEventListener('click', () => { q.hidden = true; });
      q.querySelector('#branch-confirm-yes').addEventListener('click', () => { q.hidden = true; branch(q.dataset.rank); });
    }
    const step = (document.querySelector('#step-slider input[type=number]') || {}).value;
    q.dataset.rank = rank;
    q.querySelector('p').textContent = own
      ? `${label} is the model's own pick at step ${step}. Keep it and let the model write on from there again?`
      : `Make the model take ${label} at step ${step} instead of its own pick, and write on from there?`;
    q.hidden = false;
    q.querySelector('#branch-confirm-yes').focus();
  };
  // The row under a click or tap, the whole width of the chart (its label too): a 1% bar is a pixel wide on a phone.
  const rowAt = (plot, ev) => {
    const ya = plot._fullLayout && plot._fullLayout.yaxis, labels = plot.data && plot.data[0] && plot.data[0].y;
    if (!ya || !Array.isArray(labels) || typeof ya.p2l !== 'function') return null;
    const top = plot.getBoundingClientRect().top + ya._offset, y = ev.clientY - top;
    if (y < 0 || y > ya._length) return null;
    const i = Math.round(ya.p2l(y));
    return i >= 0 && i < labels.length - 1 ? { i, label: String(labels[i]) } : null; // (the last row: the rest of the vocabulary)
  };
  // (one listener on the page: the chart is drawn anew by Gradio and by the viewer, never unhooked nor hooked late)
  document.addEventListener('click', (ev) => {
    const plot = ev.target.closest && ev.target.closest('#dist-plot .js-plotly-plot');
    const row = plot && rowAt(plot, ev);
    if (!row) return;
    const own = /◀ (sampled|forced)/.test(row.label);
    const label = row.label.replace(/<[^>]*>/g, '').replace(/\s*◀.*$/, '').replace(/^#\d+\s*/, '');
    ask(row.i, `“${label}” (rank ${row.i + 1})`, own);
  });
  // A tap (or click) on a piece of the text, a token chip or a glossary word shows what its hover shows: a phone has no hover.
  document.addEventListener('click', (e) => {
    let tip = document.getElementById('piece-tip');
    const el = e.target.closest && e.target.closest('#output [data-step][title], #tokens-html .tok[title], abbr.term[title]');
    if (!el) { if (tip) tip.hidden = true; return; }
    if (!tip) {
      tip = document.createElement('div');
      tip.id = 'piece-tip';
      tip.setAttribute('role', 'tooltip');
      document.body.appendChild(tip);
    }
    tip.textContent = el.getAttribute('title');
    const r = el.getBoundingClientRect();
    tip.style.left = Math.max(4, Math.min(r.left, innerWidth - 324)) + 'px';
    tip.style.top = (r.bottom + 6) + 'px';
    tip.hidden = false;
  });
  document.addEventListener('scroll', () => { const tip = document.getElementById('piece-tip'); if (tip) tip.hidden = true; }, { capture: true, passive: true });
  // The presenter view (?view=present, or the button): the lesson alone, large (assets/style.css; the
  // figures are enlarged by assets/viewer_plot.js).
  const present = (on) => {
    document.body.classList.toggle('present', on);
    const b = document.getElementById('present-toggle');
    if (b) b.textContent = on ? '✕ Leave presenter view' : '📽 Presenter view';
    const url = new URL(location.href);
    if (on) url.searchParams.set('view', 'present'); else url.searchParams.delete('view');
    history.replaceState(history.state, '', url);
  };
  if (new URLSearchParams(location.search).get('view') === 'present') present(true);
  document.addEventListener('click', (e) => {
    if (e.target.closest && e.target.closest('#present-toggle')) present(!document.body.classList.contains('present'));
  }, true);
  // Figures no event redraws (ui/layout.py's static figures: the cost curve of speculative decoding), drawn once
  // with the viewer's Plotly.js (assets/viewer_plot.js) when they first scroll into view: a gr.Plot would make
  // Gradio load its own copy as the page opens, and drawn at once they would hold back the first screen's.
  const drawn = new IntersectionObserver((entries) => entries.forEach((e) => {
    if (!e.isIntersecting || !window.LLMViewer || !window.LLMViewer.plotly()) return; // (looked at again below)
    drawn.unobserve(e.target);
    window.LLMViewer.react(e.target, JSON.parse(e.target.dataset.figure));
  }));
  setInterval(() => document.querySelectorAll('.static-figure:not(.js-plotly-plot)').forEach((el) => { drawn.unobserve(el); drawn.observe(el); }), 1000);
  // The text box keeps its end (the step on screen, the newest token) in view when its text outgrows it (style.css).
  // Only the box is watched: watching the whole page, every node Plotly touched read the box's height, a layout
  // of the page forced again and again at each step move (12 ms of a 1440x1800 move).
  const keepEnd = new MutationObserver(() => {
    const o = document.getElementById('output');
    if (o && o.scrollHeight > o.clientHeight + 2) o.scrollTop = o.scrollHeight;
  });
  let endOf = null;
  setInterval(() => {
    const o = document.getElementById('output');
    if (o && o !== endOf) { keepEnd.disconnect(); keepEnd.observe((endOf = o), { subtree: true, childList: true, attributes: true, attributeFilter: ['hidden'] }); }
  }, 250);
  // The prompt box takes the focus once, when the page opens. (Gradio's own autofocus focuses it
  // again whenever the box redraws, which could pull keystrokes meant for another field into it.)
  const focusPrompt = (tries) => {
    const box = document.querySelector('#prompt textarea');
    if (box) { if (!document.activeElement || document.activeElement === document.body) box.focus(); }
    else if (tries > 0) setTimeout(() => focusPrompt(tries - 1), 200);
  };
  focusPrompt(50);
}

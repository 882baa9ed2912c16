/* A click (a tap) on a candidate bar of the next-token distribution offers a branch there, and asks first (a branch runs
 * the model on): yes sends the bar's rank to the server (the bridge's "branch": ui/bridge.py). From the page's head.
 */
(function (root) {
  'use strict';

  const branch = (rank) => root.LLMBridge.send('branch', { rank: Number(rank) });

  function dialog() {
    let q = document.getElementById('branch-confirm');
    if (q) return q;
    q = document.createElement('div');
    q.id = 'branch-confirm';
    q.setAttribute('role', 'dialog');
    q.innerHTML = '<p></p><button id="branch-confirm-yes" class="lg primary"></button><button id="branch-confirm-no" class="lg secondary"></button>';
    q.querySelector('#branch-confirm-yes').textContent = root.LLMText.t('button.branch_yes');
    q.querySelector('#branch-confirm-no').textContent = root.LLMText.t('button.branch_no');
    document.body.appendChild(q);
    q.querySelector('#branch-confirm-no').addEventListener('click', () => { q.hidden = true; });
    q.querySelector('#branch-confirm-yes').addEventListener('click', () => { q.hidden = true; branch(q.dataset.rank); });
    return q;
  }

  function ask(rank, label, own) {
    const q = dialog(), step = root.LLMValues.step();
    q.dataset.rank = rank;
    q.querySelector('p').textContent = root.LLMText.t(own ? 'branch.own' : 'branch.other', { token: label, step });
    q.hidden = false;
    q.querySelector('#branch-confirm-yes').focus();
  }

  // The row under a click or tap, the whole width of the chart (its label too): a 1% bar is a pixel wide on a phone.
  function rowAt(plot, ev) {
    const ya = plot._fullLayout && plot._fullLayout.yaxis, labels = plot.data && plot.data[0] && plot.data[0].y;
    if (!ya || !Array.isArray(labels) || typeof ya.p2l !== 'function') return null;
    const top = plot.getBoundingClientRect().top + ya._offset, y = ev.clientY - top;
    if (y < 0 || y > ya._length) return null;
    const i = Math.round(ya.p2l(y));
    return i >= 0 && i < labels.length - 1 ? { i, label: String(labels[i]) } : null; // (the last row: the rest of the vocabulary)
  }

  function clicked(ev) {
    const plot = ev.target.closest && ev.target.closest('#dist-plot .js-plotly-plot');
    const row = plot && rowAt(plot, ev);
    if (!row) return;
    const own = row.label.includes('◀'); // the step's own token: "◀ sampled" or "◀ forced" (dist.mark_*), in any language
    const label = row.label.replace(/<[^>]*>/g, '').replace(/\s*◀.*$/, '').replace(/^#\d+\s*/, '');
    ask(row.i, root.LLMText.t('branch.candidate', { token: root.LLMText.t('common.quote', { text: label }), rank: row.i + 1 }), own);
  }

  // (one listener on the page: the chart is drawn anew by Gradio and by the viewer, never unhooked nor hooked late)
  document.addEventListener('click', clicked);
})(window);

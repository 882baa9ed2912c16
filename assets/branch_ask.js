/* A click (a tap) on a candidate bar of the next-token distribution offers a branch there, and asks first (a branch runs
 * the model on): yes sends the bar's rank to the server (the bridge's "branch": ui/bridge.py). The keyboard's way to it
 * (Plotly's bars take no focus): a button over the chart, seen when it has the focus, lists the candidates as
 * buttons; one chosen asks as its bar's click does. From the page's head.
 */
(function (root) {
  'use strict';

  const branch = (rank) => root.LLMBridge.send('branch', { rank: Number(rank) });

  // The focus goes back where it was when a dialog opened (the list's button, or the control that had it when a bar
  // was clicked): a closed dialog's button is hidden, and a focus left there falls to the page's body.
  let opener = null;
  function remember() {
    const a = document.activeElement;
    if (!a || !a.closest('#branch-choose, #branch-confirm')) opener = a && a !== document.body ? a : null;
  }
  function close(box) {
    const inside = box.contains(document.activeElement);
    box.hidden = true;
    if (opener && opener.isConnected && opener.checkVisibility()) opener.focus();
    else if (inside) document.activeElement.blur();
  }

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
    q.querySelector('#branch-confirm-no').addEventListener('click', () => close(q));
    q.querySelector('#branch-confirm-yes').addEventListener('click', () => { close(q); branch(q.dataset.rank); });
    q.addEventListener('keydown', (e) => { if (e.key === 'Escape') close(q); });
    return q;
  }

  function ask(rank, label, own) {
    remember();
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

  // a candidate's row `i` of the chart, its bar's label as drawn: asked about as a branch
  function offer(i, drawn) {
    const own = drawn.includes('◀'); // the step's own token: "◀ sampled" or "◀ forced" (dist.mark_*), in any language
    const label = drawn.replace(/<[^>]*>/g, '').replace(/\s*◀.*$/, '').replace(/^#\d+\s*/, '');
    ask(i, root.LLMText.t('branch.candidate', { token: root.LLMText.t('common.quote', { text: label }), rank: i + 1 }), own);
  }

  function clicked(ev) {
    const plot = ev.target.closest && ev.target.closest('#dist-plot .js-plotly-plot');
    const row = plot && rowAt(plot, ev);
    if (row) offer(row.i, row.label);
  }

  // The keyboard's list of the chart's candidates (the rest of the vocabulary left out), each a button with its number
  function pickList(plot) {
    const labels = plot.data[0].y, finals = (plot.data[1] && plot.data[1].text) || [], exact = (plot.data[1] && plot.data[1].hovertext) || [];
    const plain = (s) => root.LLMFigureText ? root.LLMFigureText.plain(s) : String(s).replace(/<[^>]*>/g, '');
    let box = document.getElementById('branch-choose');
    if (!box) {
      box = document.createElement('div');
      box.id = 'branch-choose';
      box.setAttribute('role', 'dialog');
      box.addEventListener('keydown', (e) => { if (e.key === 'Escape') close(box); });
      document.body.appendChild(box);
    }
    remember();
    box.replaceChildren();
    const head = document.createElement('p');
    head.id = 'branch-choose-head';
    head.textContent = root.LLMText.t('branch.pick', { step: root.LLMValues.step() });
    box.setAttribute('aria-labelledby', head.id);
    box.appendChild(head);
    labels.slice(0, -1).forEach((lab, i) => {
      const b = document.createElement('button');
      b.type = 'button';
      const p = finals[i] || exact[i]; // (a bar too short for its number: its hover's)
      b.textContent = plain(lab) + (p ? ` · ${plain(p)}` : '');
      b.addEventListener('click', () => { box.hidden = true; offer(i, String(lab)); });
      box.appendChild(b);
    });
    const no = document.createElement('button');
    no.type = 'button';
    no.textContent = root.LLMText.t('button.branch_no');
    no.addEventListener('click', () => close(box));
    box.appendChild(no);
    box.hidden = false;
    box.querySelector('button').focus();
  }

  // the button that opens the list, first in the chart's place (once the chart is on the page)
  function keys() {
    const host = document.getElementById('dist-plot');
    if (!host || document.getElementById('branch-keys')) return;
    const b = document.createElement('button');
    b.id = 'branch-keys';
    b.type = 'button';
    b.className = 'branch-keys';
    b.textContent = root.LLMText.t('branch.keyboard');
    b.addEventListener('click', () => { // (not while Guess first hides the step's answer: the list is the distribution)
      const plot = host.querySelector('.js-plotly-plot');
      if (plot && plot.data && !document.body.classList.contains('guess-hidden')) pickList(plot);
    });
    host.before(b); // (beside the chart, not in it: the viewer hides whatever else its block holds)
  }
  new MutationObserver(keys).observe(document.documentElement, { subtree: true, childList: true });

  // (one listener on the page: the chart is drawn anew by Gradio and by the viewer, never unhooked nor hooked late)
  document.addEventListener('click', clicked);
})(window);

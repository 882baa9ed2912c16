() => {
  // A click on a candidate bar of the next-token distribution asks the app to branch there:
  // the bar's rank goes into a hidden box, then a hidden button sends it.
  const hook = () => {
    const plot = document.querySelector('#dist-plot .js-plotly-plot');
    if (!plot || plot.__branchHooked || typeof plot.on !== 'function') return;
    plot.__branchHooked = true;
    plot.on('plotly_click', (ev) => {
      const pt = ev && ev.points && ev.points[0];
      const box = document.querySelector('#branch-request textarea, #branch-request input');
      const go = document.querySelector('#branch-go');
      if (!pt || !box || !go) return;
      box.value = pt.pointNumber + '|' + Date.now();
      box.dispatchEvent(new Event('input', { bubbles: true }));
      setTimeout(() => go.click(), 60);
    });
  };
  setInterval(hook, 700);
  // The prompt box takes the focus once, when the page opens. (Gradio's own autofocus focuses it
  // again whenever the box redraws, which could pull keystrokes meant for another field into it.)
  const focusPrompt = (tries) => {
    const box = document.querySelector('#prompt textarea');
    if (box) { if (!document.activeElement || document.activeElement === document.body) box.focus(); }
    else if (tries > 0) setTimeout(() => focusPrompt(tries - 1), 200);
  };
  focusPrompt(50);
}

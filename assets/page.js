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
}

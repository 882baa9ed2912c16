/* Gradio's status trackers at a tenth of a second: the first script of the page, before Gradio's own (ui/early_head.py).
 *
 * A Gradio status tracker counts the seconds an event has been pending, shown to a tenth ("1.3s"), in a loop of
 * animation frames: 60 a second while its event is pending. One such loop never ends (gradio 6.31): the tracker of the
 * page's own loading is removed while still pending, and its loop goes on for as long as the page stays open, asking
 * the browser for a frame 60 times a second on a page at rest (5% of a core on a 2-core laptop at rest, the page's
 * tasks a third of that; a phone's CPU never sleeps). A tracker's frames come every 100 ms instead: the tenths it
 * shows, and no frames for the browser to make. Every other caller gets the browser's own requestAnimationFrame.
 * tests/browser/test_page_open.py counts a resting page's frames; tests/unit/test_early_head.py checks that Gradio's
 * tracker still loops where this looks for it.
 */
(function (root) {
  'use strict';

  const TENTH_MS = 100;
  const raf = root.requestAnimationFrame, caf = root.cancelAnimationFrame;
  if (!raf || root.LLMStatusFrames) return;

  root.requestAnimationFrame = function (fn) {
    // who asked: the stack's third line (the error's, this function's, then the caller's)
    const caller = (new Error().stack || '').split('\n', 3)[2] || '';
    if (!caller.includes('/statustracker-')) return raf.call(root, fn);
    return -setTimeout(() => fn(performance.now()), TENTH_MS); // (a negative id: cancelAnimationFrame knows it is a timeout)
  };
  root.cancelAnimationFrame = function (id) {
    if (id < 0) clearTimeout(-id); else caf.call(root, id);
  };
  root.LLMStatusFrames = { TENTH_MS };
})(window);

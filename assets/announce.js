/* The generated text read aloud as it streams, by sentence: a screen reader's polite live region (#text-announce, seen
 * by no one) gets each new sentence of the text on screen once it is complete, and the rest once the text has stopped
 * growing for a moment; not one announcement per token. Only what a sighted student sees is read: a later step's
 * hidden text, and the step's token while Guess first hides it, are not (they are not displayed). A new text is read
 * from where it differs from the one read before; a step back reads nothing, the steps after it are read again.
 * Only text that has stayed on screen for a second is read.
 * A page of a class reads nothing, ever: a student's (joining a room or in one), the teacher's while a class runs, and
 * any page while Guess first is on. There a step's text is the answer a guess is for, and a class's page draws a new
 * text whole before it hides what its step must not show (the lesson's leak tests found the answer in this region
 * when it read such pages); the region is emptied as such a page begins.
 * The guess's verdict (#guess-result) is a polite live region of its own (assets/guess.js): said once, when written.
 * Loaded with the viewer's scripts (the app's and the offline page's: viz/viewer/page.py VIEWER_SCRIPTS).
 */
(function (root) {
  'use strict';

  const doc = root.document;
  if (!doc || typeof MutationObserver === 'undefined') return;
  const SENTENCE_END = /[.!?…。！？\n]/g;
  const QUIET_MS = 1500; // the text has stopped growing: its unfinished sentence is read too
  const SETTLE_MS = 1000; // what has been on screen this long (and is still) may be read
  const CALM_MS = 3000; // a page hushed this long ago: may read again (from what it shows then)
  let said = null, region = null, soon = null, quiet = null, seen = [], hushedAt = -Infinity;

  // the text on screen: the steps' spans displayed (not hidden, not display:none, not invisible, not transparent)
  function shown() {
    let s = '';
    for (const el of doc.querySelectorAll('#output [data-step]')) {
      if (el.hidden || !el.getClientRects().length) continue;
      // (hidden by its own or an ancestor's visibility or opacity counts: a class's page hides a step's token so)
      if (el.checkVisibility && !el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) continue;
      s += el.textContent;
    }
    return s;
  }

  function say(words) {
    if (!region) {
      region = doc.createElement('div');
      region.id = 'text-announce';
      region.className = 'sr-only';
      region.setAttribute('aria-live', 'polite');
      doc.body.appendChild(region);
    }
    region.textContent = words;
  }

  function common(a, b) {
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    return a.slice(0, i);
  }

  // the part of `text` that was on screen SETTLE_MS ago too (null: not watched that long yet; asked again then)
  function settled(text, all) {
    const now = Date.now();
    seen.push([now, text]);
    let old = null;
    for (const [at, s] of seen) if (at <= now - SETTLE_MS) old = s;
    seen = seen.filter(([at], i) => at > now - 5000 || i === seen.length - 1);
    if (old === null) { setTimeout(() => check(all), SETTLE_MS); return null; }
    return common(old, text);
  }

  // `all`: the unfinished sentence too; else up to the last sentence's end
  // a page of a class, or one guessing: nothing is read there (above)
  function hush() {
    const h = doc.documentElement, b = doc.body;
    return /[?&]room=/.test(root.location ? root.location.search : '') || h.classList.contains('room-joining') || h.classList.contains('guessing')
      || ['in-room', 'teaching', 'guessing'].some((c) => b.classList.contains(c));
  }

  function check(all) {
    // (hushed, and for CALM_MS after: a page's classes are redrawn now and then, and a moment without them is no change)
    if (hush()) { hushedAt = Date.now(); said = null; seen = []; if (region) region.textContent = ''; return; }
    if (Date.now() - hushedAt < CALM_MS) { said = null; setTimeout(() => check(all), CALM_MS); return; }
    const now = shown();
    if (said === null) { if (now) said = now; return; } // the text the page opened with: not read out
    const text = settled(now, all);
    if (text === null) return;
    if (!text.startsWith(said)) said = common(said, text);
    const fresh = text.slice(said.length);
    let cut = all ? fresh.length : 0;
    if (!all) for (const m of fresh.matchAll(SENTENCE_END)) cut = m.index + 1;
    if (!cut) return;
    said += fresh.slice(0, cut);
    const words = fresh.slice(0, cut).trim();
    if (words) say(words);
  }

  function changed() {
    if (hush()) { check(false); return; } // (emptied at once)
    if (!soon) soon = setTimeout(() => { soon = null; check(false); }, 250);
    clearTimeout(quiet);
    quiet = setTimeout(() => check(true), QUIET_MS);
  }

  function watch() {
    new MutationObserver(changed).observe(doc.body, { subtree: true, childList: true, characterData: true, attributes: true,
      attributeFilter: ['hidden', 'class'] });
    changed();
  }
  if (doc.body) watch(); else doc.addEventListener('DOMContentLoaded', watch);

  root.LLMAnnounce = { check, shown, hush };
})(typeof window !== 'undefined' ? window : globalThis);

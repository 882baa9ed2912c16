/* The generated text read aloud as it streams, by sentence: a screen reader's polite live region (#text-announce, seen
 * by no one) gets each new sentence of the text on screen once it is complete, and the rest once the text has stopped
 * growing for a moment; not one announcement per token. Only what a sighted student sees is read: a later step's
 * hidden text, and the step's token while Guess first hides it, are not (they are not displayed). A new text is read
 * from where it differs from the one read before; a step back reads nothing, the steps after it are read again.
 * Only text that has stayed on screen for a second is read: a page that draws a new text whole and then hides what
 * comes after its step (a class's page, opening a step) shows that text for a moment, and it must not be said.
 * The guess's verdict (#guess-result) is a polite live region too: said once, when it is written.
 * Loaded with the viewer's scripts (the app's and the offline page's: viz/viewer_page.py VIEWER_SCRIPTS).
 */
(function (root) {
  'use strict';

  const doc = root.document;
  if (!doc || typeof MutationObserver === 'undefined') return;
  const SENTENCE_END = /[.!?…。！？\n]/g;
  const QUIET_MS = 1500; // the text has stopped growing: its unfinished sentence is read too
  const SETTLE_MS = 1000; // what has been on screen this long (and is still) may be read
  let said = null, region = null, soon = null, quiet = null, seen = [];

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
  function check(all) {
    const verdict = doc.getElementById('guess-result');
    if (verdict && !verdict.hasAttribute('aria-live')) verdict.setAttribute('aria-live', 'polite');
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

  root.LLMAnnounce = { check, shown };
})(typeof window !== 'undefined' ? window : globalThis);

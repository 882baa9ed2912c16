/* The page's language, from the page's head before any script writes a word (ui/language.py puts it there, after
 * window.LLMLanguages = {names, aliases} and the English catalogue).
 *
 * Which language: the address's ?lang=, else the first of navigator.languages the page speaks, else English: the
 * server's rule (viz.text.preferred, ui/language.py's `of`), so a page and its server agree. Its catalogue
 * (GET api/text/LANG.json) replaces the English one before the page's scripts read it: a synchronous request, once
 * (the browser keeps it an hour), so that no sentence is written in English first.
 *
 *   LLMLanguage.lang          the page's language ("fr")
 *   LLMLanguage.match(tag)    the page's language for a tag ("fr-CA" -> "fr"), or null
 *   LLMLanguage.switchTo(l)   the page again in l: the trace, the step and the settings kept (the server writes the
 *                             trace's link, as for Copy link; a class room's page reopens in its room)
 *   LLMLanguage.picker(el)    the language picker drawn into el: "FR", a list of the languages in their own names
 */
(function (root) {
  'use strict';

  const data = root.LLMLanguages || { names: { en: 'English' }, aliases: {} };
  const have = {};
  Object.keys(data.names).forEach((k) => { have[k.toLowerCase()] = k; });

  function match(tag) { // viz.text.match
    if (typeof tag !== 'string' || !tag || tag.length > 35) return null;
    const t = tag.trim().replace(/_/g, '-').toLowerCase(), base = t.split('-')[0];
    for (const c of [t, data.aliases[t], base, data.aliases[base]]) if (c && have[c.toLowerCase()]) return have[c.toLowerCase()];
    return null;
  }

  // ?lang= (a link's, the picker's), else the browser's own languages, else ?hl= (a class's join link: the teacher's
  // language, for a browser whose languages the page does not speak), else English (ui/language.py `of`)
  function pick() {
    const q = new URLSearchParams(root.location.search), asked = q.getAll('lang').pop(), hint = q.getAll('hl').pop();
    if (asked && match(asked)) return match(asked);
    for (const tag of navigator.languages || [navigator.language]) if (match(tag)) return match(tag);
    return (hint && match(hint)) || 'en';
  }

  const lang = pick();
  if (lang !== 'en') {
    try {
      const x = new XMLHttpRequest();
      x.open('GET', new URL(`api/text/${encodeURIComponent(lang)}.json`, root.location.href.split('?')[0].replace(/[^/]*$/, '')).toString(), false);
      x.send();
      if (x.status === 200) root.LLMTextCatalogue = JSON.parse(x.responseText);
    } catch (err) { console.error('language: the catalogue did not come', err); }
  }

  // Gradio's labels, choices and placeholders in the language: the server's `words` listener (ui/language.py
  // relabelling), asked by a page not in English only. Every component an event has touched joins the list Gradio's
  // page walks at each message of any run (~105 here): an English page running it paid for nothing, at every token.
  if (lang !== 'en') (function ask() { if (root.LLMBridge) root.LLMBridge.send('words'); else setTimeout(ask, 0); })();

  // <html lang>: ours, also after Gradio writes the browser's own there
  const html = document.documentElement;
  html.lang = lang;
  new MutationObserver(() => { if (html.lang !== lang) html.lang = lang; }).observe(html, { attributes: true, attributeFilter: ['lang'] });

  function withLang(href, l) {
    const u = new URL(href, root.location.href);
    u.searchParams.set('lang', l);
    return u.toString();
  }

  function switchTo(l) {
    if (!match(l) || match(l) === lang) return;
    const here = new URLSearchParams(root.location.search);
    const bridge = root.LLMBridge;
    // a class room's page, or a page with no trace: the same address in the other language (a room page rejoins)
    if (here.has('room') || !bridge || !(root.LLMApp && root.LLMApp.mounted && root.LLMApp.mounted())) {
      root.location.assign(withLang(root.location.href, match(l)));
      return;
    }
    bridge.send('copy', { lang: match(l) }); // the server answers with the trace's link ("go"): assets/link_actions.js
  }

  function picker(el) { // a small button naming the language ("FR"), opening the list of languages in their own names
    if (!el || el.querySelector('details')) return;
    const cat = root.LLMTextCatalogue || {}, box = document.createElement('details'), sum = document.createElement('summary');
    box.className = 'language-picker';
    sum.id = 'language-pick';
    sum.textContent = lang.split('-')[0].toUpperCase();
    sum.title = `${cat['language.pick'] || 'Language'}: ${data.names[lang]}`;
    sum.setAttribute('aria-label', sum.title);
    box.appendChild(sum);
    const list = document.createElement('div');
    list.className = 'language-list';
    list.setAttribute('role', 'menu');
    Object.entries(data.names).forEach(([tag, name]) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.lang = tag;
      b.dataset.lang = tag;
      b.setAttribute('role', 'menuitemradio');
      b.setAttribute('aria-checked', String(tag === lang));
      b.textContent = name;
      b.addEventListener('click', () => { box.open = false; switchTo(tag); });
      list.appendChild(b);
    });
    box.appendChild(list);
    document.addEventListener('click', (e) => { if (box.open && !box.contains(e.target)) box.open = false; });
    el.appendChild(box);
  }

  // the page's title (and a student's class headline) leaves what sits at its line's right its room: the language
  // picker and, on a wide screen, the "Join a class" box, as long as their words (assets/style.css --title-room);
  // Gradio may draw them anew, so they are looked up at each check
  const fitTitle = () => ['#intro h1', '.room-headline'].forEach((q) => {
    const h = document.querySelector(q), t = h && h.getBoundingClientRect();
    if (!t || !t.width) return;
    const lefts = ['join-class', 'language-bar'].map((id) => document.getElementById(id)).filter((el) => el
      && getComputedStyle(el).position === 'absolute').map((el) => el.getBoundingClientRect()).filter((r) => r.width
      && r.top < t.bottom && t.top < r.bottom).map((r) => r.left);
    const v = `${Math.max(0, Math.ceil(t.right - Math.min(t.right, ...lefts) + 12))}px`;
    if (h.style.getPropertyValue('--title-room') !== v) h.style.setProperty('--title-room', v);
  });
  if (typeof root.addEventListener === 'function') { // (a page: not the tests' bare script)
    setInterval(fitTitle, 1000);
    root.addEventListener('resize', fitTitle);
  }

  root.LLMLanguage = { lang, match, switchTo, picker, withLang };
})(window);

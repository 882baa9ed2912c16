/* Guess first on the offline page (assets/viewer.html; the app's is assets/guess.js, with the model's own numbers).
 *
 * While the "Guess first" box is on (or the page's link says ?guess=1), the reply's later steps stay hidden, and the
 * step on screen keeps its answer hidden until it is guessed: its token in the reply and in the step's line, the
 * distribution and the embeddings (they mark the token). The attention heatmap, its overview and the KV cache stay:
 * they show the context alone (the heatmap labels positions still to come "k ?") (assets/viewer.css, classes on <html>). A guess is rated here as pipeline.guess rates one without a tokenizer
 * (_best_candidate): the longest of the step's kept candidates it is, or starts with before another word or sign, with the
 * trace's numbers (viz/viewer/guess.py writes them, #guess-data); outside them, the bound (never the number of a candidate
 * it merely starts with: "banana" is not "·b"). The words are the catalogue's (guess.*, as viz/guess.py's rating_html
 * writes them for a guess rated without a tokenizer: assets/text.js), written as text only.
 * Moving to another step hides again unless that step was guessed; Play stops at each step not yet guessed.
 * Loaded after the viewer's scripts, before the page mounts (LLMViewer.page: viewer.js).
 */
(function (root) {
  'use strict';

  const MAX_GUESS_CHARS = 40; // pipeline.guess.MAX_GUESS_CHARS
  // Python's str.isspace (every such character), str.isalpha and str.isnumeric of one character
  const SPACE = '[\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
  const ALL_SPACE = new RegExp(`^${SPACE}*$`), AROUND = new RegExp(`^${SPACE}+|${SPACE}+$`, 'g'); // (str.strip())
  const LETTER = /^\p{L}$/u, DIGIT = /^\p{N}$/u;
  const BYTE_END = /<0x[0-9A-F]{2}>$/; // pipeline.guess.BYTE_END: a piece that ends inside a character
  const VISIBLE = { ' ': '·', '\n': '↵', '\t': '→', '\r': '␍' }; // viz.style.visible

  const dataEl = document.getElementById('guess-data');
  const DATA = dataEl ? JSON.parse(dataEl.textContent) : { steps: [], dtypes: {} };
  const doc = document.documentElement;
  const { t, parts, pct, thousands, count } = root.LLMText;

  // -- rating a guess: pipeline.guess (clean, variants, _rate_candidates, _best_candidate) -----------------------
  class Refused extends Error {}
  const chars = (t) => Array.from(t).length; // Python's len: code points

  function clean(guess) {
    const text = String(guess).replace(AROUND, ''); // (the spaces around a guess are not part of it: pipeline.guess.clean)
    if (ALL_SPACE.test(text)) throw new Refused(t('error.guess_empty'));
    if (chars(text) > MAX_GUESS_CHARS) throw new Refused(t('error.guess_too_long', { n: MAX_GUESS_CHARS }));
    return text;
  }

  // A step's data with its typed arrays decoded (once): ids, temperature-1 and final probabilities per candidate.
  function stepData(s) {
    const d = DATA.steps[s];
    if (d && !d.P) {
      const { decode } = root.LLMViewer, T = DATA.dtypes;
      Object.assign(d, { I: decode({ dtype: T.ids, bdata: d.ids }), P: decode({ dtype: T.p, bdata: d.p }),
                         F: decode({ dtype: T.f, bdata: d.f }), L: d.pieces.map(chars) });
    }
    return d;
  }

  // typed with a space before it, also without; else with one where the context ends inside a line of words
  const variants = (d, text) => (text[0] === ' ' && !ALL_SPACE.test(text.slice(1)) ? [text, text.slice(1)]
    : d.space && !ALL_SPACE.test(Array.from(text)[0]) ? [text, ' ' + text] : [text]);

  // pipeline.guess._whole_start: text is the piece, or starts with it and goes on with another kind of character
  const kind = (c) => (LETTER.test(c) ? 'letter' : DIGIT.test(c) ? 'digit' : ALL_SPACE.test(c) ? 'space' : 'sign');
  function wholeStart(text, piece) {
    if (!piece || !text.startsWith(piece)) return false;
    if (text.length === piece.length) return true;
    const a = kind(Array.from(piece).pop()), b = kind(Array.from(text.slice(piece.length))[0]);
    return a !== b && a !== 'space' && !BYTE_END.test(piece);
  }

  // pipeline.guess._written: the pieces (two or more, the step's own first) the text goes on with when the guess is them
  function written(d, text) {
    const pieces = [d.piece];
    let done = d.piece;
    for (const piece of d.ahead || []) {
      if (!text.startsWith(done + piece)) break;
      pieces.push(piece);
      done += piece;
      if (done === text) return pieces;
    }
    return null;
  }

  function rateCandidates(d, text) {
    let k = -1, pieces = null; // the longest piece the guess is, or starts a word with; of equals, the first
    d.pieces.forEach((piece, i) => { if (wholeStart(text, piece) && (k < 0 || d.L[i] > d.L[k])) k = i; });
    if (k >= 0) pieces = [d.pieces[k]];
    if (k < 0 || d.L[k] < chars(text)) { // else the word the model wrote over several tokens from here: the step's own token
      const wrote = written(d, text), at = d.I.indexOf(d.id);
      if (wrote && at >= 0) { k = at; pieces = wrote; }
    }
    if (k < 0) return { text, prob: null, rank: null, below: d.P[d.P.length - 1], chosen: false, above: false };
    const p = d.P[k], rank = d.P.reduce((n, x) => n + (x > p ? 1 : 0), 1); // (ties share the better rank: pipeline.guess)
    return { text, piece: pieces[0], pieces, prob: p, rank, final: d.F[k], below: null, chosen: d.I[k] === d.id, above: p > d.chosen };
  }

  // Of the guess's spellings, the one whose candidate the model rates higher (the first of equals).
  function rate(s, guess) {
    const d = stepData(s), text = clean(guess);
    const r = variants(d, text).map((v) => rateCandidates(d, v)).reduce((a, b) => ((b.prob || 0) > (a.prob || 0) ? b : a));
    return Object.assign(r, { typed: text }); // (r.text: the spelling rated, with the space the model writes before a word)
  }

  // -- the rating in words: viz/guess.py rating_html, from the catalogue (guess.*) --------------------------------
  const visible = (piece) => (piece === '' ? '∅' : Array.from(piece, (c) => {
    const n = c.codePointAt(0);
    return VISIBLE[c] || (n < 0x20 ? String.fromCodePoint(0x2400 + n) : n === 0x7f ? '␡' : c);
  }).join(''));
  const q = (text) => t('common.quote', { text });
  const prob = (p) => pct(p, null); // (viz.fmt.pct: the digits its size needs)

  // The rating's paragraphs: [class, parts], a part plain text or {b: text}.
  function words(r, d) {
    const n = thousands(d.pieces.length), token = q(visible(d.piece)), wrote = { token, prob: prob(d.chosen) };
    if (r.prob === null) {
      return [['guess-head', parts('guess.not_kept', { guess: q(r.typed), n, bound: prob(r.below) })], ['', parts('guess.it_wrote', wrote)]];
    }
    const first = r.pieces.join('') === r.text ? t('guess.tokens', { pieces: r.pieces.map((x) => q(visible(x))).join(' + ') })
      : t('guess.first_token', { piece: q(visible(r.piece)), n });
    const out = [['guess-head', parts('guess.rated', { guess: q(r.typed), prob: { b: prob(r.prob) }, rank: { b: t('guess.rank', { rank: thousands(r.rank) }) } })],
                 ['', [`${first} ${t('guess.final', { prob: prob(r.final) })}`]]];
    if (r.chosen) out.push(['guess-match', parts('guess.match', { token })]);
    else out.push(['', parts(r.above ? 'guess.above' : 'guess.wrote', wrote)]);
    return out;
  }

  function paragraphs(lines) {
    return lines.map(([cls, parts]) => {
      const p = document.createElement('p');
      if (cls) p.className = cls;
      for (const part of parts) {
        if (typeof part === 'string') p.append(document.createTextNode(part));
        else p.append(Object.assign(document.createElement('b'), { textContent: part.b }));
      }
      return p;
    });
  }

  // -- the page: what is hidden, the result, the score --------------------------------------------------------------
  const seen = new Map(); // step -> its rating (the last guess at it)
  let shown = 0, refusal = null; // the step the text shows; a refused guess {step, sentence}
  const box = () => document.querySelector('#guess-toggle input[type=checkbox]');
  const on = () => { const b = box(); return !!(b && b.checked); };
  const page = () => root.LLMViewer && root.LLMViewer.page;
  const hidden = (s) => on() && !seen.has(s);

  // What is hidden with step s in the text. early: the text moved and the panels may still show the step before, so
  // anything hidden stays hidden until they are drawn (onRendered). (The attention heatmap names no token past the
  // step's context: viz.attention labels those positions "k ?".)
  function apply(s, early) {
    doc.classList.toggle('guessing', on());
    doc.classList.toggle('guess-hidden', hidden(s) || (early && doc.classList.contains('guess-hidden')));
  }

  function showResult(s) {
    const res = document.getElementById('guess-result'), r = seen.get(s), div = document.createElement('div');
    const set = { step: '', rank: '', prob: '', chosen: '' };
    res.replaceChildren();
    if (r) {
      Object.assign(set, { step: String(s), rank: r.rank === null ? '' : String(r.rank), prob: r.prob === null ? '' : String(r.prob),
                           chosen: r.chosen ? '1' : '0' });
      div.className = 'guess-result';
      div.append(...paragraphs(words(r, stepData(s))));
    } else if (refusal && refusal.step === s) {
      div.className = 'guess-result guess-refused';
      div.append(...paragraphs([['', [refusal.sentence]]]));
    }
    Object.assign(res.dataset, set);
    if (div.className) res.append(div);
  }

  function score() {
    const all = [...seen.values()], top5 = all.filter((g) => g.rank && g.rank <= 5).length, same = all.filter((g) => g.chosen).length;
    document.getElementById('guess-score').textContent = all.length
      ? t('guess.score', { top5, steps: count(all.length, 'step'), same }) : '';
  }

  // The text shows a step (viewer.js wrote its line): a step not guessed is hidden at once, before the next paint;
  // one guessed is shown once every panel is drawn for it (onRendered), so no panel shows an earlier step's answer.
  function onDrawn() {
    const api = page();
    if (!api) return;
    doc.classList.add('guess-drawn');
    if (api.state.step !== shown) refusal = null;
    shown = api.state.step;
    apply(shown, true);
    showResult(shown);
    if (hidden(shown) && api.playing()) document.getElementById('play').click(); // Play waits for a guess here
  }

  function onRendered() {
    const api = page();
    if (api && api.state.step === shown) apply(shown, false);
  }

  function submit() {
    try {
      seen.set(shown, rate(shown, document.getElementById('guess-input').value));
      refusal = null;
    } catch (e) {
      if (!(e instanceof Refused)) throw e;
      refusal = { step: shown, sentence: e.message };
    }
    const api = page();
    apply(shown, !api || api.rendered !== shown); // (panels still drawing the step: shown once they are, onRendered)
    showResult(shown);
    score();
  }

  function wire() {
    const b = box(), input = document.getElementById('guess-input');
    if (!b || !input) return;
    if (new URLSearchParams(root.location.search).get('guess') === '1') b.checked = true;
    apply(shown, false);
    b.addEventListener('change', () => apply(shown, false));
    document.getElementById('guess-submit').addEventListener('click', submit);
    input.addEventListener('keydown', (e) => { if (e.key === 'Enter' && !e.isComposing) { e.preventDefault(); submit(); } });
    new MutationObserver(onDrawn).observe(document.getElementById('step-label'), { childList: true, characterData: true, subtree: true });
    document.addEventListener('viewer:rendered', onRendered);
  }

  wire();
  // for the tests and tools: the rating as the page makes it, and the percentages as viz/fmt.py's pct writes them
  root.LLMViewer = Object.assign(root.LLMViewer || {}, { guess: { clean, rate, pct: prob, Refused, seen } });
})(window);

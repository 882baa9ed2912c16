/* The page's words and numbers, the browser's side of viz/text.py (read its doc): every sentence from the catalogue
 * that Python ships as window.LLMTextCatalogue (viz.text.head_script, locales/en.json, flat: dotted keys), its
 * {name} placeholders filled the same plain way; a percentage (pct) and a count (thousands, count) written exactly as
 * viz.text writes them (tests/unit/test_text_catalogue.py runs both on the same numbers). A key not in the catalogue,
 * or a placeholder given no value, throws: the tests prove the page names none such.
 * Loaded first of the viewer's scripts (viz/viewer/page.py: VIEWER_SCRIPTS), after the catalogue.
 */
(function (root) {
  'use strict';

  const PLACEHOLDER = /\{([A-Za-z_]\w*)\}/g; // viz.text.PLACEHOLDER

  function sentence(key) {
    const s = (root.LLMTextCatalogue || {})[key];
    if (typeof s !== 'string') throw new Error(`no sentence ${key} in the text catalogue (locales/en.json)`);
    return s;
  }

  // The sentence cut at its placeholders: literal text (strings) and the values given (as they are: a caller's
  // {b: text} for a bold part stays an object), in order; empty literals left out.
  function parts(key, vars) {
    const s = sentence(key), out = [];
    let at = 0;
    for (const m of s.matchAll(PLACEHOLDER)) {
      if (!vars || !Object.prototype.hasOwnProperty.call(vars, m[1])) throw new Error(`${key}: no value for {${m[1]}}`);
      if (m.index > at) out.push(s.slice(at, m.index));
      out.push(vars[m[1]]);
      at = m.index + m[0].length;
    }
    if (at < s.length) out.push(s.slice(at));
    return out;
  }

  // The sentence with its placeholders filled, each value as String() writes it (viz.text.t: str()).
  const t = (key, vars) => parts(key, vars).map(String).join('');

  // Numbers written as Python writes them: f'{y:.{f}f}' rounds exact ties to even (toFixed rounds them up).
  function fixed(y, f) {
    const u = y * Math.pow(2, f + 1); // y is an exact tie at f digits iff y * 2^(f+1) is an odd integer
    if (Number.isInteger(u) && Math.abs(u) < 2 ** 52 && Math.abs(u % 2) === 1) {
      const k = Math.floor(y * Math.pow(10, f));
      return ((k % 2 === 0 ? k : k + 1) / Math.pow(10, f)).toFixed(f);
    }
    return y.toFixed(f);
  }

  // viz.text._pct_auto: the digits a probability's size needs
  function pctAuto(p) {
    const x = p * 100;
    if (x >= 10) return fixed(x, 0) + '%';
    if (x >= 1) return fixed(x, 1) + '%';
    if (x >= 0.01) return fixed(x, 2) + '%';
    if (x <= 0) return '0%';
    return x >= 1e-4 ? x.toPrecision(1) + '%' : '<0.0001%'; // (one digit: no exact ties in that range)
  }

  // viz.text.number_marks: the catalogue's number.format ("1,234.5"; French "1 234,5"), number.percent ("{x}%")
  // and number.one_for ("1"; French "0 1"), read once per catalogue
  let marks = null;
  function numberMarks() {
    const cat = root.LLMTextCatalogue || {};
    if (marks && marks.cat === cat) return marks;
    const m = /^1(\D*)234(\D)5$/.exec(cat['number.format'] || '1,234.5');
    marks = { cat, group: m ? m[1] : ',', decimal: m ? m[2] : '.', percent: cat['number.percent'] || '{x}%',
      one: new Set(String(cat['number.one_for'] || '1').split(/\s+/).map(Number)) };
    return marks;
  }

  // viz.text._local: a number written the English way ("12,345.6") written the catalogue's way ("12 345,6")
  function local(english) {
    const { group, decimal } = numberMarks();
    return group === ',' && decimal === '.' ? english : english.replace(/[,.]/g, (c) => (c === ',' ? group : decimal));
  }

  // viz.text.pct_en: digits decimals as Python's '%' format (it multiplies by 100 first, then rounds); null: the
  // digits its size needs; floor: a share above 0 that would read 0 reads '<0.1%'; NaN reads '–'.
  function pctEn(x, digits = 1, floor = false) {
    const v = Number(x);
    if (Number.isNaN(v)) return '\u2013';
    if (digits === null) return pctAuto(v);
    const unit = Math.pow(10, -digits) / 100;
    if (floor && v > 0 && v < unit) return '<' + fixed(unit * 100, digits) + '%';
    return fixed(v * 100, digits) + '%';
  }

  // viz.text.pct: pctEn written the catalogue's way ('12,3 %' in French)
  function pct(x, digits = 1, floor = false) {
    const english = pctEn(x, digits, floor);
    return english.endsWith('%') ? numberMarks().percent.replace('{x}', local(english.slice(0, -1))) : english;
  }

  // viz.text.thousands: f'{n:,}' of a whole number (a fraction rounded half to even first, as Python's round)
  function thousands(n) {
    const f = Math.floor(n), d = n - f;
    const k = d > 0.5 || (d === 0.5 && f % 2 !== 0) ? f + 1 : f;
    return local((k < 0 ? '-' : '') + String(Math.abs(k)).replace(/\B(?=(\d{3})+(?!\d))/g, ','));
  }

  // viz.text.count: '1 token', '2,048 tokens' (French: '0 jeton')
  const count = (n, unit) => t(`unit.${unit}.${numberMarks().one.has(n) ? 'one' : 'other'}`, { n: thousands(n) });

  root.LLMText = { t, parts, pct, fixed, local, thousands, count, has: (key) => typeof (root.LLMTextCatalogue || {})[key] === 'string' };
})(typeof window !== 'undefined' ? window : globalThis);

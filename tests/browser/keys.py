"""The keyboard's way through a page (no tests here): Tab from stop to stop until a control has the focus, reading at every
stop whether a person sees where the focus is: an outline of 2 px or more, or a box shadow spread 2 px or more, whose
colour has a contrast of 3:1 or more against what is behind it (WCAG 2.4.7 and 1.4.11), read once the ring's own
transition has ended. A stop on the page's body (the focus lost) is no stop a person can see."""
from __future__ import annotations

# the element with the focus, and its ring: {name, ring (px), contrast}; `name` says which control it is
STOP = """async () => {
  const e = document.activeElement;
  await Promise.all(e.getAnimations().map((a) => a.finished.catch(() => null)));
  const cs = getComputedStyle(e), rgba = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => { const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const behind = (n) => { for (; n && n.nodeType === 1; n = n.parentElement) { const c = rgba(getComputedStyle(n).backgroundColor);
      if (c.length === 3 || c[3] >= 0.5) return c.slice(0, 3); }
    return document.querySelector('.dark') ? [11, 15, 25] : [255, 255, 255]; };
  const back = behind(e.parentElement), rings = [];
  if (cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2) rings.push([parseFloat(cs.outlineWidth), rgba(cs.outlineColor)]);
  for (const sh of (cs.boxShadow === 'none' ? '' : cs.boxShadow).split(/,(?![^(]*\\))/)) {
    const colour = rgba((sh.match(/rgba?\\([^)]*\\)/) || [''])[0]), px = (sh.replace(/rgba?\\([^)]*\\)/, '').match(/-?[\\d.]+px/g) || []).map(parseFloat);
    if (colour.length >= 3 && (colour[3] ?? 1) >= 0.5 && px.length >= 4 && px[3] >= 2 && !sh.includes('inset')) rings.push([px[3], colour]);
  }
  const best = rings.map(([w, c]) => [w, ratio(c.slice(0, 3), back)]).sort((a, b) => b[1] - a[1])[0] || [0, 0];
  const label = (e.getAttribute('aria-label') || e.textContent || e.value || '').trim().replace(/\\s+/g, ' ').slice(0, 30);
  return {name: `${e.tagName.toLowerCase()}#${e.id || e.closest('[id]')?.id || ''} ${label}`, body: e === document.body,
          ring: best[0], contrast: Math.round(best[1] * 100) / 100}; }"""


def seen(stop: dict) -> bool:
    """A person sees where the focus is at this stop."""
    return not stop["body"] and stop["ring"] >= 2 and stop["contrast"] >= 3


def stop(page) -> dict:
    return page.evaluate(STOP)


def tab_to(page, selector: str, *, limit: int = 150, key: str = "Tab") -> list[dict]:
    """Tab (or `key`: "Shift+Tab") until the focus is on `selector` or inside it; every stop on the way, the last
    one `selector`'s. Fails when `limit` stops did not reach it."""
    stops = []
    for _ in range(limit):
        page.keyboard.press(key)
        stops.append(stop(page))
        if page.evaluate("(s) => !!document.activeElement.closest(s)", selector):
            return stops
    raise AssertionError(f"{limit} presses of {key} did not reach {selector}: {[s['name'] for s in stops[-12:]]}")


def unseen(stops: list[dict]) -> list[dict]:
    return [s for s in stops if not seen(s)]

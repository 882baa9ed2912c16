"""Every student (issue 47, docs/accessibility.md): axe-core 4.12's WCAG 2.0/2.1/2.2 A and AA rules find no serious or
critical violation on the views a class uses (the page at 1366x768 light and dark, Guess first on a dark phone, the
projector's presenter view, the page in each of six languages, a student's room page and the teacher's class card
after a reveal, the offline page); a screen reader reads the distribution's top candidate and its probability as the
bars write them, in English and in French; the keyboard finds a "skip to the lesson" link first and a visible ring
at every stop; on a phone no control is under 24x24 px."""
from __future__ import annotations

from pathlib import Path

import axe_playwright_python
import pytest

from pipeline import gallery
from viz.style import visible
from viz.viewer.page import render_html

from .harness import new_page, scroll_through, wait_model_loaded
from .keys import stop, unseen
from .lesson_kit import PHONE, PROJECTOR, lesson, next_in_lesson, on_step, send, student_page, teacher_page, wait_headline

AXE = (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf-8")
RULES = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
LANGUAGES = ("en", "es", "fr", "de", "pt-BR", "zh-CN")


def serious(page) -> list[str]:
    """axe's serious and critical violations of the page as it is now, each with the first elements it names."""
    if not page.evaluate("() => !!window.axe"):
        page.evaluate(AXE)
    found = page.evaluate("(tags) => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})", RULES)
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes'][:3]]} {(v['nodes'][0].get('failureSummary') or '')[:200]}"
            for v in found["violations"] if v["impact"] in ("serious", "critical")]


def opened(browser, url, *, size=(1366, 768), phone=False, dark=False):
    """A page of the app, its step panels drawn (the distribution's words written: assets/figure_text.js)."""
    if phone:
        page = browser.new_page(viewport={"width": size[0], "height": size[1]}, color_scheme="dark" if dark else "light", has_touch=True,
                                is_mobile=True)
        page.errors = []
    else:
        page = new_page(browser, width=size[0], height=size[1], record_toasts=False)
    page.goto(url)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=120_000)
    scroll_through(page)  # (each step panel is drawn as it comes into view: every one checked)
    page.wait_for_selector("#dist-plot svg.main-svg[role=img]", state="attached", timeout=120_000)
    return page


VIEWS = {"laptop-light": dict(q=""), "laptop-dark": dict(q="?__theme=dark"),
         "phone-guess-dark": dict(q="?guess=1&__theme=dark", size=PHONE, phone=True, dark=True),
         "projector": dict(q="?view=present", size=PROJECTOR)}


@pytest.mark.parametrize("view", list(VIEWS))
def test_no_serious_violation_on_the_page(browser, app_url, view):
    v = VIEWS[view]
    page = opened(browser, app_url + v["q"], size=v.get("size", (1366, 768)), phone=v.get("phone", False), dark=v.get("dark", False))
    assert serious(page) == []


@pytest.mark.walk
def test_no_serious_violation_in_any_language(browser, app_url):
    found = {}
    for lang in LANGUAGES:
        page = opened(browser, f"{app_url}?lang={lang}")
        assert page.evaluate("() => document.documentElement.lang") == lang
        found[lang] = serious(page)
        page.close()
    assert found == {lang: [] for lang in LANGUAGES}


def test_a_class_round_has_no_serious_violation_on_any_screen(browser, app_url):
    teacher, code = teacher_page(browser, app_url)
    phone = student_page(browser, app_url, code, dark=True)
    x = lesson()[0]
    next_in_lesson(teacher)
    for p in (teacher, phone):
        on_step(p, x)
    wait_headline(phone, f"step {x.step} · What comes next?")
    found = {"teacher, guessing": serious(teacher), "phone, guessing": serious(phone)}
    send(phone, "the")
    teacher.wait_for_function("() => /1 of 1 students? (has|have) guessed/.test(document.getElementById('class-chart').textContent)", timeout=20_000)
    teacher.click("#class-reveal")
    teacher.wait_for_selector("#class-chart .room-marks", timeout=30_000)
    phone.wait_for_selector("#room-chart .room-col", timeout=30_000)
    found |= {"teacher, revealed": serious(teacher), "phone, revealed": serious(phone)}
    assert found == {k: [] for k in found}


def test_the_offline_page_has_no_serious_violation(browser, tmp_path):
    path = tmp_path / "trace.html"
    path.write_text(render_html(gallery.load("chat")), encoding="utf-8")
    page = new_page(browser, width=1366, height=768, record_toasts=False)
    page.goto(path.as_uri())
    page.wait_for_selector("#dist-plot svg.main-svg[role=img]", state="attached", timeout=60_000)
    assert serious(page) == []


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_a_screen_reader_reads_the_top_candidate_and_its_probability(browser, app_url, lang):
    """Chromium's accessibility tree at a step: the distribution is an image named by its candidates and their
    numbers, as the bars write them (the axis ticks are not read one by one)."""
    page = opened(browser, f"{app_url}?example=chat&step=3&lang={lang}")
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === 3", timeout=60_000)
    step = gallery.load("chat").steps[3]
    bars = page.evaluate("() => { const d = document.querySelector('#dist-plot .js-plotly-plot').data[1]; return [d.y[0], d.text[0]]; }")
    tree = page.locator("#dist-plot").aria_snapshot()
    bars = [b.replace("\u202f", " ") for b in bars]  # (the tree writes a French "99 %" with a plain space)
    name = tree.split("\n")[0]
    assert name.lstrip("- '").startswith("img"), tree
    top = visible(step.top_pieces[0])
    assert top in bars[0] and bars[1], bars
    assert f"{top}" in name and bars[1] in name[name.index(top):], (name, bars)
    assert ("reste du vocabulaire" if lang == "fr" else "rest of vocabulary") in name
    # every control named in the page's language (Gradio names a slider's parts in English: named again), and the
    # model's English text says it is English on the French page
    slider = page.get_attribute("#step-slider input[type=range]", "aria-label")
    reset = page.get_attribute("#step-slider button[aria-label]", "aria-label")
    assert (slider.startswith("curseur : "), reset) == ((True, "Revenir à la valeur par défaut") if lang == "fr" else (False, "Reset to default value"))
    assert page.get_attribute("#output .gen-text", "lang") == "en"


# every control under 24x24 px, but for one with room around it: a circle of 24 px across at its middle meets no other
# control (and no such circle of another small one), as 2.5.8's spacing exception allows
SMALL = """() => {
  const all = [...document.querySelectorAll('button, a[href], input:not([type=hidden]), select, textarea, [role=button], [role=tab], '
    + '[tabindex]:not([tabindex="-1"]), #tokens-html .tok')].filter((e) => {
      const r = e.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden' && e.checkVisibility(); });
  const box = (e) => e.getBoundingClientRect(), small = all.filter((e) => box(e).width < 24 || box(e).height < 24);
  const mid = (r) => [r.left + r.width / 2, r.top + r.height / 2];
  const meets = ([x, y], r) => { const dx = Math.max(r.left - x, 0, x - r.right), dy = Math.max(r.top - y, 0, y - r.bottom);
    return dx * dx + dy * dy < 144; };
  const name = (e) => `${e.tagName.toLowerCase()}.${String(e.className).slice(0, 30)} in #${e.closest('[id]')?.id}: `
    + `${Math.round(box(e).width)}x${Math.round(box(e).height)}`;
  return small.filter((e) => { const c = mid(box(e));
    return all.some((o) => o !== e && !o.contains(e) && !e.contains(o) && meets(c, box(o)))
      || small.some((o) => o !== e && Math.hypot(c[0] - mid(box(o))[0], c[1] - mid(box(o))[1]) < 24); }).map(name); }"""


def test_on_a_phone_no_control_is_under_24_px(browser, app_url):
    """WCAG 2.2's target size (2.5.8): every control of the phone's page, a token's chip included, is 24x24 px or more,
    or has 24 px of room (a slider's track). (The text's own words are inline targets: exempt.)"""
    page = opened(browser, f"{app_url}?guess=1", size=PHONE, phone=True)
    assert page.evaluate(SMALL) == []


def test_the_keyboard_finds_the_skip_link_first_and_a_ring_at_every_stop(browser, app_url):
    page = opened(browser, app_url)
    first = page.evaluate("""() => [...document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]')]
      .find((e) => e.tabIndex >= 0 && !e.disabled && e.getClientRects().length)?.className""")
    assert first == "skip-link"
    page.focus(".skip-link")
    box = page.evaluate("() => { const r = document.querySelector('.skip-link').getBoundingClientRect(); return [r.top, r.height]; }")
    assert box[0] >= 0 and box[1] >= 24  # seen when it has the focus
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.activeElement === document.querySelector('#prompt textarea')", timeout=5_000)
    stops = []
    for _ in range(25):  # (each a ring of 2 px or more at 3:1 against what is behind it: tests/browser/keys.py)
        page.keyboard.press("Tab")
        stops.append(stop(page))
    assert unseen(stops) == [], stops


def test_a_candidate_is_branched_from_the_keyboard_alone(browser, app_url):
    """What a click on a bar does, by keys only: Tab to "Branch from a candidate…", Enter, Tab to the third candidate,
    Enter, then Enter on the question's "Branch here": the model writes on from that candidate."""
    plain = new_page(browser, width=1366, height=768, record_toasts=False)  # the model loaded (a branch runs it): a plain
    plain.goto(app_url)                                                      # page says so; one opened on an example never
    wait_model_loaded(plain)                                                 # says "Model: ..."
    plain.close()
    page = opened(browser, f"{app_url}?example=chat&step=3")
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === 3", timeout=60_000)
    before = page.inner_text("#output")
    for _ in range(80):
        if page.evaluate("() => document.activeElement?.id") == "branch-keys":
            break
        page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement?.id") == "branch-keys"
    assert page.evaluate("() => document.activeElement.getBoundingClientRect().left") >= 0  # (seen with the focus)
    page.keyboard.press("Enter")
    page.wait_for_selector("#branch-choose:not([hidden])", timeout=5_000)
    third = gallery.load("chat").steps[3].top_pieces[2]
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert visible(third) in page.evaluate("() => document.activeElement.textContent")
    page.keyboard.press("Enter")
    page.wait_for_selector("#branch-confirm:not([hidden])", timeout=5_000)
    assert "rank 3" in page.inner_text("#branch-confirm p") and page.evaluate("() => document.activeElement.id") == "branch-confirm-yes"
    page.keyboard.press("Enter")
    page.wait_for_function("(t) => { const o = document.querySelector('#output').innerText; return o && o !== t; }", arg=before, timeout=90_000)


# the page's width it scrolls past, and every title and legend entry of a figure drawn that runs past its figure or the
# window (Plotly wraps neither: assets/viewer_phone.js does, on a narrow window)
CUT = """() => { const W = document.documentElement.clientWidth, cut = [];
  for (const t of document.querySelectorAll('.js-plotly-plot .gtitle, .js-plotly-plot .legendtext')) {
    const r = t.getBoundingClientRect(), svg = t.closest('svg').getBoundingClientRect();
    if (r.width && t.checkVisibility({visibilityProperty: true, opacityProperty: true})
        && (r.right > Math.min(svg.right, W) + 1 || r.left < Math.max(svg.left, 0) - 1)) cut.push(`${t.closest('[id]').id}: ${t.textContent.slice(0, 50)}`); }
  return {scroll: document.documentElement.scrollWidth - W, cut}; }"""


@pytest.mark.parametrize("size", [(320, 640), (683, 384)], ids=["320px", "zoom200"])
def test_at_320_px_and_at_200_percent_nothing_is_cut(browser, app_url, shots, size):
    """WCAG 1.4.10 and 1.4.4: a 320 px wide window (1280 px at 400%), and a laptop's 1366x768 at 200% (683x384 CSS px):
    the page never scrolls sideways, and no figure's title or legend runs past its edge."""
    page = opened(browser, f"{app_url}?example=chat&step=3", size=size)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === 3", timeout=60_000)
    for sel in ("#lesson-distribution", "#emb-plot", "#attn-plot", "#attn-overview"):
        page.locator(sel).first.scroll_into_view_if_needed()
        page.wait_for_function("(s) => !!document.querySelector(s + ' .viewer-plot .gtitle')", arg=sel if sel != "#lesson-distribution" else "#dist-plot",
                               timeout=30_000)
        page.screenshot(path=str(shots / f"a11y-{size[0]}-{sel[1:]}.png"))
    assert page.evaluate(CUT) == {"scroll": 0, "cut": []}

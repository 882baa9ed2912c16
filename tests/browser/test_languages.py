"""The page in six languages, in Chromium: by ?lang= and by the browser's own language, every sentence of the
interface (the page's text and its figures, data aside) in that language; the picker keeps the trace and the step;
Copy link carries the language; phones and laptops with no sideways scroll. Screenshots: artifacts/screenshots/lang_*."""
from __future__ import annotations

import re

import pytest

from viz.text import DEFAULT, catalogue, languages

from .harness import error_toasts, new_page, slider_value
from .lesson_kit import api

pytestmark = pytest.mark.browser
OTHERS = [x for x in languages() if x != DEFAULT]

# the page's words as a person reads them: every text node shown, minus data (the model's text and the token pieces,
# the prompt, the gallery's sample texts), and every figure's text but its token labels (axis ticks)
VISIBLE_WORDS = """() => {
  const skip = '#output, .tok, .sample-text, textarea, input, .ytick, .xtick, .hoverlayer, script, style, #bridge, .cmp-row .tok';
  const out = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const n = walk.currentNode, el = n.parentElement;
    if (!el || !n.nodeValue.trim() || el.closest(skip)) continue;
    const box = el.getBoundingClientRect(), cs = getComputedStyle(el);
    if (cs.visibility === 'hidden' || cs.display === 'none' || (box.width === 0 && box.height === 0 && el.tagName !== 'tspan')) continue;
    out.push(n.nodeValue.trim());
  }
  return out.join('\\n');
}"""
# what CSS draws as text: every shown element's ::before and ::after content (words there must be the page's language)
PSEUDO_WORDS = """() => [...document.querySelectorAll('body *')].filter((e) => e.getClientRects().length).flatMap((e) =>
  ['::before', '::after'].map((p) => getComputedStyle(e, p).content)).filter((c) => c && c !== 'none' && c !== 'normal')
  .map((c) => { try { return JSON.parse(c); } catch (err) { return c; } }).filter((c) => /\\p{L}/u.test(c))"""
OPENED = "() => window.LLMApp && LLMApp.mounted() && document.querySelector('#dist-plot .main-svg') && document.querySelector('#model-info')?.innerText.trim()"


def english_left(text: str, lang: str) -> list[str]:
    """The English sentences (or their parts between placeholders, of two words and ten letters or more) that are on
    screen although `lang` says them otherwise."""
    en, own = catalogue(DEFAULT), catalogue(lang)
    left = set()
    for key, s in en.items():
        for part in (p.strip(" .:·,()") for p in re.split(r"\{\w+\}", s)):
            if len(part.split()) >= 2 and len(part) >= 10 and part not in own[key] and part in text:
                at = text.index(part)
                left.add(f"{key}: …{text[max(0, at - 60):at + len(part) + 40]}…")
    return sorted(left)


# the title's lines that run into the language picker or the "Join a class" box beside them (their rectangles meet)
TITLE_HIT = """(q) => { const r = document.createRange(); r.selectNodeContents(document.querySelector(q || '#intro h1'));
  const boxes = ['#language-bar summary', '#join-class .join-form'].map(q => document.querySelector(q))
    .filter(el => el && el.offsetParent).map(el => el.getBoundingClientRect());
  return [...r.getClientRects()].flatMap(t => boxes.filter(b => t.left < b.right && b.left < t.right
    && t.top < b.bottom && b.top < t.bottom).map(b => `text ${Math.round(t.right)} meets ${Math.round(b.left)}`)); }"""


def open_in(browser, url, *, locale=None, width=1366, height=768, phone=False):
    page = new_page(browser, width=width, height=height, locale=locale, phone=phone)
    page.goto(url)
    page.wait_for_function(OPENED, timeout=120_000)
    page.wait_for_timeout(1500)  # (the relabelling and the first panels' round trip)
    return page


@pytest.mark.parametrize("lang", languages())
def test_the_page_by_link_speaks_the_language_asked(browser, app_url, shots, lang):
    page = open_in(browser, app_url + f"/?lang={lang}", locale="en-US")
    assert page.evaluate("document.documentElement.lang") == lang
    assert page.evaluate("window.LLMLanguage.lang") == lang
    text = page.evaluate(VISIBLE_WORDS)
    assert english_left(text, lang) == []
    assert catalogue(lang)["button.generate"] in page.inner_text("#generate")
    page.wait_for_function("(s) => document.querySelector('#model-info').innerText.includes(s)",  # (loaded by then)
                           arg=catalogue(lang)["model.lead_live"].strip(), timeout=300_000)
    page.screenshot(path=str(shots / f"lang_{lang}_1366.png"))
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert page.evaluate(TITLE_HIT) == []  # the title wraps before the box and the picker beside it
    page.set_viewport_size({"width": 1200, "height": 768})  # (the narrowest screen with the box beside the title)
    page.wait_for_timeout(300)
    assert page.evaluate(TITLE_HIT) == []
    assert not error_toasts(page) and not page.errors


def test_the_page_speaks_the_browsers_language_with_no_link(browser, app_url):
    page = open_in(browser, app_url + "/", locale="de-DE")
    assert page.evaluate("document.documentElement.lang") == "de"
    assert english_left(page.evaluate(VISIBLE_WORDS), "de") == []
    page = open_in(browser, app_url + "/", locale="ko-KR")  # a language the page does not speak: English
    assert page.evaluate("document.documentElement.lang") == "en"


@pytest.mark.parametrize("lang", languages())
def test_a_phone_in_each_language_has_no_sideways_scroll(browser, app_url, shots, lang):
    page = open_in(browser, app_url + f"/?lang={lang}", width=390, height=844, phone=True)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    # no button's words cut: each button's text fits in its box (an accordion's header, Gradio's, lays its arrow out
    # past its box in every language, English too: its own words are measured instead)
    cut = page.evaluate("""() => Array.from(document.querySelectorAll('button')).filter(b => b.offsetParent && b.innerText.trim()
        && (b.classList.contains('label-wrap') ? [...b.children].some(c => c.scrollWidth > c.clientWidth + 2)
            : b.scrollWidth > b.clientWidth + 2)).map(b => b.innerText.trim())""")
    assert cut == []
    assert page.evaluate(TITLE_HIT) == []
    page.screenshot(path=str(shots / f"lang_{lang}_390.png"))


def test_the_picker_keeps_the_trace_and_the_step(browser, app_url):
    page = open_in(browser, app_url + "/?example=confident&step=2", locale="en-US")
    page.wait_for_function("() => document.querySelector('#dist-plot .js-plotly-plot')?.layout?.meta?.step === 2", timeout=60_000)
    page.click("#language-pick")
    page.click(".language-list button[data-lang='fr']")
    page.wait_for_url(re.compile(r"lang=fr"), timeout=30_000)
    page.wait_for_function(OPENED, timeout=120_000)
    page.wait_for_function("() => document.querySelector('#dist-plot .js-plotly-plot')?.layout?.meta?.step === 2", timeout=60_000)
    assert "example=confident" in page.url and "step=2" in page.url
    assert slider_value(page) == 2 and page.evaluate("document.documentElement.lang") == "fr"
    assert catalogue("fr")["button.generate"] in page.inner_text("#generate")


def test_copy_link_carries_the_language(browser, app_url):
    page = open_in(browser, app_url + "/?lang=es", locale="en-US")
    page.locator("#copy-link").scroll_into_view_if_needed()
    page.click("#copy-link")
    page.wait_for_function("() => (document.querySelector('#link-box textarea, #link-box input')?.value || '').includes('lang=es')",
                           timeout=30_000)


def _words_before(key: str, lang: str) -> str:
    """The sentence's words before its first placeholder (enough to find it on a page)."""
    return re.split(r"\{\w+\}", catalogue(lang)[key])[0].strip()


@pytest.mark.walk
def test_a_class_with_a_french_teacher_and_spanish_and_chinese_students(browser, app_url, shots):
    """The teacher's page in French; the join link carries it as a hint (a Korean phone opens French); an English phone
    opens English and switches to Spanish by the picker; a Chinese phone opens Chinese; each screen in its own language
    through a guess and the reveal."""
    teacher = open_in(browser, app_url + "/?lang=fr", locale="en-US", width=1920, height=960)
    teacher.wait_for_function("(w) => (document.querySelector('#model-info')?.innerText || '').startsWith(w)",
                              arg=catalogue("fr")["model.lead_live"].strip(), timeout=300_000)
    teacher.evaluate("() => { const r = document.querySelector('#step-slider input[type=range]'); r.value = 3;"
                     " r.dispatchEvent(new Event('input', {bubbles: true})); }")  # (a step with a next one to guess)
    teacher.wait_for_function("() => LLMApp.state.step === 3", timeout=30_000)
    teacher.click("#class-start")
    teacher.wait_for_selector("#class-info .class-card[data-code] svg", timeout=30_000)
    code = teacher.get_attribute("#class-info .class-card", "data-code")
    join = teacher.get_attribute("#class-info a[href*='room=']", "href")
    assert f"room={code}" in join and "hl=fr" in join and "lang=" not in join  # (the teacher's language: a hint)

    in_room = "() => document.body.classList.contains('in-room') && window.LLMApp && LLMApp.mounted() && LLMApp.state.step === 3"
    ko = new_page(browser, width=390, height=844, locale="ko-KR", phone=True, record_toasts=False)
    ko.goto(join)  # a phone in a language the page does not speak: the teacher's
    ko.wait_for_function(in_room, timeout=60_000)
    assert ko.evaluate("document.documentElement.lang") == "fr"
    assert "hl" not in ko.evaluate("() => [...document.querySelectorAll('.toast-body')].map((t) => t.textContent).join(' ')")  # (no warning of it)
    ko.close()
    es = new_page(browser, width=390, height=844, locale="en-US", phone=True, record_toasts=False)
    es.goto(join)
    es.wait_for_function(in_room, timeout=60_000)
    assert es.evaluate("document.documentElement.lang") == "en"  # its browser's own language, not the teacher's
    es.click("#language-pick")
    es.click(".language-list button[data-lang='es']")
    es.wait_for_url(re.compile(r"lang=es"), timeout=30_000)
    es.wait_for_function(in_room, timeout=60_000)
    assert f"room={code}" in es.url and es.evaluate("document.documentElement.lang") == "es"

    zh = new_page(browser, width=390, height=844, locale="zh-CN", phone=True, record_toasts=False)
    zh.goto(join)  # (a Chinese phone: Chinese, by its own language)
    zh.wait_for_function(in_room, timeout=60_000)
    assert zh.evaluate("document.documentElement.lang") == "zh-CN"

    for page, text in ((es, "hola"), (zh, "天")):
        page.fill("#guess-input textarea", text)
        page.click("#guess-submit")
    for _ in range(100):  # both guesses in the room (the API's count), then the teacher's line says so in French
        if api(app_url, code)[1]["guesses"] == 2:
            break
        teacher.wait_for_timeout(200)
    teacher.wait_for_function("(w) => (document.getElementById('class-chart')?.textContent || '').includes(w)",
                              arg=_words_before("room.count_other", "fr"), timeout=20_000)
    # before the reveal, the words CSS draws over the hidden distribution: the page's language, no English left
    for page, lang in ((teacher, "fr"), (es, "es"), (zh, "zh-CN")):
        drawn = page.evaluate(PSEUDO_WORDS)
        assert english_left("\n".join(drawn), lang) == [] and "Hidden" not in " ".join(drawn), (lang, drawn)
        if page is not teacher:
            assert catalogue(lang)["guess.hidden_room"] in drawn, (lang, drawn)
    teacher.click("#class-reveal")
    for page, lang in ((teacher, "fr"), (es, "es"), (zh, "zh-CN")):
        box = "#class-chart" if page is teacher else "#room-chart"
        page.wait_for_function("([b, w]) => (document.querySelector(b)?.textContent || '').includes(w)",
                               arg=[box, _words_before("room.summary", lang).split(" ")[0] or catalogue(lang)["room.col_model"]],
                               timeout=20_000)
        text = page.evaluate(VISIBLE_WORDS)
        assert english_left(text, lang) == [], lang
        if page is not teacher:  # a student's class headline clear of the picker in its corner
            page.wait_for_timeout(1200)  # (assets/language.js measures it each second)
            assert page.evaluate(TITLE_HIT, ".room-headline") == [], lang
        page.screenshot(path=str(shots / f"lang_class_{lang}.png"))
    teacher.click("#class-close")


def _asks_for_labels(browser, app_url, locale: str, words_fn: int) -> bool:
    """Whether a page opened with the browser's language `locale` called the relabelling listener (`words_fn`) by the
    time it has opened (it asks at once, from its head: assets/language.js)."""
    page = new_page(browser, locale=locale)
    bodies: list[str] = []
    page.on("request", lambda r: r.method == "POST" and bodies.append(r.post_data or ""))
    page.goto(app_url)
    page.wait_for_function(OPENED, timeout=120_000)
    if not locale.startswith("en"):  # (its labels come after the page has opened)
        page.wait_for_function(f"() => !!document.querySelector('#generate') && document.querySelector('#generate').innerText "
                               f"!== {catalogue(DEFAULT)['button.generate']!r}", timeout=30_000)
    return any(re.search(rf'"fn_index":\s*{words_fn}\b', b) for b in bodies)


def test_only_a_page_in_another_language_asks_for_gradios_labels(browser, app_url):
    """The relabelling's outputs (every label, ~105 components) join the list of components Gradio's page walks at every
    message of any run, once their event has run: an English page ran it for labels that stay as they were, and each
    streamed token then cost it a third more (docs/benchmarks.md, "The page while a run streams"). English asks nothing;
    French asks, and its labels are French."""
    import json
    import urllib.request

    cfg = json.load(urllib.request.urlopen(app_url.rstrip("/") + "/config", timeout=30))
    words_fn = next(d["id"] for d in cfg["dependencies"] if d.get("api_name") == "words")
    assert not _asks_for_labels(browser, app_url, "en-US", words_fn)
    assert _asks_for_labels(browser, app_url, "fr-FR", words_fn)

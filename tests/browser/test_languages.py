"""The page in six languages, in Chromium: by ?lang= and by the browser's own language, every sentence of the
interface (the page's text and its figures, data aside) in that language; the picker keeps the trace and the step;
Copy link carries the language; phones and laptops with no sideways scroll. Screenshots: artifacts/screenshots/lang_*."""
from __future__ import annotations

import re

import pytest

from viz.text import DEFAULT, catalogue, languages

from .harness import error_toasts, new_page, slider_value

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
OPENED = "() => window.LLMApp && LLMApp.mounted() && document.querySelector('#dist-plot .main-svg') && document.querySelector('#model-info')?.innerText.trim()"


def english_left(text: str, lang: str) -> list[str]:
    """The English sentences (or their parts between placeholders, of two words and ten letters or more) that are on
    screen although `lang` says them otherwise."""
    en, own = catalogue(DEFAULT), catalogue(lang)
    left = set()
    for key, s in en.items():
        for part in (p.strip(" .:·,()") for p in re.split(r"\{\w+\}", s)):
            if len(part.split()) >= 2 and len(part) >= 10 and part not in own[key] and part in text:
                left.add(f"{key}: {part}")
    return sorted(left)


def open_in(browser, url, *, locale=None, width=1366, height=768, phone=False):
    page = new_page(browser, width=width, height=height, locale=locale, phone=phone)
    page.goto(url)
    page.wait_for_function(OPENED, timeout=120_000)
    page.wait_for_timeout(1500)  # (the relabelling and the first panels' round trip)
    return page


@pytest.mark.parametrize("lang", OTHERS)
def test_the_page_by_link_speaks_the_language_asked(browser, app_url, shots, lang):
    page = open_in(browser, app_url + f"/?lang={lang}", locale="en-US")
    assert page.evaluate("document.documentElement.lang") == lang
    assert page.evaluate("window.LLMLanguage.lang") == lang
    text = page.evaluate(VISIBLE_WORDS)
    assert english_left(text, lang) == []
    assert catalogue(lang)["button.generate"] in page.inner_text("#generate")
    assert catalogue(lang)["model.lead_live"].strip() in page.inner_text("#model-info")
    page.screenshot(path=str(shots / f"lang_{lang}_1366.png"))
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert not error_toasts(page) and not page.errors


def test_the_page_speaks_the_browsers_language_with_no_link(browser, app_url):
    page = open_in(browser, app_url + "/", locale="de-DE")
    assert page.evaluate("document.documentElement.lang") == "de"
    assert english_left(page.evaluate(VISIBLE_WORDS), "de") == []
    page = open_in(browser, app_url + "/", locale="ko-KR")  # a language the page does not speak: English
    assert page.evaluate("document.documentElement.lang") == "en"


@pytest.mark.parametrize("lang", OTHERS)
def test_a_phone_in_each_language_has_no_sideways_scroll(browser, app_url, shots, lang):
    page = open_in(browser, app_url + f"/?lang={lang}", width=390, height=844, phone=True)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    # no button's words cut: each button's text fits in its box
    cut = page.evaluate("""() => Array.from(document.querySelectorAll('button')).filter(b => b.offsetParent && b.innerText.trim()
        && (b.scrollWidth > b.clientWidth + 2)).map(b => b.innerText.trim())""")
    assert cut == []
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

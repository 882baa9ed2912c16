"""Links and the gallery in Chromium: a link fills the page in (and generates with run=1), ?example=
opens a saved trace at its step, Copy link reproduces the page, a bad value warns and keeps the default."""

import pytest

from pipeline import gallery
from viz.text import catalogue

from .harness import error_toasts, new_page, slider_value

pytestmark = pytest.mark.browser
DIST_STEP = "() => document.querySelector('#dist-plot .js-plotly-plot')?.layout?.meta?.step"


def _value(page, elem_id):
    return page.input_value(f"#{elem_id} input[type=number], #{elem_id} textarea, #{elem_id} input[type=text]")


def _toasts(page) -> str:
    return " ".join(page.locator(".toast-body").all_inner_texts())


def test_run_link_fills_the_fields_and_generates(browser, app_url):
    page = new_page(browser)
    page.goto(app_url + "/?prompt=Hello&mode=raw&temperature=0&max_new_tokens=5&run=1")
    # (the link's fields are written one by one as the page is drawn: each waited for, the mode's radio last of all)
    page.wait_for_function("() => document.querySelector('#prompt textarea')?.value === 'Hello'"
                           " && document.querySelector(\"#mode input[value='Raw text']\")?.checked", timeout=60_000)
    assert float(_value(page, "temperature")) == 0 and int(float(_value(page, "max-new-tokens"))) == 5
    # no click: the link's run=1 generates (once the model is there, if it was still loading)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle.n_steps === 5"
                           " && document.querySelector('#output .stop-reason')", timeout=300_000)
    assert "maximum number of new tokens" in page.inner_text("#output")
    assert not error_toasts(page) and not page.errors


def test_example_link_opens_the_trace_at_its_step(browser, app_url, shots):
    e = gallery.entry("confident")
    trace = gallery.load("confident")
    page = new_page(browser)
    page.goto(app_url + "/?example=confident")
    page.wait_for_function(f"() => window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle.n_steps === {len(trace.steps)}"
                           f" && ({DIST_STEP})() === {e.step}", timeout=120_000)
    assert slider_value(page) == e.step
    assert e.look[:30] in page.inner_text("#example-look")
    assert page.input_value("#example-traces input") == e.title
    page.locator("#panel-distribution").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "gallery_confident.png"), full_page=False)
    assert not error_toasts(page) and not page.errors


def test_a_new_run_clears_the_gallery_choice(browser, app_url):
    """Once a run replaces a gallery trace on the page, the dropdown and its sentence no longer name it."""
    e = gallery.entry("confident")
    page = new_page(browser)
    page.goto(app_url + "/?example=confident&temperature=0&max_new_tokens=3&run=1")
    page.wait_for_function("(t) => document.querySelector('#example-traces input')?.value === t", arg=e.title, timeout=120_000)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle.n_steps === 3"
                           " && document.querySelector('#output .stop-reason')", timeout=300_000)
    assert page.input_value("#example-traces input") == ""
    assert e.look[:30] not in page.inner_text("#example-look")
    assert not error_toasts(page) and not page.errors


def test_a_trace_file_loaded_clears_the_gallery_choice(browser, app_url):
    page = new_page(browser)
    page.goto(app_url + "/?example=loop")
    page.wait_for_function("(t) => document.querySelector('#example-traces input')?.value === t", arg=gallery.entry("loop").title,
                           timeout=120_000)
    n = len(gallery.load("confident").steps)
    with page.expect_file_chooser() as fc:
        page.click("#upload-trace")
    fc.value.set_files(str(gallery.GALLERY_DIR / "confident.json.gz"))
    page.wait_for_function(f"() => window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle.n_steps === {n}", timeout=120_000)
    page.wait_for_function("() => document.querySelector('#example-traces input').value === ''", timeout=30_000)
    assert gallery.entry("loop").look[:30] not in page.inner_text("#example-look")
    assert not error_toasts(page) and not page.errors


def test_copy_link_reproduces_fields_and_step(browser, app_url):
    """A gallery trace's link is the example and the step: the fields show how that trace was made,
    the what-if sliders a person moved are not part of it, and the link opens the same trace and step."""
    made = gallery.load("loop").settings
    page = new_page(browser)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(app_url + "/?example=loop&step=4")
    page.wait_for_function(f"() => window.LLMApp && LLMApp.mounted() && ({DIST_STEP})() === 4", timeout=120_000)
    page.wait_for_function("(t) => Number(document.querySelector('#temperature input[type=number]')?.value) === t",
                           arg=made.temperature, timeout=30_000)
    assert int(float(_value(page, "seed"))) == made.seed
    page.fill("#temperature input[type=number]", "1.7")  # a what-if: not how the text was made
    page.press("#temperature input[type=number]", "Enter")
    page.click("#copy-link")
    page.wait_for_function("() => (document.querySelector('#link-box input, #link-box textarea')?.value || '').includes('step=')",
                           timeout=30_000)
    link = page.input_value("#link-box input, #link-box textarea")
    assert "example=loop" in link and "step=4" in link and "1.7" not in link, link
    # and the page says so: the what-if sliders are not in the link
    page.wait_for_function("() => !document.getElementById('link-moved')?.hidden", timeout=10_000)
    assert page.inner_text("#link-moved") == catalogue()["links.sliders_left_out"]
    clip = page.evaluate("() => navigator.clipboard.readText().catch(() => null)")
    assert clip in (link, None)
    other = new_page(browser)
    other.goto(link)
    other.wait_for_function(f"() => window.LLMApp && LLMApp.mounted() && ({DIST_STEP})() === 4", timeout=120_000)
    other.wait_for_function("(t) => Number(document.querySelector('#temperature input[type=number]')?.value) === t",
                            arg=made.temperature, timeout=30_000)
    assert int(float(_value(other, "seed"))) == made.seed
    assert slider_value(other) == 4


def test_bad_value_warns_and_keeps_the_default(browser, app_url):
    page = new_page(browser)
    page.goto(app_url + "/?temperature=abc&example=nope")
    page.wait_for_function("() => /temperature='abc'/.test(Array.from(document.querySelectorAll('.toast-body'))"
                           ".map(t => t.innerText).join(' '))", timeout=60_000)
    text = _toasts(page)
    assert "no example trace 'nope'" in text and "confident" in text and "split-emoji" in text
    assert float(_value(page, "temperature")) == 0.7
    assert not error_toasts(page) and not page.errors


def test_the_hosts_own_settings_raise_no_warning(browser, app_url):
    """A Space opens its frame with ?__theme=dark (and __sign=... when private): no toast about them."""
    page = new_page(browser)
    page.add_init_script("window.__toasts = []; new MutationObserver(() => document.querySelectorAll('.toast-body').forEach(t => {"
                         " if (!t.__seen) { t.__seen = true; window.__toasts.push(t.innerText); } }))"
                         ".observe(document, {subtree: true, childList: true});")
    page.goto(app_url + "/?__theme=dark&__sign=x&temperature=0.35")
    # the link was read (its one setting is on screen); a warning would have come in the same answer
    page.wait_for_function("() => Number(document.querySelector('#temperature input[type=number]')?.value) === 0.35", timeout=60_000)
    page.wait_for_timeout(1000)
    assert not [t for t in page.evaluate("window.__toasts") if "not all used" in t or "__" in t]
    assert not error_toasts(page) and not page.errors

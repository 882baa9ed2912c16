"""The app in a real browser: what a person does, checked on what the page shows.

One app process (the embedded SmolLM2-135M) for the whole module; each test opens its own
page, which is its own Gradio session.
"""
from __future__ import annotations

import json
import time

import pytest

from pipeline.trace import files as trace_io
from viz.panels import STEP_IDS

from .harness import (ROOT, chip_counts, click_when, error_toasts, n_generated_chips, open_page, output_text, plot_data, plot_title,
                      record_chip_counts, set_number, slider_max, slider_value, wait_model_loaded, wait_plot_step)

pytestmark = pytest.mark.browser


def _generate(page, prompt: str, *, max_new: int, temperature=None, mode: str | None = None, wait_done=True):
    wait_model_loaded(page)
    if mode:
        page.get_by_label(mode).check()
    page.fill("#prompt textarea", prompt)
    set_number(page, "max-new-tokens", max_new)
    if temperature is not None:
        set_number(page, "temperature", temperature)
    mark_stale(page)
    page.click("#generate")
    if wait_done:
        wait_stopped(page)


def mark_stale(page):
    """Tag what the output shows now, so waits see only what the next generation draws."""
    page.evaluate("() => document.querySelectorAll('#output *').forEach(e => e.classList.add('stale'))")


def wait_stopped(page, timeout_ms=180_000):
    page.wait_for_selector("#output .stop-reason:not(.stale)", timeout=timeout_ms)
    # the final full redraw (`finish`) enables the download button
    page.wait_for_function("() => !document.querySelector('#download-trace').disabled", timeout=60_000)
    wait_viewer(page)


def wait_viewer(page, timeout_ms=300_000):
    """Until the page's step viewer holds the trace on screen (its bundle follows a run's end): from then
    on the step and sampling sliders redraw the step panels in the page."""
    # one step (e.g. an end of sequence at once): the slider shows 0..1, locked (ui/views.py's slider), so its max is no count
    page.wait_for_function(
        "() => { const r = document.querySelector('#step-slider input[type=range]');"
        " const n = r.disabled ? 1 : Number(r.max) + 1;"
        " return window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle.n_steps === Math.min(n, 256); }",
        timeout=timeout_ms)


def wait_dist_changed(page, before: list[float], timeout_ms=10_000):
    page.wait_for_function(
        "(a) => { const el = document.querySelector('#dist-plot .js-plotly-plot');"
        " const t = el && el.data && el.data.find(t => t.name && t.name.includes('sampled from'));"
        " if (!t) return false; const x = Array.from(t.x);"
        " return x.length !== a.length || x.some((v, i) => Math.abs(v - a[i]) > 1e-6); }", arg=before, timeout=timeout_ms)


def _dist_final_probs(page) -> list[float]:
    data = plot_data(page, "dist-plot")
    final = [t for t in data if t["name"] and "sampled from" in t["name"]]
    assert final, [t["name"] for t in data]
    return [float(x) for x in final[0]["x"]]


def test_generate_streams_tokens_and_every_panel_renders(browser, app_url, shots):
    page = open_page(browser, app_url)
    wait_model_loaded(page)
    page.fill("#prompt textarea", "Write a short poem about the sea.")
    set_number(page, "max-new-tokens", 40)
    set_number(page, "temperature", 0)
    mark_stale(page)
    record_chip_counts(page)  # (counted by the page as it draws them: a poll from here misses some on a busy machine)
    page.click("#generate")
    wait_stopped(page)
    counts = sorted(set(c for c in chip_counts(page) if c > 0))
    assert len(counts) >= 5, f"the output did not stream: chip counts seen {counts}"
    assert n_generated_chips(page) >= 20
    assert "stopped:" in page.inner_text("#output")
    page.screenshot(path=str(shots / "app-after-generate.png"), full_page=True)

    n = slider_max(page)
    assert slider_value(page) == n >= 20
    # every panel has drawn for the last step
    for pid in STEP_IDS:
        assert plot_data(page, pid), pid
    assert f"step {n}" in plot_title(page, "attn-plot")
    assert f"step {n}" in plot_title(page, "emb-plot")
    tokens = page.inner_text("#panel-tokens")
    assert "<|im_start|>" in tokens and "Write" in tokens  # the chat template is shown
    assert "GPT-4 (cl100k_base)" in tokens and "GPT-4o (o200k_base)" in tokens and "(this model)" in tokens
    assert "prefill" in page.inner_text("#panel-kv")
    assert not page.errors


def test_temperature_and_top_p_reshape_the_distribution_without_the_model(browser, app_url):
    page = open_page(browser, app_url)
    _generate(page, "The capital of France is", max_new=6, temperature=0.7, mode="Raw text")
    text_before = output_text(page)
    p07 = _dist_final_probs(page)
    set_number(page, "temperature", 1.5)
    wait_dist_changed(page, p07)
    p15 = _dist_final_probs(page)
    assert max(p15) < max(p07)  # a higher temperature flattens the distribution
    set_number(page, "top-p", 0.3)
    wait_dist_changed(page, p15)
    p_top = _dist_final_probs(page)
    assert sum(1 for x in p_top if x > 0) < sum(1 for x in p15 if x > 0)  # top-p removed candidates
    assert output_text(page) == text_before  # nothing was generated again
    assert not page.errors


def test_step_slider_scrubs_every_panel(browser, app_url):
    page = open_page(browser, app_url)
    _generate(page, "One, two, three,", max_new=8, temperature=0, mode="Raw text")
    n = slider_max(page)
    assert n >= 3
    set_number(page, "step-slider", 1)
    wait_plot_step(page, "attn-plot", 1, timeout_ms=15_000)
    # the rest of the panels follow in a second part
    wait_plot_step(page, "emb-plot", 1, timeout_ms=15_000)
    assert "step 1 " in plot_title(page, "attn-overview")
    # the text panels follow in the page too
    page.wait_for_function("() => document.querySelector('#kv-summary').innerText.includes('step 1')", timeout=15_000)
    page.wait_for_function("() => document.querySelectorAll('#output span.step:not(.stale):not([hidden])').length === 2", timeout=15_000)
    assert n_generated_chips(page) == 2  # the output shows steps 0 and 1 only
    assert "stopped:" not in page.inner_text("#output")
    set_number(page, "step-slider", n)
    page.wait_for_selector("#output .stop-reason", timeout=15_000)
    assert not page.errors


def test_stop_mid_generation_keeps_the_steps(browser, app_url):
    page = open_page(browser, app_url)
    _generate(page, "Tell me a long story about a dragon.", max_new=300, temperature=0.8, wait_done=False)
    # Stop at the moment the fifth chip shows (a click sent from here after a check can come after the run has ended)
    click_when(page, "document.querySelectorAll('#output span.step:not(.stale)').length >= 5", "#stop")
    page.wait_for_function("() => !document.querySelector('#download-trace').disabled", timeout=30_000)
    wait_viewer(page)
    time.sleep(1.0)
    n1 = n_generated_chips(page)
    time.sleep(3.0)
    assert n_generated_chips(page) == n1, "generation went on after Stop"
    assert 5 <= n1 < 100
    seen = page.evaluate("() => ({step: LLMApp.state.step, n: LLMApp.state.bundle && LLMApp.state.bundle.n_steps, value: LLMValues.step(),"
                         " hidden: document.querySelectorAll('#output span.step[hidden]').length,"
                         " stale: document.querySelectorAll('#output span.step.stale').length})")
    assert slider_max(page) == n1 - 1, seen  # every step on screen is in the trace
    # the steps so far stay explorable
    assert slider_max(page) >= n1 - 1
    set_number(page, "step-slider", 2)
    wait_plot_step(page, "attn-plot", 2, timeout_ms=15_000)  # (not 'step 2', which 'step 24' holds)
    assert not page.errors and not error_toasts(page)


def test_generate_during_a_run_restarts_with_the_new_prompt(browser, app_url):
    """Generate clicked while a run streams is never dropped: the run stops and the prompt now in the box
    runs (Gradio's default for a click drops it while the last is pending; issue 23's cold-start race)."""
    page = open_page(browser, app_url)
    _generate(page, "Tell me a long story about a dragon.", max_new=300, temperature=0.8, wait_done=False)
    page.wait_for_function("() => document.querySelectorAll('#output span.step:not(.stale)').length >= 3", timeout=120_000)
    page.get_by_label("Raw text").check()
    page.fill("#prompt textarea", "The capital of France is")
    set_number(page, "max-new-tokens", 3)
    set_number(page, "temperature", 0)
    mark_stale(page)
    t0 = time.perf_counter()
    page.click("#generate")
    page.wait_for_function("() => (document.querySelector('#output .gen-text:not(.stale)')?.innerText || '').includes('Paris')",
                           timeout=60_000)
    answered_s = time.perf_counter() - t0
    wait_stopped(page, timeout_ms=60_000)
    time.sleep(2.0)  # whatever the cancelled run still had on its way has landed by now
    assert "Paris" in page.inner_text("#output .gen-text") and "dragon" not in page.inner_text("#output .gen-text").lower()
    assert slider_max(page) == 2, "the page shows the new run's 3 steps, not the cancelled run's"
    assert "maximum number of new tokens" in page.inner_text("#output .stop-reason")
    assert not page.errors and not error_toasts(page)
    print(f"the new prompt's first token {answered_s:.1f} s after the click")


def test_one_token_per_click_in_step_mode(browser, app_url):
    page = open_page(browser, app_url)
    wait_model_loaded(page)
    page.get_by_label("Raw text").check()
    page.fill("#prompt textarea", "Once upon a time")
    set_number(page, "temperature", 0)
    mark_stale(page)
    page.click("#step")
    page.wait_for_function("() => document.querySelectorAll('#output span.step:not(.stale)').length === 1", timeout=60_000)
    page.wait_for_function("() => !document.querySelector('#download-trace').disabled", timeout=30_000)
    first = page.inner_text("#output .gen-text")
    page.click("#step")
    page.wait_for_function("() => document.querySelectorAll('#output span.step:not(.stale)').length === 2", timeout=60_000)
    second = page.inner_text("#output .gen-text")
    assert second.startswith(first) and len(second) > len(first)  # the same first token, then one more
    assert not page.errors


def _files(folder) -> set:
    return {p for p in folder.rglob("trace-*") if p.is_file()}


def read_trace_file(path):
    assert path.name.endswith(".json.gz") and path.read_bytes()[:2] == b"\x1f\x8b"  # gzip, as trace_io writes it
    return trace_io.load(path)


def test_download_and_reload_a_trace(browser, app_url, tmp_path, download_dir):
    page = open_page(browser, app_url)
    before = _files(download_dir)
    _generate(page, "Name three colours.", max_new=10, temperature=0)
    text = page.inner_text("#output .gen-text")
    # the button is ready, and no file was made: the logit lens of every step is computed on the click
    assert not page.locator("#download-trace").is_disabled()
    assert _files(download_dir) == before
    with page.expect_download() as dl:
        page.click("#download-trace")
    made = _files(download_dir)
    assert len(made - before) == 1
    path = tmp_path / dl.value.suggested_filename
    dl.value.save_as(path)
    trace = read_trace_file(path)  # the pipeline's own format, readable by the CLI too
    assert [r.step for r in trace.lens] == [s.index for s in trace.steps]
    assert trace.prompt.text == "Name three colours."
    assert trace.text == text.replace("\u00a0", " ") or trace.text.strip() == text.strip()

    other = open_page(browser, app_url)  # a new session: the example trace is on screen
    with other.expect_file_chooser() as fc:
        other.click("#upload-trace")
    fc.value.set_files(str(path))
    other.wait_for_function("(t) => document.querySelector('#output .gen-text')?.innerText === t", arg=text, timeout=30_000)
    assert slider_max(other) == len(trace.steps) - 1
    assert "Viewing a saved trace" in other.inner_text("#model-info")
    assert not other.locator("#download-trace").is_disabled()  # a loaded trace can be downloaded again
    assert _files(download_dir) == made  # loading a trace writes no file either
    assert not other.errors and not error_toasts(other) and not error_toasts(page)


def test_malformed_trace_file_gives_a_message(browser, app_url, tmp_path):
    page = open_page(browser, app_url)
    # the output's own text (Gradio's progress timer of a pending event is drawn inside #output too)
    shown = "() => Array.from(document.querySelectorAll('#output .gen-text, #output .stop-reason')).map(e => e.innerText).join('|')"
    before = page.evaluate(shown)
    assert before  # the example trace is on screen
    bad = tmp_path / "notes.json"
    bad.write_text(json.dumps({"hello": "world"}))
    with page.expect_file_chooser() as fc:
        page.click("#upload-trace")
    fc.value.set_files(str(bad))
    page.wait_for_selector("text=Could not read that trace", timeout=15_000)
    assert page.evaluate(shown) == before  # the page stays as it was
    assert "Error" not in page.inner_text("#panel-distribution")
    assert not page.errors


def test_markup_in_a_prompt_is_shown_as_text(browser, app_url):
    page = open_page(browser, app_url)
    evil = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
    _generate(page, evil, max_new=4, temperature=0, mode="Raw text")
    assert page.evaluate("() => window.__pwned") is None
    assert page.query_selector("#panel-tokens img") is None and page.query_selector("#output img") is None
    tokens = page.inner_text("#panel-tokens")
    assert "<img" in tokens and "script" in tokens
    assert page.input_value("#prompt textarea") == evil  # what was typed is kept
    assert not page.errors


def test_bad_input_warns_and_keeps_what_was_typed(browser, app_url):
    page = open_page(browser, app_url)
    wait_model_loaded(page)
    page.fill("#prompt textarea", "   ")
    page.click("#generate")
    page.wait_for_selector("text=The prompt is empty", timeout=15_000)
    page.fill("#prompt textarea", "A prompt worth keeping")
    set_number(page, "seed", -3)
    page.click("#generate")
    # the warning itself (not 'seed', which the field's label holds)
    page.wait_for_selector(".toast-body.warning:has-text('The seed must be a whole number, 0 or more, not -3')", timeout=15_000)
    assert page.input_value("#prompt textarea") == "A prompt worth keeping"
    # the example stays on screen with its step slider (a refused run changes nothing)
    assert slider_max(page) == 39 and slider_value(page) == 39
    assert not page.errors and not error_toasts(page)


def test_two_sessions_do_not_block_each_other(browser, app_url):
    a = open_page(browser, app_url)
    b = open_page(browser, app_url)
    _generate(a, "Explain photosynthesis in detail.", max_new=120, temperature=0.7, wait_done=False)
    a.wait_for_function("() => document.querySelectorAll('#output span.step:not(.stale)').length >= 3", timeout=120_000)
    # while A generates, B scrubs its own (example) trace and gets an answer quickly
    t = time.perf_counter()
    set_number(b, "step-slider", 3)
    wait_plot_step(b, "attn-plot", 3, timeout_ms=20_000)  # (not 'step 3', which the example's 'step 39' holds)
    assert time.perf_counter() - t < 20
    assert "sky" in b.inner_text("#panel-tokens")  # B still sees its own trace, not A's
    assert not a.query_selector("#output .stop-reason:not(.stale)")
    a.click("#stop")
    assert not a.errors and not b.errors


def test_resample_from_the_step_on_screen_keeps_the_steps_before_it(browser, app_url):
    page = open_page(browser, app_url)
    _generate(page, "The three primary colours are", max_new=10, temperature=0, mode="Raw text")
    before = [page.evaluate(f"() => document.querySelectorAll('#output span.step')[{i}].innerText") for i in range(3)]
    set_number(page, "step-slider", 3)
    page.wait_for_function("() => document.querySelectorAll('#output span.step:not([hidden])').length === 4", timeout=15_000)
    set_number(page, "temperature", 1.8)
    set_number(page, "seed", 7)
    mark_stale(page)
    page.click("#resample")
    wait_stopped(page)
    after = [page.evaluate(f"() => document.querySelectorAll('#output span.step')[{i}].innerText") for i in range(3)]
    assert after == before  # steps 0..2 kept as they were; step 3 on is drawn anew at temperature 1.8
    assert slider_max(page) == 9
    assert not page.errors


def test_play_moves_through_the_steps_and_pauses(browser, app_url):
    page = open_page(browser, app_url)  # the example trace is on screen
    set_number(page, "step-slider", 2)
    page.wait_for_function("() => document.querySelectorAll('#output span.step:not([hidden])').length === 3", timeout=15_000)
    page.click("#play")
    page.wait_for_function("() => parseInt(document.querySelector('#step-slider input[type=number]').value) >= 4", timeout=30_000)
    page.wait_for_selector("#play:has-text('Pause')", timeout=10_000)
    page.click("#play")
    page.wait_for_selector("#play:has-text('Play')", timeout=10_000)
    time.sleep(1.5)
    v = slider_value(page)
    time.sleep(2.0)
    assert slider_value(page) == v  # paused
    assert not page.errors


def test_the_prompt_has_the_focus_once_and_keeps_only_what_was_typed_into_it(browser, app_url):
    page = open_page(browser, app_url)
    page.wait_for_function("() => document.activeElement && document.activeElement.closest('#prompt') !== null", timeout=20_000)
    # a change to the prompt, then another field takes the focus: the prompt must not pull it back
    stays = page.evaluate("""async () => {
        const box = document.querySelector('#prompt textarea'), num = document.querySelector('#max-new-tokens input[type=number]');
        box.value = 'a changed prompt'; box.dispatchEvent(new Event('input', {bubbles: true}));
        num.focus();
        await new Promise(r => setTimeout(r, 800));
        return document.activeElement === num; }""")
    assert stays, "the prompt box took the focus back from another field"
    page.click("#prompt textarea")
    page.keyboard.press("End")
    page.keyboard.type(" typed")
    assert page.input_value("#prompt textarea") == "a changed prompt typed"
    for i in range(20):  # typing in the prompt, then straight away in another field: no keystroke strays back
        text = f"prompt number {i} " + "word " * (i * 4)
        page.fill("#prompt textarea", text)
        set_number(page, "max-new-tokens", 4 + i)
        assert page.input_value("#prompt textarea") == text
        assert page.input_value("#max-new-tokens input[type=number]") == str(4 + i)
    assert not page.errors


def test_enter_in_the_prompt_generates_and_a_too_long_prompt_is_refused(browser, app_url):
    page = open_page(browser, app_url)
    wait_model_loaded(page)
    page.get_by_label("Raw text").check()
    set_number(page, "max-new-tokens", 3)
    page.fill("#prompt textarea", "Hello there")
    mark_stale(page)
    page.press("#prompt textarea", "Enter")
    wait_stopped(page, timeout_ms=60_000)
    assert n_generated_chips(page) >= 1
    long = "word " * 3000  # about 3000 tokens: more than this page draws
    page.fill("#prompt textarea", long)
    page.click("#generate")
    page.wait_for_selector("text=this page takes up to", timeout=30_000)
    assert page.input_value("#prompt textarea") == long
    assert not page.errors


def test_speculative_mode_shows_rounds_and_gives_the_greedy_text(browser, app_url, shots):
    page = open_page(browser, app_url)
    _generate(page, "Repeat this list exactly: red, green, blue, yellow, purple, orange.", max_new=16, temperature=0)
    plain_text = page.inner_text("#output .gen-text")
    page.click("#speculative-settings")  # open the accordion
    page.get_by_label("Speculative decoding: a cheap draft proposes, the model checks").check()
    set_number(page, "spec-k", 3)
    assert page.input_value("#spec-draft input") == "ngram"  # the default draft: prompt lookup
    mark_stale(page)
    page.click("#generate")
    wait_stopped(page)
    assert page.inner_text("#output .gen-text") == plain_text  # greedy: exactly the model's own text
    page.wait_for_selector("#spec-summary :text('Measured on this machine')", timeout=120_000)
    summary = page.inner_text("#spec-summary")
    assert "tested proposals" in summary and "tokens per target forward pass" in summary and "prompt lookup" in summary
    assert "expects" in summary and "draft" in summary and "verify" in summary
    rounds = page.query_selector_all("#spec-rounds .spec-round")
    assert len(rounds) >= 2
    assert page.query_selector("#spec-rounds .spec-accepted") is not None
    assert "copied from position" in page.inner_text("#spec-rounds .spec-lookup >> nth=0")
    # the cost curve, measured on the machine this page was made on: drawn by the page once it scrolls into view
    page.locator("#spec-cost-plot").scroll_into_view_if_needed()
    page.wait_for_selector("#spec-cost-plot .js-plotly-plot .main-svg", timeout=10_000)
    assert plot_data(page, "spec-cost-plot")
    page.locator("#panel-speculative").screenshot(path=str(shots / "speculative.png"))
    # a draft typed in: the model's own first 12 layers
    page.fill("#spec-draft input", "layers:12")
    page.press("#spec-draft input", "Enter")
    mark_stale(page)
    page.click("#generate")
    wait_stopped(page)
    assert page.inner_text("#output .gen-text") == plain_text
    page.wait_for_selector("#spec-summary :text('first 12')", timeout=120_000)
    # no per-pass accounting of steps that were not one pass each
    page.locator("#panel-inside").scroll_into_view_if_needed()
    page.click("#tab-accounting-button")
    page.wait_for_selector("#accounting-summary :text('This generation was speculative')", timeout=30_000)
    assert page.query_selector("#accounting-plot .js-plotly-plot") is None
    assert not page.errors


def test_the_model_line_names_the_weights_real_precision(browser, app_url):
    page = open_page(browser, app_url)
    wait_model_loaded(page)
    # one plain sentence; the details behind "The model in detail"
    line = page.inner_text("#model-info")
    assert "135-million parameters" in line and "running on this server" in line and "Q4_1" not in line, line
    page.click("#model-info summary")
    line = page.inner_text("#model-info")
    assert "Q4_1" in line and "dequantised" in line, line  # the embedded model is 4-bit, computed in float32
    assert "parameters, float32" not in line
    # the example trace was saved before traces recorded the weights: loaded, it is named as the loaded file
    with page.expect_file_chooser() as fc:
        page.click("#upload-trace")
    fc.value.set_files(str(ROOT / "assets" / "example_trace.json.gz"))
    page.wait_for_selector("#model-info :text('Viewing a saved trace')", timeout=30_000)
    page.click("#model-info summary")
    line = page.inner_text("#model-info")
    assert "Q4_1" in line and "parameters, float32" not in line, line
    assert not page.errors and not error_toasts(page)


@pytest.mark.parametrize("words", [600, 2000])
def test_a_prompt_longer_than_the_stored_attention_matrix_runs_and_every_panel_draws(browser, app_url, words):
    """Between 513 tokens (the prefill's T x T attention is stored up to 512) and the page's limit of 2048."""
    page = open_page(browser, app_url)
    _generate(page, "word " * words, max_new=3, temperature=0, mode="Raw text")
    assert slider_max(page) == 2
    for pid in STEP_IDS:
        assert plot_data(page, pid), pid
    tokens = int(page.evaluate("() => document.querySelector('#kv-summary').innerText.match(/([0-9,]+) positions/)[1].replace(/,/g, '')"))
    assert 512 < tokens <= 2048 + 3
    set_number(page, "step-slider", 0)  # the prefill step: the prompt's own attention
    wait_plot_step(page, "attn-plot", 0)
    wait_plot_step(page, "emb-plot", 0)
    assert not page.errors and not error_toasts(page)

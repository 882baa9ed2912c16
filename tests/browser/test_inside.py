"""The "Inside the model" section, the branches and the guided tour, in a real browser.

Shares the one app process of this directory (conftest.py). Each test opens its own page.
"""
from __future__ import annotations

import gzip
import re
import json

import pytest

from .harness import into_view, open_page, plot_data, plot_title, set_number, slider_max, wait_plot_step
from .test_app import _generate, mark_stale, wait_stopped

pytestmark = pytest.mark.browser


def _tab(page, key: str):
    page.locator("#panel-inside").scroll_into_view_if_needed()
    page.click(f"#tab-{key}-button")


def _wait_title(page, elem_id: str, text: str, timeout_ms: int = 30_000):
    page.wait_for_function(
        "([id, t]) => { const el = document.querySelector('#' + id + ' .js-plotly-plot');"
        " const s = el && el.layout && el.layout.title; return !!s && (s.text || String(s)).includes(t); }",
        arg=[elem_id, text], timeout=timeout_ms)


def _scrub(page, step: int):
    page.evaluate("([id, v]) => { const r = document.querySelector('#' + id + ' input[type=range]'); r.value = v;"
                  " r.dispatchEvent(new Event('input', {bubbles: true})); }", ["step-slider", step])


def _vals(v) -> list:
    """Plotly data as a list: numpy arrays reach the browser as typed arrays, which JSON writes as {index: value}."""
    if isinstance(v, dict):
        v = v.get("_inputArray", v)
        return [v[k] for k in sorted((k for k in v if k.isdigit()), key=int)]
    return list(v)


def _raw_prob_of_sampled(page) -> float:
    """The model's own probability of the sampled token, read off the distribution panel."""
    raw = next(t for t in plot_data(page, "dist-plot") if t["name"] and "raw" in t["name"])
    k = next(i for i, lab in enumerate(_vals(raw["y"])) if "sampled" in lab)
    return float(_vals(raw["x"])[k])


def test_the_inside_tabs_follow_the_step_and_agree_with_the_distribution(browser, app_url):
    page = open_page(browser, app_url, width=1440, height=1100)
    _generate(page, "The capital of France is", max_new=6, temperature=0, mode="Raw text")
    last = slider_max(page)
    # 1. logit lens: its last row is the model's own output, so the chosen token's probability there is the
    #    distribution panel's raw probability (two computations: norm + head on the captured residual, and the logits)
    _tab(page, "lens")
    wait_plot_step(page, "lens-plot", last)
    chosen = next(t for t in plot_data(page, "lens-plot") if t["name"] == "chosen token's probability")
    assert len(_vals(chosen["x"])) == 31  # the embedding and 30 layers
    assert _vals(chosen["x"])[-1] == pytest.approx(_raw_prob_of_sampled(page), abs=2e-3)
    assert "becomes the top prediction" in page.inner_text("#lens-summary")
    _scrub(page, 2)
    wait_plot_step(page, "lens-plot", 2)
    # 2. residual stream and the two blocks' contributions
    _tab(page, "residual")
    wait_plot_step(page, "residual-plot", 2)
    wait_plot_step(page, "contributions-plot", 2)
    bars = [t for t in plot_data(page, "contributions-plot") if t["type"] == "bar"]
    assert len(bars) == 2 and all(len(_vals(b["y"])) == 30 and min(_vals(b["y"])) > 0 for b in bars)
    # 3. position: RoPE angles, then swap two words of the prompt
    _tab(page, "position")
    _wait_title(page, "position-plot", "RoPE")
    page.click("#swap-button")
    _wait_title(page, "swap-plot", "Swap", timeout_ms=60_000)
    assert "⇄" in plot_title(page, "swap-plot")
    # 4. compute and memory: a decode step is memory-bound on a CPU
    _tab(page, "accounting")
    page.wait_for_selector("#accounting-summary :text('step 2')", timeout=30_000)
    assert "memory-bound" in page.inner_text("#accounting-summary")
    # 5. sampling side by side: three columns of exact probabilities and draws
    _tab(page, "sampling")
    _wait_title(page, "sampling-plot", "3 settings")
    assert len([t for t in plot_data(page, "sampling-plot") if t["type"] == "bar"]) == 6
    # 6. bytes and 7. context: counts of this generation
    _tab(page, "bytes")
    page.wait_for_selector("#bytes-html :text('bytes of text')", timeout=30_000)
    _tab(page, "context")
    page.wait_for_selector("#context-summary :text('tokens used')", timeout=30_000)
    set_number(page, "price-in", 2.5)
    page.wait_for_selector("#context-summary :text('× $2.50 per million')", timeout=30_000)
    assert page.errors == []


def test_kv_cache_with_and_without_give_the_same_logits(browser, app_url):
    page = open_page(browser, app_url, width=1440, height=1100)
    _generate(page, "One, two, three, four,", max_new=5, temperature=0, mode="Raw text")
    _tab(page, "kvc")
    page.click("#kvc-button")
    page.wait_for_selector("#kvc-summary :text('same top token')", timeout=60_000)
    text = page.inner_text("#kvc-summary")
    assert "tokens processed" in text and "multiply-adds" in text
    diff = float(re.search(r"whole vocabulary: ([0-9.e+-]+)", text).group(1))  # the largest logit difference shown
    assert diff < 1e-3
    _wait_title(page, "kvc-plot", "With vs without")


def test_clicking_a_candidate_bar_branches_and_both_branches_stay(browser, app_url):
    page = open_page(browser, app_url, width=1440, height=1100)
    _generate(page, "My favourite colour is", max_new=6, temperature=0, mode="Raw text")
    original = page.inner_text("#output")
    last_title = plot_title(page, "dist-plot")
    _scrub(page, 1)
    # step 1's distribution drawn (another title than the last step's) and the page's click handler on it
    page.wait_for_function("(t) => { const el = document.querySelector('#dist-plot .js-plotly-plot');"
                           " const s = el && el.layout && el.layout.title; const x = s && (s.text || String(s));"
                           " return !!x && x !== t; }", arg=last_title, timeout=30_000)
    page.wait_for_function("() => document.querySelector('#step-slider input[type=number]').value === '1'")
    page.locator("#panel-distribution").scroll_into_view_if_needed()
    mark_stale(page)
    # the third candidate's bar (rank 3: not the greedy choice)
    page.locator("#dist-plot g.trace.bars").first.locator("path").nth(2).click(force=True)
    # the page asks first, naming the token and the step; nothing runs until yes
    page.wait_for_selector("#branch-confirm:not([hidden])", timeout=10_000)
    question = page.inner_text("#branch-confirm p")
    assert "rank 3" in question and "step 1" in question, question
    page.click("#branch-confirm-yes")
    wait_stopped(page)
    _tab(page, "branches")
    page.wait_for_selector("#branches .branch-row >> nth=1", timeout=30_000)
    rows = page.locator("#branches .branch-row")
    assert rows.count() == 2
    assert "the model's own choices" in rows.nth(0).inner_text()
    assert "step 1: forced" in rows.nth(1).inner_text()
    assert page.locator("#branches mark.forced").count() == 1
    branched = page.inner_text("#output")
    assert branched != original
    # at the fork, the distribution names the token as forced, not sampled
    _scrub(page, 1)
    into_view(page, "dist-plot")  # (the branches' tab is further down: the distribution is drawn as it is scrolled to)
    page.wait_for_function("() => { const el = document.querySelector('#dist-plot .js-plotly-plot');"
                           " return !!(el && el.data && el.data.some(t => Array.from(t.y || []).some(l => String(l).includes('◀ forced')))); }",
                           timeout=30_000)
    raw = next(t for t in plot_data(page, "dist-plot") if t["name"] and "raw" in t["name"])
    labels = [str(lab) for lab in _vals(raw["y"])]
    assert "◀ forced" in labels[2] and not any("◀ sampled" in lab for lab in labels)
    # back to the original branch: its text returns
    page.locator("#branch-pick label", has_text="A").click()
    page.wait_for_function("(t) => document.querySelector('#output').innerText === t", arg=original, timeout=30_000)


def test_the_tour_walks_through_the_stages_and_points_at_each_panel(browser, app_url):
    page = open_page(browser, app_url, width=1440, height=1100)
    _generate(page, "Hello", max_new=3, temperature=0, mode="Raw text")
    page.click("#tour")
    page.wait_for_selector("#tour-box :text('stage 1 of 8')", timeout=30_000)
    page.wait_for_selector("#panel-tokens.tour-focus", timeout=10_000)
    page.click("#tour-next")
    page.wait_for_selector("#tour-box :text('stage 2 of 8')", timeout=30_000)
    page.wait_for_selector("#panel-embeddings.tour-focus", timeout=10_000)
    assert page.locator(".tour-focus").count() == 1
    card, target = page.locator("#tour-panel").last.bounding_box(), page.locator("#panel-embeddings").bounding_box()
    assert card["x"] >= target["x"] + target["width"] - 2, (card, target)  # beside what it explains, not over it
    for _ in range(2):
        page.click("#tour-next")
    page.wait_for_selector("#tour-box :text('stage 4 of 8')", timeout=30_000)
    page.wait_for_selector("#panel-inside.tour-focus", timeout=10_000)
    page.click("#tour-end")
    page.wait_for_function("() => !document.querySelector('.tour-focus')", timeout=10_000)
    # again to the last stage: its button says Finish and ends the tour (Back is off on the first stage)
    page.click("#tour")
    page.wait_for_selector("#tour-box :text('stage 1 of 8')", timeout=30_000)
    assert page.locator("#tour-back").is_disabled()
    for n in range(2, 9):
        page.click("#tour-next")
        page.wait_for_selector(f"#tour-box :text('stage {n} of 8')", timeout=30_000)
    page.wait_for_function("() => document.querySelector('#tour-next').innerText.includes('Finish')", timeout=10_000)
    page.click("#tour-next")
    page.wait_for_selector("#tour-panel", state="hidden", timeout=10_000)
    assert not page.errors


def test_a_downloaded_trace_carries_the_logit_lens_and_shows_it_when_loaded(browser, app_url, tmp_path):
    page = open_page(browser, app_url, width=1440, height=1100)
    _generate(page, "Water boils at", max_new=4, temperature=0, mode="Raw text")
    with page.expect_download() as dl:
        page.click("#download-trace")
    path = tmp_path / dl.value.suggested_filename  # .json, or .json.gz once the trace format writes gzip
    dl.value.save_as(path)
    raw = path.read_bytes()
    d = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    assert [r["step"] for r in d["lens"]] == [s["index"] for s in d["steps"]]
    assert d["params"]["total"] > 100e6 and d["machine"]["memory_gb_s"] > 0
    # load it back (gzipped, as people share them): the lens comes from the file. A marker put
    # in the file's lens must reach the plot, so the test cannot pass on the lens drawn before
    d["lens"][-1]["top_pieces"][0][1] = "FILEMARK"
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(d).encode("utf-8")))
    with page.expect_file_chooser() as fc:
        page.click("#upload-trace")
    fc.value.set_files(str(gz))
    page.wait_for_selector("#model-info :text('Viewing a saved trace')", timeout=60_000)
    _tab(page, "lens")
    wait_plot_step(page, "lens-plot", len(d["steps"]) - 1)
    page.wait_for_function("() => { const el = document.querySelector('#lens-plot .js-plotly-plot');"
                           " return !!el && JSON.stringify([el.data, el.layout.annotations]).includes('FILEMARK'); }", timeout=30_000)
    assert "needs this step's hidden states" not in page.inner_text("#lens-summary")


def test_bad_values_in_the_inside_tabs_warn_and_the_page_stays_usable(browser, app_url):
    page = open_page(browser, app_url, width=1440, height=1100)
    _generate(page, "Cats and dogs", max_new=3, temperature=0, mode="Raw text")
    _tab(page, "position")
    set_number(page, "swap-i", 999)
    set_number(page, "swap-j", 1)
    page.click("#swap-button")
    page.wait_for_selector("text=is outside the prompt", timeout=30_000)
    _tab(page, "sampling")
    set_number(page, "cmp-p0", 0)  # top-p must be above 0
    page.click("#sampling-button")
    page.wait_for_selector("text=/top-p must be/i", timeout=30_000)
    # still usable: a valid value draws again
    set_number(page, "cmp-p0", 0.5)
    page.click("#sampling-button")
    page.wait_for_function("() => (document.querySelector('#sampling-plot .js-plotly-plot')?.layout?.annotations || [])"
                           ".some(a => (a.text || '').includes('top-p 0.5'))", timeout=30_000)
    assert page.errors == []

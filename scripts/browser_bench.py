"""How fast the page is, measured in a real browser against plain `model.generate`, side by side.

    .venv/bin/python scripts/browser_bench.py [--new-tokens 48] [--repeats 2]

Starts the app (embedded model) and headless Chromium, and alternates, `repeats` times:
plain `model.generate` (greedy, in this process) and the same greedy generation on the page,
timed in the browser from the moment each token's text appears. Then times the page's step
viewer (assets/app_viewer.js): a step slider move until the step panels on screen show the step (and all five), a
temperature / top-k / top-p move until the distribution is reshaped, with the requests sent meanwhile,
a mouse drag of the step slider (ms a move), and Play's steps per second; the longest main-thread task
while the temperature slider is dragged from the moment a run ends; the step slider in a 1440x1800
window scrolled to the distribution: until the panels on screen show the step, and until all five do. Prints medians, ratios and a table; nothing here is a
pass/fail test.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.browser_kit import (CHROMIUM_FLAGS, app_server, chromium_path, open_page, set_number,  # noqa: E402
                                slider_max, wait_model_loaded)

PROMPT = "Tell me a long story about a brave little robot."

OBSERVE = """() => { window.__t = []; const o = document.querySelector('#output');
  document.querySelectorAll('#output *').forEach(e => e.classList.add('stale'));
  window.__t0 = performance.now(); window.__tclick = null;
  document.querySelector('#generate').addEventListener('pointerdown', () => { window.__tclick = performance.now() - window.__t0; },
    {capture: true, once: true});
  new MutationObserver(() => { const n = o.querySelectorAll('span.step:not(.stale)').length;
    const last = window.__t[window.__t.length - 1]; if (!last || last[1] !== n) window.__t.push([performance.now() - window.__t0, n]); })
  .observe(o, {childList: true, subtree: true, characterData: true}); }"""


def plain_generate(lm, n: int) -> tuple[float, float]:
    """(prefill seconds, decode tokens per second) of plain greedy `generate`."""
    import torch

    enc = lm.tokens.encode_prompt(PROMPT, chat=True, system_prompt=None)
    ids = torch.tensor([enc.ids])
    kw = dict(do_sample=False, pad_token_id=lm.tokenizer.eos_token_id, eos_token_id=None)
    with torch.inference_mode():
        prefill = float("inf")
        for _ in range(3):  # the quickest of three: the prefill itself, not what else ran then
            t = time.perf_counter()
            lm.model.generate(ids, max_new_tokens=1, min_new_tokens=1, **kw)
            prefill = min(prefill, time.perf_counter() - t)
        t = time.perf_counter()
        out = lm.model.generate(ids, max_new_tokens=n, min_new_tokens=n, **kw)
        total = time.perf_counter() - t
    made = out.shape[1] - ids.shape[1]
    return prefill, (made - 1) / max(total - prefill, 1e-9)


def at_rest(page) -> None:
    """Until the page is at rest, as a person finds it: the last run's viewer on screen and the server
    done with it (clicking the moment the stop line shows measures that run's finishing work too:
    about 0.6 s more; plain generate run then shares the cores with it)."""
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=600_000)
    page.wait_for_timeout(1000)


def page_generate(page, n: int, live: bool) -> tuple[float, float, int]:
    """(click to first token s, decode tokens per second seen in the browser, tokens). The click is the
    moment the button is pressed (pointerdown), not when Playwright starts its checks before it."""
    box = page.locator("#live-figures input")
    if box.is_checked() != live:
        box.click()
    at_rest(page)
    page.evaluate(OBSERVE)
    page.click("#generate")
    page.wait_for_selector("#output .stop-reason:not(.stale)", timeout=600_000)
    log, t_click = page.evaluate("[window.__t, window.__tclick]")
    if t_click is None:
        raise RuntimeError("the press on Generate was not seen (the button was drawn anew before the click)")
    times = {k: t for t, k in log if k > 0}
    first, last = min(times), max(times)
    return (times[first] - t_click) / 1000, (last - first) / max((times[last] - times[first]) / 1000, 1e-9), last


# One move of a slider as a drag makes it, then until the page's viewer shows it (every step panel it draws: those
# within a screen of the screen, assets/app_viewer.js; viz.panels): milliseconds in the browser's own clock.
# A slider moved: [ms until every panel drawn shows it, each panel's step then (null: not drawn), the step, ms until
# those on screen did]
MOVE = """async ([id, v]) => { const r = document.querySelector('#' + id + ' input[type=range]');
  const t0 = performance.now(); r.value = v; r.dispatchEvent(new Event('input', {bubbles: true}));
  let seen = null; LLMApp.onScreen().then(() => { seen = performance.now() - t0; });
  const s = await LLMApp.settled(); const ms = performance.now() - t0;
  const ids = window.LLMAppPanels;
  return [ms, ids.map(i => document.querySelector('#' + i + ' .js-plotly-plot')?.layout?.meta?.step ?? null), s, seen === null ? ms : seen]; }"""
# Play with the distribution panel at the top of the window, as a class would watch it: the panels on
# screen follow every step they can; the steps they showed, per second, and which panels they were
# (at the "fast" speed: 12 steps a second at most, the viewer's own pace).
PLAY = """async () => { document.querySelector('#panel-distribution').scrollIntoView();
  await new Promise(ok => setTimeout(ok, 500));
  const seen = new Set(); let panels = null;
  const on = (e) => { if (!LLMApp.playing()) return; seen.add(e.detail.step);
    panels = panels === null ? e.detail.shown : panels.filter(p => e.detail.shown.includes(p)); };
  document.addEventListener('llmapp:rendered', on); const t0 = performance.now();
  document.querySelector('#play').click();
  while (LLMApp.playing()) await new Promise(ok => setTimeout(ok, 20));
  const secs = (performance.now() - t0) / 1000;
  await LLMApp.settled(); document.removeEventListener('llmapp:rendered', on);
  return [seen.size, secs, panels || []]; }"""


def drag_times(page, moves: int = 40) -> tuple[float, int]:
    """The step slider dragged with the mouse, at the top of the page as a person finds it: ms per move
    (each move waits until the page has taken it), and how many moves the highlighted token followed."""
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_timeout(300)
    box = page.locator("#step-slider input[type=range]").bounding_box()
    y = box["y"] + box["height"] / 2
    seen = "() => Number(document.querySelector('#tokens-html .tok.hl')?.dataset.step)"
    page.mouse.move(box["x"] + 2, y)
    page.mouse.down()
    shown, t = set(), time.perf_counter()
    for i in range(moves):
        page.mouse.move(box["x"] + 2 + (box["width"] - 4) * (i + 1) / moves, y)
        shown.add(page.evaluate(seen))
    ms = (time.perf_counter() - t) * 1000 / moves
    page.mouse.up()
    page.evaluate("() => LLMApp.settled()")
    return ms, len(shown)


LONG_TASKS = """() => { window.__long = []; new PerformanceObserver((l) => { window.__long.push(...l.getEntries().map(e => [e.startTime, e.duration])); })
  .observe({type: 'longtask'}); }"""


def after_run(page, n: int, reps: int = 3) -> dict[str, list[float]]:
    """A run of `n` tokens, then the temperature slider dragged with the mouse from the moment its stop line shows
    (as an impatient person does, while the page takes in the run's end): the longest main-thread task from
    that moment to 2 s after letting go, the ms a drag move took (each waits until the page has taken it)."""
    out = {"after_run_longest_ms": [], "after_run_move_ms": []}
    page.evaluate(LONG_TASKS)
    for _ in range(reps):
        at_rest(page)
        page.evaluate(OBSERVE)
        page.click("#generate")
        page.wait_for_selector("#output .stop-reason:not(.stale)", timeout=600_000)
        t0 = page.evaluate("() => performance.now()")
        box = page.locator("#temperature input[type=range]").bounding_box()
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + 5, y)
        page.mouse.down()
        for i in range(30):
            t = time.perf_counter()
            page.mouse.move(box["x"] + 5 + (box["width"] - 10) * ((i * 7) % 30) / 30, y)
            page.evaluate("() => 0")  # (answered once the page's thread is free)
            out["after_run_move_ms"].append((time.perf_counter() - t) * 1000)
            page.wait_for_timeout(100)
        page.mouse.up()
        page.wait_for_timeout(2000)
        out["after_run_longest_ms"].append(page.evaluate("(t0) => Math.max(0, ...window.__long.filter(([s]) => s >= t0).map(([, d]) => d))", t0))
    return out


def tall_scrub(browser, url: str, reps: int = 20) -> dict[str, list[float]]:
    """The step slider moved in a 1440x1800 window scrolled to the distribution, the step panels on screen (at
    least in part: how many is printed): ms until they show the step, ms until all those within a screen of it do
    (drawn after; one further away is drawn once scrolled near), and the requests sent meanwhile (the example trace)."""
    from scripts.browser_kit import open_page

    page = open_page(browser, url, record_toasts=False, width=1440, height=1800)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=120_000)
    page.evaluate("() => LLMApp.settled()")
    page.evaluate("() => { LLMApp.state.settleMs = 1e9; }")  # the viewer alone: the settle call is measured above
    # scrolled to the distribution's card: the step panels follow it down the page
    page.evaluate("() => { document.getElementById('panel-distribution').scrollIntoView(); }")
    page.wait_for_timeout(500)
    on_screen = page.evaluate("(ids) => ids.filter((id) => { const r = document.getElementById(id).getBoundingClientRect();"
                              " return r.bottom > 0 && r.top < innerHeight; })", page.evaluate("() => window.LLMAppPanels"))
    n = slider_max(page) + 1
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    out = {"tall_step_ms": [], "tall_seen_ms": [], "tall_step_requests": [], "tall_panels_on_screen": [len(on_screen)]}
    for i in range(reps):
        before = len(requests)
        ms, shown, s, seen = page.evaluate(MOVE, ["step-slider", (i * 7 + 3) % n])
        out["tall_step_ms"].append(ms)
        out["tall_seen_ms"].append(seen)
        out["tall_step_requests"].append(len(requests) - before)
    page.context.close()
    return out


def viewer_times(page, reps: int = 20) -> dict[str, list[float]]:
    """The step viewer in the app: slider moves to the panels near the screen redrawn, sampling moves to the
    distribution reshaped (ms, and requests the page sent meanwhile and in the settle that follows), Play."""
    n = slider_max(page) + 1
    out = {"step_ms": [], "step_seen_ms": [], "step_requests": [], "step_settle_requests": [], "step_settle_requests_inside": [], "sampling_ms": [],
           "sampling_requests": []}
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    for i in range(reps):
        target = (i * 7 + 3) % n
        page.evaluate("() => { LLMApp.state.settleMs = 1e9; }")  # first the viewer alone: no settle call
        before = len(requests)
        ms, shown, s, seen = page.evaluate(MOVE, ["step-slider", target])
        assert shown[0] == target and s == target, (shown, target)  # (the distribution: on screen)
        out["step_ms"].append(ms)
        out["step_seen_ms"].append(seen)
        out["step_requests"].append(len(requests) - before)
        for sid, values in (("temperature", (0.4, 1.3)), ("top-k", (0, 30)), ("top-p", (0.5, 0.95))):
            before = len(requests)
            ms, _, _, _ = page.evaluate(MOVE, [sid, values[i % 2]])
            out["sampling_ms"].append(ms)
            out["sampling_requests"].append(len(requests) - before)
        # then with the page's own settle call on: once the slider is still, the server is asked for the
        # open "Inside the model" tab only while that panel is on screen (odd moves: scrolled to it)
        inside = i % 2 == 1
        page.evaluate("(inside) => { LLMApp.state.settleMs = 300; if (inside) document.querySelector('#panel-inside').scrollIntoView();"
                      " else window.scrollTo(0, 0); }", inside)
        page.wait_for_timeout(300)
        before = len(requests)
        page.evaluate(MOVE, ["step-slider", (target + 1) % n])
        page.wait_for_timeout(1000)
        out["step_settle_requests_inside" if inside else "step_settle_requests"].append(len(requests) - before)
    page.evaluate("() => { LLMApp.state.settleMs = 1e9; const r = document.querySelector('#step-slider input[type=range]'); r.value = 0;"
                  " r.dispatchEvent(new Event('input', {bubbles: true})); return LLMApp.settled(); }")
    ms, followed = drag_times(page)
    out["drag_ms_per_move"], out["drag_steps_shown"] = [ms], [followed]
    out["play_steps_per_s"] = []
    page.click("#play-speed input")  # Play's "fast" speed, as a person picks it
    page.get_by_role("option", name="fast").click()
    for _ in range(3):  # Play from step 0 to the end, three times: this machine's pace varies from run to run
        page.evaluate(MOVE, ["step-slider", 0])
        shown, secs, panels = page.evaluate(PLAY)
        out["play_steps_per_s"].append(shown / secs)
    out["play_panels"] = panels
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)

    import torch
    from playwright.sync_api import sync_playwright

    from pipeline.loading import load_model

    lm = load_model(None)
    res = {"plain_tok_s": [], "prefill_s": [], "page_live_tok_s": [], "page_text_tok_s": [], "first_token_s": []}
    with app_server(log=Path("/tmp/bench_app.log")) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        page = open_page(browser, url, record_toasts=False)  # the page as a person has it: no test's watch on it
        wait_model_loaded(page)
        page.fill("#prompt textarea", PROMPT)
        set_number(page, "temperature", 0)
        set_number(page, "max-new-tokens", a.new_tokens)
        page_generate(page, 4, True)  # warm-up
        for _ in range(a.repeats):
            at_rest(page)
            pre, tok_s = plain_generate(lm, a.new_tokens)
            res["plain_tok_s"].append(tok_s)
            res["prefill_s"].append(pre)
            for live in (True, False):
                first, rate, made = page_generate(page, a.new_tokens, live)
                res["page_live_tok_s" if live else "page_text_tok_s"].append(rate)
                res["first_token_s"].append(first)
        res.update(after_run(page, a.new_tokens))
        set_number(page, "temperature", 0.7)
        page.wait_for_function("(n) => window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle.n_steps === n", arg=a.new_tokens,
                               timeout=600_000)
        try:
            res.update(viewer_times(page))
        except Exception:
            page.screenshot(path="/tmp/bench_fail.png", full_page=True)
            raise
        res.update(tall_scrub(browser, url))
        browser.close()
    med = {k: v if k == "play_panels" else statistics.median(v) for k, v in res.items()}
    med["ratio_live_vs_plain"] = med["page_live_tok_s"] / med["plain_tok_s"]
    med["ratio_text_vs_plain"] = med["page_text_tok_s"] / med["plain_tok_s"]
    med["torch_threads"] = torch.get_num_threads()
    if a.json:
        print(json.dumps(med, indent=2))
        return
    print(f"plain model.generate (greedy, {a.new_tokens} tokens): {med['plain_tok_s']:.2f} tok/s decode, prefill {med['prefill_s'] * 1000:.0f} ms")
    print(f"page, figures redrawn while generating: {med['page_live_tok_s']:.2f} tok/s seen in the browser  (ratio {med['ratio_live_vs_plain']:.2f})")
    print(f"page, text only while generating:       {med['page_text_tok_s']:.2f} tok/s seen in the browser  (ratio {med['ratio_text_vs_plain']:.2f})")
    print(f"click to first token on the page: {med['first_token_s'] * 1000:.0f} ms (median)")
    rows = [("step slider -> the panels on screen show the step", f"{med['step_seen_ms']:.0f} ms (all five {med['step_ms']:.0f} ms)",
             f"{med['step_requests']:.0f} (+{med['step_settle_requests']:.0f} once still; "
             f"{med['step_settle_requests_inside']:.0f} with Inside the model on screen)"),
            ("temperature / top-k / top-p -> distribution reshaped", f"{med['sampling_ms']:.0f} ms", f"{med['sampling_requests']:.0f}"),
            ("step slider dragged with the mouse, 40 moves", f"{med['drag_ms_per_move']:.0f} ms a move, {med['drag_steps_shown']:.0f} steps shown",
             ""),
            ("Play (panels on screen: " + ", ".join(med["play_panels"]) + ")", f"{med['play_steps_per_s']:.1f} steps/s", "0"),
            ("temperature dragged as a run ends: longest task", f"{med['after_run_longest_ms']:.0f} ms (max of {len(res['after_run_longest_ms'])} runs "
             f"{max(res['after_run_longest_ms']):.0f}), {med['after_run_move_ms']:.0f} ms a move", ""),
            (f"step slider at 1440x1800 -> the {med['tall_panels_on_screen']:.0f} panels on screen", f"{med['tall_seen_ms']:.0f} ms (all five {med['tall_step_ms']:.0f} ms)",
             f"{med['tall_step_requests']:.0f}"),
            ("click Generate -> first token on screen", f"{med['first_token_s'] * 1000:.0f} ms (prefill {med['prefill_s'] * 1000:.0f} ms)", "")]
    print(f"| {'interaction':52} | {'median':34} | requests per move |")
    print(f"|{'-' * 54}|{'-' * 36}|-------------------|")
    for name, value, req in rows:
        print(f"| {name:52} | {value:34} | {req:17} |")
    print("(browser, app and model share this machine's cores: on a Space the browser runs elsewhere)")


if __name__ == "__main__":
    main()

"""How fast the page is, measured in a real browser against plain `model.generate`, side by side.

    .venv/bin/python scripts/browser_bench.py [--new-tokens 48] [--repeats 2]

Starts the app (embedded model) and headless Chromium, and alternates, `repeats` times:
plain `model.generate` (greedy, in this process) and the same greedy generation on the page,
timed in the browser from the moment each token's text appears. Then times the redraws a
person triggers: dragging the step slider, moving the temperature slider. Prints medians
and ratios; nothing here is a pass/fail test (machines are noisy).
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

from tests.browser.harness import (CHROMIUM_FLAGS, app_server, chromium_path, open_page, set_number,  # noqa: E402
                                   slider_max, wait_model_loaded)

PROMPT = "Tell me a long story about a brave little robot."

OBSERVE = """() => { window.__t = []; const o = document.querySelector('#output');
  document.querySelectorAll('#output *').forEach(e => e.classList.add('stale'));
  window.__t0 = performance.now();
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
        t = time.perf_counter()
        lm.model.generate(ids, max_new_tokens=1, min_new_tokens=1, **kw)
        prefill = time.perf_counter() - t
        t = time.perf_counter()
        out = lm.model.generate(ids, max_new_tokens=n, min_new_tokens=n, **kw)
        total = time.perf_counter() - t
    made = out.shape[1] - ids.shape[1]
    return prefill, (made - 1) / max(total - prefill, 1e-9)


def page_generate(page, n: int, live: bool) -> tuple[float, float, int]:
    """(click to first token s, decode tokens per second seen in the browser, tokens)."""
    box = page.locator("#live-figures input")
    if box.is_checked() != live:
        box.click()
    page.evaluate(OBSERVE)
    t_click = page.evaluate("() => performance.now() - window.__t0")
    page.click("#generate")
    page.wait_for_selector("#output .stop-reason:not(.stale)", timeout=600_000)
    log = page.evaluate("window.__t")
    times = {k: t for t, k in log if k > 0}
    first, last = min(times), max(times)
    return (times[first] - t_click) / 1000, (last - first) / max((times[last] - times[first]) / 1000, 1e-9), last


DRAG = "([id, v]) => { const r = document.querySelector('#' + id + ' input[type=range]'); r.value = v;" \
       " r.dispatchEvent(new Event('input', {bubbles: true})); }"
TITLE = "([id, s]) => (document.querySelector('#' + id + ' .js-plotly-plot')?.layout?.title?.text || '').includes(s)"


def redraw_times(page, reps: int = 6) -> dict[str, list[float]]:
    """Seconds from a slider moving (as a drag moves it) to the panels showing the new value."""
    n = slider_max(page)
    out = {"slider_first_s": [], "slider_attention_s": [], "slider_all_s": [], "temperature_s": []}
    for i in range(reps):
        target = min(max(1, (i * 7 + 3) % n), n - 1)
        t = time.perf_counter()
        page.evaluate(DRAG, ["step-slider", target])
        # the first part: the output, the token chips (newest outlined) and the distribution
        page.wait_for_function("(s) => document.querySelectorAll('#output span.step').length === s + 1", arg=target, timeout=30_000)
        out["slider_first_s"].append(time.perf_counter() - t)
        page.wait_for_function(TITLE, arg=["attn-plot", f"step {target}:"], timeout=30_000)
        out["slider_attention_s"].append(time.perf_counter() - t)
        page.wait_for_function(TITLE, arg=["emb-plot", f"step {target}"], timeout=30_000)
        page.wait_for_function(TITLE, arg=["attn-overview", f"step {target} "], timeout=30_000)
        out["slider_all_s"].append(time.perf_counter() - t)
        time.sleep(0.3)
        before = page.evaluate("() => document.querySelector('#dist-plot .js-plotly-plot').layout.title.text")
        t = time.perf_counter()
        page.evaluate(DRAG, ["temperature", [0.4, 1.3][i % 2]])
        page.wait_for_function("(b) => document.querySelector('#dist-plot .js-plotly-plot').layout.title.text !== b",
                               arg=before, timeout=30_000)
        out["temperature_s"].append(time.perf_counter() - t)
        time.sleep(0.3)
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
        page = open_page(browser, url)
        wait_model_loaded(page)
        page.fill("#prompt textarea", PROMPT)
        set_number(page, "temperature", 0)
        set_number(page, "max-new-tokens", a.new_tokens)
        page_generate(page, 4, True)  # warm-up
        for _ in range(a.repeats):
            pre, tok_s = plain_generate(lm, a.new_tokens)
            res["plain_tok_s"].append(tok_s)
            res["prefill_s"].append(pre)
            for live in (True, False):
                first, rate, made = page_generate(page, a.new_tokens, live)
                res["page_live_tok_s" if live else "page_text_tok_s"].append(rate)
                res["first_token_s"].append(first)
        set_number(page, "temperature", 0.7)
        try:
            res.update(redraw_times(page))
        except Exception:
            page.screenshot(path="/tmp/bench_fail.png", full_page=True)
            raise
        browser.close()
    med = {k: statistics.median(v) for k, v in res.items()}
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
    print(f"step slider drag to: text, tokens and distribution {med['slider_first_s'] * 1000:.0f} ms; attention "
          f"{med['slider_attention_s'] * 1000:.0f} ms; every panel {med['slider_all_s'] * 1000:.0f} ms (medians)")
    print(f"temperature slider drag to the distribution reshaped: {med['temperature_s'] * 1000:.0f} ms (median)")
    print("(browser, app and model share this machine's cores: on a Space the browser runs elsewhere)")


if __name__ == "__main__":
    main()

"""How big and how fast the client-side step viewer is: bundle and export sizes, and in headless
Chromium the time a scrub takes, a sampling slider, and what Play shows.

    .venv/bin/python scripts/viewer_bench.py [--trace T.json | --new-tokens 24] [--out F.html] [--json]

Without --trace it generates --new-tokens tokens with the embedded SmolLM2-135M (temperature 0.7,
top-p 0.9), keeping every step's full-vocabulary logits as the app does. Nothing here is a
pass/fail test: machines are noisy, so it prints medians and the machine's load beside them.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.browser_kit import CHROMIUM_FLAGS, chromium_path  # noqa: E402
from viz.panels import STEP_IDS  # noqa: E402

IDS = STEP_IDS  # the panels that follow the step (viz.panels)
SCRUB = """async (s) => { const r = document.querySelector('#step-slider input[type=range]'); const t = performance.now();
  r.value = s; r.dispatchEvent(new Event('input', {bubbles: true})); await LLMViewer.page.settled();
  return performance.now() - t; }"""
SLIDE = """async ([id, v]) => { const r = document.querySelector('#' + id + ' input[type=range]'); const t = performance.now();
  r.value = v; r.dispatchEvent(new Event('input', {bubbles: true})); await LLMViewer.page.settled();
  return performance.now() - t; }"""
# While Play runs: the step on screen and each panel's step, sampled every animation frame.
WATCH = """(ids) => new Promise((ok) => { const seen = {}, t0 = performance.now(); ids.forEach((id) => { seen[id] = new Set(); });
  const slider = new Set(), last = () => Number(document.querySelector('#step-slider input[type=number]').value), first = last();
  const tick = () => { slider.add(last());
    ids.forEach((id) => seen[id].add(document.querySelector('#' + id + ' .js-plotly-plot').layout.meta.step));
    if (LLMViewer.page.playing()) requestAnimationFrame(tick);
    else ok({seconds: (performance.now() - t0) / 1000, steps: last() - first, slider: slider.size,
             panels: Object.fromEntries(ids.map((id) => [id, seen[id].size]))}); };
  document.querySelector('#play').click(); requestAnimationFrame(tick); })"""


def load_trace(a):
    from pipeline.trace.files import load

    if a.trace:
        return load(a.trace)  # .json or .json.gz
    from pipeline.generate import run_trace
    from pipeline.loading import load_model
    from pipeline.trace.records import Settings

    return run_trace(load_model(None), "Why is the sky blue?", Settings(temperature=0.7, top_p=0.9, max_new_tokens=a.new_tokens))


def build(trace, a) -> dict:
    from viz.viewer.bundle import sizes, viewer_bundle
    from viz.viewer.page import write_html

    t = time.perf_counter()
    bundle = viewer_bundle(trace, layer=a.layer, head=a.head)
    res = {"bundle_build_s": time.perf_counter() - t, "bundle_bytes": sizes(bundle)}
    t = time.perf_counter()
    res["export_bytes"] = write_html(trace, a.out, layer=a.layer, head=a.head)
    res["export_build_s"] = time.perf_counter() - t
    from viz.viewer.page import plotly_js

    res["plotly_js_bytes"] = len(plotly_js()[0].encode())
    return res


def browse(path: Path, n_steps: int) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        t = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_function("() => window.LLMViewer && LLMViewer.page && LLMViewer.page.rendered === 0", timeout=120_000)
        res = {"open_s": time.perf_counter() - t}
        order = list(range(1, n_steps)) + list(range(n_steps - 2, -1, -3))
        res["scrub_ms"] = [page.evaluate(SCRUB, s) for s in order]
        res["temperature_ms"] = [page.evaluate(SLIDE, ["temperature", v]) for v in (0.3, 1.2, 0.7, 1.9, 0.05, 1.0) * 2]
        res["top_p_ms"] = [page.evaluate(SLIDE, ["top-p", v]) for v in (0.5, 0.99, 0.9, 0.8) * 2]
        page.evaluate(SCRUB, 0)
        res["play"] = page.evaluate(WATCH, list(IDS))
        browser.close()
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=None, help="a trace file (.json / .json.gz); default: generate one")
    ap.add_argument("--new-tokens", type=int, default=24)
    ap.add_argument("--out", default=str(ROOT / "artifacts" / "viewer" / "bench.html"))
    ap.add_argument("--layer", type=int, default=3)
    ap.add_argument("--head", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    trace = load_trace(a)
    res = {"steps": len(trace.steps), "exact": all(s.logits is not None for s in trace.steps), **build(trace, a)}
    res.update(browse(Path(a.out).resolve(), res["steps"]))
    res["load_average"] = os.getloadavg()
    if a.json:
        print(json.dumps(res, indent=2))
        return
    med = statistics.median
    b = res["bundle_bytes"]
    print(f"trace: {res['steps']} steps, {'full-vocabulary logits (exact)' if res['exact'] else 'top candidates only (approximate)'}")
    print(f"bundle: {b['total'] / 1e6:.2f} MB JSON, built in {res['bundle_build_s']:.1f} s: "
          + ", ".join(f"{k} {v / 1e3:.0f} kB" for k, v in b.items() if k != "total"))
    print(f"export: {res['export_bytes'] / 1e6:.2f} MB ({res['plotly_js_bytes'] / 1e6:.2f} MB of it Plotly.js), written in "
          f"{res['export_build_s']:.1f} s; opens in {res['open_s']:.1f} s")
    print(f"scrub, slider moved to every panel drawn: median {med(res['scrub_ms']):.0f} ms, max {max(res['scrub_ms']):.0f} ms "
          f"over {len(res['scrub_ms'])} moves (server round trip before: ~2300 ms)")
    print(f"temperature slider to the distribution redrawn: median {med(res['temperature_ms']):.0f} ms; "
          f"top-p {med(res['top_p_ms']):.0f} ms")
    pl = res["play"]
    print(f"Play: {pl['steps']} steps in {pl['seconds']:.1f} s = {pl['steps'] / pl['seconds']:.1f} steps/s on the slider; "
          f"distinct steps seen drawn (sampled each animation frame): slider {pl['slider']}, "
          + ", ".join(f"{k} {v}" for k, v in pl["panels"].items()))
    print(f"load average while measuring: {' '.join(f'{x:.1f}' for x in res['load_average'])} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()

"""Run a page script's pure functions outside the page: by node where it is installed, else in headless Chromium.
(assets/text.js and assets/figure_text.js are tested this way, on the numbers and figures Python makes.)"""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

_RUN = """const fs = require('fs'); globalThis.window = globalThis;
for (const f of process.argv.slice(2)) eval(fs.readFileSync(f, 'utf8'));
process.stdout.write(JSON.stringify(run(JSON.parse(fs.readFileSync(0, 'utf8')))));"""


def run_js(scripts: list[str], job_fn: str, job: dict):
    """`scripts` (JavaScript sources, loaded in order, then `job_fn`, which defines `function run(job)`), and
    run(job)'s JSON result."""
    sources = [*scripts, job_fn]
    if shutil.which("node"):
        with tempfile.TemporaryDirectory() as d:
            files = []
            for i, src in enumerate(sources):
                (Path(d) / f"{i}.js").write_text(src, encoding="utf-8")
                files.append(str(Path(d) / f"{i}.js"))
            (Path(d) / "run.js").write_text(_RUN, encoding="utf-8")
            res = subprocess.run(["node", str(Path(d) / "run.js"), *files], input=json.dumps(job), capture_output=True, text=True,
                                 timeout=60, check=True)
        return json.loads(res.stdout)
    chromium = shutil.which("chromium")
    if not chromium:
        pytest.skip("neither node nor chromium to run the page's scripts")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium)
        try:
            page = browser.new_page()
            page.set_content("<!doctype html><meta charset='utf-8'><body></body>")
            for js in sources:
                page.add_script_tag(content=js)
            return page.evaluate("(job) => run(job)", job)
        finally:
            browser.close()

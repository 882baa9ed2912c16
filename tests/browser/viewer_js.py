"""Shared by the viewer's browser tests: the viewer's scripts in a blank Chromium page with the
network shut, and the reference numbers from pipeline.sampling it must reproduce."""
from __future__ import annotations

import base64

import numpy as np

from pipeline.sampling import stages as sampling
from pipeline.trace.records import StepRecord
from viz.text import catalogue_js
from viz.viewer.page import VIEWER_SCRIPTS

from .harness import ROOT

VIEWER_JS = [ROOT / "assets" / f for f in VIEWER_SCRIPTS]  # in order
TOL = 1e-6
N_SHOWN = 20  # bars of the distribution panel; the rest-of-vocabulary bar is 1 minus their sum


def js_page(browser):
    """A blank page with the viewer's scripts loaded; every network request is refused and recorded."""
    page = browser.new_page()
    page.errors, page.requests = [], []  # type: ignore[attr-defined]
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("console", lambda m: page.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.route("**/*", lambda route: (page.requests.append(route.request.url), route.abort()))
    page.set_content("<!doctype html><meta charset='utf-8'><body></body>")
    page.add_script_tag(content=catalogue_js())  # the page's words, before assets/text.js (viz.text)
    for js in VIEWER_JS:
        page.add_script_tag(content=js.read_text(encoding="utf-8"))
    return page


PACK = """(cases) => { const S = window.__S, names = [], nums = [], finals = [];
  for (const [s, t, k, p, mp, pen] of cases) {
    const r = LLMViewer.reshape(S, s, t, k, p, mp, pen);
    names.push(r.stages.map((x) => x.name).join(','));
    nums.push(r.entropy, r.cutoff, r.final.length, r.stages.length);
    for (const x of r.stages) nums.push(x.kept, x.mass, x.approx ? 1 : 0);
    finals.push(r.final);
  }
  const all = new Float64Array(finals.reduce((a, f) => a + f.length, 0));
  let at = 0;
  for (const f of finals) { all.set(f, at); at += f.length; }
  const b64 = (arr) => { const bytes = new Uint8Array(arr.buffer); let bin = '';
    for (let i = 0; i < bytes.length; i += 8192) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
    return btoa(bin); };
  return [names.join(';'), b64(new Float64Array(nums)), b64(all)]; }"""


def _f64(b64: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), dtype="<f8")


def js_reshape(page, sampling_data: dict, cases: list[tuple], *, chunk: int = 4000) -> list[dict]:
    """viewer_sampling.js's reshape for each (step, temperature, top-k, top-p[, min-p, repetition penalty]) (left out:
    the trace's own); the numbers come back as float64 buffers (Playwright's JSON of many small arrays is slow)."""
    page.evaluate("(S) => { window.__S = S; }", sampling_data)
    out = []
    for i in range(0, len(cases), chunk):
        names, nums, finals = page.evaluate(PACK, cases[i:i + chunk])
        nums, finals, a, f = _f64(nums), _f64(finals), 0, 0
        for stage_names in names.split(";"):
            entropy, cutoff, n, ns = nums[a:a + 4]
            kept_mass = nums[a + 4:a + 4 + 3 * int(ns)].reshape(-1, 3)
            out.append({"stages": [{"name": nm, "kept": int(km[0]), "mass": float(km[1]), "approx": bool(km[2])}
                                   for nm, km in zip(stage_names.split(","), kept_mass)],
                        "entropy": float(entropy), "cutoff": int(cutoff), "final": finals[f:f + int(n)]})
            a, f = a + 4 + 3 * int(ns), f + int(n)
    return out


def reference(step: StepRecord, t: float, k: int, p: float, penalty: float, min_p: float = 0.0) -> dict:
    """pipeline.sampling.stages's numbers at the step's top candidates: over the full vocabulary when the
    step holds its logits, else over the recorded top N (what viz.distribution shows then)."""
    if step.logits is not None:
        logits, ctx, at = step.logits, step.context_ids, np.asarray(step.top_ids)
    else:
        seen = set(int(i) for i in step.context_ids)
        logits, at = step.top_logits, np.arange(len(step.top_ids))
        ctx = [j for j, i in enumerate(step.top_ids) if int(i) in seen]
    stages = sampling.build_stages(temperature=t, top_k=k, top_p=p, min_p=min_p, repetition_penalty=penalty, context_ids=ctx)
    res = sampling.apply_stages(logits, stages)
    return {"final": res.final_probs[at], "kept": list(res.stage_kept), "mass": list(res.stage_mass),
            "names": [s.name for s in stages], "entropy": sampling.entropy_bits(res.final_probs)}


def assert_same(got: dict, ref: dict, *, per_token: bool = True, where: str = "") -> None:
    """JS and Python agree: stage names and kept counts exactly; masses, entropy, every candidate's
    final probability and the rest-of-vocabulary bar to TOL."""
    assert [s["name"] for s in got["stages"]] == ref["names"], where
    assert [s["kept"] for s in got["stages"]] == ref["kept"], where
    assert np.max(np.abs(np.subtract([s["mass"] for s in got["stages"]], ref["mass"]))) <= TOL, (where, got["stages"], ref["mass"])
    assert abs(got["entropy"] - ref["entropy"]) <= TOL, (where, got["entropy"], ref["entropy"])
    if per_token:
        fin = np.asarray(got["final"])
        assert fin.shape == ref["final"].shape and np.max(np.abs(fin - ref["final"])) <= TOL, (where, np.max(np.abs(fin - ref["final"])))
        rest_js, rest_py = max(0.0, 1 - fin[:N_SHOWN].sum()), max(0.0, 1 - float(np.sum(ref["final"][:N_SHOWN])))
        assert abs(rest_js - rest_py) <= TOL, (where, rest_js, rest_py)

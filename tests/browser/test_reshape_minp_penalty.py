"""Min-p and the repetition penalty reshape a step's distribution in the browser (assets/viewer_sampling.js), with no
request: on real steps of the embedded model (their full-vocabulary logits), every candidate's final probability,
the rest-of-vocabulary bar, each stage's kept count and mass and the entropy equal pipeline.sampling's to 1e-6 at every
position of a sweep of the five sliders (extremes included), but for one corner the page marks approximate (≈): a
top-p nucleus reaching past the shipped head at another penalty than the trace's. The browser's figure names the
stages in order and its layout.meta the five settings, as viz.distribution's does; the app's sliders move it with
no request; the offline page keeps the trace's own min-p and penalty."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from pipeline.sampling import stages as sampling
from viz.distribution import distribution_figure_dict
from viz.viewer.bundle import viewer_bundle
from viz.viewer.sampling import sampling_bundle

from .harness import drag_slider, error_toasts, new_page, set_number, slider_max, wait_model_loaded
from .viewer_js import N_SHOWN, TOL, assert_same, js_page, js_reshape, reference

pytestmark = pytest.mark.browser
TS, KS, PS, MPS, PENS = (0.0, 0.05, 0.7, 1.0, 2.0), (0, 1, 50, 200), (0.01, 0.5, 0.9, 0.99, 1.0), (0.0, 0.01, 0.05, 0.2, 0.5), (1.0, 1.05, 1.3, 2.0)


@pytest.fixture(scope="module")
def trace():
    """Six steps of the embedded model with their full logits, sampled with a repetition penalty (the trace's own: 1.3)."""
    from pipeline.generate import run_trace
    from pipeline.loading import load_model
    from pipeline.trace.records import Settings

    st = Settings(temperature=0.7, top_p=0.9, min_p=0.05, repetition_penalty=1.3, max_new_tokens=6, seed=3)
    tr = run_trace(load_model(None), "Why is the sky blue? Answer in one sentence.", st)
    assert len(tr.steps) == 6 and all(s.logits is not None for s in tr.steps)
    return tr


def _sweep(n_steps: int, n_random: int = 150, seed: int = 0) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = [(s, *c) for s in range(n_steps) for c in itertools.product(TS, KS, PS, MPS, PENS)]
    from viz.viewer.sampling import MIN_PS, PENALTIES, TEMPERATURES, TOP_PS
    out += [(int(rng.integers(n_steps)), float(rng.choice(TEMPERATURES)), int(rng.integers(0, 201)), float(rng.choice(TOP_PS)),
             float(rng.choice(MIN_PS)), float(rng.choice(PENALTIES))) for _ in range(n_random * n_steps)]
    return out


def test_every_position_of_the_five_sliders_equals_the_pipeline(browser, trace):
    S = sampling_bundle(trace.steps, penalty=1.3, min_p=0.05, vocab_size=trace.model.vocab_size)
    page = js_page(browser)
    cases = _sweep(len(trace.steps))
    got = js_reshape(page, S, cases)
    corner = 0
    for (s, t, k, p, mp, pen), g in zip(cases, got):
        ref = reference(trace.steps[s], t, k, p, pen, mp)
        where = f"step {s} T={t} k={k} p={p} min-p={mp} penalty={pen}"
        if not any(st["approx"] for st in g["stages"]):
            assert_same(g, ref, where=where)
            continue
        # the one corner said to be approximate: top-k off, a nucleus past the head, at another penalty than the trace's
        corner += 1
        names = [st["name"] for st in g["stages"]]
        top_p = g["stages"][names.index("top_p")]
        assert top_p["approx"] and t > 0 and (k == 0 or k >= trace.model.vocab_size) and pen != 1.3, where
        assert ref["kept"][names.index("top_p")] > S["steps"][s]["M"], where
        assert np.max(np.abs(np.subtract([st["mass"] for st in g["stages"]], ref["mass"]))) <= 1e-3, where
        assert np.max(np.abs(g["final"] - ref["final"])) <= 1e-3 and abs(g["entropy"] - ref["entropy"]) <= 0.05, where
    assert corner < 0.05 * len(cases), corner  # (a small corner: high temperature, a high top-p, the penalty moved)
    assert not page.errors and not page.requests


def test_the_browsers_figure_names_the_stages_and_settings_as_pythons(browser, trace):
    """The client-side redraw's title lines (the chain of stages in order: what each kept, what it removed) and its
    layout.meta equal viz.distribution's server-side figure's, min-p and the repetition penalty included."""
    bundle = viewer_bundle(trace)
    page = js_page(browser)
    page.evaluate("(b) => { window.__B = b; }", bundle)
    for s, t, k, p, mp, pen in ((1, 0.7, 0, 0.9, 0.05, 1.3), (2, 1.0, 50, 0.95, 0.1, 2.0), (3, 0.0, 0, 1.0, 0.0, 1.05),
                                (4, 0.5, 0, 1.0, 0.2, 1.0), (5, 1.3, 20, 0.8, 0.0, 1.6)):
        got = page.evaluate("([s, t, k, p, mp, pen]) => { const f = LLMViewer.figureFor(window.__B, 'dist-plot', s, {t, k, p, mp, pen});"
                            " return [f.layout.meta, f.layout.title.text, Array.from(f.data[1].x)]; }", [s, t, k, p, mp, pen])
        want = distribution_figure_dict(trace.steps[s], temperature=t, top_k=k, top_p=p, min_p=mp, repetition_penalty=pen,
                                        vocab_size=trace.model.vocab_size)
        meta = {key: v for key, v in got[0].items() if key != "step"}
        assert meta == want["layout"]["meta"] == {"temperature": t, "top_k": k, "top_p": p, "min_p": mp, "repetition_penalty": pen}
        assert got[1] == want["layout"]["title"]["text"], (got[1], want["layout"]["title"]["text"])
        assert np.max(np.abs(np.asarray(got[2]) - want["data"][1]["x"])) <= TOL
    title = got[1]  # the chain in transformers' order
    assert title.index("repetition penalty 1.6") < title.index("top-k 20 keeps") < title.index("top-p 0.8 keeps")
    assert not page.errors and not page.requests


WORDS = """(cases) => cases.map(([s, t, k, p, mp, pen]) => { const V = LLMViewer, r = V.reshape(window.__S, s, t, k, p, mp, pen);
  return [Array.from(r.final), r.stages.map((x) => [x.name, x.kept, x.mass]), V.entropyWords(r), V.cutText(r, 20), V.finalWords(r, 20), r.kind]; })"""


@pytest.mark.parametrize("variant", ["rest", "range", "top-N"])
def test_steps_without_logits_reshape_as_viz_distribution_says(browser, variant):
    """The example trace (its steps keep the top 100 and a summary of the rest), and the same without the summary
    (ranges) or without the vocabulary's size too (the top N alone): the browser's numbers and words at min-p and
    penalty positions are viz.distribution's, its approximations marked as Python marks them."""
    import dataclasses

    from pipeline.trace.files import load
    from viz.distribution import _cut_text, entropy_words, final_words, reshape

    from .harness import ROOT

    ex = load(ROOT / "assets" / "example_trace.json.gz")
    steps, V = ex.steps[::8], ex.model.vocab_size
    if variant != "rest":
        steps = tuple(dataclasses.replace(s, rest=None) for s in steps)
    V = None if variant == "top-N" else V
    page = js_page(browser)
    page.evaluate("(S) => { window.__S = S; }", sampling_bundle(steps, penalty=ex.settings.repetition_penalty, vocab_size=V))
    cases = [(s, t, k, p, mp, pen) for s in range(len(steps)) for t, k, p, mp, pen in
             itertools.product((0.0, 0.4, 1.0, 2.0), (0, 30), (0.6, 1.0), (0.0, 0.02, 0.2), (1.0, 1.3))]
    sources = set()
    for (s, t, k, p, mp, pen), (final, stages, ent, cut, words, kind) in zip(cases, page.evaluate(WORDS, cases)):
        r = reshape(steps[s], temperature=t, top_k=k, top_p=p, min_p=mp, repetition_penalty=pen, vocab_size=V)
        sources.add(r.source)
        where = (variant, s, t, k, p, mp, pen, r.source)
        assert np.max(np.abs(np.asarray(final) - r.final_probs)) <= 1e-9, where
        assert [x[0] for x in stages] == list(r.stage_names) and [x[1] for x in stages] == list(r.stage_kept), where
        assert np.allclose([x[2] for x in stages], r.stage_mass, rtol=0, atol=1e-9), where
        lines = _cut_text(r)
        if r.cutoff >= N_SHOWN and lines:  # (more kept than shown; or, a penalty reordering them, some kept below the bars)
            last = next((k for name, k in zip(reversed(r.stage_names), reversed(r.stage_kept)) if name in ("top_k", "top_p", "min_p")), None)
            lines[-1] += (f" (more than the {N_SHOWN} shown)" if last is None or last > N_SHOWN
                          else f" (some of them below the {N_SHOWN} shown: the penalty reordered them)")
        assert (ent, cut, words) == (entropy_words(r), lines, [list(w) for w in final_words(r, N_SHOWN)]), where
        assert kind == r.source or r.source == "recorded", where
    # at a penalty the summary was not made with, the top N alone (said to be approximate); ranges only without one
    assert "top-N" in sources and ({"rest", "range"} & sources or variant == "top-N"), sources
    assert not page.errors and not page.requests


def _bars(page) -> tuple[np.ndarray, dict]:
    return page.evaluate("""() => { const el = document.querySelector('#dist-plot .js-plotly-plot');
      const t = el.data.find(t => t.name && t.name.includes('sampled from')); return [Array.from(t.x), el.layout.meta]; }""")


def _generate(page, prompt: str, n: int):
    page.wait_for_selector("#generate")
    wait_model_loaded(page)
    page.fill("#prompt textarea", prompt)
    page.get_by_label("Raw text").check()
    set_number(page, "max-new-tokens", n)
    set_number(page, "temperature", 0)
    page.click("#generate")
    page.wait_for_function("(n) => window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle.n_steps === n"
                           " && document.querySelector('#output .stop-reason')", arg=n, timeout=300_000)


def test_the_apps_sliders_reshape_with_no_request(browser, app_url, shots):
    page = new_page(browser, width=1366, height=768)
    page.goto(app_url)
    _generate(page, "The cat sat on the mat. The cat sat on the", 8)
    assert slider_max(page) == 7
    page.evaluate("() => { LLMApp.state.settleMs = 1e9; }")  # no settle call: every request would be the viewer's
    requests, frames = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("websocket", lambda ws: ws.on("framesent", lambda f: frames.append(f)))
    drag_slider(page, "min-p", [0.0, 0.4, 0.1, 0.25], steps=3)
    drag_slider(page, "repetition-penalty", [0.0, 0.9, 0.3, 0.5], steps=3)
    drag_slider(page, "temperature", [0.35, 0.6], steps=3)
    page.evaluate("() => LLMApp.settled()")
    assert requests == [] and frames == [], (requests, frames)
    _, meta = _bars(page)
    assert meta["min_p"] > 0 and meta["repetition_penalty"] > 1  # the dragged values, drawn
    # typed values: the bars are pipeline.sampling's on the run's own logits (the same greedy run, made here again)
    from pipeline.generate import run_trace
    from pipeline.loading import load_model
    from pipeline.trace.records import Settings

    again = run_trace(load_model(None), "The cat sat on the mat. The cat sat on the",
                      Settings(temperature=0, max_new_tokens=8, chat=False))
    for step, t, k, p, mp, pen in ((7, 0.7, 0, 0.9, 0.05, 1.3), (5, 1.0, 0, 1.0, 0.2, 2.0), (3, 0.4, 40, 0.95, 0.0, 1.5), (7, 0.0, 0, 1.0, 0.0, 2.0)):
        for elem_id, v in (("temperature", t), ("top-k", k), ("top-p", p), ("min-p", mp), ("repetition-penalty", pen), ("step-slider", step)):
            set_number(page, elem_id, v)
        page.wait_for_function("(w) => { const m = document.querySelector('#dist-plot .js-plotly-plot').layout.meta;"
                               " return m.step === w[0] && m.min_p === w[1] && m.repetition_penalty === w[2] && m.temperature === w[3]; }",
                               arg=[step, mp, pen, t], timeout=30_000)
        bars, meta = _bars(page)
        ref = reference(again.steps[step], t, k, p, pen, mp)["final"][:N_SHOWN]
        assert np.max(np.abs(np.asarray(bars[:N_SHOWN]) - ref)) <= TOL, (step, t, k, p, mp, pen)
        assert abs(bars[N_SHOWN] - max(0.0, 1 - float(ref.sum()))) <= TOL
    assert requests == [] and frames == [], (requests, frames)
    assert not page.errors and not error_toasts(page)
    # the shots: min-p and a penalty on, light and dark, wide and on a phone
    for elem_id, v in (("temperature", 1.0), ("top-k", 0), ("top-p", 0.95), ("min-p", 0.05), ("repetition-penalty", 1.5), ("step-slider", 6)):
        set_number(page, elem_id, v)
    page.evaluate("() => LLMApp.settled()")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.locator("#panel-distribution").scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        page.screenshot(path=str(shots / f"i35_reshape_wide_{scheme}.png"))


def test_the_sliders_and_the_chain_on_a_phone(browser, app_url, shots):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = ctx.new_page()
    page.goto(app_url)
    _generate(page, "The cat sat on the mat. The cat sat on the", 8)
    for elem_id, v in (("temperature", 1.0), ("top-p", 0.95), ("min-p", 0.05), ("repetition-penalty", 1.3)):
        set_number(page, elem_id, v)
    page.wait_for_function("() => { const m = document.querySelector('#dist-plot .js-plotly-plot').layout.meta;"
                           " return m.min_p === 0.05 && m.repetition_penalty === 1.3 && m.top_p === 0.95; }", timeout=60_000)
    title = page.evaluate("() => document.querySelector('#dist-plot .js-plotly-plot').layout.title.text")
    assert "repetition penalty 1.3" in title and "min-p 0.05 keeps" in title and "approximate" not in title
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.locator("#repetition-penalty").scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        page.screenshot(path=str(shots / f"i35_reshape_phone_sliders_{scheme}.png"))
        page.locator("#dist-plot").scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        page.screenshot(path=str(shots / f"i35_reshape_phone_{scheme}.png"))
    ctx.close()


def test_the_offline_page_keeps_the_traces_own_min_p_and_penalty(browser, trace, tmp_path):
    from viz.viewer.page import write_html

    path = tmp_path / "page.html"
    write_html(trace, path)
    page = new_page(browser)
    page.goto(path.as_uri())
    page.wait_for_function("() => window.LLMViewer && LLMViewer.page && LLMViewer.page.rendered === 0", timeout=120_000)
    meta, title = page.evaluate("() => { const el = document.querySelector('#dist-plot .js-plotly-plot'); return [el.layout.meta, el.layout.title.text]; }")
    assert meta["min_p"] == 0.05 and meta["repetition_penalty"] == 1.3
    assert "repetition penalty 1.3" in title and "min-p 0.05 keeps" in title
    # moving its temperature keeps them, and the numbers are the pipeline's
    set_number(page, "temperature", 1.5)
    page.wait_for_function("() => document.querySelector('#dist-plot .js-plotly-plot').layout.meta.temperature === 1.5")
    bars, meta = _bars(page)
    st = trace.settings
    ref = reference(trace.steps[0], 1.5, st.top_k, st.top_p, 1.3, 0.05)
    assert meta["min_p"] == 0.05 and np.max(np.abs(np.asarray(bars[:N_SHOWN]) - ref["final"][:N_SHOWN])) <= TOL
    assert not page.errors


def test_the_reference_is_the_pipelines_own_chain(trace):
    """(The reference the browser is held to: sampling.apply_stages over the step's logits, the stages as Settings builds.)"""
    s = trace.steps[2]
    stages = trace.settings.stages(s.context_ids)
    assert [x.name for x in stages] == ["repetition_penalty", "temperature", "top_p", "min_p"]
    res = sampling.apply_stages(s.logits, stages)
    assert np.allclose(res.final_probs[np.asarray(s.top_ids)], s.top_final_probs, atol=1e-6)

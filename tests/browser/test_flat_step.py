"""The lesson's "flat" step (gallery example "flat", step 1: pipeline/gallery.py's lesson) draws the model's own
distribution, though the trace keeps only the top 100 candidates of each step: at the trace's own settings
(temperature 1, no filter) the "sampled from" bars are the raw ones, and after the sliders move (temperature 0.6,
a top-k and a top-p whose kept set reaches past the kept candidates) every bar and the rest of the vocabulary lie
within 1e-3 of numpy over the model's full logits (the model run again here). Then the browser's reshape equals
viz.distribution's (numbers and words) for every gallery trace and for an older trace that can only give ranges."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from pipeline import gallery
from viz.distribution import _cut_text, entropy_words, final_words, reshape
from viz.viewer.sampling import TEMPERATURES, TOP_PS, sampling_bundle

from .harness import error_toasts, new_page, set_number
from .viewer_js import js_page

pytestmark = pytest.mark.browser
TOL = 1e-3
N_SHOWN = 20
LESSON = next(ls for ls in gallery.lesson() if ls.kind == "flat")

# The distribution on screen (the viewer's plot while it is on) and the fields.
SHOWN = """() => {
  const b = document.getElementById('dist-plot');
  const el = b && (b.classList.contains('viewer-on') ? b.querySelector(':scope > .viewer-plot.js-plotly-plot, :scope > .viewer-plot .js-plotly-plot')
                                                     : b.querySelector(':scope > :not(.viewer-plot) .js-plotly-plot'));
  if (!el || !el.data || !el.layout) return null;
  const num = (id) => Number(document.querySelector('#' + id + ' input[type=number]')?.value);
  return {x: Array.from(el.data[1].x), text: Array.from(el.data[1].text), meta: el.layout.meta, title: el.layout.title.text,
          fields: [num('temperature'), num('top-k'), num('top-p')], mounted: !!(window.LLMApp && LLMApp.mounted())};
}"""


def model_logits(trace, k: int) -> np.ndarray:
    """(vocab,) the model's logits at step k of `trace`: the embedded model run again over the trace's tokens."""
    from transformers import DynamicCache

    from pipeline.loading import load_model

    lm = load_model(None)
    cache, feed = DynamicCache(config=lm.model.config), list(trace.prompt.token_ids)
    with torch.inference_mode():
        for s in trace.steps[: k + 1]:
            out = lm.model(input_ids=torch.tensor([feed]), past_key_values=cache, use_cache=True, logits_to_keep=1).logits
            feed = [s.token_id]
    return out[0, -1, : lm.info.vocab_size].float().numpy()


def numpy_final(logits: np.ndarray, t: float, k: int, p: float) -> np.ndarray:
    """The distribution sampled from, as the stages define it: temperature (float32 division), top-k with its ties,
    top-p's smallest prefix of the most likely reaching p."""
    q = (logits.astype(np.float32) / np.float32(t)).astype(np.float64)
    keep = q >= np.sort(q)[::-1][k - 1] if k else np.ones(q.size, bool)
    if p < 1:
        w = np.where(keep, np.exp(q - q.max()), 0.0)
        order = np.argsort(-w, kind="stable")
        keep = np.zeros(q.size, bool)
        keep[order[: int(np.searchsorted(np.cumsum(w[order] / w.sum()), p - 1e-12)) + 1]] = True
    w = np.where(keep, np.exp(q - q.max()), 0.0)
    return w / w.sum()


def shown(page, want: tuple[float, int, float]) -> dict:
    page.wait_for_function(f"(w) => {{ const s = ({SHOWN})(); return !!s && s.mounted && s.meta.step === {LESSON.step}"
                           " && s.meta.temperature === w[0] && s.meta.top_k === w[1] && s.meta.top_p === w[2]; }",
                           arg=list(want), timeout=120_000)
    page.wait_for_timeout(500)  # (anything still on its way)
    return page.evaluate(SHOWN)


def test_the_flat_lesson_steps_chart_is_the_models(browser, app_url, shots):
    trace = gallery.load(LESSON.example)
    step = trace.steps[LESSON.step]
    st = trace.settings
    assert (st.temperature, st.top_k, st.top_p) == (1.0, 0, 1.0) and LESSON.example == "flat"
    page = new_page(browser, width=1920, height=960)
    page.goto(app_url + f"/?example={LESSON.example}&step={LESSON.step}")
    own = shown(page, (1.0, 0, 1.0))
    # at the trace's own settings: the bars sampled from are the raw ones, the rest of the vocabulary too
    raw = np.asarray(step.top_probs, np.float64)[:N_SHOWN]
    assert np.max(np.abs(np.asarray(own["x"][:N_SHOWN]) - raw)) <= 1e-6, (own["x"][:5], raw[:5])
    assert own["x"][N_SHOWN] == pytest.approx(1 - raw.sum(), abs=1e-6)
    assert f"entropy {step.entropy:.2f} bits raw → {step.entropy:.2f} bits sampled from" in own["title"]
    assert "approximate" not in own["title"]
    page.screenshot(path=str(shots / "flat_step_chart.png"))
    logits = model_logits(trace, LESSON.step)
    # moved sliders: every bar and the rest within 1e-3 of the model (top-k 150 and top-p 0.9 reach past the kept 100)
    for t, k, p in ((0.6, 0, 1.0), (0.6, 150, 1.0), (1.5, 0, 0.9), (0.3, 0, 0.5)):
        for elem_id, v in (("temperature", t), ("top-k", k), ("top-p", p)):
            set_number(page, elem_id, v)
        got = shown(page, (t, k, p))
        want = numpy_final(logits, t, k, p)[step.top_ids][:N_SHOWN]
        bars = np.asarray(got["x"])
        assert np.max(np.abs(bars[:N_SHOWN] - want)) <= TOL, (t, k, p, np.max(np.abs(bars[:N_SHOWN] - want)))
        assert abs(bars[N_SHOWN] - (1 - want.sum())) <= TOL, (t, k, p)
        assert "approximate" not in got["title"]
        if (t, k, p) == (0.6, 0, 1.0):
            page.screenshot(path=str(shots / "flat_step_chart_t06.png"))
    assert not error_toasts(page) and not page.errors


PACK = """(cases) => cases.map(([s, t, k, p]) => { const V = LLMViewer, r = V.reshape(window.__S, s, t, k, p);
  return [Array.from(r.final), r.stages.map((x) => [x.kept, x.mass]), V.entropyWords(r), V.cutText(r, 20), V.finalWords(r, 20)]; })"""


def same_as_python(browser, steps, vocab_size: int, seed: int) -> int:
    """The browser's numbers and words against viz.distribution's for many slider positions; the number compared."""
    rng = np.random.default_rng(seed)
    cases = [(s, float(t), 0, float(p)) for s in range(len(steps)) for t in TEMPERATURES[::4] for p in TOP_PS[::11]]
    cases += [(s, float(t), k, 1.0) for s in range(len(steps)) for t in TEMPERATURES[::5] for k in (1, 5, 99, 100, 101, 150, 200)]
    cases += [(int(rng.integers(len(steps))), float(rng.choice(TEMPERATURES)), int(rng.integers(0, 201)), float(rng.choice(TOP_PS)))
              for _ in range(400)]
    page = js_page(browser)
    page.evaluate("(S) => { window.__S = S; }", sampling_bundle(steps, vocab_size=vocab_size))
    got = page.evaluate(PACK, cases)
    for (s, t, k, p), (final, stages, ent, cut, words) in zip(cases, got):
        r = reshape(steps[s], temperature=t, top_k=k, top_p=p, vocab_size=vocab_size)
        where = (s, t, k, p)
        assert np.max(np.abs(np.asarray(final) - r.final_probs)) <= 1e-9, where
        assert [x[0] for x in stages] == list(r.stage_kept) and np.allclose([x[1] for x in stages], r.stage_mass, rtol=0, atol=1e-9), where
        lines = _cut_text(r)
        if r.cutoff >= N_SHOWN and lines:  # (more kept than shown; or, a penalty reordering them, some kept below the bars)
            last = next((k for name, k in zip(reversed(r.stage_names), reversed(r.stage_kept)) if name in ("top_k", "top_p", "min_p")), None)
            lines[-1] += (f" (more than the {N_SHOWN} shown)" if last is None or last > N_SHOWN
                          else f" (some of them below the {N_SHOWN} shown: the penalty reordered them)")
        assert (ent, cut, words) == (entropy_words(r), lines, [list(w) for w in final_words(r, N_SHOWN)]), where
    assert not page.errors and not page.requests
    return len(cases)


@pytest.mark.parametrize("name", [e.name for e in gallery.entries()])
def test_the_browser_reshapes_every_gallery_trace_as_python_does(browser, name):
    trace = gallery.load(name)
    assert all(s.rest is not None and s.logits is None for s in trace.steps)
    steps = trace.steps[:: max(1, len(trace.steps) // 4)]
    assert same_as_python(browser, steps, trace.model.vocab_size, seed=len(name)) > 500


def test_an_older_trace_gives_the_same_ranges_in_the_browser(browser):
    trace = gallery.load("flat")
    steps = tuple(dataclasses.replace(s, rest=None) for s in trace.steps[:4])  # as written before the rest was kept
    assert same_as_python(browser, steps, trace.model.vocab_size, seed=1) > 500

"""The browser's reshaping on the embedded SmolLM2-135M's own logits (49,152 tokens): equal to
pipeline.sampling at every temperature of the slider, with nuclei far past the shipped head."""
import numpy as np
import pytest

from pipeline.generate import run_trace
from pipeline.trace.records import Settings
from viz.viewer.sampling import TEMPERATURES, TOP_K_MAX, TOP_PS, sampling_bundle

from .viewer_js import assert_same, js_page, js_reshape, reference

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest.fixture(scope="module")
def smol():
    """The embedded SmolLM2-135M-Instruct (here, beside the session's Chromium, not in tests/integration)."""
    from pipeline.loading import load_model

    return load_model(None)


@pytest.mark.parametrize("penalty", [1.0, 1.2])
def test_reshaping_real_logits_in_the_browser_matches_python(smol, browser, penalty):
    trace = run_trace(smol, "Why is the sky blue?", Settings(temperature=0.7, top_p=0.9, repetition_penalty=penalty, max_new_tokens=3))
    assert all(s.logits is not None and s.logits.size == 49152 for s in trace.steps)
    rng = np.random.default_rng(1)
    cases = [(s, t, 0, p) for s in (0, 2) for t in TEMPERATURES for p in (0.5, 0.9, 0.95, 0.99, 1.0)]
    cases += [(s, t, k, 1.0) for s in (0, 2) for t in (0.3, 1.0, 2.0) for k in (1, 2, 7, 40, 100, TOP_K_MAX)]
    cases += [(s, float(rng.choice(TEMPERATURES)), int(rng.integers(0, TOP_K_MAX + 1)), float(rng.choice(TOP_PS)))
              for s in (1, 2) for _ in range(60)]
    S = sampling_bundle(trace.steps, penalty=penalty)
    page = js_page(browser)
    got = js_reshape(page, S, cases)
    for (s, t, k, p), g in zip(cases, got):
        assert_same(g, reference(trace.steps[s], t, k, p, penalty), where=f"step {s} T={t} k={k} p={p}")
    far = [g for g in got if g["stages"][-1]["name"] == "top_p" and g["stages"][-1]["kept"] > max(d["M"] for d in S["steps"])]
    assert far  # nuclei past the head: the per-temperature table was used
    assert not page.errors and not page.requests

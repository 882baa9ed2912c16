"""Colour by (issue 35, part 3): the numbers on each token's span of the written text (viz/output.py) are the
model's own, checked against an independent forward pass; surprise is -log2 p; the radio, the legend's place and
the offline page's controls are there, in the catalogue's words; the scales of assets/colour_by.js are one hue,
ordered, and readable (every text >= 4.5:1 on its shade, in both themes). The browser's side: tests/browser/test_colour_by.py."""
from __future__ import annotations

import ast
import dataclasses
import html
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from pipeline.generate import start
from pipeline.trace.records import Settings
from tests import tiny
from tests.synthetic import make_trace
from tests.unit.test_no_literal_labels import literal_labels
from viz import output
from viz.viewer import page as viewer_page
from viz.text import catalogue

ROOT = Path(__file__).resolve().parents[2]
JS = (ROOT / "assets" / "colour_by.js").read_text(encoding="utf-8")
SPAN = re.compile(r"<span class='step[^']*' data-step='(\d+)'(?: hidden)? data-prob='([^']+)' data-surprise='([^']+)' "
                  r"data-entropy='([^']+)' data-cb='[ab]' title=\"([^\"]*)\">")


def spans(out: str) -> dict[int, dict]:
    return {int(m[0]): {"prob": float(m[1]), "surprise": float(m[2]), "entropy": float(m[3]), "title": html.unescape(m[4])}
            for m in SPAN.findall(out)}


@pytest.fixture(scope="module")
def generated():
    lm = tiny.loaded("llama", ctx=128)
    gen = start(lm, "The quick brown fox", Settings(max_new_tokens=10, temperature=0.8, top_k=0, top_p=1.0, seed=3, chat=False))
    return lm, gen.prompt, list(gen)


def test_the_spans_numbers_are_the_models_own_checked_against_a_forward_pass(generated):
    """data-prob: the token's probability at the run's temperature (0.8, no filter); data-surprise: -log2 of its
    probability at temperature 1; data-entropy: the step's entropy at temperature 1, in bits: each recomputed here from
    one plain forward pass over the prompt and the tokens written (no cache, no pipeline code)."""
    lm, prompt, steps = generated
    ids = list(prompt.token_ids) + [s.token_id for s in steps]
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids])).logits[0].double()
    got = spans(output.output_html(steps))
    assert len(got) >= 5 and set(got) <= set(range(len(steps)))
    t0 = len(prompt.token_ids)
    for i, g in got.items():
        row, tok = logits[t0 - 1 + i], steps[i].token_id
        p1 = torch.softmax(row, -1)
        p_run = torch.softmax(row / 0.8, -1)[tok].item()
        entropy = -(p1 * torch.log2(p1.clamp_min(1e-300))).sum().item()
        assert g["prob"] == pytest.approx(p_run, rel=1e-4, abs=1e-6), i
        assert g["surprise"] == pytest.approx(-math.log2(p1[tok].item()), abs=1e-3), i
        assert g["entropy"] == pytest.approx(entropy, abs=1e-3), i
        # and exactly the records' own (7 significant digits)
        s = steps[i]
        assert g["prob"] == float(f"{s.chosen_final_prob:.7g}") and g["entropy"] == float(f"{s.entropy:.7g}")
        assert g["surprise"] == float(f"{-math.log2(s.chosen_prob):.7g}")
        assert f"p={s.chosen_final_prob:.3f}" in g["title"] and f"surprise {-math.log2(s.chosen_prob):.2f} bits" in g["title"]
        assert f"entropy of the step {s.entropy:.2f} bits" in g["title"]


def test_surprise_is_minus_log2_p():
    assert [output.surprise_bits(p) for p in (1.0, 0.5, 0.25, 0.125)] == [0.0, 1.0, 2.0, 3.0]
    assert output.surprise_bits(0.3) == pytest.approx(-np.log2(0.3)) and output.surprise_bits(0.0) == math.inf
    step = dataclasses.replace(make_trace(n_steps=1).steps[0], text="x", chosen_prob=0.0)
    out = output.output_html([step])
    assert "data-surprise='Infinity'" in out and "surprise ∞ bits" in html.unescape(out)  # (the browser's Number() reads it)


def test_every_span_carries_step_and_prob_and_the_hidden_steps_too():
    trace = make_trace(n_steps=6)
    steps = [dataclasses.replace(s, text=f"w{i} ") for i, s in enumerate(trace.steps)]
    out = output.output_html(steps, upto=2, stop_reason="max_new_tokens")
    got = spans(out)
    assert sorted(got) == list(range(6)) and re.findall(r"data-step='(\d+)' hidden", out) == ["3", "4", "5"]
    assert [got[i]["prob"] for i in range(6)] == [float(f"{s.chosen_final_prob:.7g}") for s in steps]
    assert "data-colour-by='boundaries'" in out and out.count("class='step") == 6 and "class='step at-step' data-step='2'" in out


def _js_array(name: str):
    m = re.search(rf"const {name} = (\[.*?\]);", JS, re.S)
    return json.loads(m.group(1).replace("'", '"'))


def _lum(hex_: str) -> float:
    def lin(c):
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (int(hex_[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


def _contrast(a: str, b: str) -> float:
    x, y = sorted((_lum(a), _lum(b)), reverse=True)
    return (x + 0.05) / (y + 0.05)


def _hue(hex_: str) -> float:
    import colorsys

    r, g, b = (int(hex_[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hls(r, g, b)[0] * 360


def test_the_scales_are_one_hue_ordered_and_readable_in_both_themes():
    """Each palette: one shade per bin (the edges + 1), one hue (blue: no red against green), its lightness in one
    direction (light theme: from the page's white to dark; dark theme: from the page's dark to light), and the text
    on every shade >= 4.5:1 (WCAG). The boundaries' two shades as readable."""
    light, dark = _js_array("LIGHT"), _js_array("DARK")
    for edges in (_js_array("PROB_EDGES"), _js_array("BIT_EDGES")):
        assert len(edges) + 1 == len(light) == len(dark) and edges == sorted(edges)
    assert all(_lum(a[0]) > _lum(b[0]) for a, b in zip(light, light[1:]))
    assert all(_lum(a[0]) < _lum(b[0]) for a, b in zip(dark, dark[1:]))
    for bg, fg in light + dark:
        assert _contrast(bg, fg) >= 4.5, (bg, fg)
        assert 195 <= _hue(bg) <= 225, bg
    shades = re.search(r"const SHADES = (\{.*?\}\s*\});", JS, re.S).group(1)
    for bg, fg in re.findall(r"\['(#[0-9a-f]{6})', '(#[0-9a-f]{6})'\]", shades):
        assert _contrast(bg, fg) >= 4.5, (bg, fg)
    assert _js_array("PROB_EDGES")[0] > 0 and _js_array("PROB_EDGES")[-1] < 1


def test_the_modes_agree_and_each_scale_has_its_legend_in_the_catalogue():
    cat = catalogue()
    assert _js_array("MODES") == list(output.MODES) and output.DEFAULT_MODE == output.MODES[0]
    for m in output.MODES:
        assert f"choice.colour_by.{m}" in cat
    for m in ("prob", "surprise", "entropy"):
        assert f"colour.legend.{m}" in cat and f"root.LLMText.t('colour.legend.{m}')" in JS
    assert "temperature 1" in cat["colour.legend.entropy"] and "bits" in cat["colour.legend.entropy"]
    assert "temperature 1" in cat["colour.legend.surprise"] and "drawn from" in cat["colour.legend.prob"]


def test_the_page_has_the_radio_and_the_legend_with_no_literal_label():
    src = (ROOT / "ui" / "layout.py").read_text(encoding="utf-8")
    assert literal_labels("ui/layout.py", src) == []
    tree = ast.parse(src)
    radios = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "gr.Radio"
              and any(k.arg == "elem_id" and ast.unparse(k.value) == "'colour-by'" for k in n.keywords)]
    assert len(radios) == 1
    values = [e.elts[1].value for e in radios[0].args[0].elts]
    assert values == list(output.MODES)
    assert 'elem_id="colour-legend"' in src and "output.LEGEND_HOST" in src and "boundaries" not in (ROOT / "ui" / "page.py").read_text()


def test_the_offline_page_has_the_same_radio_legend_and_script():
    controls = output.colour_controls_html()
    assert controls.count("type='radio' name='colour-by'") == len(output.MODES) and "value='boundaries' checked" in controls
    for m in output.MODES:
        assert html.escape(catalogue()[f"choice.colour_by.{m}"]) in controls
    assert "id='colour-legend'" in controls and output.LEGEND_HOST in controls
    assert "colour_by.js" in viewer_page.VIEWER_SCRIPTS
    assert viewer_page.VIEWER_SCRIPTS.index("text.js") < viewer_page.VIEWER_SCRIPTS.index("colour_by.js")
    trace = make_trace(n_steps=3)
    body = viewer_page.output_html(trace, 3)
    got = re.findall(r"data-step='(\d+)' data-prob='([^']+)' data-surprise='([^']+)' data-entropy='([^']+)'", body)
    assert [int(g[0]) for g in got] == [0, 1, 2]
    for (_, p, sp, e), s in zip(got, trace.steps):
        assert float(p) == pytest.approx(s.chosen_final_prob, rel=1e-6) and float(e) == pytest.approx(s.entropy, rel=1e-6)
        assert float(sp) == pytest.approx(-math.log2(s.chosen_prob), rel=1e-6)

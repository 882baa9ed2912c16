"""The cost curve: one target pass by tokens fed, each draft's cost per proposal, and the
break-even acceptance rate from the paper's expected tokens per round."""
import pytest
import torch

from pipeline.trace.records import expected_tokens_per_pass
from pipeline.speculative.cost import CostCurve, DraftCost, break_even_alpha, from_json, measure, round_ms, speedup, to_json
from tests import tiny
from viz.speculative import cost_curve_figure, cost_curve_html, why_words

CURVE = CostCurve(
    model="m", context=256, tokens=tuple(range(1, 10)), target_ms=tuple(60.0 + 2.0 * i for i in range(9)),
    drafts=(DraftCost("ngram", "ngram", 0.02, 0), DraftCost("layers:20", "layers", 40.0, 90_000_000),
            DraftCost("layers:28", "layers", 70.0, 120_000_000)),
    repeats=7, threads=2, machine="a test CPU, 2 cores", date="2026-11-23",
)


def test_round_cost_and_speed_up_follow_the_formula():
    assert round_ms(CURVE, 40.0, 4) == 4 * 40.0 + 68.0  # 4 proposals + a pass fed 5 tokens
    assert speedup(CURVE, 0.0, 4, 1.0) == pytest.approx(5 * 60.0 / 68.0)
    assert speedup(CURVE, 40.0, 4, 0.8) == pytest.approx(expected_tokens_per_pass(0.8, 4) * 60.0 / 228.0)


def test_break_even_alpha_is_where_the_speed_up_is_one():
    for spec in ("ngram", "layers:20"):
        for k in (1, 2, 4, 8):
            a = break_even_alpha(CURVE, spec, k)
            if a is not None and a > 0:
                assert speedup(CURVE, CURVE.draft(spec).ms_per_proposal, k, a) == pytest.approx(1.0, abs=1e-6)
    assert break_even_alpha(CURVE, "ngram", 4) < 0.15  # free proposals: a little acceptance pays for the longer pass
    assert 0.5 < break_even_alpha(CURVE, "layers:20", 1) < 1
    assert break_even_alpha(CURVE, "layers:28", 4) is None  # 4 x 70 + 68 ms for at most 5 tokens: never beats 5 x 60
    assert break_even_alpha(CURVE, 0.0, 1) == pytest.approx(1 / 30, abs=1e-6)  # (1 + a) x 60 = 62


def test_the_figure_draws_both_curves_and_says_why():
    fig = cost_curve_figure(CURVE)
    names = [t.name.replace("<br>", " ") for t in fig.data]  # (a long name in short lines: viz.style.plot_lines)
    assert "one target pass fed n tokens (measured) = a round with ngram" in names and "plain decoding: n passes of 1 token" in names
    assert "round with layers:20: k proposals + pass" in names and "round with ngram: k proposals + pass" not in names
    measured = next(t for t in fig.data if t.name.startswith("one target pass"))
    assert list(measured.y) == list(CURVE.target_ms) and list(measured.x) == list(range(1, 10))
    be = next(t for t in fig.data if t.name == "layers:28: break-even α")
    assert list(be.x) == list(range(1, 9)) and "x" in be.marker.symbol and "never" in " ".join(be.customdata)
    ng = next(t for t in fig.data if t.name == "ngram: break-even α")
    assert max(ng.y) < 0.3 and list(be.y) == [1.06] * 8 and "never" in fig.layout.yaxis2.ticktext
    colors = {t.line.color for t in fig.data if t.name.endswith("break-even α")}
    assert len(colors) == 3  # one colour per draft
    why = fig.layout.meta["why"]
    assert "costs 68 ms, 1.13× a pass fed 1 token" in why and "layers:28 costs 70.00 ms" in why and "never pays off" in why
    assert why == why_words(CURVE) and "a test CPU, 2 cores" in fig.layout.title.text
    assert "bench --cost-curve" in cost_curve_html(CURVE)


def test_measure_on_a_tiny_model_and_read_it_back():
    lm = tiny.loaded("llama", layers=3, ctx=64)
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        c = measure(lm, context=16, max_tokens=4, drafts=("ngram", "layers:1"), repeats=2)
    finally:
        torch.set_num_threads(n)
    assert c.tokens == (1, 2, 3, 4) and len(c.target_ms) == 4 and all(t > 0 for t in c.target_ms)
    assert [d.spec for d in c.drafts] == ["ngram", "layers:1"] and c.draft("layers:1").n_params > 0 and c.draft("ngram").n_params == 0
    assert c.context == 16 and c.repeats == 2 and c.threads == 1
    assert from_json(to_json(c)) == c

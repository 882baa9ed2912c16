"""Words on the page that must say what the model did: one numbering of blocks, the weights'
real storage, every token counted, angles past a full turn."""
import dataclasses

import numpy as np

from tests.synthetic import make_trace
from viz import attention, page
from viz.inside import lens as lens_viz
from viz.inside import residual
from viz.inside.position import turn_words
from viz.style import block_label, depth_label


def test_one_numbering_of_blocks_from_zero():
    assert [depth_label(r, 3) for r in range(4)] == ["embedding", "after block 0", "after block 1", "after block 2 (the last)"]
    assert block_label(0) == "block 0"
    assert lens_viz.row_labels(4) == ["embedding", "after block 0", "after block 1", "after block 2 · output"]
    trace = make_trace(n_layers=3)
    pieces = list(trace.steps[-1].context_pieces) + [trace.steps[-1].piece]
    fig = attention.attention_figure(steps=trace.steps, step=1, layer=2, head=None, n_kv_heads=2, pieces=pieces)
    assert fig.layout.title.text.startswith("Block 2 ·")
    # the residual views: the stream after block k sits at x = k, the embedding before block 0
    L = 3
    contrib = residual.contributions_figure(np.ones(L), np.ones(L) * 2, np.arange(1.0, L + 2), np.ones(L))
    attn_bars, _, stream, ratio = contrib.data
    assert list(attn_bars.x) == [0, 1, 2] and list(stream.x) == [-1, 0, 1, 2]
    assert list(stream.customdata) == ["embedding", "after block 0", "after block 1", "after block 2 (the last)"]
    assert ratio.customdata[0].startswith("block 0 adds 1.0 to a stream of norm 1.0")
    path = residual.residual_path_figure(np.random.default_rng(0).normal(size=(L + 1, 2)), np.ones(L + 1), np.ones(L))
    assert "block 0 added" in path.data[0].customdata[1] and "after block 0" in path.data[0].customdata[1]


def test_the_lens_summary_counts_blocks_from_zero():
    from pipeline.trace.records import LensRecord

    L, k = 4, 5
    ranks = np.array([7, 3, 0, 0, 0])  # on top from row 2: the stream after block 1
    rec = LensRecord(step=0, position=3, token_id=1, piece=" cat", top_ids=np.zeros((L + 1, k), np.int64),
                     top_pieces=((" a",) * k,) * (L + 1), top_probs=np.full((L + 1, k), 0.1, np.float32),
                     chosen_probs=np.linspace(0.01, 0.9, L + 1).astype(np.float32), chosen_ranks=ranks,
                     entropy=np.ones(L + 1, np.float32))
    s = lens_viz.lens_summary_html(rec)
    assert "first becomes the top prediction after block 1" in s and "layer" not in s


def test_the_model_line_names_how_the_weights_are_stored():
    trace = make_trace()
    q4 = dataclasses.replace(trace.model, weights="GGUF: matrix weights Q4_1, embedding Q8_0, norms F32; computed in float32")
    line = page.model_markdown(q4)
    assert "Q4_1" in line and ", float32 ·" not in line
    assert "computed in float32" in page.model_markdown(dataclasses.replace(trace.model, weights=""))  # an old trace


def test_the_tokenizer_comparison_counts_a_token_that_released_no_text():
    trace = make_trace(n_steps=4)
    prompt = dataclasses.replace(trace.prompt, text_ids=(3, 4), text_pieces=(" hello", " cat"))
    held = dataclasses.replace(trace.steps[1], text="")  # half a character: no text yet, still a token
    trace = dataclasses.replace(trace, prompt=prompt, steps=(trace.steps[0], held, *trace.steps[2:]))
    html = page.compare_html(trace, 3)
    assert "(this model)</b>: 6 tokens (" in html  # 2 prompt tokens + 4 generated


def test_an_angle_past_a_full_turn_is_wrapped():
    assert turn_words(12.5) == "only 12.5°"
    assert turn_words(400.0) == "1 turn and 40°"
    assert turn_words(2 * 360 + 5) == "2 turns and 5°"


def test_the_kv_summary_counts_only_a_sliding_windows_positions():
    from viz.kv import bytes_per_value, kv_summary_html

    trace = make_trace(n_layers=2, n_steps=3)
    model = dataclasses.replace(trace.model, sliding_windows=(4, 0))
    st = trace.steps[-1]
    P = st.position + 1
    formula = 2 * model.n_kv_heads * model.head_dim * 4 * (3 + P)  # the window layer keeps 3, the other P
    st = dataclasses.replace(st, kv_cache_bytes_formula=formula, kv_cache_bytes=formula)
    assert bytes_per_value(st, model) == 4
    html = kv_summary_html(steps=[st], step=0, model=model)
    assert "1 of 2 layers use a sliding window and keep only their last 3 positions" in html and f"{formula:,} bytes" in html


def test_one_way_to_write_counts_and_percentages():
    from viz import fmt

    assert [fmt.tokens(n) for n in (0, 1, 2, 2048)] == ["0 tokens", "1 token", "2 tokens", "2,048 tokens"]
    assert [fmt.phase(p) for p in ("prefill", "decode", "other")] == ["prefill", "decode", "other"]
    assert [fmt.pct(p) for p in (0.873, 0.023, 0.00123, 4e-6, 0.0)] == ["87%", "2.3%", "0.12%", "0.0004%", "0%"]
    assert [fmt.pct_tenths(f) for f in (0.1234, 0.0004, 0.0, float("nan"))] == ["12.3%", "<0.1%", "0.0%", "–"]
    assert lens_viz.pct(0.023) == fmt.pct(0.023)  # the lens panel says it the same way

"""Inside-the-model figures (logit lens, residual stream, positions, swap, KV compare, accounting)
against hand-built records: the plotted numbers are the record's numbers."""
import dataclasses
import math

import numpy as np
import pytest

from pipeline.inside.analyses import (AccountingRecord, KVCompareRecord, LensRecord, MachineInfo, ParamCounts, PositionRecord,
                             SwapRecord)
from viz.inside.compute import accounting_figure, accounting_html, kv_compare_figure, kv_compare_html, si
from viz.fmt import pct
from viz.inside.lens import forms_at, lens_summary_html, logit_lens_figure
from viz.inside.position import learned_positions_figure, position_figure, rope_angles_figure, swap_figure
from viz.inside.residual import contributions_figure, residual_path_figure

SCRIPT = "<script>"
IMG = "<img src=x onerror=alert(1)>"


def _rendered(fig) -> str:
    return fig.to_json()  # serialises; the JSON text holds every label, hover and title


# --------------------------------------------------------------------------- logit lens

def make_lens(ranks=(3, 2, 0, 1, 0, 0), piece=" blue", token_id=7) -> LensRecord:
    """L = 5 layers, 6 rows. The chosen token (id 7) sits at `ranks[k]` in row k."""
    rows = len(ranks)
    ids, pieces, probs = [], [], []
    others = [(100 + k, p) for k, p in enumerate([" red", SCRIPT, " sky", IMG, " the", "\n"])]
    for k, r in enumerate(ranks):
        row = [o for o in others if o[0] != 100 + k % 6][:5]
        row = row[:r] + [(token_id, piece)] + row[r:4] if r < 5 else row
        ids.append([i for i, _ in row])
        pieces.append(tuple(p for _, p in row))
        p = np.array([0.5, 0.2, 0.1, 0.05, 0.02]) * (0.3 + 0.7 * k / (rows - 1))
        probs.append(p)
    top_probs = np.asarray(probs, np.float32)
    chosen = np.array([top_probs[k, r] if r < 5 else 0.001 for k, r in enumerate(ranks)], np.float32)
    return LensRecord(step=3, position=9, token_id=token_id, piece=piece, top_ids=np.asarray(ids, np.int64),
                      top_pieces=tuple(pieces), top_probs=top_probs, chosen_probs=chosen,
                      chosen_ranks=np.asarray(ranks, np.int64), entropy=np.linspace(8, 1, rows).astype(np.float32))


def test_logit_lens_cells_are_the_records_top5_and_the_line_is_chosen_probs():
    lens = make_lens()
    fig = logit_lens_figure(lens, n_layers=5)
    heat, line = fig.data
    np.testing.assert_array_equal(np.asarray(heat.z, np.float32), lens.top_probs)
    assert list(heat.y) == ["embedding", "after block 0", "after block 1", "after block 2", "after block 3", "after block 4 · output"]
    np.testing.assert_array_equal(np.asarray(line.x, np.float32), lens.chosen_probs)
    assert list(line.y) == list(heat.y)
    # hover of every cell in a row lists that row's 5 pieces (escaped) with their probabilities
    for k in range(6):
        hv = heat.customdata[k][0]
        for c in range(5):
            piece = lens.top_pieces[k][c]
            shown = {SCRIPT: "&lt;script&gt;", IMG: "&lt;img·src=x·onerror=alert(1)&gt;", "\n": "↵"}.get(piece, piece.replace(" ", "·"))
            assert f"#{c + 1} {shown}  {pct(lens.top_probs[k, c])}" in hv
        assert pct(lens.top_probs[k, 0]) == f"{lens.top_probs[k, 0] * 100:.0f}%"  # >= 10%: whole percent
    # the chosen token's cell is bold, the others are not
    for k, r in enumerate(lens.chosen_ranks):
        assert heat.text[k][r].startswith("<b>") and not heat.text[k][(r + 1) % 5].startswith("<b>")
    boxes = sorted(((s.y0 + s.y1) / 2, (s.x0 + s.x1) / 2) for s in fig.layout.shapes if s.name == "chosen")
    assert boxes == [(k, r) for k, r in enumerate(lens.chosen_ranks)]
    js = _rendered(fig)
    assert SCRIPT not in js and "<img" not in js


def test_logit_lens_marks_where_the_prediction_forms():
    lens = make_lens(ranks=(3, 2, 0, 1, 0, 0))
    assert forms_at(lens.chosen_ranks) == 4  # top at row 2, lost at 3, on top for good from 4
    fig = logit_lens_figure(lens, 5)
    (line,) = [s for s in fig.layout.shapes if s.name == "forms"]
    assert line.y0 == line.y1 == 3.5  # above row 4
    assert "from block 3 on" in fig.layout.title.text
    # never on top at the output: no mark, the rank is stated
    late = make_lens(ranks=(3, 2, 0, 1, 2, 1))
    assert forms_at(late.chosen_ranks) is None
    fig = logit_lens_figure(late, 5)
    assert not [s for s in fig.layout.shapes if s.name == "forms"]
    assert "ranked #2 at the output" in fig.layout.title.text
    with pytest.raises(ValueError):
        logit_lens_figure(lens, n_layers=6)


def test_lens_summary_sentences():
    s = lens_summary_html(make_lens(ranks=(3, 2, 1, 0, 0, 0)))
    assert "first becomes the top prediction after block 2" in s and "·blue" in s
    s = lens_summary_html(make_lens(ranks=(3, 2, 0, 1, 0, 0)))
    assert "for good after block 3" in s and "on top after block 1 before" in s
    s = lens_summary_html(make_lens(ranks=(0, 0, 0, 0, 0, 0)))
    assert "already the top prediction at the input embedding" in s
    s = lens_summary_html(make_lens(ranks=(3, 2, 1, 1, 2, 1)))
    assert "ranks it #2" in s and "sampled" in s
    s = lens_summary_html(make_lens(ranks=(3, 2, 1, 1, 2, 1)), forced=True)
    assert "ranks it #2" in s and "forced by a branch" in s and "sampled" not in s
    s = lens_summary_html(make_lens(piece=SCRIPT))
    assert SCRIPT not in s and "&lt;script&gt;" in s


# --------------------------------------------------------------------------- residual stream

def test_residual_path_points_arrows_and_hover():
    L = 4
    xy = np.array([[0, 0], [1, 0], [1, 1], [2, 3], [5, 5]], np.float32)
    rn = np.array([1.0, 2.0, 4.0, 8.0, 16.0], np.float32)
    un = np.array([1.5, 2.5, 5.0, 9.0], np.float32)
    fig = residual_path_figure(xy, rn, un, piece=SCRIPT, step=2)
    path, ends = fig.data
    np.testing.assert_array_equal(np.asarray(path.x), xy[:, 0])
    np.testing.assert_array_equal(np.asarray(path.y), xy[:, 1])
    np.testing.assert_array_equal(np.asarray(path.marker.color), np.arange(L + 1))  # coloured by depth
    assert list(ends.x) == [0, 5] and ends.text[0] == "start: <br>embedding" and ends.text[1] == "end: <br>after block 3"
    assert list(ends.textposition) == ["bottom right", "top left"]  # (each towards the middle: not cut at an edge)
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert len(arrows) == L
    assert [(a.ax, a.ay, a.x, a.y) for a in arrows] == [(*xy[k - 1], *xy[k]) for k in range(1, L + 1)]
    assert "block 2 added an update of norm 5.0 (125% of the stream before it)" in path.customdata[3]
    assert "stream norm 16.0" in path.customdata[4]
    assert SCRIPT not in _rendered(fig) and "&lt;script&gt;" in fig.layout.title.text
    with pytest.raises(ValueError):
        residual_path_figure(xy, layer_labels=["a", "b"])
    # without norms it still draws
    fig = residual_path_figure(xy)
    assert "norm" not in fig.data[0].customdata[2]


def test_contributions_bars_stream_and_ratio():
    attn = np.array([1.0, 3.0, 2.0], np.float32)
    mlp = np.array([2.0, 1.0, 4.0], np.float32)
    rn = np.array([10.0, 12.0, 14.0, 20.0], np.float32)
    un = np.array([2.0, 3.0, 7.0], np.float32)
    fig = contributions_figure(attn, mlp, rn, un, step=1)
    a, m, stream, ratio = fig.data
    np.testing.assert_array_equal(np.asarray(a.y), attn)
    np.testing.assert_array_equal(np.asarray(m.y), mlp)
    assert list(a.x) == [0, 1, 2]
    np.testing.assert_array_equal(np.asarray(stream.y), rn)
    assert list(stream.x) == [-1, 0, 1, 2] and stream.yaxis == "y2"
    np.testing.assert_allclose(np.asarray(ratio.y), [0.2, 0.25, 0.5])  # update / stream before the layer
    assert "median 25%" in fig.layout.title.text
    assert "attention larger than feed-forward in 1 of 3 blocks" in fig.layout.title.text
    _rendered(fig)
    fig = contributions_figure(attn, mlp)  # an old trace without the stream norms
    assert len(fig.data) == 2 and "median" not in fig.layout.title.text


# --------------------------------------------------------------------------- positions

def rope(n_pairs=4, theta=10000.0) -> PositionRecord:
    inv = (1.0 / theta ** (np.arange(n_pairs) / n_pairs)).astype(np.float32)
    return PositionRecord(kind="rope", rope_theta=theta, rotary_dim=2 * n_pairs, inv_freq=inv, learned_2d=None)


def test_rope_angles_are_position_times_inv_freq_mod_2pi():
    pos = rope()
    pieces = ["<|im_start|>", SCRIPT, " a", " b", " c", " d", " e", " f", " g"]
    fig = rope_angles_figure(pos, pieces)
    (heat,) = fig.data
    expect = np.mod(np.arange(len(pieces))[:, None] * pos.inv_freq.astype(np.float64)[None, :], 2 * math.pi)
    np.testing.assert_allclose(np.asarray(heat.z, np.float64), expect, rtol=1e-6)
    assert expect.max() > math.pi  # the wrap matters for these numbers
    assert heat.zmin == 0 and heat.zmax == pytest.approx(2 * math.pi)
    assert list(heat.y)[1] == "1 &lt;script&gt;" and list(heat.y)[0].startswith("0 ")
    note = fig.layout.annotations[0].text
    assert "fastest pair (0): one turn every 6.3 tokens" in note
    assert f"slowest pair (3): one turn every {2 * math.pi / float(pos.inv_freq[3]):,.0f} tokens" in note
    assert SCRIPT not in _rendered(fig)
    # long contexts: the last max_positions
    fig = rope_angles_figure(pos, [f"t{k}" for k in range(200)], max_positions=50)
    z = np.asarray(fig.data[0].z, np.float64)
    assert z.shape == (50, 4) and list(fig.data[0].y)[0] == "150 t150"
    np.testing.assert_allclose(z[0], np.mod(150 * pos.inv_freq.astype(np.float64), 2 * math.pi), rtol=1e-6)


def test_position_figure_dispatches_by_kind():
    pieces = [" a", SCRIPT, " c"]
    assert position_figure(rope(), pieces).data[0].type == "heatmap"
    xy = np.array([[0, 0], [1, 0], [1, 1], [0, 2], [3, 3]], np.float32)
    learned = PositionRecord(kind="learned", rope_theta=None, rotary_dim=None, inv_freq=None, learned_2d=xy)
    fig = position_figure(learned, pieces)
    path, used = fig.data
    np.testing.assert_array_equal(np.asarray(path.x), xy[:, 0])
    np.testing.assert_array_equal(np.asarray(path.y), xy[:, 1])
    np.testing.assert_array_equal(np.asarray(used.x), xy[:3, 0])  # the context uses positions 0..2
    assert "&lt;script&gt;" in used.hovertext[1]
    assert SCRIPT not in _rendered(fig)
    assert len(learned_positions_figure(learned).data) == 1
    none = PositionRecord(kind="none", rope_theta=None, rotary_dim=None, inv_freq=None, learned_2d=None)
    fig = position_figure(none, pieces)
    assert not fig.data and "causal mask" in fig.layout.annotations[0].text
    _rendered(fig)


def make_swap() -> SwapRecord:
    pieces = ("The", " cat", SCRIPT, " dog", ".")
    att = np.array([[0.4, 0.1, 0.2, 0.2, 0.1], [0.5, 0.1, 0.1, 0.2, 0.1], [0.3, 0.3, 0.1, 0.2, 0.1]], np.float32)
    sw = att.copy()
    sw[1] = [0.5, 0.2, 0.1, 0.1, 0.1]
    sw[2] = [0.3, 0.1, 0.1, 0.4, 0.1]
    return SwapRecord(pieces=pieces, swapped_pieces=("The", " dog", SCRIPT, " cat", "."), i=1, j=3, attention=att,
                      attention_swapped=sw, max_abs_diff=float(np.abs(att - sw).max()), top_piece=" ran", top_piece_swapped=IMG)


def test_swap_figure_original_vs_swapped_in_original_key_order():
    swap = make_swap()
    fig = swap_figure(swap)  # the last layer
    orig, swapped, strip = fig.data
    np.testing.assert_array_equal(np.asarray(orig.y), swap.attention[2])
    np.testing.assert_array_equal(np.asarray(swapped.y), swap.attention_swapped[2])
    assert list(orig.x) == ["0 The", "⇄ 1 ·cat", "2 &lt;script&gt;", "⇄ 3 ·dog", "4 ."] == list(swapped.x)
    np.testing.assert_allclose(np.asarray(strip.y), [0.0, 0.1, 0.2], atol=1e-6)
    assert list(strip.marker.color).index("#c0262d") == 2
    assert "up to 0.200" in fig.layout.title.text and "·ran → &lt;img" in fig.layout.title.text and "(changed)" in fig.layout.title.text
    fig = swap_figure(swap, layer=1)
    np.testing.assert_array_equal(np.asarray(fig.data[1].y), swap.attention_swapped[1])
    assert "in block 1 (the mean of its heads)" in fig.layout.title.text
    js = _rendered(fig)
    assert SCRIPT not in js and "<img" not in js
    with pytest.raises(ValueError):
        swap_figure(swap, layer=3)


# --------------------------------------------------------------------------- compute

def make_kvc(same=True) -> KVCompareRecord:
    return KVCompareRecord(step=4, position=19, tokens_with=1, tokens_without=20, macs_with=1.35e8, macs_without=2.7e9,
                           ms_with=8.0, ms_without=40.0, max_abs_diff=3.2e-6, same_argmax=same,
                           top_ids=np.array([5, 9, 2], np.int64), logits_with=np.array([12.5, 11.0, 9.25], np.float32),
                           logits_without=np.array([12.5, 11.000003, 9.25], np.float32), argmax_id=5)


def test_kv_compare_figure_and_table():
    kvc = make_kvc()
    fig = kv_compare_figure(kvc, pieces=[SCRIPT, " b", " c"])
    diag, pts, bars = fig.data
    np.testing.assert_array_equal(np.asarray(pts.x, np.float32), kvc.logits_without)
    np.testing.assert_array_equal(np.asarray(pts.y, np.float32), kvc.logits_with)
    assert list(bars.y) == [8.0, 40.0]
    assert "id 5" in pts.customdata[0] and "&lt;script&gt;" in pts.customdata[0]
    assert "20.0× the multiply-adds" in fig.layout.title.text and "5.0× the time" in fig.layout.title.text
    assert SCRIPT not in _rendered(fig)
    h = kv_compare_html(kvc, pieces=[SCRIPT])
    for s in ("tokens processed", ">1<", ">20<", "135 M", "2.7 G", "8 ms", "40 ms", "20.0×", "3.2e-06", "same top token", "&lt;script&gt;"):
        assert s in h, s
    assert SCRIPT not in h
    h = kv_compare_html(make_kvc(same=False))
    assert "the top token differs" in h and "same top token" not in h
    # the token is named only when it is the one the passes picked
    h = kv_compare_html(dataclasses.replace(make_kvc(), argmax_id=9), pieces=[SCRIPT, " b", " c"])
    assert "same top token" in h and "&lt;script&gt;" not in h


MACHINE = MachineInfo(memory_gb_s=20.0, matmul_gflop_s=200.0, threads=2)  # balance: 10 flops per byte
PARAMS = ParamCounts(total=135_000_000, embedding=28_000_000, lm_head=0, tied=True, per_layer_attn=2_000_000,
                     per_layer_mlp=1_500_000, per_layer_norm=1000, final_norm=576, n_layers=30, bytes_per_param=4)


def acc(step, tokens, *, ms=10.0) -> AccountingRecord:
    """Numbers that follow the definitions: 1e8 params read, 4 bytes each, no KV."""
    params = 100_000_000
    macs = params * tokens
    wb = params * 4.0
    ai = 2 * macs / wb
    return AccountingRecord(step=step, phase="prefill" if tokens > 1 else "decode", tokens=tokens, params_read=params, macs=macs,
                            weight_bytes=wb, kv_bytes_read=0.0, arithmetic_intensity=ai, ms=ms,
                            memory_bound_ms=wb / (MACHINE.memory_gb_s * 1e9) * 1e3,
                            compute_bound_ms=2 * macs / (MACHINE.matmul_gflop_s * 1e9) * 1e3,
                            machine_balance=MACHINE.matmul_gflop_s / MACHINE.memory_gb_s)


def test_accounting_sentence_flips_at_the_machine_balance():
    mem = accounting_html(acc(1, 1), MACHINE, PARAMS)  # 0.5 flops/byte < 10
    assert "memory-bound" in mem and "compute-bound" not in mem
    assert "0.5 flops per byte" in mem and "balance of 10 flops per byte" in mem
    assert "20 ms" in mem and "1 ms" in mem  # memory floor 400 MB / 20 GB/s; compute floor 200 MFLOP / 200 GFLOP/s
    assert "100 M of 135 M" in mem and "400 MB" in mem and "200 GFLOP/s" in mem and "20 GB/s" in mem
    assert "0.5× that floor" in mem  # measured 10 ms against the 20 ms floor
    just_below = accounting_html(acc(0, 19), MACHINE, PARAMS)  # 9.5 flops/byte
    assert "memory-bound" in just_below
    above = accounting_html(acc(0, 21, ms=50.0), MACHINE, PARAMS)  # 10.5 flops/byte
    assert "compute-bound" in above and "memory-bound" not in above
    assert "21 ms" in above and "2.38× that floor" not in above and "2.4× that floor" in above


def test_accounting_figure_plots_each_steps_numbers():
    recs = [acc(0, 32, ms=60.0), acc(1, 1, ms=25.0), acc(2, 1, ms=26.0)]
    fig = accounting_figure(recs, step=1)
    bars, balance, measured, mem, cmp_ = fig.data
    np.testing.assert_allclose(np.asarray(bars.y), [16.0, 0.5, 0.5])
    assert list(balance.y) == [10.0, 10.0]
    assert list(measured.y) == [60.0, 25.0, 26.0]
    np.testing.assert_allclose(np.asarray(mem.y), [20.0, 20.0, 20.0])
    np.testing.assert_allclose(np.asarray(cmp_.y), [32.0, 1.0, 1.0])
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type == "log"
    assert list(bars.marker.line.width) == [0, 3, 0]  # the step on screen
    assert "step 1 is memory-bound" in fig.layout.title.text and "2 of 3 steps" in fig.layout.title.text
    assert "step 0 is compute-bound" in accounting_figure(recs, step=0).layout.title.text
    _rendered(fig)


def test_si_units():
    assert si(1_350_000) == "1.35 M" and si(2.7e9) == "2.7 G" and si(999) == "999" and si(20e9, "B/s") == "20 GB/s"


def test_accounting_names_the_stored_precision_against_memory():
    from pipeline.trace.records import ModelInfo

    q4 = ModelInfo(id="m", source="embedded", family="llama", n_layers=30, n_heads=9, n_kv_heads=3, head_dim=64, d_model=576,
                   vocab_size=49152, context_length=8192, dtype="float32", n_params=135_000_000,
                   weights="GGUF: matrix weights Q4_1, embedding Q8_0, norms F32; computed in float32", weight_bytes=96_000_000)
    page = accounting_html(acc(1, 1), MACHINE, PARAMS, q4)
    assert "weights as stored" in page and "Q4_1" in page
    assert "5.69 bits a weight" in page  # 8 x 96e6 / 135e6
    assert "540 MB in memory (32 bits a weight), 5.6× the file" in page
    assert "Quantisation" in page
    f32 = dataclasses.replace(q4, weights="float32 safetensors", weight_bytes=540_000_000)
    plain = accounting_html(acc(1, 1), MACHINE, PARAMS, f32)
    assert "32 bits a weight: float32 safetensors" in plain and "Quantisation" not in plain
    assert "weights as stored" not in accounting_html(acc(1, 1), MACHINE, PARAMS, dataclasses.replace(q4, weight_bytes=0))

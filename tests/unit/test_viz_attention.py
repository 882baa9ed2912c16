"""Attention matrices and figures against the records they are drawn from."""
import math

import numpy as np
import pytest

from tests.synthetic import make_trace
from viz.attention import attention_figure, attention_matrix, attention_overview_figure, kv_group, overview_values


def test_attention_matrix_is_causal_rows_sum_to_one_and_equal_the_records():
    t = make_trace(n_layers=2, n_heads=4, prompt_len=5, n_steps=4)
    m = attention_matrix(t.steps, upto=3)
    T = t.steps[3].position + 1
    assert m.shape == (2, 4, T, T)
    np.testing.assert_allclose(m.sum(-1), 1.0, rtol=1e-5)
    assert (m[:, :, np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] == 0).all()
    T0 = t.steps[0].position + 1
    np.testing.assert_array_equal(m[:, :, :T0, :T0], t.steps[0].attention_matrix)
    for s in t.steps:
        np.testing.assert_array_equal(m[:, :, s.position, : s.position + 1], s.attention)
    # upto cuts the matrix at that step's query; layers selects
    assert attention_matrix(t.steps, upto=1).shape[-1] == t.steps[1].position + 1
    np.testing.assert_array_equal(attention_matrix(t.steps, upto=3, layers=[1])[0], m[1])


def test_attention_matrix_without_prefill_matrix_leaves_unknown_rows_nan():
    t = make_trace(prompt_len=6, n_steps=3, with_matrix=False)
    m = attention_matrix(t.steps, upto=2)
    T0 = t.steps[0].position + 1
    assert np.isnan(m[:, :, : T0 - 1, :T0][..., np.tril_indices(T0 - 1)[0], np.tril_indices(T0 - 1)[1]]).all()
    np.testing.assert_array_equal(m[:, :, T0 - 1, :T0], t.steps[0].attention)
    np.testing.assert_allclose(m[:, :, T0 - 1 :].sum(-1), 1.0, rtol=1e-5)
    fig = attention_figure(steps=t.steps, step=2, layer=0, head=0, n_kv_heads=2, pieces=list(t.steps[2].context_pieces))
    assert "does not hold the prompt's full attention matrix" in fig.layout.title.text
    full = make_trace(prompt_len=6, n_steps=3)
    fig = attention_figure(steps=full.steps, step=2, layer=0, head=0, n_kv_heads=2, pieces=list(full.steps[2].context_pieces))
    assert "does not hold" not in fig.layout.title.text


def _heatmaps(fig):
    return [d for d in fig.data if d.type == "heatmap"]


def test_grid_has_one_heatmap_per_head_with_gqa_titles_and_the_query_row_outlined():
    t = make_trace(n_layers=2, n_heads=4, n_kv_heads=2, n_steps=4)
    step, layer = 2, 1
    st = t.steps[step]
    fig = attention_figure(steps=t.steps, step=step, layer=layer, head=None, n_kv_heads=2, pieces=list(st.context_pieces))
    hm = _heatmaps(fig)
    assert len(hm) == 4
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["head 0 (kv 0)", "head 1 (kv 0)", "head 2 (kv 1)", "head 3 (kv 1)"]
    m = attention_matrix(t.steps, upto=step)[layer]  # (H, T, T)
    T = st.position + 1
    for h, d in enumerate(hm):
        z = np.asarray(d.z, dtype=float)
        assert z.shape == (T, T)
        low = np.tril_indices(T)
        np.testing.assert_array_equal(z[low], m[h][low])
        assert np.isnan(z[np.triu_indices(T, 1)]).all()  # the causal mask is blank
        assert len(set(d.x)) == T and list(d.x) == list(d.y)
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rects) == 4
    for r in rects:
        assert (r.y0 + r.y1) / 2 == st.position  # window starts at 0 here
        assert r.x0 == -0.5 and r.x1 == T - 0.5
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1
    assert "<script>" not in "".join(hm[0].x)  # pieces are escaped on the axes


def test_single_head_and_long_context_window():
    t = make_trace(n_heads=4, n_kv_heads=1, prompt_len=140, n_steps=2)
    st = t.steps[1]
    fig = attention_figure(steps=t.steps, step=1, layer=0, head=3, n_kv_heads=1, pieces=list(st.context_pieces))
    (d,) = _heatmaps(fig)
    T = st.position + 1
    lo = T - 128
    z = np.asarray(d.z, dtype=float)
    assert z.shape == (128, 128)
    m = attention_matrix(t.steps, upto=1)[0, 3, lo:, lo:]
    low = np.tril_indices(128)
    np.testing.assert_array_equal(z[low], m[low])
    assert d.y[0].startswith(f"{lo} ") and d.y[-1].startswith(f"{T - 1} ")
    assert "last 128 of" in fig.layout.title.text and "head 3 (kv 0)" in fig.layout.title.text
    (r,) = fig.layout.shapes
    assert (r.y0 + r.y1) / 2 + lo == st.position


def test_kv_group_of_grouped_query_attention():
    assert [kv_group(h, 9, 3) for h in range(9)] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [kv_group(h, 4, 4) for h in range(4)] == [0, 1, 2, 3]


@pytest.mark.parametrize("metric", ["entropy", "newest", "first", "bos"])
def test_overview_values_match_the_step_attention(metric):
    t = make_trace(n_layers=3, n_heads=4, n_kv_heads=2)
    st = t.steps[2]
    a = st.attention.astype(np.float64)  # (L, H, K)
    fig = attention_overview_figure(step=st, n_kv_heads=2, metric=metric)
    z = np.asarray(fig.data[0].z, dtype=float)
    expect = {"entropy": -(a * np.log2(a)).sum(-1), "newest": a[..., -1], "first": a[..., 0], "bos": a[..., 0]}[metric]
    np.testing.assert_allclose(z, expect, rtol=1e-5)
    assert list(fig.data[0].x) == ["h0·kv0", "h1·kv0", "h2·kv1", "h3·kv1"]
    assert fig.data[0].zmax == (pytest.approx(math.log2(a.shape[-1])) if metric == "entropy" else 1.0)
    seps = [s for s in fig.layout.shapes if s.type == "line"]
    assert [s.x0 for s in seps] == [1.5]  # between the two KV groups


def test_overview_rejects_unknown_metric():
    with pytest.raises(ValueError):
        overview_values(np.ones((1, 1, 2)) / 2, "max")


@pytest.mark.parametrize("n_heads,n_kv", [(1, 1), (3, 1), (9, 3), (12, 4), (32, 8)])
def test_grid_sizes_stay_bounded(n_heads, n_kv):
    t = make_trace(n_layers=1, n_heads=n_heads, n_kv_heads=n_kv, n_steps=2)
    st = t.steps[1]
    fig = attention_figure(steps=t.steps, step=1, layer=0, head=None, n_kv_heads=n_kv, pieces=list(st.context_pieces))
    assert len(_heatmaps(fig)) == min(n_heads, 16)
    if n_heads > 16:
        assert "heads 0–15 of 32" in fig.layout.title.text
    for ax in [k for k in fig.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]:
        lo, hi = fig.layout[ax].domain
        assert 0 <= lo < hi <= 1


def test_a_continuation_prefill_block_replaces_the_earlier_rows():
    """Re-sampling from a step starts a new prefill over the whole context: its block wins."""
    import dataclasses

    from tests.synthetic import _causal_rows

    t = make_trace(n_layers=2, n_heads=2, n_kv_heads=1, n_steps=4)
    s2 = t.steps[2]
    T2 = s2.position + 1
    block = _causal_rows(np.random.default_rng(7), 2, 2, T2)
    steps = list(t.steps)
    steps[2] = dataclasses.replace(s2, phase="prefill", attention_matrix=block, attention=block[:, :, -1, :])
    m = attention_matrix(steps, upto=3)
    np.testing.assert_array_equal(m[:, :, :T2, :T2], block)
    np.testing.assert_array_equal(m[:, :, steps[3].position, :], steps[3].attention)
    np.testing.assert_allclose(m.sum(-1), 1.0, rtol=1e-5)

"""Attention matrices and figures against the records they are drawn from."""
import math

import numpy as np
import pytest

from tests.synthetic import make_trace
from viz.text import speaking
from viz.attention import TAG, attention_figure, attention_matrix, attention_overview_figure, kv_group, overview_values, position_labels, tile_gap


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


def test_grid_tiles_every_head_in_one_heatmap_with_gqa_titles_and_the_query_row_outlined():
    t = make_trace(n_layers=2, n_heads=4, n_kv_heads=2, n_steps=4)
    step, layer = 2, 1
    st = t.steps[step]
    fig = attention_figure(steps=t.steps, step=step, layer=layer, head=None, n_kv_heads=2, pieces=list(st.context_pieces))
    (d,) = _heatmaps(fig)
    titles = [a.text for a in fig.layout.annotations]
    # (in two lines: on one, neighbouring tiles' titles ran into each other on a phone)
    assert titles == ["head 0<br>(kv 0)", "head 1<br>(kv 0)", "head 2<br>(kv 1)", "head 3<br>(kv 1)"]
    with speaking("zh-CN"):
        zh = [a.text for a in attention_figure(steps=t.steps, step=step, layer=layer, head=None, n_kv_heads=2,
                                               pieces=list(st.context_pieces)).layout.annotations]
    assert zh[3] == "第 3 个头<br>（kv 1）"
    m = attention_matrix(t.steps, upto=step)[layer]  # (H, T, T)
    T = st.position + 1
    cols, gap = 3, tile_gap(T)  # four heads: three tiles a row, two rows
    z, who = np.asarray(d.z, dtype=float), np.asarray(d.customdata)
    assert z.shape == (2 * T + gap, 3 * T + 2 * gap) and who.shape == z.shape
    low, up = np.tril_indices(T), np.triu_indices(T, 1)
    seen = np.zeros(z.shape, bool)
    for h in range(4):
        r, c = divmod(h, cols)
        ys, xs = slice(r * (T + gap), r * (T + gap) + T), slice(c * (T + gap), c * (T + gap) + T)
        tile = z[ys, xs]
        np.testing.assert_array_equal(tile[low], m[h][low])
        assert np.isnan(tile[up]).all()  # the causal mask is blank
        assert (who[ys, xs] == h).all()  # the hover names the tile's head
        seen[ys, xs] = True
        a = fig.layout.annotations[h]
        assert a.xref == "x" and a.x == c * (T + gap) + (T - 1) / 2 and a.y == r * (T + gap) - 0.5
    assert np.isnan(z[~seen]).all() and (who[~seen] == -1).all()  # blank between tiles (and after the last head)
    assert d.hoverongaps is False and "head %{customdata}" in d.hovertemplate
    assert len(set(d.x)) == len(d.x) and len(set(d.y)) == len(d.y)  # each cell its own category
    plain = [x.replace(TAG, "") for x in d.x]
    labels = plain[:T]
    assert plain[T + gap:2 * T + gap] == labels and plain[2 * (T + gap):] == labels and list(d.y[:T]) == labels
    assert all(x.startswith("gap ") for x in d.x[T:T + gap])
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rects) == 4
    for h, r in enumerate(rects):
        row, col = divmod(h, cols)
        assert (r.y0 + r.y1) / 2 == row * (T + gap) + st.position  # window starts at 0 here
        assert r.x0 == col * (T + gap) - 0.5 and r.x1 == col * (T + gap) + T - 0.5
    assert fig.layout.xaxis.range == (-0.5, len(d.x) - 0.5) and fig.layout.yaxis.range == (len(d.y) - 0.5, -0.5)
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1
    assert "<script>" not in "".join(d.x)  # pieces are escaped on the axes


def test_a_frame_holds_later_rows_blank_and_names_no_token_to_come():
    """frame: every step of a run can share the last step's frame; rows after the step's are blank, their
    positions labelled "k ?" (a token not yet written is not named: Guess first hides it)."""
    t = make_trace(n_heads=2, n_kv_heads=1, n_steps=4)
    pieces = list(t.steps[-1].context_pieces)
    T, T1 = t.steps[-1].position + 1, t.steps[1].position + 1
    for head in (None, 1):
        alone = attention_figure(steps=t.steps, step=1, layer=0, head=head, n_kv_heads=1, pieces=pieces)
        framed = attention_figure(steps=t.steps, step=1, layer=0, head=head, n_kv_heads=1, pieces=pieces, frame=T)
        z, zf = np.asarray(alone.data[0].z, float), np.asarray(framed.data[0].z, float)
        gap = tile_gap(T) if head is None else 0
        np.testing.assert_array_equal(zf[:T1, :T1], z[:T1, :T1])  # the first head's tile (or the head)
        assert np.isnan(zf[T1:T]).all() and np.isnan(zf[:T1, T1:T]).all()
        assert [x.replace(TAG, "") for x in framed.data[0].x[:T]] == position_labels(pieces, 0, T1) + [f"{k} ?" for k in range(T1, T)]
        assert len(framed.data[0].x) == (2 * T + gap if head is None else T)
        assert framed.layout.title.text == alone.layout.title.text


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
    (d,) = _heatmaps(fig)
    shown = min(n_heads, 16)
    assert len(fig.layout.annotations) == shown and set(np.unique(d.customdata)) == set(range(shown)) | ({-1} if shown > 1 else set())
    if n_heads > 16:
        assert "heads 0–15 of 32" in fig.layout.title.text
    T, cols = st.position + 1, min(shown, 3 if shown <= 9 else 4)
    assert np.asarray(d.z).shape[1] == cols * T + (cols - 1) * tile_gap(T)


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

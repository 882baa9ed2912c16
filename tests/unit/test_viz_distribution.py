"""The distribution panel: reshaping with the real sampling code, and what the bars show."""
import dataclasses

import numpy as np
import pytest

from pipeline.sampling import stages as sampling
from tests.synthetic import make_trace
from viz.distribution import distribution_figure, reshape
from viz.style import MUTED, MUTED_TEXT

REC = dict(temperature=0.8, top_k=0, top_p=0.9)


def _expected_final(step, *, temperature=1.0, top_k=0, top_p=1.0, repetition_penalty=1.0):
    """Independent recomputation (plain numpy, written from the definitions, not pipeline.sampling)
    over the full vocabulary, at the step's top ids: repetition penalty (divide a positive logit of
    a token already in the context, multiply a negative one), temperature (argmax at 0), top-k,
    then top-p (the smallest most-likely set reaching p)."""
    x = np.asarray(step.logits, np.float64).copy()
    seen = np.unique(np.asarray(step.context_ids, np.int64))
    x[seen] = np.where(x[seen] > 0, x[seen] / repetition_penalty, x[seen] * repetition_penalty)
    if temperature == 0:
        keep = np.zeros(x.size, bool)
        keep[np.argmax(x)] = True
        probs = keep.astype(np.float64)
        return probs[step.top_ids], keep[step.top_ids]
    x = x / temperature
    keep = np.ones(x.size, bool)
    if top_k:
        keep &= x >= np.sort(x)[-top_k]
    p = np.where(keep, np.exp(x - x[keep].max()), 0.0)
    p /= p.sum()
    if top_p < 1.0:
        order = np.argsort(-p, kind="stable")
        n = int(np.searchsorted(np.cumsum(p[order]), top_p - 1e-12)) + 1  # smallest set reaching top_p
        keep = np.zeros(x.size, bool)
        keep[order[:n]] = True
        p = np.where(keep, p, 0.0)
        p /= p.sum()
    return p[step.top_ids], keep[step.top_ids]


@pytest.mark.parametrize("kw", [dict(), dict(repetition_penalty=1.3), dict(top_k=5, top_p=1.0), dict(temperature=0.0)])
def test_recorded_settings_give_the_recorded_final_probs(kw):
    settings = dict(REC, **kw)
    t = make_trace(n_steps=3, **settings)
    for st in t.steps:
        r = reshape(st, **settings)
        assert r.exact and r.source == "recorded"
        np.testing.assert_array_equal(r.final_probs, st.top_final_probs.astype(np.float64))
        # recomputing from the full logits gives the same numbers and the same kept set
        r2 = reshape(st, use_recorded=False, **settings)
        assert r2.exact and r2.source == "logits"
        np.testing.assert_allclose(r2.final_probs, st.top_final_probs, atol=1e-6)
        np.testing.assert_array_equal(r2.kept, r.kept)
        assert r2.stage_kept == tuple(s.kept for s in st.stages)
        np.testing.assert_allclose(r2.stage_mass, [s.mass for s in st.stages], rtol=1e-9)
        assert r.final_entropy == st.final_entropy
        assert r2.final_entropy == pytest.approx(st.final_entropy, rel=1e-6)


def test_other_settings_recompute_exactly_from_the_logits():
    st = make_trace(**REC).steps[1]
    r = reshape(st, temperature=1.5, top_k=10, top_p=0.95)
    assert r.exact and r.source == "logits"
    final, kept = _expected_final(st, temperature=1.5, top_k=10, top_p=0.95)
    np.testing.assert_allclose(r.final_probs, final, rtol=1e-6, atol=1e-12)  # float32 logits, float64 arithmetic
    np.testing.assert_array_equal(r.kept, kept)
    assert not np.allclose(r.final_probs, st.top_final_probs)  # the temperature changed the distribution
    assert r.stage_names == ("temperature", "top_k", "top_p")


def test_without_logits_other_settings_are_approximate_over_the_top_n():
    st = make_trace(with_logits=False, top_n=20, **REC).steps[0]
    assert st.logits is None
    r = reshape(st, temperature=1.2, top_k=0, top_p=0.9)
    assert not r.exact and r.source == "top-N"
    ref = sampling.apply_stages(st.top_logits, sampling.build_stages(temperature=1.2, top_p=0.9))
    np.testing.assert_allclose(r.final_probs, ref.final_probs)
    fig = distribution_figure(st, temperature=1.2, top_k=0, top_p=0.9)
    assert "approximate" in fig.layout.title.text
    assert any("the trace holds only the top 20 logits" in (a.text or "") for a in fig.layout.annotations)
    # at the recorded settings the recorded numbers are exact even without logits
    fig2 = distribution_figure(st, **REC)
    assert "approximate" not in fig2.layout.title.text
    assert not any("approximate" in (a.text or "") for a in fig2.layout.annotations)


def _bars(fig):
    raw, fin = [d for d in fig.data if d.type == "bar"]
    return raw, fin


@pytest.mark.parametrize("settings", [REC, dict(temperature=1.0, top_k=3, top_p=1.0), dict(temperature=2.0, top_k=0, top_p=0.5)])
def test_bars_grey_exactly_the_filtered_tokens_and_rest_holds_the_remaining_mass(settings):
    t = make_trace(vocab=50, top_n=20, **REC)
    st = t.steps[2]
    n = 12
    fig = distribution_figure(st, n=n, vocab_size=t.model.vocab_size, **settings)
    raw, fin = _bars(fig)
    final, kept = _expected_final(st, **settings)
    assert len(raw.x) == n + 1 and len(fin.x) == n + 1
    np.testing.assert_allclose(raw.x[:n], st.top_probs[:n])
    np.testing.assert_allclose(fin.x[:n], final[:n], atol=1e-7)
    greyed = [c == MUTED for c in raw.marker.color[:n]]
    assert greyed == [not k for k in kept[:n]]
    for lab, k in zip(raw.y[:n], kept[:n]):
        assert (MUTED_TEXT in lab) == (not k) or "sampled" in lab
    assert raw.y[-1] == f"<i>rest of vocabulary ({50 - n:,} tokens)</i>"
    assert raw.x[-1] == pytest.approx(1 - st.top_probs[:n].astype(float).sum(), abs=1e-9)
    assert fin.x[-1] == pytest.approx(max(0.0, 1 - final[:n].sum()), abs=1e-9)
    assert sum(raw.x) == pytest.approx(1.0, abs=1e-6) and sum(fin.x) == pytest.approx(1.0, abs=1e-6)


def test_cut_off_line_sits_after_the_last_kept_token():
    st = make_trace(**REC).steps[0]
    fig = distribution_figure(st, temperature=1.0, top_k=0, top_p=0.9, n=20)
    _, kept = _expected_final(st, temperature=1.0, top_p=0.9)
    k = int(kept.sum())
    assert 0 < k < 20 and kept[:k].all()
    (line,) = [s for s in fig.layout.shapes if s.type == "line"]
    assert line.y0 == line.y1 == k - 0.5
    top_p = sampling.apply_stages(st.logits, sampling.build_stages(temperature=1.0, top_p=0.9))
    assert [a.y for a in fig.layout.annotations if a.name == "cut-off"] == [k - 0.5]
    words = f"top-p 0.9 keeps {k:,} token{'s' if k > 1 else ''}, removes {1 - top_p.stage_mass[-1]:.1%}"
    assert words in fig.layout.title.text


def test_sampled_token_is_marked_or_its_rank_noted():
    st = make_trace(**REC).steps[3]
    rank = list(st.top_ids).index(st.token_id)
    assert rank > 0  # this synthetic step sampled a token other than the top one
    fig = distribution_figure(st, n=10, **REC)
    raw, fin = _bars(fig)
    marked = [i for i, lab in enumerate(raw.y) if "◀ sampled" in lab]
    assert marked == [rank]
    assert fin.marker.color[rank] != fin.marker.color[(rank + 1) % 10]
    fig = distribution_figure(st, n=rank, **REC)  # the sampled token falls outside the bars
    raw, _ = _bars(fig)
    assert not any("◀ sampled" in lab for lab in raw.y)
    assert any(f"ranked #{rank + 1}" in (a.text or "") for a in fig.layout.annotations)
    forced = distribution_figure(dataclasses.replace(st, forced=True), n=10, **REC)  # a branch: named as forced, never "sampled"
    raw, _ = _bars(forced)
    assert [i for i, lab in enumerate(raw.y) if "◀ forced" in lab] == [rank] and not any("◀ sampled" in lab for lab in raw.y)
    assert any("forced token" in (a.text or "") and f"ranked #{rank + 1}" in (a.text or "") for a in forced.layout.annotations)
    outside = dataclasses.replace(st, token_id=10_000)
    fig = distribution_figure(outside, n=10, **REC)
    assert any("is not among the top 20" in (a.text or "") for a in fig.layout.annotations)


def test_the_legend_shows_each_colour_the_bars_use():
    """One legend entry per colour (a bar trace's own entry would take its first bar's colour: red
    whenever the sampled token ranks first, as it does here)."""
    st = make_trace(**REC).steps[0]
    st = dataclasses.replace(st, token_id=int(st.top_ids[0]))
    fig = distribution_figure(st, n=10, **REC)
    raw, fin = _bars(fig)
    assert not raw.showlegend and not fin.showlegend
    legend = {t.name: t.marker.color for t in fig.data if t.showlegend is not False}
    assert legend == {raw.name: raw.marker.color[1], fin.name: fin.marker.color[1], "the sampled token": fin.marker.color[0]}
    forced = distribution_figure(dataclasses.replace(st, forced=True), n=10, **REC)
    assert any(t.name.startswith("the forced token") for t in forced.data) and "the sampled token" not in [t.name for t in forced.data]


def test_title_gives_raw_and_final_entropy_and_labels_are_escaped():
    t = make_trace(**REC)
    st = t.steps[2]  # its candidates include '<script>' and '<img src=x onerror=...>'
    fig = distribution_figure(st, **REC)
    assert f"{st.entropy:.2f} bits raw → {st.final_entropy:.2f} bits" in fig.layout.title.text
    everything = "".join(fig.data[0].y) + "".join(fig.data[0].customdata)
    assert "<script>" in st.top_pieces and "&lt;script&gt;" in everything and "&lt;img" in everything
    assert "<script>" not in everything and "<img" not in everything
    assert fig.layout.xaxis.range == (0, 1.08)


def test_bad_settings_raise_the_pipeline_error():
    st = make_trace().steps[0]
    with pytest.raises(sampling.SettingsError):
        reshape(st, temperature=-1, top_k=0, top_p=0.9)


def test_greedy_keeps_one_token_and_shows_zero_entropy():
    st = make_trace(temperature=0.0, top_p=0.9).steps[1]
    r = reshape(st, temperature=0.0, top_k=0, top_p=0.9)
    assert r.kept.sum() == 1 and r.kept[0] and r.final_probs[0] == 1.0
    fig = distribution_figure(st, temperature=0.0, top_k=0, top_p=0.9)
    assert "→ 0.00 bits" in fig.layout.title.text and "-0.00" not in fig.layout.title.text
    assert "greedy" in fig.layout.title.text


@pytest.mark.parametrize("kw", [dict(temperature=0.0, top_k=0, top_p=0.5), dict(temperature=1.3, top_k=5, top_p=0.8), REC,
                                dict(temperature=0.7, top_k=0, top_p=0.9, min_p=0.05, repetition_penalty=1.3)])
def test_the_figure_names_the_settings_it_was_computed_with(kw):
    """A distribution names (in layout.meta) the settings it was computed with: the page reads them from there."""
    fig = distribution_figure(make_trace(**REC).steps[1], **kw)
    meta = fig.layout.meta
    assert meta == {"temperature": kw["temperature"], "top_k": kw["top_k"], "top_p": kw["top_p"], "min_p": kw.get("min_p", 0.0),
                    "repetition_penalty": kw.get("repetition_penalty", 1.0)}
    assert type(meta["top_k"]) is int and all(type(meta[k]) is float for k in ("temperature", "top_p", "min_p", "repetition_penalty"))

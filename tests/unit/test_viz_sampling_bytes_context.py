"""Sampling comparison, the bytes view, the context window panel, and the new captions."""
import dataclasses

import numpy as np
import pytest

from pipeline.sampling import stages as sampling
from tests.synthetic import make_trace
from viz.inside.bytes_view import byte_cells, bytes_html, readable_to_bytes
from viz.captions import captions
from viz.inside.context import context_figure, context_html, context_use, format_cost
from viz.sampling_compare import compare_samples, sampling_compare_figure

SETTINGS = [dict(temperature=0.8, top_k=0, top_p=0.9), dict(temperature=1.5, top_k=10, top_p=1.0), dict(temperature=0.0)]


def _exact(step, s, rp=1.0):
    stages = sampling.build_stages(temperature=s["temperature"], top_k=s.get("top_k", 0), top_p=s.get("top_p", 1.0),
                                   repetition_penalty=rp, context_ids=step.context_ids)
    return sampling.apply_stages(step.logits, stages)


# ---------------------------------------------------------------------------------------------
# sampling comparison


@pytest.mark.parametrize("rp", [1.0, 1.3])
def test_exact_probabilities_are_the_pipeline_final_probs(rp):
    t = make_trace(vocab=50, top_n=20)
    st = t.steps[1]
    res = compare_samples(st, SETTINGS, vocab_size=50, repetition_penalty=rp, top=12)
    assert len(res) == 3
    for r, s in zip(res, SETTINGS):
        ref = _exact(st, s, rp)
        np.testing.assert_array_equal(r.ids, st.top_ids[:12])
        np.testing.assert_array_equal(r.probs, ref.final_probs[st.top_ids[:12]])
        assert r.other_prob == pytest.approx(1 - ref.final_probs[st.top_ids[:12]].sum(), abs=1e-12)
        assert r.entropy == pytest.approx(sampling.entropy_bits(ref.final_probs))
        assert r.n_kept == int(np.isfinite(ref.final_logits).sum())
        assert r.exact and r.counts.sum() == r.draws == 1000


def test_figure_bars_hold_exact_probs_and_draw_shares_that_sum_to_one():
    t = make_trace(vocab=50, top_n=20)
    st = t.steps[2]
    fig = sampling_compare_figure(st, SETTINGS, vocab_size=50, top=10, draws=500, seed=3)
    assert len(fig.data) == 6
    for c, s in enumerate(SETTINGS):
        exact, drawn = [d for d in fig.data if d.meta["setting"] == c]
        assert exact.meta["kind"] == "exact" and drawn.meta["kind"] == "draws"
        ref = _exact(st, s)
        np.testing.assert_allclose(exact.x[:10], ref.final_probs[st.top_ids[:10]])
        assert sum(exact.x) == pytest.approx(1.0, abs=1e-9)  # 'other tokens' hides no mass
        assert sum(drawn.x) == pytest.approx(1.0, abs=1e-12)
        assert sum(k for _, k in drawn.customdata) == 500
        assert exact.y[-1] == "<i>other tokens (40)</i>"
    titles = [a.text for a in fig.layout.annotations]
    r = compare_samples(st, SETTINGS, vocab_size=50, top=10, draws=500, seed=3)
    for title, x in zip(titles, r):
        assert f"entropy {x.entropy:.2f} bits" in title
        assert (f"{x.n_kept:,} tokens survive" if x.n_kept > 1 else "1 token survives") in title
    assert "temperature 0 (greedy)" in titles[2] and "1 token survives" in titles[2] and "0.00 bits" in titles[2]
    assert "top-k 10" in titles[1]


def test_fixed_seed_gives_identical_results_and_draws_follow_pipeline_draw():
    st = make_trace(vocab=50).steps[0]
    a = compare_samples(st, SETTINGS[:2], vocab_size=50, seed=7)
    b = compare_samples(st, SETTINGS[:2], vocab_size=50, seed=7)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.counts, y.counts)
    f1 = sampling_compare_figure(st, SETTINGS[:2], vocab_size=50, seed=7)
    f2 = sampling_compare_figure(st, SETTINGS[:2], vocab_size=50, seed=7)
    assert f1.to_json() == f2.to_json()
    c = compare_samples(st, SETTINGS[:2], vocab_size=50, seed=8)
    assert not all(np.array_equal(x.counts, y.counts) for x, y in zip(a, c))
    # the same draws as calling pipeline.sampling.draw one at a time with the same generator
    res = _exact(st, SETTINGS[0])
    rng = np.random.default_rng(7)
    one_by_one = [sampling.draw(res.final_probs, rng) for _ in range(1000)]
    ids = list(st.top_ids[:15])
    expected = [sum(1 for d in one_by_one if d == i) for i in ids]
    assert list(a[0].counts[:15]) == expected and a[0].counts[15] == 1000 - sum(expected)


def test_greedy_puts_every_draw_on_the_top_token():
    st = make_trace(vocab=50).steps[1]
    r = compare_samples(st, [dict(temperature=0.0, top_p=0.5), dict(temperature=1.0)], vocab_size=50, draws=300)[0]
    top = int(np.argmax(st.logits))
    assert r.greedy and r.n_kept == 1 and r.entropy == 0.0
    assert int(r.ids[0]) == top and r.counts[0] == 300 and r.counts[1:].sum() == 0
    assert r.probs[0] == 1.0


def test_draw_frequencies_are_close_to_the_exact_probabilities():
    st = make_trace(vocab=50).steps[3]
    s = dict(temperature=1.3, top_k=0, top_p=1.0)  # every token can be drawn
    for seed in range(3):
        r = compare_samples(st, [s, s], vocab_size=50, draws=1000, seed=seed, top=8)[0]
        p = np.append(r.probs, r.other_prob)
        e = 1000 * p
        chi2 = float(((r.counts - e) ** 2 / e).sum())
        assert chi2 < 30, chi2  # 8 degrees of freedom: P(chi2 > 30) < 0.001
    # a wrong distribution (the temperature-1 one, or a uniform one) fails the same bound
    wrong = np.append(st.top_probs[:8].astype(float), 1 - st.top_probs[:8].astype(float).sum())
    uniform = np.append(np.full(8, 1 / 50), 42 / 50)
    for q in (wrong, uniform):
        e = 1000 * q
        assert float(((r.counts - e) ** 2 / e).sum()) > 30


def test_without_logits_draws_come_from_the_recorded_top_n():
    t = make_trace(vocab=50, with_logits=False, **SETTINGS[0])
    st = t.steps[1]
    res = compare_samples(st, [SETTINGS[0], dict(temperature=1.2)], vocab_size=50, top=10)
    own, other = res
    assert own.exact and own.source == "recorded"
    np.testing.assert_allclose(own.probs, st.top_final_probs[:10])
    assert not other.exact and other.source == "top-N"
    assert all(r.counts.sum() == 1000 for r in res)
    fig = sampling_compare_figure(st, [SETTINGS[0], dict(temperature=1.2)], vocab_size=50)
    assert "approximate" in fig.layout.title.text


def test_bad_comparisons_raise():
    st = make_trace().steps[0]
    with pytest.raises(ValueError, match="two or three"):
        compare_samples(st, [SETTINGS[0]], vocab_size=50)
    with pytest.raises(ValueError, match="two or three"):
        compare_samples(st, SETTINGS + SETTINGS[:1], vocab_size=50)
    with pytest.raises(sampling.SettingsError):
        compare_samples(st, [dict(temperature=-1.0), SETTINGS[0]], vocab_size=50)
    with pytest.raises(ValueError, match="draws"):
        compare_samples(st, SETTINGS[:2], vocab_size=50, draws=0)


def test_labels_are_escaped():
    st = make_trace(vocab=50).steps[2]
    fig = sampling_compare_figure(st, SETTINGS[:2], vocab_size=50, top=20)
    everything = "".join(fig.data[0].y) + "".join(fig.data[0].customdata)
    assert "<script>" in st.top_pieces and "&lt;script&gt;" in everything and "<script>" not in everything
    assert "<img" not in everything


# ---------------------------------------------------------------------------------------------
# bytes


def _with(rec, **fields):
    return dataclasses.replace(rec, **fields)


EMOJI = "😀".encode()  # F0 9F 98 80


def _emoji_trace(split_fields: bool):
    t = make_trace(vocab=50, n_steps=4)
    s = list(t.steps)
    s[0] = dataclasses.replace(s[0], piece=" hi", text=" hi")
    s[1] = dataclasses.replace(s[1], piece="<0xF0><0x9F>", text="")
    s[2] = dataclasses.replace(s[2], piece="<0x98><0x80>", text="😀")
    s[3] = dataclasses.replace(s[3], piece="<script>", text="<script>")
    if split_fields:
        s[0] = _with(s[0], raw_piece="Ġhi", piece_bytes=b" hi")
        s[1] = _with(s[1], raw_piece="ðŁ", piece_bytes=EMOJI[:2])
        s[2] = _with(s[2], raw_piece="ĺĢ", piece_bytes=EMOJI[2:])
        s[3] = _with(s[3], raw_piece="<script>", piece_bytes=b"<script>")
    p = t.prompt
    p = dataclasses.replace(p, pieces=("<|im_start|>", "user", "\n", " a", "<|im_end|>"))
    if split_fields:
        p = _with(p, raw_pieces=("<|im_start|>", "user", "Ċ", "Ġa", "<|im_end|>"),
                  piece_bytes=(None, b"user", b"\n", b" a", None))
    return p, s


def test_readable_markers_parse_back_to_bytes():
    assert readable_to_bytes("<0xF0><0x9F>") == b"\xf0\x9f"
    assert readable_to_bytes("a<0xe2>b") == b"a\xe2b"
    assert readable_to_bytes("é <x>") == "é <x>".encode()


@pytest.mark.parametrize("split_fields", [True, False])
def test_split_emoji_is_grouped_flagged_and_released_at_the_completing_step(split_fields):
    prompt, steps = _emoji_trace(split_fields)
    cells = byte_cells(prompt, steps, 3)
    assert len(cells) == 5 + 4
    a, b = cells[6], cells[7]
    assert a.data == b"\xf0\x9f" and b.data == b"\x98\x80"
    (ga,), (gb,) = a.groups, b.groups
    assert ga.hex == "F0 9F" and gb.hex == "98 80"
    assert ga.char == gb.char == "😀" and ga.char_len == gb.char_len == 4
    assert ga.to_next and not ga.from_previous and gb.from_previous and not gb.to_next
    assert a.released_at == 2 and b.released_at == 2 and cells[5].released_at == 0
    html = bytes_html(prompt, steps, 3)
    assert "F0 9F" in html and "98 80" in html
    assert "continues in the next token" in html and "continued from the previous token" in html
    assert "held back, released at step 2" in html
    assert "1 character split across tokens" in html
    # the plain ASCII piece: one group per byte
    assert [g.hex for g in cells[5].groups] == ["20", "68", "69"]


def test_raw_pieces_and_special_tokens():
    prompt, steps = _emoji_trace(True)
    cells = byte_cells(prompt, steps, 3)
    assert cells[0].data is None and cells[4].data is None
    assert cells[2].raw == "Ċ" and cells[3].raw == "Ġa" and cells[6].raw == "ðŁ"
    html = bytes_html(prompt, steps, 3)
    assert html.count("special token: no text bytes") == 2
    assert "Ġa" in html and "Ċ" in html and "2 special tokens" in html
    # explicit arguments win over the records: a function of the id, or a sequence
    cells = byte_cells(prompt, steps, 0, raw_pieces=lambda i: f"R{i}", piece_bytes=[None] * 6)
    assert all(c.raw.startswith("R") and c.data is None for c in cells)


def test_unfinished_character_at_the_end_is_pending():
    prompt, steps = _emoji_trace(True)
    cells = byte_cells(prompt, steps, 1)  # the emoji's second token is not generated yet
    (g,) = cells[-1].groups
    assert g.pending and g.to_next and g.char is None and g.char_len == 4
    assert cells[-1].released_at is None
    html = bytes_html(prompt, steps, 1)
    assert "not generated yet" in html and "held back: the character is not complete at step 1" in html


def test_bytes_view_escapes_everything():
    prompt, steps = _emoji_trace(True)
    html = bytes_html(prompt, steps, 3)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<|im_start|>" not in html and "&lt;|im_start|&gt;" in html
    # the token "<script>": its eight bytes, one group each, in order, in the page
    assert [g.hex for g in byte_cells(prompt, steps, 3)[8].groups] == ["3C", "73", "63", "72", "69", "70", "74", "3E"]
    assert ">3C</span>" in html and ">3E</span>" in html
    prompt2 = dataclasses.replace(prompt, pieces=("<img src=x onerror=alert(1)>",) + prompt.pieces[1:])
    html = bytes_html(prompt2, steps, 0)
    assert "<img" not in html


# ---------------------------------------------------------------------------------------------
# context window and cost


def test_context_numbers():
    t = make_trace(prompt_len=5, n_steps=4)  # context_length 256
    u = context_use(t, 2)
    assert (u.prompt_tokens, u.generated_tokens, u.used, u.free, u.window) == (5, 3, 8, 248, 256)
    assert u.fraction == pytest.approx(8 / 256)
    assert u.input_cost is None and u.total_cost is None
    assert context_use(t, 99).generated_tokens == 4  # clamped to the last step
    u = context_use(t, 3, price_in_per_m=2.5, price_out_per_m=10.0)
    assert u.input_cost == pytest.approx(5 * 2.5 / 1e6) and u.output_cost == pytest.approx(4 * 10 / 1e6)
    assert u.total_cost == pytest.approx(5 * 2.5e-6 + 4e-5)
    html = context_html(t, 3, price_in_per_m=2.5, price_out_per_m=10.0)
    assert "5 tokens" in html and "4 tokens" in html and "9 of 256 tokens used (3.5%)" in html
    assert "prompt $0.0000125" in html and "reply $0.00004" in html and "total $0.0000525" in html
    assert "Cost" not in context_html(t, 3)
    html = context_html(t, 0, price_in_per_m=1.0)
    assert "prompt $0.000005" in html and "reply" not in html and "total" not in html


def test_context_figure_is_a_stacked_bar_of_the_window():
    t = make_trace(prompt_len=5, n_steps=4)
    fig = context_figure(t, 1)
    assert fig.layout.barmode == "stack"
    assert [d.x[0] for d in fig.data] == [5, 2, 249]
    assert sum(d.x[0] for d in fig.data) == 256
    assert fig.layout.xaxis.range == (0, 256)
    assert "7 of 256 tokens used" in fig.layout.title.text


def test_negative_or_bad_prices_are_rejected_clearly():
    t = make_trace()
    with pytest.raises(ValueError, match="price per million input tokens cannot be negative"):
        context_html(t, 0, price_in_per_m=-1.0)
    with pytest.raises(ValueError, match="price per million output tokens cannot be negative"):
        context_use(t, 0, price_out_per_m=-0.01)
    with pytest.raises(ValueError, match="finite"):
        context_use(t, 0, price_out_per_m=float("nan"))


def test_cost_formatting():
    assert format_cost(0) == "$0.00"
    assert format_cost(12.5) == "$12.50"
    assert format_cost(1234.5) == "$1,234.50"
    assert format_cost(0.0421) == "$0.0421"
    assert format_cost(7.5e-7) == "$0.00000075"
    assert format_cost(0.5) == "$0.50"


# ---------------------------------------------------------------------------------------------
# captions


def test_new_captions_exist_and_old_ones_are_kept():
    for key in ("intro", "output", "tokens", "embeddings", "attention", "distribution", "kv", "speculative",
                "inside", "lens", "residual", "contributions", "position", "kv_compare", "accounting",
                "sampling_compare", "branching", "bytes", "context", "tour"):
        assert key in captions() and len(captions()[key]) > 150, key

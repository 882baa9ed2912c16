"""The token tax: the shipped sentences, their counts (equal to each tokenizer's own), the ratio to English, and the
panel's words and bars in the language speaking."""
from __future__ import annotations

import math

import pytest

from pipeline import token_tax as tt
from pipeline.tiktoken_offline import ENCODINGS, get_encoding
from viz import token_tax as tax_viz
from viz.text import catalogue, decimal, speaking


def test_ten_languages_with_their_source_named():
    s = tt.sentences()
    assert {x.lang for x in s} >= {"en", "es", "fr", "de", "pt-BR", "zh-CN", "hi", "ar", "ko", "ru"}
    assert all(x.text.strip() and x.name for x in s) and len({x.text for x in s}) == len(s)
    assert next(x for x in s if x.lang == "ar").dir == "rtl"
    a = tt.about()
    assert a["url"].startswith("https://") and a["source"] and a["licence"]


def test_counts_are_the_tokenizers_own():
    counters = tt.tiktoken_counters()
    assert set(counters) == {label for label, _ in ENCODINGS.values()}
    rows = tt.measure(tt.sentences(), counters, own="  Ma phrase à moi.  ")
    assert rows[-1].sentence.lang == "own" and rows[-1].sentence.text == "Ma phrase à moi."
    for name, (label, _) in ENCODINGS.items():
        enc = get_encoding(name)
        for r in rows:
            assert r.tokens[label] == len(enc.encode(r.sentence.text)) and r.chars == len(r.sentence.text)
    assert len(tt.measure(tt.sentences(), counters, own="   ")) == len(tt.sentences())  # a blank one adds nothing


def test_o200k_brings_every_language_under_twice_englishs_tokens_and_cl100k_does_not():
    rows = tt.measure(tt.sentences(), tt.tiktoken_counters())
    o200, cl100 = tt.relative(rows, "GPT-4o (o200k_base)"), tt.relative(rows, "GPT-4 (cl100k_base)")
    assert o200["en"] == 1.0 and max(o200.values()) < 2.0
    assert cl100["hi"] > 4 and cl100["hi"] > o200["hi"] * 2  # the claim the panel lets a class see


def test_a_models_tokenizer_is_counted_without_special_tokens():
    class Tok:
        def __call__(self, text, add_special_tokens=True, split_special_tokens=False):
            return {"input_ids": ([0] if add_special_tokens else []) + [ord(c) for c in text]}
    count = tt.model_counter(Tok())
    assert count("abc") == 3


def test_ratios_by_hand():
    S = tt.Sentence
    rows = [tt.Row(S("en", "English", "x"), 10, {"a": 4}), tt.Row(S("ko", "한국어", "y"), 5, {"a": 10})]
    assert tt.relative(rows, "a") == {"en": 1.0, "ko": 2.5}
    assert rows[1].per_token("a") == 0.5 and math.isnan(rows[0].per_token("b"))


@pytest.mark.parametrize("lang", ["en", "fr", "zh-CN"])
def test_the_panel_speaks_the_language_and_draws_the_counts(lang):
    counters = tt.tiktoken_counters()
    rows = tt.measure(tt.sentences(), counters, own="Hola")
    names = list(counters)
    with speaking(lang):
        fig = tax_viz.figure(rows, names)
        text = tax_viz.summary_html(rows, names, names[0]) + tax_viz.own_tokens_html(rows[-1], rows)
    cat = catalogue(lang)
    assert fig.layout.title.text == cat["tax.title"] and fig.layout.xaxis.title.text == cat["tax.axis"]
    for bar, name in zip(fig.data, names):
        by_label = dict(zip(bar.y, bar.x))
        # the learner's own sentence is no bar: another meaning, counted beside the article, says nothing of its language
        assert by_label["English"] == rows[0].tokens[name] and cat["tax.own"] not in by_label and len(by_label) == len(rows) - 1
    # its numbers that compare: characters per token, beside the English article's, per tokenizer
    for name in names:
        assert f"{decimal(rows[-1].per_token(name), 1, lang)}" in text and f"{decimal(rows[0].per_token(name), 1, lang)}" in text
    worst = max((r for r in rows if r.sentence.lang not in ("en", "own")), key=lambda r: r.tokens[names[0]])
    assert worst.sentence.name in text and cat["tax.cost"].split(" (")[0][:20] in text.replace("&#x27;", "'")

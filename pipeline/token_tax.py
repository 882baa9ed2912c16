"""The token tax: the same sentence costs a different number of tokens in each language.

The sentences (assets/token_tax.json: Article 1 of the Universal Declaration of Human Rights in ten languages, as
the United Nations publish it) are counted by any number of tokenizers, each a function text -> token ids: the
model's own and tiktoken's cl100k_base and o200k_base (pipeline/tiktoken_offline.py). A learner's own sentence is
counted the same way. Every number is a count, not an estimate.

    rows = measure(sentences(), {"SmolLM2": model_counter(tok), **tiktoken_counters()}, own="Ma phrase à moi")
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping

from pipeline.tiktoken_offline import ENCODINGS, EncodingUnavailable, get_encoding

DATA = Path(__file__).resolve().parents[1] / "assets" / "token_tax.json"
MAX_OWN = 2_000  # characters of a learner's own sentence (a sentence, not a book)


@dataclass(frozen=True)
class Sentence:
    lang: str  # a BCP 47 tag ("own" for a learner's sentence)
    name: str  # the language named in itself ("Français")
    text: str
    dir: str = "ltr"


@dataclass(frozen=True)
class Row:
    """One sentence's counts: tokens by tokenizer name, and its characters."""
    sentence: Sentence
    chars: int
    tokens: dict[str, int] = field(default_factory=dict)

    def per_token(self, name: str) -> float:
        n = self.tokens.get(name, 0)
        return self.chars / n if n else float("nan")


@lru_cache(maxsize=1)
def about() -> dict:
    """The sentences' source, address and licence (and the sentences)."""
    return json.loads(DATA.read_text(encoding="utf-8"))


def sentences() -> tuple[Sentence, ...]:
    return tuple(Sentence(s["lang"], s["name"], s["text"], s.get("dir", "ltr")) for s in about()["sentences"])


def model_counter(tokenizer) -> Callable[[str], int]:
    """A Hugging Face tokenizer's count of a text's tokens, no special tokens added (the text as the model reads it)."""
    from pipeline.tokens import encode_ids

    return lambda text: len(encode_ids(tokenizer, text))


def tiktoken_counters() -> dict[str, Callable[[str], int]]:
    """cl100k_base's and o200k_base's counts, by their shown labels (those whose rank file is there)."""
    out = {}
    for name, (label, _) in ENCODINGS.items():
        try:
            enc = get_encoding(name)
        except EncodingUnavailable:
            continue
        out[label] = lambda text, enc=enc: len(enc.encode(text, disallowed_special=()))
    return out


def measure(items, counters: Mapping[str, Callable[[str], int]], own: str | None = None) -> list[Row]:
    """Each sentence (and the learner's own, when given and not blank) counted by every counter."""
    items = list(items)
    if own is not None and own.strip():
        items.append(Sentence("own", "", own.strip()[:MAX_OWN]))
    return [Row(s, len(s.text), {name: int(count(s.text)) for name, count in counters.items()}) for s in items]


def relative(rows: list[Row], name: str, base: str = "en") -> dict[str, float]:
    """Each sentence's token count under `name` over the `base` language's: 1.0 for English, 2.7 for a language whose
    sentence takes 2.7 times as many tokens."""
    ref = next((r.tokens.get(name) for r in rows if r.sentence.lang == base), None)
    return {r.sentence.lang: (r.tokens[name] / ref if ref else float("nan")) for r in rows if name in r.tokens}

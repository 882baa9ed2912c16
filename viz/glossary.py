"""The words a newcomer meets on the page, in plain words: one home for them, the text catalogue (locales/<lang>.json,
"glossary.*"), read by the page's captions (a dotted underline whose hover or tap says what the word means) and
written out in docs/glossary.md (a test checks that the two agree).

Each word has two sentences in each language: its meaning (`glossary.meaning.<word>`) and the forms a caption in that
language writes it in (`glossary.words.<word>`: "token(s)", "probabilité(s)", "词元"; forms separated by commas, a
letter group in brackets optional), so a caption is marked in the language it is written in.
"""
from __future__ import annotations

import functools
import html
import re
from typing import Callable

from viz.text import language, t

# each word (its name in English, docs/glossary.md's): (its meaning, the forms a caption writes it in), in `locale`
GLOSSARY: dict[str, tuple[Callable[[str | None], str], Callable[[str | None], str]]] = {
    "token": (lambda loc=None: t("glossary.meaning.token", loc), lambda loc=None: t("glossary.words.token", loc)),
    "vocabulary": (lambda loc=None: t("glossary.meaning.vocabulary", loc), lambda loc=None: t("glossary.words.vocabulary", loc)),
    "context": (lambda loc=None: t("glossary.meaning.context", loc), lambda loc=None: t("glossary.words.context", loc)),
    "step": (lambda loc=None: t("glossary.meaning.step", loc), lambda loc=None: t("glossary.words.step", loc)),
    "logit": (lambda loc=None: t("glossary.meaning.logit", loc), lambda loc=None: t("glossary.words.logit", loc)),
    "softmax": (lambda loc=None: t("glossary.meaning.softmax", loc), lambda loc=None: t("glossary.words.softmax", loc)),
    "probability": (lambda loc=None: t("glossary.meaning.probability", loc), lambda loc=None: t("glossary.words.probability", loc)),
    "temperature": (lambda loc=None: t("glossary.meaning.temperature", loc), lambda loc=None: t("glossary.words.temperature", loc)),
    "top-k": (lambda loc=None: t("glossary.meaning.top_k", loc), lambda loc=None: t("glossary.words.top_k", loc)),
    "top-p": (lambda loc=None: t("glossary.meaning.top_p", loc), lambda loc=None: t("glossary.words.top_p", loc)),
    "greedy": (lambda loc=None: t("glossary.meaning.greedy", loc), lambda loc=None: t("glossary.words.greedy", loc)),
    "sampled": (lambda loc=None: t("glossary.meaning.sampled", loc), lambda loc=None: t("glossary.words.sampled", loc)),
    "entropy": (lambda loc=None: t("glossary.meaning.entropy", loc), lambda loc=None: t("glossary.words.entropy", loc)),
    "parameters": (lambda loc=None: t("glossary.meaning.parameters", loc), lambda loc=None: t("glossary.words.parameters", loc)),
    "layer": (lambda loc=None: t("glossary.meaning.layer", loc), lambda loc=None: t("glossary.words.layer", loc)),
}

_CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef"  # scripts written without spaces: a word there has no edge to check
_LETTER = rf"[^\W{_CJK}]"  # a letter or digit of a script written with spaces


def forms(words: str) -> list[str]:
    """The forms a glossary sentence lists: "token(s), tokenizer" -> ['token', 'tokens', 'tokenizer']."""
    out = []
    for w in re.split(r"\s*[,，、]\s*", words.strip()):
        m = re.fullmatch(r"(.*?)\((\w+)\)", w)
        out += [m.group(1), m.group(1) + m.group(2)] if m else [w]
    return [w for w in out if w]


def _edge(form: str) -> tuple[str, str]:
    """The checks around a form: no letter just before or after it where its own edge is a letter of a spaced script
    (so "step" is not found in "stepping"), none beside a Chinese character (no spaces there)."""
    before = rf"(?<!{_LETTER})" if re.match(_LETTER, form[0]) else ""
    after = rf"(?!{_LETTER})" if re.match(_LETTER, form[-1]) else ""
    return before, after


@functools.cache
def _terms(locale: str) -> tuple[re.Pattern, dict[str, str]]:
    """The pattern that finds every glossary word of `locale` (its longest forms first), and form -> word."""
    word_of = {f.lower(): term for term, (_, words) in GLOSSARY.items() for f in forms(words(locale))}
    alts = []
    for f in sorted(word_of, key=len, reverse=True):
        before, after = _edge(f)
        alts.append(before + re.escape(f) + after)
    return re.compile("|".join(alts), re.IGNORECASE), word_of


def gloss(text: str) -> str:
    """`text` (Markdown or HTML, no tags inside the words), written in the language spoken, with the first use of each
    glossary word marked: <abbr class="term" title="its meaning">word</abbr>."""
    locale = language()
    pattern, word_of = _terms(locale)
    seen: set[str] = set()

    def mark(m: re.Match) -> str:
        term = word_of.get(m.group(0).lower())
        if term is None or term in seen:
            return m.group(0)
        seen.add(term)
        return f'<abbr class="term" title="{html.escape(GLOSSARY[term][0](locale))}">{m.group(0)}</abbr>'

    return pattern.sub(mark, text)


def glossary_markdown() -> str:
    """docs/glossary.md's list (in English): each word and its meaning, in alphabetical order."""
    return "\n".join(f"- **{term}**: {GLOSSARY[term][0]('en')}" for term in sorted(GLOSSARY)) + "\n"

"""Which of the page's six languages a text of the model's is written in, for its `lang` attribute (WCAG 3.1.2: a screen
reader reads a French reply with a French voice on an English page). Told by the script (Han characters: Chinese) or
by the little words each language writes most; None when the text is too short or the words do not say (the text
then takes the page's language).
"""
from __future__ import annotations

import re

# frequent short words, each written by one of the languages only (words two of them share, "de", "la", "que", are left out)
WORDS = {
    "en": "the and of to is in that it was for with on are as this be by he she they you what which why from have not",
    "es": "el los las del y es en por una con para se como más pero está muy también lo su al son fue hay",
    "fr": "le les des et est une du dans pour pas qui sur avec au ce il elle sont mais très ne plus nous vous",
    "de": "der die das und ist nicht ein eine zu den mit von auf ich sie es im dem auch wird sich zum sind war",
    "pt-BR": "o os um uma não é do da dos das em no na com são mais também ao pela pelo você foi há seu sua",
}
_SETS = {lang: frozenset(words.split()) for lang, words in WORDS.items()}
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W\d_]+")


def language(text: str) -> str | None:
    """"en", "es", "fr", "de", "pt-BR", "zh-CN", or None: the language the text is written in, when it says so clearly."""
    han = len(_HAN.findall(text))
    words = _WORD.findall(text.lower())
    if han >= 2 and han >= len(words):
        return "zh-CN"
    counts = sorted(((sum(w in s for w in words), lang) for lang, s in _SETS.items()), reverse=True)
    (best, lang), (second, _) = counts[0], counts[1]
    return lang if best >= 2 and best >= 2 * second else None


def lang_attr(text: str) -> str:
    """` lang='…'` for an element holding `text`, or nothing when its language is not told."""
    found = language(text)
    return f" lang='{found}'" if found else ""

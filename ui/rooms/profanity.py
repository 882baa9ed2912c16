"""The profanity filter of a class room's answers on the projector (the room's option `profanity`, ui/rooms/rooms.py).

Guesses are free text from strangers shown in front of a class: before the revealed state leaves the server (every
page that polls it, the projector first), each answer row's `text`, `label` and `piece` go through `apply(rows, mode)`:

    "off"      the rows as they are
    "replace"  (the default) each rude word masked whole with "***" ("Sh1t happens" -> "*** happens"): the row stays,
               its count with it, and nothing of the word is left to read (no first letter)
    "hide"     a row with a rude word in it left out of the chart (as a row the teacher hides)

The word lists are glin-profanity's (MIT; pinned in requirements.txt), matched whole-word, case-blind, with its
leetspeak and separator handling ("sh1t", "f.u.c.k", "FUUUCK"), offline. An answer is masked when it is rude in
English, in the room's language (the teacher's page's, Room.lang) or in the language of a page that sent it
(Guess.lang: a Portuguese phone in a German room): each of those that is one of the lists' (es, fr, de, pt-BR, zh)
adds its list. No other list is applied: in an English room of English pages the other languages' lists would mask
ordinary English words ("bite", "con", "mama", "trio") that a lesson needs. ALLOW: the few entries of the English
list that are ordinary words of a lesson. A text is checked once (cached) and early: as
the guess comes (`warm`, outside the rooms' lock), so a reveal's state, built under the lock at every change, finds
every answer already known.
"""
from __future__ import annotations

import functools

from glin_profanity import Filter

from viz.text import DEFAULT

MODES = ("off", "replace", "hide")
MASK = "***"
# the page's language -> glin-profanity's lists (English first, always)
LISTS = {"en": ("english",), "es": ("english", "spanish"), "fr": ("english", "french"), "de": ("english", "german"),
         "pt": ("english", "portuguese"), "pt-BR": ("english", "portuguese"), "zh": ("english", "chinese"),
         "zh-CN": ("english", "chinese")}
# entries of the English list that are everyday words of a lesson (history, music, games, maths)
ALLOW = ("escort", "domination", "hardcore", "snatch", "scat", "xx", "eunuch", "bastinado")
FIELDS = ("text", "label", "piece")  # what an answer row shows (ui/rooms/rooms.py _answers; assets/room.js)


@functools.cache
def _filter(locale: str = DEFAULT) -> Filter:
    return Filter({"languages": list(LISTS.get(locale, LISTS["en"])), "detect_leetspeak": True, "obfuscation": "standard",
                   "replace_with": MASK, "ignore_words": list(ALLOW)})


@functools.lru_cache(maxsize=8192)
def masked(text: str, locale: str = DEFAULT) -> str:
    """`text` with every rude word in it replaced by MASK (the same text when there is none)."""
    if not text or not text.strip():
        return text
    r = _filter(locale).check_profanity(text)
    return r.get("processed_text", text) if r["contains_profanity"] else text


def warm(*texts: str, locales=(DEFAULT,)) -> None:
    """Check `texts` now (a guess as it comes, outside the rooms' lock) in `locales`, so that the reveal's `apply` finds
    them known: a room of 500 different answers costs the reveal 1 ms, not 100."""
    for text in texts:
        if isinstance(text, str):
            masked_in(text, locales)


def rude(text: str, locale: str = DEFAULT) -> bool:
    return masked(text, locale) != text


def check_mode(mode) -> str:
    """The mode, or ValueError with the sentence a refusal says."""
    if mode not in MODES:
        raise ValueError(f"The profanity filter is one of {', '.join(MODES)}.")
    return mode


def masked_in(text: str, locales) -> str:
    """`text` masked by the lists of every language of `locales` (English always)."""
    for locale in dict.fromkeys(locales or (DEFAULT,)):
        text = masked(text, locale)
    return text


def apply(rows: list[dict], mode: str | None, locale: str = DEFAULT) -> list[dict]:
    """The room's answer rows as the projector may show them under `mode` (None: the default, "replace"): each checked
    in English, the room's `locale` and the languages of the pages that sent it (a row's `langs`, which no row keeps
    on its way out). New dicts; the rows' order and counts kept; "hide" drops a row whose text or token is rude."""
    mode = check_mode("replace" if mode is None else mode)
    out = []
    for row in rows:
        r = {k: v for k, v in row.items() if k != "langs"}
        if mode == "off":
            out.append(r)
            continue
        locales = (locale, *(row.get("langs") or ()))
        clean = {k: masked_in(r[k], locales) for k in FIELDS if isinstance(r.get(k), str)}
        if all(clean[k] == r[k] for k in clean):
            out.append(r)
        elif mode == "replace":
            out.append({**r, **clean})
    return out


__all__ = ["MODES", "MASK", "apply", "masked", "masked_in", "rude", "warm", "check_mode"]

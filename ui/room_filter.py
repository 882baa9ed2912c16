"""The profanity filter of a class room's answers on the projector (the room's option `profanity`, ui/rooms.py).

Guesses are free text from strangers shown in front of a class: before the revealed state leaves the server (every
page that polls it, the projector first), each answer row's `text`, `label` and `piece` go through `apply(rows, mode)`:

    "off"      the rows as they are
    "replace"  (the default) each rude word masked whole with "***" ("Sh1t happens" -> "*** happens"): the row stays,
               its count with it, and nothing of the word is left to read (no first letter)
    "hide"     a row with a rude word in it left out of the chart (as a row the teacher hides)

The word lists are glin-profanity's (MIT; pinned in requirements.txt), matched whole-word, case-blind, with its
leetspeak and separator handling ("sh1t", "f.u.c.k", "FUUUCK"), offline. English always; when the page's language
is one of the lists' (es, fr, de, pt-BR, zh), that language's list too. The other languages' lists are not loaded for
an English page: they hold ordinary English words ("bite", "con", "mama", "trio") that a lesson needs. ALLOW: the
few entries of the English list that are ordinary words of a lesson. A text is checked once (cached) and early: as
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
FIELDS = ("text", "label", "piece")  # what an answer row shows (ui/rooms.py _answers; assets/room.js)


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


def warm(*texts: str, locale: str = DEFAULT) -> None:
    """Check `texts` now (a guess as it comes, outside the rooms' lock), so that the reveal's `apply` finds them known:
    a room of 500 different answers costs the reveal 1 ms, not 100."""
    for text in texts:
        if isinstance(text, str):
            masked(text, locale)


def rude(text: str, locale: str = DEFAULT) -> bool:
    return masked(text, locale) != text


def check_mode(mode) -> str:
    """The mode, or ValueError with the sentence a refusal says."""
    if mode not in MODES:
        raise ValueError(f"The profanity filter is one of {', '.join(MODES)}.")
    return mode


def apply(rows: list[dict], mode: str | None, locale: str = DEFAULT) -> list[dict]:
    """The room's answer rows as the projector may show them under `mode` (None: the default, "replace"). New dicts
    where a row changes; the rows' order and counts kept; "hide" drops a row whose text or token is rude."""
    mode = check_mode("replace" if mode is None else mode)
    if mode == "off":
        return list(rows)
    out = []
    for r in rows:
        clean = {k: masked(r[k], locale) for k in FIELDS if isinstance(r.get(k), str)}
        changed = any(clean[k] != r[k] for k in clean)
        if not changed:
            out.append(r)
        elif mode == "replace":
            out.append({**r, **clean})
    return out


__all__ = ["MODES", "MASK", "apply", "masked", "rude", "warm", "check_mode"]

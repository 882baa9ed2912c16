"""Byte pieces shown as the parts of the character they belong to.

A byte-level tokenizer may cut one character of Chinese, Korean, Hindi or an emoji into
several tokens, each holding some of its UTF-8 bytes. Such a piece reads '<0xEC><0x95>'
(pipeline.tokens.bytes_to_readable); across a run of chips the bytes make a character, and
each chip shows that character with its part ('안 1/2'), the bytes in its title.

A chip only names a character whose bytes are all in chips shown by then: the prompt's, and
a generated chip's own and earlier ones, so that a step never tells what a later token writes.
"""
from __future__ import annotations

import codecs
import html
import re
from dataclasses import dataclass
from typing import Sequence

from pipeline.tokens import char_spans

from viz.style import html_piece
from viz.text import t

_RUN = re.compile(r"((?:<0x[0-9A-F]{2}>)+)")
_PART = "border-bottom:1px dashed currentColor"  # inline: the offline page has no style sheet
_K = "<small style='font-size:9px;margin-left:1px;opacity:.75'>{}</small>"


@dataclass(frozen=True)
class Part:
    data: bytes  # this chip's bytes of the character
    char: str  # the character ("" for one the chips so far have only begun)
    k: int  # this chip is part k (from 1) ...
    n: int  # ... of n chips
    last: int  # the index of the character's last chip


def _run_bytes(run: str) -> bytes:
    return bytes(int(run[i + 3:i + 5], 16) for i in range(0, len(run), 6))


def _segments(piece: str) -> list[str | bytes]:
    """Text as str, marker runs as their bytes."""
    return [_run_bytes(s) if i % 2 else s for i, s in enumerate(_RUN.split(piece)) if s]


def _spans(stream: bytes) -> list[tuple[int, int, str | None]]:
    """pipeline.tokens.char_spans, with the last bytes that only begin a character as one span of ""."""
    out = char_spans(stream)
    k = len(out)
    while k and out[k - 1][2] is None:  # the bytes at the end that make no character yet
        k -= 1
    tail = stream[out[k][0]:] if k < len(out) else b""
    if tail and len(tail) < 4 and _begins_a_character(tail):
        return out[:k] + [(out[k][0], len(stream), "")]  # a character the chips so far have only begun
    return out


def _begins_a_character(tail: bytes) -> bool:
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(tail, final=False) == ""
    except UnicodeDecodeError:
        return False


def parts(pieces: Sequence[str]) -> list[list[str | Part]]:
    """Each piece's segments: its text, and a Part for its bytes of a character cut across chips.
    Bytes that make no character, even with the chips after them, stay markers ('<0xFF>'); the first bytes
    of a character that the last chips have only begun are a Part of char "" (a trace still being written)."""
    segs = [_segments(p) for p in pieces]
    stream, owner = bytearray(), []  # owner[b] = (chip, segment index) of byte b
    for c, ss in enumerate(segs):
        for k, s in enumerate(ss):
            data = s if isinstance(s, bytes) else s.encode("utf-8")
            stream += data
            owner += [(c, k)] * len(data)
    out: list[list[str | Part]] = [[] for _ in segs]
    done: set[tuple[int, int, int]] = set()
    for a, b, ch in _spans(bytes(stream)):
        chips = sorted({owner[x][0] for x in range(a, b)})
        for c, k in dict.fromkeys(owner[a:b]):  # each (chip, segment) holding some of this character, in order
            if (c, k, a if isinstance(segs[c][k], bytes) else -1) in done:
                continue
            if isinstance(segs[c][k], str):
                done.add((c, k, -1))
                out[c].append(segs[c][k])
                continue
            done.add((c, k, a))
            mine = bytes(stream[y] for y in range(a, b) if owner[y] == (c, k))
            if ch is None:
                out[c].append("".join(f"<0x{x:02X}>" for x in mine))
            else:
                out[c].append(Part(mine, ch, chips.index(c) + 1, len(chips), chips[-1]))
    return out


def _bytes_text(data: bytes) -> str:
    return " ".join(f"{x:02X}" for x in data)


def _open_html(p: Part) -> str:
    title = t("tokens.part_open", bytes=_bytes_text(p.data), k=p.k)
    return f"<span class='tok-part open' style='{_PART}' title=\"{html.escape(title)}\">◌{_K.format(f'{p.k}/…')}</span>"


def _named_html(p: Part) -> str:
    title = t("tokens.part", bytes=_bytes_text(p.data), char=p.char, k=p.k, n=p.n, code=f"U+{ord(p.char):04X}")
    return (f"<span class='tok-part' style='{_PART}' title=\"{html.escape(title)}\">{html.escape(p.char)}"
            f"{_K.format(f'{p.k}/{p.n}')}</span>")


def part_html(p: Part, named_at: int | None = None, now: int | None = None) -> str:
    """One part as the chip shows it: the character with 'k/n' ('안 1/3'). named_at: the step from which the
    character may be named (its last chip's); before it the chip shows '◌ k/…'. Both are drawn, the one for
    the step `now` shown: the page's step viewer (assets/app_viewer.js) swaps them as it moves."""
    if not p.char:
        return _open_html(p)
    if named_at is None:
        return _named_html(p)
    named = now is not None and now >= named_at
    def mark(h: str, hidden: bool) -> str:
        return h.replace("<span ", f"<span data-named-at='{named_at}'{' hidden' if hidden else ''} ", 1)
    return mark(_open_html(p), named) + mark(_named_html(p), not named)


def chip_html(segments: Sequence[str | Part], n: int | None, *, first_step: int | None = None,
              step: int | None = None, now: int | None = None) -> str:
    """A chip's text: its plain text as html_piece draws it, its parts as part_html.
    For a generated chip (step: its step; first_step: the chip index of step 0), a character finished by a
    later step is named only from that step on, so that no step tells what a later token writes."""
    if all(isinstance(s, str) for s in segments):
        return html_piece("".join(segments), n)  # type: ignore[arg-type]
    out = []
    for s in segments:
        if not isinstance(s, Part):
            out.append(html_piece(s))
        elif step is None or first_step is None or s.last - first_step <= step:
            out.append(part_html(s))
        else:
            out.append(part_html(s, s.last - first_step, now))
    return "".join(out)

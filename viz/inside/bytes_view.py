"""Bytes and detokenisation: what each token of the context stands for, byte by byte.

A token stands for a run of UTF-8 bytes, not necessarily a whole character: a 4-byte emoji
can be split over two tokens. Each cell shows the readable piece, the tokenizer's own raw piece
(with its markers: 'Ġ' for a space and 'Ċ' for a newline in byte-level BPE, '▁' for a space in
SentencePiece, '<0xE2>' for a raw byte) and the bytes in hex, grouped by character; a character
whose bytes are split over tokens is flagged. For generated tokens the cell also gives the step
at which the text was released: the pipeline holds back the bytes of an unfinished character
(StepRecord.text is '') and releases the whole character with the token that completes it.

Sources, in order: the raw_pieces / piece_bytes arguments; the records' optional fields
(StepRecord.raw_piece / piece_bytes, PromptRecord.raw_pieces / piece_bytes; piece_bytes None
marks a special token); else the readable piece, whose '<0xE2>'-style markers are read back
as bytes and whose other text is encoded as UTF-8 (special tokens cannot be told apart then).
Everything shown is html-escaped.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from pipeline.trace.records import PromptRecord, StepRecord

from viz.style import html_piece, visible
from viz.text import count, t, t_html, thousands

_MARKER = re.compile(r"<0x([0-9A-Fa-f]{2})>")
SPLIT_BG = "#fde68a"  # a character split across tokens
_CELL = ("display:inline-flex;flex-direction:column;align-items:flex-start;gap:1px;margin:2px;padding:3px 5px;"
         "border-radius:5px;vertical-align:top;background:#f7fafc;border:{border};font-size:12px;line-height:1.3")
_MONO = "font-family:ui-monospace,Menlo,Consolas,monospace"


def readable_to_bytes(piece: str) -> bytes:
    """A readable piece back to bytes: '<0xF0><0x9F>' -> b'\\xf0\\x9f', other text as UTF-8."""
    out, i = bytearray(), 0
    for m in _MARKER.finditer(piece):
        out += piece[i:m.start()].encode("utf-8")
        out.append(int(m.group(1), 16))
        i = m.end()
    out += piece[i:].encode("utf-8")
    return bytes(out)


@dataclass(frozen=True)
class ByteGroup:
    """The bytes of one character (or one byte that is no valid UTF-8) inside one token."""

    data: bytes  # this token's share of the character's bytes
    char: str | None  # the whole character; None: not valid UTF-8 (or not complete yet)
    char_len: int  # bytes of the whole character
    from_previous: bool  # the character started in an earlier token
    to_next: bool  # the character continues in the next token
    pending: bool = False  # the character is unfinished at the end of the context so far

    @property
    def hex(self) -> str:
        return " ".join(f"{b:02X}" for b in self.data)

    @property
    def split(self) -> bool:
        return self.from_previous or self.to_next or self.pending


@dataclass(frozen=True)
class ByteCell:
    kind: str  # "prompt" | "generated"
    position: int
    token_id: int
    piece: str  # readable
    raw: str  # the tokenizer's own piece
    raw_known: bool
    data: bytes | None  # None: a special token
    groups: tuple[ByteGroup, ...]
    step: int | None = None  # generated: the step that chose it
    text: str | None = None  # generated: the text released at its step
    released_at: int | None = None  # generated: the step whose text holds this token's bytes (None: not yet)


def _lookup(source, k: int, tid: int):
    """A value from an explicit source: a sequence over the context, or a callable of the id."""
    if source is None:
        return None, False
    if callable(source):
        return source(tid), True
    if k < len(source):
        return source[k], True
    return None, False


_MISSING = object()


def _utf8_len(b: int) -> int:
    if b < 0x80:
        return 1
    if 0xC2 <= b <= 0xDF:
        return 2
    if 0xE0 <= b <= 0xEF:
        return 3
    if 0xF0 <= b <= 0xF4:
        return 4
    return 0  # a continuation byte or an invalid lead


def _group(datas: list[bytes | None]) -> list[tuple[ByteGroup, ...]]:
    """Per token, its bytes grouped by character; characters may span tokens. Special tokens
    (None) break the byte stream."""
    out: list[list[ByteGroup]] = [[] for _ in datas]
    flat: list[tuple[int, int]] = []  # (token index, byte) of the current run of ordinary tokens

    def flush(at_end: bool):
        i = 0
        while i < len(flat):
            lead = flat[i][1]
            n = _utf8_len(lead)
            seg = flat[i:i + n] if n else flat[i:i + 1]
            ok = n > 0 and len(seg) == n and all(0x80 <= b <= 0xBF for _, b in seg[1:])
            char = None
            if ok:
                try:
                    char = bytes(b for _, b in seg).decode("utf-8")
                except UnicodeDecodeError:
                    ok = False
            pending = False
            if not ok:
                # a valid start whose remaining bytes have not been generated yet
                if n and len(seg) < n and at_end and all(0x80 <= b <= 0xBF for _, b in seg[1:]):
                    pending = True
                else:
                    seg = flat[i:i + 1]
            toks = [tk for tk, _ in seg]
            first, last = toks[0], toks[-1]
            for tk in sorted(set(toks)):
                data = bytes(b for tt, b in seg if tt == tk)
                out[tk].append(ByteGroup(data, char, len(seg) if ok else (n if pending else 1),
                                         from_previous=tk != first, to_next=tk != last or (pending and tk == last), pending=pending))
            i += len(seg)
        flat.clear()

    for tk, d in enumerate(datas):
        if d is None:
            flush(at_end=False)
            continue
        flat.extend((tk, b) for b in d)
    flush(at_end=True)
    return [tuple(g) for g in out]


def byte_cells(prompt: PromptRecord, steps: Sequence[StepRecord], upto: int | None, *,
               raw_pieces: Sequence[str] | Callable[[int], str] | None = None,
               piece_bytes: Sequence[bytes | None] | Callable[[int], bytes | None] | None = None) -> list[ByteCell]:
    """The cells of bytes_html: prompt tokens, then the tokens of steps[0..upto] (None: all)."""
    shown = list(steps) if upto is None else list(steps[: max(upto, -1) + 1])
    rec_raw = getattr(prompt, "raw_pieces", None) or ()
    rec_bytes = getattr(prompt, "piece_bytes", None) or ()
    items = []  # (kind, position, id, piece, record raw, record bytes, step)
    for k, (tid, piece) in enumerate(zip(prompt.token_ids, prompt.pieces)):
        items.append(("prompt", k, int(tid), piece,
                      rec_raw[k] if k < len(rec_raw) else _MISSING,
                      rec_bytes[k] if k < len(rec_bytes) else _MISSING, None))
    for i, s in enumerate(shown):
        # a step recorded without its raw piece (an older trace) recorded no bytes either
        recorded = bool(getattr(s, "raw_piece", ""))
        items.append(("generated", s.position + 1, int(s.token_id), s.piece,
                      s.raw_piece if recorded else _MISSING, s.piece_bytes if recorded else _MISSING, i))
    raws, datas, known = [], [], []
    for k, (_kind, _pos, tid, piece, r_raw, r_bytes, _) in enumerate(items):
        raw, ok = _lookup(raw_pieces, k, tid)
        if not ok:
            raw, ok = (r_raw, True) if r_raw is not _MISSING and r_raw is not None else (piece, False)
        raws.append(raw)
        known.append(ok)
        data, ok = _lookup(piece_bytes, k, tid)
        if not ok:
            data = r_bytes if r_bytes is not _MISSING else readable_to_bytes(piece)
        datas.append(None if data is None else bytes(data))
    groups = _group(datas)
    cells = []
    for k, (kind, pos, tid, piece, _, _, i) in enumerate(items):
        released = text = None
        if i is not None:
            text = shown[i].text
            released = next((j for j in range(i, len(shown)) if shown[j].text), None)
        cells.append(ByteCell(kind, pos, tid, piece, raws[k], known[k], datas[k], groups[k], i, text, released))
    return cells


def _group_html(g: ByteGroup) -> str:
    hexs = html.escape(g.hex) if g.data else "∅"
    if not g.split:
        title = f"{visible(g.char)!r}: {count(g.char_len, 'byte')}" if g.char is not None else t("bytes.invalid")
        return (f"<span class='byte-group' style='{_MONO};padding:0 2px;border:1px solid #e2e8f0;border-radius:3px' "
                f"title=\"{html.escape(title)}\">{hexs}</span>")
    ch = html_piece(g.char) if g.char is not None else html.escape(t("bytes.unfinished"))
    notes = []
    if g.from_previous:
        notes.append("↩ " + t("bytes.from_previous"))
    if g.pending:
        notes.append("↪ " + t("bytes.to_next_pending"))
    elif g.to_next:
        notes.append("↪ " + t("bytes.to_next"))
    title = t("bytes.split_title", n=g.char_len, char=visible(g.char) if g.char is not None else "", k=len(g.data))
    return (f"<span class='byte-group split' style='{_MONO};padding:0 2px;background:{SPLIT_BG};border:1px dashed #b7791f;"
            f"border-radius:3px' title=\"{html.escape(title)}\">{hexs}</span>"
            f"<span class='split-note' style='font-size:11px;color:#975a16'>{ch} · {html.escape(' · '.join(notes))}</span>")


def _release(c: ByteCell, upto_step: int) -> str:
    """When a generated token's text was released, in words (HTML; empty for a special token)."""
    if c.data is None:
        return ""
    if c.released_at == c.step:
        return t_html("bytes.released", step=c.step, text=html_piece(c.text or "", 16))
    if c.released_at is not None:
        return t_html("bytes.held_released", step=c.released_at)
    if any(g.to_next for g in c.groups):
        return t_html("bytes.held_incomplete", step=upto_step)
    return t_html("bytes.not_released")


def _cell_html(c: ByteCell, upto_step: int) -> str:
    gen = c.kind == "generated"
    border = "2px solid #4a5568" if gen else "1px solid #e2e8f0"
    raw_title = t("bytes.raw_known" if c.raw_known else "bytes.raw_unknown")
    parts = [
        f"<span class='piece' style='{_MONO};font-size:14px'>{html_piece(c.piece, 24)}</span>",
        f"<span class='raw' style='{_MONO};color:#4a5568' title=\"{html.escape(raw_title)}\">"
        f"{t_html('bytes.raw', piece=html_piece(c.raw, 24))}</span>",
    ]
    if c.data is None:
        parts.append(f"<span class='special' style='color:#6b46c1;font-weight:600'>{t_html('bytes.special')}</span>")
    else:
        groups = "".join(_group_html(g) for g in c.groups) or f"<span style='color:#a0aec0'>{t_html('bytes.none')}</span>"
        parts.append(f"<span class='bytes' style='display:flex;flex-wrap:wrap;gap:2px;align-items:baseline'>{groups}</span>")
    if gen:
        foot = t("bytes.foot_step", step=c.step, position=thousands(c.position), id=c.token_id)
        rel = _release(c, upto_step)
        if rel:
            parts.append(f"<span class='release' style='color:#c05621'>{rel}</span>")
    else:
        foot = t("bytes.foot", position=thousands(c.position), id=c.token_id)
    parts.append(f"<span style='font-size:10px;color:#718096'>{html.escape(foot)}</span>")
    return f"<span class='byte-cell {c.kind}' style=\"{_CELL.format(border=border)}\">{''.join(parts)}</span>"


def bytes_html(prompt: PromptRecord, steps: Sequence[StepRecord], upto: int, *,
               raw_pieces: Sequence[str] | Callable[[int], str] | None = None,
               piece_bytes: Sequence[bytes | None] | Callable[[int], bytes | None] | None = None) -> str:
    """One cell per token of the context (the prompt with its chat template, then the tokens of
    steps[0..upto]): readable piece, raw piece, UTF-8 bytes in hex grouped by character (split
    characters highlighted and flagged), and for generated tokens the step that released the text.

    raw_pieces / piece_bytes: a sequence over those tokens in order, or a function of the token
    id (e.g. pipeline.tokens.TokenView.raw_piece / piece_bytes); None reads the records."""
    cells = byte_cells(prompt, steps, upto, raw_pieces=raw_pieces, piece_bytes=piece_bytes)
    n_split = sum(1 for c in cells for g in c.groups if g.split and not g.from_previous)
    total = sum(len(c.data) for c in cells if c.data is not None)
    specials = sum(1 for c in cells if c.data is None)
    counts = t("bytes.counts", tokens=count(len(cells), "token"), bytes=count(total, "byte"))
    if specials:
        counts = t("bytes.counts_special", counts=counts, specials=count(specials, "special_token"))
    if n_split:
        counts += " · " + t("bytes.counts_split", chars=count(n_split, "character"))
    head = f"<div class='bytes-counts' style='font-size:13.5px;color:#2d3748;margin-bottom:4px'>{html.escape(counts)}</div>"
    last = max((c.step for c in cells if c.step is not None), default=0)
    body = "<div style='max-height:520px;overflow-y:auto'>" + "".join(_cell_html(c, last) for c in cells) + "</div>"
    yellow = f"<span style='background:{SPLIT_BG}'>{html.escape(t('bytes.yellow'))}</span>"
    legend = f"<div style='font-size:12px;color:#718096;margin-top:4px'>{t_html('bytes.legend', yellow=yellow)}</div>"
    return head + body + legend

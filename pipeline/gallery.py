"""The gallery: saved traces shipped in assets/gallery/, each one teaching one thing.

A class can open them with no model compute at all (the page's `?example=NAME`). The manifest,
assets/gallery/gallery.json, lists each entry's url-safe name, title, one sentence for a
teacher ("what to look at"), file, the claim it illustrates and the step that shows it.
scripts/make_gallery.py regenerates the files with the embedded model and checks every claim
with the functions below; the tests recompute the claims from the files.

No heavy imports here: the codec (numpy) is imported when a trace is loaded.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from pipeline.errors import GalleryError

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.trace.records import Trace

GALLERY_DIR = Path(__file__).resolve().parents[1] / "assets" / "gallery"
MANIFEST = "gallery.json"
MANIFEST_FORMAT = "llm-pipeline-gallery/1"
MAX_FILE_BYTES = 2_500_000  # one saved trace
MAX_TOTAL_BYTES = 10_000_000  # the whole gallery: it ships in the repository and the Space
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")  # url-safe: ?example=NAME

# The thresholds the claims use (the titles promise them).
CONFIDENT_TOP = 0.9  # temperature-1 probability of the most likely token
FLAT_TOP = 0.1
FLAT_ENTROPY_BITS = 8.0  # a uniform choice among 256 tokens
LOOP_N, LOOP_TIMES = 4, 3  # a run of 4 tokens generated 3 times or more


@dataclass(frozen=True)
class Entry:
    name: str  # url-safe: ?example=NAME
    title: str
    look: str  # one sentence for a teacher: what to look at
    file: str  # inside the gallery folder
    claim: str  # a key of CLAIMS
    step: int  # a StepRecord.index where the claim shows


# ---------------------------------------------------------------------------------------
# Claims: trace -> the steps (StepRecord.index) that show it; empty when it does not hold.


def confident_steps(trace: Trace) -> list[int]:
    """Steps whose most likely next token had probability > CONFIDENT_TOP (temperature 1)."""
    return [s.index for s in trace.steps if float(s.top_probs.max()) > CONFIDENT_TOP]


def flat_steps(trace: Trace) -> list[int]:
    """Steps where no token reached FLAT_TOP and the entropy exceeded FLAT_ENTROPY_BITS."""
    return [s.index for s in trace.steps if float(s.top_probs.max()) < FLAT_TOP and s.entropy > FLAT_ENTROPY_BITS]


def is_partial_utf8(b: bytes | None) -> bool:
    """True when `b` (a token's bytes) is not whole UTF-8 text: part of a character."""
    if b is None:
        return False
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def split_char_steps(trace: Trace) -> list[int]:
    """Generated tokens whose bytes are only part of a UTF-8 character (an emoji cut in pieces)."""
    return [s.index for s in trace.steps if is_partial_utf8(s.piece_bytes)]


def loop_steps(trace: Trace) -> list[int]:
    """The steps where a run of LOOP_N generated tokens starts that is generated LOOP_TIMES
    times or more: the model writing the same thing again and again."""
    ids = [s.token_id for s in trace.steps]
    grams = [tuple(ids[i : i + LOOP_N]) for i in range(len(ids) - LOOP_N + 1)]
    count = Counter(grams)
    return [trace.steps[i].index for i, g in enumerate(grams) if count[g] >= LOOP_TIMES]


def chat_steps(trace: Trace) -> list[int]:
    """[first step] when the prompt went through the chat template: chat mode, the rendered
    prompt longer than the typed text and holding special tokens (tokens with no bytes)."""
    p = trace.prompt
    special = any(b is None for b in p.piece_bytes)
    if trace.settings.chat and len(p.rendered) > len(p.text) and special and trace.steps:
        return [trace.steps[0].index]
    return []


TAX_TOKENS_PER_WORD = 1.5  # a prompt "pays the token tax" when its typed words take this many tokens each, or more


def tax_steps(trace: Trace) -> list[int]:
    """[first step] when the typed prompt takes TAX_TOKENS_PER_WORD tokens a word or more (English text takes about
    1.2): a prompt in a language the tokenizer was not built around. (Its count against the same prompt in English is
    asserted when the trace is made: scripts/make_gallery.py.)"""
    p, words = trace.prompt, len(trace.prompt.text.split())
    if trace.steps and words and len(p.text_ids) / words >= TAX_TOKENS_PER_WORD:
        return [trace.steps[0].index]
    return []


CLAIMS: dict[str, Callable[[Trace], list[int]]] = {
    "confident": confident_steps,
    "flat": flat_steps,
    "split_char": split_char_steps,
    "loop": loop_steps,
    "chat": chat_steps,
    "tax": tax_steps,
}


# ---------------------------------------------------------------------------------------
# The lesson: gallery steps in the order a class guesses them, each with one sentence for the teacher.
# `expect` is the guess a class is expected to give, written as the model's token (a space before a word).


@dataclass(frozen=True)
class LessonStep:
    example: str  # an entry's name
    step: int  # a StepRecord.index of its trace
    kind: str  # a key of LESSON_KINDS: what the step shows about guessing
    expect: str  # the class's expected guess as a token piece ("" where no guess is expected to be right)
    say: str  # one sentence for the teacher


def _p(step, piece: str) -> float | None:
    """The temperature-1 probability of the kept candidate `piece` at `step` (None: not kept)."""
    hits = [float(q) for x, q in zip(step.top_pieces, step.top_probs) if str(x) == piece]
    return hits[0] if hits else None


def _top(step) -> bool:
    return step.token_id == int(step.top_ids[0])


def _below(step, piece: str, p: float) -> bool:
    """The kept candidate `piece` has probability below `p` (False when it is not kept)."""
    q = _p(step, piece)
    return q is not None and q < p


LESSON_KINDS: dict[str, Callable[[Trace, int, str], bool]] = {
    # the class gets it right: the model's own top pick, half its probability or more, is the expected guess
    "right": lambda t, k, e: _top(t.steps[k]) and t.steps[k].chosen_prob >= 0.5 and t.steps[k].piece == e,
    # the class will not: its expected guess is a candidate the model rated below the token it wrote
    "miss": lambda t, k, e: t.steps[k].piece != e and _below(t.steps[k], e, t.steps[k].chosen_prob),
    # the model is confident and wrong: over CONFIDENT_TOP on its pick, and the fact (`expect`) is another token
    "confident_wrong": lambda t, k, e: _top(t.steps[k]) and t.steps[k].chosen_prob > CONFIDENT_TOP and t.steps[k].piece != e
    and _below(t.steps[k], e, 1 - CONFIDENT_TOP),
    "flat": lambda t, k, e: k in flat_steps(t),
    "bytes": lambda t, k, e: k in split_char_steps(t),
    # a loop: the model writes the expected (repeated) guess with over CONFIDENT_TOP
    "loop": lambda t, k, e: k in loop_steps(t) and t.steps[k].chosen_prob > CONFIDENT_TOP and t.steps[k].piece == e,
}


# ---------------------------------------------------------------------------------------
# The manifest and loading


def _entry(d: object, where: str) -> Entry:
    fields = ("name", "title", "look", "file", "claim", "step")
    if not isinstance(d, dict) or any(k not in d for k in fields):
        raise GalleryError(f"{where}: an entry needs the keys {', '.join(fields)}; regenerate it with scripts/make_gallery.py")
    e = Entry(**{k: d[k] for k in fields})
    if not isinstance(e.name, str) or not NAME.match(e.name):
        raise GalleryError(f"{where}: the name {e.name!r} is not url-safe (lower-case letters, digits, - and _)")
    if not isinstance(e.file, str) or Path(e.file).name != e.file:
        raise GalleryError(f"{where}: the file {e.file!r} must be a plain file name inside the gallery folder")
    if e.claim not in CLAIMS:
        raise GalleryError(f"{where}: unknown claim {e.claim!r}; known: {', '.join(CLAIMS)}")
    return e


def _manifest(folder: str | Path | None) -> tuple[Path, dict]:
    path = Path(folder or GALLERY_DIR) / MANIFEST
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise GalleryError(f"no gallery manifest at {path}; run scripts/make_gallery.py") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise GalleryError(f"the gallery manifest {path} is not valid JSON ({e}); run scripts/make_gallery.py") from e
    if not isinstance(d, dict) or d.get("format") != MANIFEST_FORMAT or not isinstance(d.get("entries"), list):
        raise GalleryError(f"{path} is not a {MANIFEST_FORMAT} manifest; run scripts/make_gallery.py")
    return path, d


def entries(folder: str | Path | None = None) -> tuple[Entry, ...]:
    """The gallery's entries, in the manifest's order."""
    path, d = _manifest(folder)
    found = tuple(_entry(x, f"{path} entry {i}") for i, x in enumerate(d["entries"]))
    names = [e.name for e in found]
    if len(set(names)) != len(names):
        raise GalleryError(f"{path} names an entry twice: {names}")
    return found


def lesson(folder: str | Path | None = None) -> tuple[LessonStep, ...]:
    """The gallery's lesson, in its order (empty when the manifest has none)."""
    path, d = _manifest(folder)
    names = {e.name for e in entries(folder)}
    out = []
    for i, x in enumerate(d.get("lesson") or []):
        fields = ("example", "step", "kind", "expect", "say")
        if not isinstance(x, dict) or any(k not in x for k in fields):
            raise GalleryError(f"{path} lesson step {i}: needs the keys {', '.join(fields)}; regenerate it with scripts/make_gallery.py")
        ls = LessonStep(**{k: x[k] for k in fields})
        if ls.example not in names or ls.kind not in LESSON_KINDS or not isinstance(ls.step, int) or ls.step < 0:
            raise GalleryError(f"{path} lesson step {i}: no example {ls.example!r}, step {ls.step!r} or kind {ls.kind!r} of that name")
        out.append(ls)
    return tuple(out)


def entry(name: str, folder: str | Path | None = None) -> Entry:
    """The entry called `name`; GalleryError (listing the names there are) when none is."""
    found = entries(folder)
    for e in found:
        if e.name == name:
            return e
    known = ", ".join(e.name for e in found) or "none"
    raise GalleryError(f"no gallery example named {name!r}; pick one of: {known}")


def path(name: str, folder: str | Path | None = None) -> Path:
    """The file of the entry called `name`."""
    return Path(folder or GALLERY_DIR) / entry(name, folder).file


def load(name: str, folder: str | Path | None = None) -> Trace:
    """The saved trace called `name` (via pipeline.trace.files.loads)."""
    from pipeline.trace import files as trace_io

    p = path(name, folder)
    try:
        data = p.read_bytes()
    except FileNotFoundError as e:
        raise GalleryError(f"the gallery lists {name!r} but its file {p} is missing; run scripts/make_gallery.py") from e
    return trace_io.loads(data)


__all__ = ["Entry", "CLAIMS", "LessonStep", "LESSON_KINDS", "lesson", "entries", "entry", "path", "load", "GALLERY_DIR", "MAX_FILE_BYTES", "MAX_TOTAL_BYTES"]

"""Real text to guess against the model: short passages shipped with the app, each turned into a Trace by teacher forcing.

    passages.entries()                 # every passage: name, title, source, licence, text
    tr = passages.trace(lm, "text-tyger")

A passage's trace is what the model computes reading the real text: its prompt is the model's document-start token
alone (a new document begins; the page shows it), and step N is the passage's token N, read after tokens 0..N-1,
with every record of a generated step (attention, the distribution and its stages, the KV cache) from ONE captured
forward pass over the passage (pipeline.forced_run.forced_steps). The token of each step is the real one, marked
`forced` (the page says "forced (a branch, or the real text)", never "sampled");
the settings are temperature 1 with no top-k, top-p or min-p, so the distribution shown is the model's own.
The passages and where each comes from: assets/passages/passages.json (llm-pipeline-passages/1).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from pipeline.errors import PassageError

PASSAGES_FILE = Path(__file__).resolve().parents[1] / "assets" / "passages" / "passages.json"
FORMAT = "llm-pipeline-passages/1"
MAX_TOKENS = 200  # a passage's most tokens (a round is a handful of steps; the one captured pass stays small)


@dataclass(frozen=True)
class Passage:
    name: str  # url-safe, and apart from the gallery's names: ?example=NAME opens it
    title: str
    source: str  # who wrote it and where it was published
    url: str  # where to read it ("" for text written for this project)
    licence: str
    text: str


@lru_cache(maxsize=4)
def _read(path: str) -> tuple[Passage, ...]:
    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
        if d.get("format") != FORMAT:
            raise ValueError(f"format {d.get('format')!r}, not {FORMAT}")
        return tuple(Passage(**{k: str(p[k]) for k in Passage.__dataclass_fields__}) for p in d["passages"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise PassageError(f"the passages' file {path} cannot be read ({e})") from e


def entries(path: str | Path | None = None) -> tuple[Passage, ...]:
    return _read(str(path or PASSAGES_FILE))


def names(path: str | Path | None = None) -> tuple[str, ...]:
    return tuple(p.name for p in entries(path))


def get(name: str, path: str | Path | None = None) -> Passage:
    for p in entries(path):
        if p.name == name:
            return p
    raise PassageError(f"there is no passage named {name!r}; there are: {', '.join(names(path))}")


DOCUMENT_SEPARATORS = ("<|endoftext|>",)  # the token that separated documents in training (GPT-2's, SmolLM2's)


def start_token(lm) -> tuple[int, str]:
    """The model's document-start token: the one that separated documents in its training text when it has one
    (an instruct model's BOS is often its chat turn's start, "<|im_start|>", which expects "user" next), else its BOS."""
    tok = lm.tokens.tok
    seps = [(tok.convert_tokens_to_ids(t), t) for t in DOCUMENT_SEPARATORS if t in tok.get_vocab()]
    for tid, text in (*seps, (tok.bos_token_id, tok.bos_token), (tok.eos_token_id, tok.eos_token)):
        if tid is not None and text:
            return int(tid), str(text)
    raise PassageError("this model's tokenizer has no document-start token to begin a passage with", key="error.passage_no_start")


def token_ids(lm, passage: Passage) -> list[int]:
    """The passage as this model's tokens (plain text: no template, no start token)."""
    ids = lm.tokens.plain_ids(passage.text)
    if not 1 <= len(ids) <= MAX_TOKENS:
        raise PassageError(f"the passage {passage.name!r} is {len(ids)} tokens; a passage has 1 to {MAX_TOKENS}", key="error.passage_length",
                           n=len(ids), high=MAX_TOKENS)
    return ids


def trace(lm, passage: Passage | str):
    """The passage read by the model, as a Trace (step N: the passage's token N after tokens 0..N-1)."""
    from pipeline.forced_run import forced_steps
    from pipeline.generate import build_trace, start
    from pipeline.trace.records import Settings

    p = get(passage) if isinstance(passage, str) else passage
    ids = token_ids(lm, p)
    sid, text = start_token(lm)
    settings = Settings(temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=len(ids), chat=False, parse_special=True)
    prompt = start(lm, text, settings).prompt
    if list(prompt.token_ids) != [sid]:
        raise PassageError(f"the document-start token {text!r} was read as {list(prompt.token_ids)}, not [{sid}]", key="error.passage_start_read",
                           token=text, ids=str(list(prompt.token_ids)), id=f"[{sid}]")
    steps = forced_steps(lm, prompt.token_ids, [], ids, settings, stop_ids=set())
    return build_trace(lm, settings, prompt, [replace(s, forced=True) for s in steps])  # (the text's token, not drawn)


__all__ = ["Passage", "PassageError", "entries", "names", "get", "start_token", "token_ids", "trace", "MAX_TOKENS"]

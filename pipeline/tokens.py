"""The model's tokenizer as people should see it: readable pieces, the chat template, and
incremental detokenisation that never shows half a UTF-8 character."""
from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from functools import lru_cache


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet: printable stand-in character -> byte (e.g. 'Ġ' -> 0x20)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def char_spans(b: bytes) -> list[tuple[int, int, str | None]]:
    """(start, end, character) over b: each UTF-8 character whole, None for a byte that makes none."""
    out, i = [], 0
    while i < len(b):
        for j in range(min(len(b), i + 4), i, -1):
            try:
                ch = b[i:j].decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(ch) == 1:
                out.append((i, j, ch))
                i = j
                break
        else:
            out.append((i, i + 1, None))
            i += 1
    return out


def bytes_to_readable(b: bytes) -> str:
    """UTF-8 text where valid; bytes of an incomplete character as <0xE2>-style markers."""
    return "".join(ch if ch is not None else f"<0x{b[i]:02X}>" for i, _, ch in char_spans(b))


@dataclass(frozen=True)
class EncodedPrompt:
    rendered: str  # the text the model reads (after the chat template)
    ids: list[int]


_ENCODE = threading.Lock()  # (see encode_ids)


def encode_ids(tok, text: str, *, split_special: bool = False) -> list[int]:
    """A Hugging Face tokenizer's ids of `text`, no special tokens added; `split_special`: text that looks like a
    special token is plain text. One encode at a time in the process: a fast tokenizer keeps "split special tokens"
    as a flag on its Rust tokenizer, set by each call and read by the encode after it, so two visitors' prompts
    encoded at once (one raw, one chat) could each be read with the other's flag: the chat template's own
    `<|im_start|>` cut into "<", "|", "im", ... (seen with 9 generations started together)."""
    with _ENCODE:
        return list(tok(text, add_special_tokens=False, split_special_tokens=split_special)["input_ids"])


class TokenView:
    """Readable pieces and prompt encoding for one Hugging Face tokenizer."""

    def __init__(self, tokenizer, vocab_size: int):
        self.tok = tokenizer
        self.vocab_size = vocab_size
        self.special_ids = set(tokenizer.all_special_ids)
        self.special_strings = sorted({t for t in tokenizer.all_special_tokens} | set(getattr(tokenizer, "added_tokens_encoder", {}) or {}), key=len, reverse=True)
        raw = tokenizer.convert_ids_to_tokens(list(range(min(vocab_size, len(tokenizer)))))
        self._raw = [r if r is not None else "" for r in raw]
        dec = _byte_decoder()
        self._byte_level = any(r.startswith("Ġ") for r in self._raw[:5000])
        self._dec = dec
        self._pieces: dict[int, str] = {}  # id -> piece(id), filled as ids are shown

    # -- pieces ---------------------------------------------------------------------------------
    def raw_piece(self, i: int) -> str:
        return self._raw[i] if 0 <= i < len(self._raw) else f"<unused {i}>"

    def piece_bytes(self, i: int) -> bytes | None:
        """The bytes a token stands for; None for special / unknown tokens."""
        if i in self.special_ids or not (0 <= i < len(self._raw)):
            return None
        r = self._raw[i]
        if self._byte_level:
            if all(c in self._dec for c in r):
                return bytes(self._dec[c] for c in r)
            return r.encode("utf-8")
        if len(r) == 6 and r.startswith("<0x") and r.endswith(">"):  # sentencepiece byte fallback
            return bytes([int(r[3:5], 16)])
        return r.replace("▁", " ").encode("utf-8")

    def piece(self, i: int) -> str:
        """Readable text of one token: 'Ġa' -> ' a'; a lone UTF-8 lead byte -> '<0xE2>'."""
        i = int(i)
        p = self._pieces.get(i)
        if p is None:  # made once per id: every decode step names its 100 candidates, mostly the same ones
            b = self.piece_bytes(i)
            p = self._pieces[i] = self.raw_piece(i) if b is None else bytes_to_readable(b)
        return p

    def pieces(self, ids) -> list[str]:
        get = self._pieces.get  # the made pieces looked up directly: a step names 100 candidates
        return [p if (p := get(i)) is not None else self.piece(i) for i in map(int, ids)]

    def common_ids(self, n: int) -> list[int]:
        """Ids of frequent ordinary tokens (BPE ranks roughly follow frequency), for a background cloud."""
        out = [i for i in range(len(self._raw)) if i not in self.special_ids and self.piece_bytes(i)]
        return out[:n]

    def decode(self, ids) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    # -- prompts ---------------------------------------------------------------------------------
    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tok, "chat_template", None))

    def _has_special_text(self, text: str) -> bool:
        return any(s and s in text for s in self.special_strings)

    def plain_ids(self, text: str) -> list[int]:
        """The text alone, as plain text: no template, no BOS, special-token text not special."""
        return self._encode_plain(text, False)

    def _encode_plain(self, text: str, parse_special: bool) -> list[int]:
        return encode_ids(self.tok, text, split_special=not parse_special)

    def encode_prompt(self, text: str, *, chat: bool, system_prompt: str | None, parse_special: bool = False) -> EncodedPrompt:
        """Token ids of a prompt. Chat mode applies the model's template (its default system
        prompt included when none is given). Text that looks like a special token is plain
        text unless parse_special."""
        if not chat or not self.has_chat_template:
            bos = [self.tok.bos_token_id] if getattr(self.tok, "add_bos_token", False) and self.tok.bos_token_id is not None else []
            prefix = self.tok.bos_token if bos else ""
            return EncodedPrompt(prefix + text, bos + self._encode_plain(text, parse_special))
        # Render the template with markers in place of the person's text, so the template's
        # own special tokens stay special while the person's text is tokenised as text.
        marks = {"user": f"\x00U{uuid.uuid4().hex}\x00", "system": f"\x00S{uuid.uuid4().hex}\x00"}
        msgs = ([{"role": "system", "content": marks["system"]}] if system_prompt is not None else []) + [
            {"role": "user", "content": marks["user"]}
        ]
        template = self.tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        contents = {marks["user"]: text, marks["system"]: system_prompt or ""}
        rendered = template
        for m, c in contents.items():
            rendered = rendered.replace(m, c)
        if parse_special or not (self._has_special_text(text) or self._has_special_text(system_prompt or "")):
            # the common case: exactly what transformers' own apply_chat_template(tokenize=True) gives
            ids = encode_ids(self.tok, rendered)
            return EncodedPrompt(rendered, ids)
        ids: list[int] = []
        rest = template
        while rest:
            cut = min(((rest.find(m), m) for m in contents if m in rest), default=(-1, None))
            if cut[1] is None:
                ids += self._encode_plain(rest, True)
                break
            pos, m = cut
            ids += self._encode_plain(rest[:pos], True) + self._encode_plain(contents[m], False)
            rest = rest[pos + len(m) :]
        return EncodedPrompt(rendered, ids)


class Detokenizer:
    """Releases text token by token, holding back bytes of an unfinished UTF-8 character."""

    def __init__(self, view: TokenView):
        self.view = view
        self.ids: list[int] = []
        self.released = ""

    def add(self, token_id: int, *, final: bool = False) -> str:
        self.ids.append(int(token_id))
        text = self.view.decode(self.ids)
        if text.endswith("\ufffd") and not final:
            return ""  # an incomplete character: wait for the next token
        new = text[len(self.released) :] if text.startswith(self.released) else text
        self.released = text
        return new

    def copy(self) -> "Detokenizer":
        """Another detokeniser in this one's state (the same tokens added, the same text released)."""
        d = Detokenizer(self.view)
        d.ids, d.released = list(self.ids), self.released
        return d

    def flush(self) -> str:
        text = self.view.decode(self.ids)
        new = text[len(self.released) :] if text.startswith(self.released) else ""
        self.released = text
        return new

"""Drafts for speculative decoding: cheap proposers of tokens for the target to check.

Three kinds work offline:

    "ngram:N:M"  prompt lookup (no model at all): find the most recent earlier occurrence of the
                 context's last n tokens (n from N down to M) and propose the tokens that
                 followed it. "ngram" is "ngram:3:2"; "ngram:N" is "ngram:N:2" (M is at most N).
                 It costs microseconds, and wins whenever the reply copies or edits its input
                 (repeat a list, fix a typo, reformat as JSON). Why M = 2 by default: on
                 SmolLM2 about 1 in 10 proposals after a one-token match is accepted, and on
                 this CPU a pass fed 2 tokens already costs ~1.5x a pass fed 1 (matrix-matrix
                 instead of matrix-vector kernels), so one-token matches slow free writing
                 down; "ngram:3:1" looks them up too.
                 Its proposals are certain (q is one-hot), so a proposal d is kept with
                 probability p(d), and a rejection draws from p with d removed.
    "layers:N"   self-speculative: the target's own first N decoder layers, then its final
                 norm and LM head (an early exit, as in LayerSkip and Draft & Verify). It is a
                 view of the target: the same weight tensors, no copy, no extra memory.
    a model      any other model whose tokenizer is the target's (a smaller one of the same
                 family): a Hub id, a local directory, or an already loaded LoadedModel.

Speculative sampling compares the two models' probabilities token by token, so a draft
must share the target's vocabulary exactly; one that does not is refused.

DEFAULT_DRAFT is the one default of the app, the command line and `make_draft(lm, None)`: the
draft that pays off on a small CPU (`python -m pipeline bench --cost-curve` shows why).
"""
from __future__ import annotations

import copy
import re
import threading
from dataclasses import dataclass
from typing import NamedTuple, Sequence

from torch import nn

from pipeline.arch import find_arch
from pipeline.errors import SpeculativeError
from pipeline.loading import LoadedModel, load_model
from pipeline.trace.records import DraftInfo

LAYERS_SPEC = re.compile(r"^\s*layers\s*:\s*(-?\d+)\s*$")
NGRAM_SPEC = re.compile(r"^\s*ngram\s*(?::\s*(-?\d+)\s*(?::\s*(-?\d+))?)?\s*$")
DEFAULT_DRAFT = "ngram"  # prompt lookup: ~0 cost per proposal, so any acceptance pays (see speculative_cost)
DEFAULT_NGRAM = 3  # "ngram" = "ngram:3:2": the longest n-gram looked up ...
DEFAULT_MIN_NGRAM = 2  # ... and the shortest (a one-token match is weak evidence: see above)
MAX_NGRAM = 16


@dataclass
class Draft:
    """A draft ready to propose: a module called like a causal LM (None for prompt lookup), and what it is."""

    model: nn.Module | None  # forward(input_ids, past_key_values, use_cache, logits_to_keep) -> .logits
    info: DraftInfo
    lock: threading.Lock | None  # the target's own lock for "layers": they share modules (and their hooks)
    context_length: int
    max_ngram: int = 0  # "ngram" drafts: the longest n-gram looked up (0 for model drafts)
    min_ngram: int = 0  # "ngram" drafts: the shortest

    @property
    def is_lookup(self) -> bool:
        return self.model is None

    def new_cache(self):
        if self.model is None:
            return None
        from transformers import DynamicCache

        return DynamicCache(config=self.model.config)


def draft_choices(n_layers: int, model: str | None = None) -> list[str]:
    """The drafts a page offers for a target of n_layers: the default first, a few layer depths, and a
    smaller model when one is configured."""
    layers = sorted({max(1, n_layers // 3), max(1, 2 * n_layers // 3), max(1, n_layers - 2)})
    out = [DEFAULT_DRAFT, "ngram:4", "ngram:3:1"] + [f"layers:{n}" for n in layers if n < n_layers]
    return out + ([model] if model else [])


def parse_ngram(spec: str) -> tuple[int, int] | None:
    """(N, M) of an "ngram" / "ngram:N" / "ngram:N:M" spec (the longest and shortest n-gram looked
    up); None when the spec is not one."""
    m = NGRAM_SPEC.match(spec)
    if m is None:
        if spec.strip().lower().startswith("ngram"):
            raise SpeculativeError(f"'{spec}' is not an n-gram draft: write ngram, or ngram:N (the longest n-gram looked up, "
                                   f"e.g. ngram:{DEFAULT_NGRAM}), or ngram:N:M (from N tokens down to M)", key="error.draft_ngram", spec=spec,
                                   example=f"ngram:{DEFAULT_NGRAM}")
        return None
    n = DEFAULT_NGRAM if m.group(1) is None else int(m.group(1))
    if not 1 <= n <= MAX_NGRAM:
        raise SpeculativeError(f"an n-gram draft looks up 1 to {MAX_NGRAM} tokens, not {n}: try ngram:{DEFAULT_NGRAM}", key="error.draft_ngram_n",
                               high=MAX_NGRAM, n=n, example=f"ngram:{DEFAULT_NGRAM}")
    lo = min(DEFAULT_MIN_NGRAM, n) if m.group(2) is None else int(m.group(2))
    if not 1 <= lo <= n:
        raise SpeculativeError(f"ngram:{n}:{lo} looks up n-grams from {n} tokens down to {lo}: the shortest must be 1 to {n}",
                               key="error.draft_ngram_lo", spec=f"ngram:{n}:{lo}", n=n, lo=lo)
    return n, lo


def check_spec(spec: str | None) -> None:
    """Refuse a malformed "layers:N" / "ngram:N" before any model loads (a layer count's range needs the model)."""
    if spec is not None and str(spec).strip():
        parse_layers(str(spec))
        parse_ngram(str(spec))


class Lookup(NamedTuple):
    """What prompt lookup proposes: the tokens, where each was copied from, and the n-gram that matched."""

    tokens: list[int]
    sources: list[int]  # context position each proposal copies (>= len(context): one of this round's own proposals)
    n: int  # length of the matched n-gram (0: nothing matched, no proposals)
    match_position: int  # where the earlier occurrence of the n-gram starts (-1: none)


def lookup(context: Sequence[int], max_ngram: int, k: int, min_ngram: int = 1) -> Lookup:
    """Prompt-lookup decoding: for n = max_ngram down to min_ngram, find the most recent earlier
    occurrence of the context's last n tokens; propose the k tokens that followed it. Past the end
    of the context it keeps copying from its own proposals (a repeating pattern continues)."""
    ctx = list(context)
    L = len(ctx)
    for n in range(min(max_ngram, L - 1), max(min_ngram, 1) - 1, -1):
        tail = ctx[L - n:]
        # 1. the most recent start i < L - n with ctx[i:i+n] == tail (the tail itself starts at L - n)
        for i in range(L - n - 1, -1, -1):
            if ctx[i] == tail[0] and ctx[i:i + n] == tail:
                break
        else:
            continue
        # 2. copy what followed it; past the context's end, copy this round's own proposals
        sources = [i + n + j for j in range(k)]
        toks: list[int] = []
        for src in sources:
            toks.append(ctx[src] if src < L else toks[src - L])
        return Lookup(toks, sources, n, i)
    return Lookup([], [], 0, -1)


def parse_layers(spec: str) -> int | None:
    """N of a "layers:N" spec; None when the spec names a model instead."""
    m = LAYERS_SPEC.match(spec)
    if m is None:
        if spec.strip().lower().startswith("layers"):
            raise SpeculativeError(f"'{spec}' is not a layer draft: write layers:N, e.g. layers:10 for the first 10 layers", key="error.draft_layers",
                                   spec=spec)
        return None
    return int(m.group(1))


def first_layers(model: nn.Module, n: int) -> nn.Module:
    """The model truncated to its first n decoder blocks, sharing every weight with it.

    Shallow copies of the causal-LM wrapper and of its decoder, with a new (shorter) list of
    the same block objects and a config saying n layers; the embedding, final norm and LM
    head are the very same modules. Works for any family `find_arch` understands, because
    each family's forward loops over its own layer list."""
    base = model.get_decoder()
    layers = find_arch(model).layers
    lname = next(k for k, m in base._modules.items() if isinstance(m, nn.ModuleList) and list(m) == layers)
    bname = next(k for k, m in model._modules.items() if m is base)
    cfg = copy.deepcopy(model.config)
    cfg.num_hidden_layers = n
    if getattr(cfg, "layer_types", None) is not None:
        cfg.layer_types = list(cfg.layer_types[:n])
    view_base = copy.copy(base)
    view_base._modules = dict(base._modules)  # copy.copy shares the dict: replace it before editing
    view_base._modules[lname] = nn.ModuleList(layers[:n])
    view_base.config = cfg
    view = copy.copy(model)
    view._modules = dict(model._modules)
    view._modules[bname] = view_base
    view.config = cfg
    return view


def _layers_draft(lm: LoadedModel, spec: str, n: int) -> Draft:
    L = lm.info.n_layers
    if not 1 <= n <= L - 1:
        raise SpeculativeError(f"a layer draft takes 1 to {L - 1} of the target's {L} layers, not {n}: try layers:{max(1, L // 3)}",
                               key="error.draft_layers_n", high=L - 1, layers=L, n=n, example=f"layers:{max(1, L // 3)}")
    view = first_layers(lm.model, n)
    blocks = find_arch(lm.model).layers[:n]
    used = {id(p): p for m in (lm.arch.embed, *blocks, lm.arch.norm, lm.arch.lm_head) for p in m.parameters()}
    info = DraftInfo(spec=spec, kind="layers", id=f"{lm.info.id} [first {n} of {L} layers]", n_layers=n,
                     n_params=sum(p.numel() for p in used.values()), shares_weights=True)
    return Draft(view, info, lm.lock, lm.info.context_length)


def check_vocabulary(lm: LoadedModel, other: LoadedModel) -> None:
    """Refuse a draft whose tokens do not mean the same as the target's."""
    a, b = lm.info.vocab_size, other.info.vocab_size
    if a != b:
        raise SpeculativeError(
            f"the draft '{other.info.id}' has {b} output tokens but the target '{lm.info.id}' has {a}: "
            "a draft must use the target's tokenizer (pick a smaller model of the same family, or layers:N)",
            key="error.draft_vocab_size", draft=other.info.id, draft_n=b, target=lm.info.id, target_n=a)
    va, vb = lm.tokenizer.get_vocab(), other.tokenizer.get_vocab()
    if va != vb:
        diff = sorted(set(va.items()) ^ set(vb.items()), key=lambda kv: kv[1])[:3]
        raise SpeculativeError(
            f"the draft '{other.info.id}' has a different vocabulary from the target '{lm.info.id}' "
            f"(e.g. {', '.join(f'{t!r}={i}' for t, i in diff)}): a draft must use the target's tokenizer "
            "(pick a smaller model of the same family, or layers:N)",
            key="error.draft_vocab", draft=other.info.id, target=lm.info.id, example=", ".join(f"{t!r}={i}" for t, i in diff))


def _model_draft(lm: LoadedModel, other: LoadedModel, spec: str) -> Draft:
    if other.model is lm.model:
        raise SpeculativeError("the draft is the target itself: pick a smaller model, or layers:N for the target's first N layers",
                               key="error.draft_itself")
    check_vocabulary(lm, other)
    info = DraftInfo(spec=spec, kind="model", id=other.info.id, n_layers=other.info.n_layers,
                     n_params=other.info.n_params, shares_weights=False)
    return Draft(other.model, info, other.lock, other.info.context_length)


def _ngram_draft(lm: LoadedModel, spec: str, n: int, lo: int) -> Draft:
    span = f"{n} token{'s' if n != 1 else ''}" if n == lo else f"{n} down to {lo} tokens"
    info = DraftInfo(spec=spec, kind="ngram", id=f"prompt lookup (n-grams of {span})", n_layers=0, n_params=0, shares_weights=True)
    return Draft(None, info, None, lm.info.context_length, max_ngram=n, min_ngram=lo)


def make_draft(lm: LoadedModel, draft: str | LoadedModel | Draft | None = None) -> Draft:
    """A draft for this target from a spec ("ngram[:N]", "layers:N", a Hub id, a local directory),
    a loaded model, or a Draft already made (returned as it is). None or "": DEFAULT_DRAFT."""
    if isinstance(draft, Draft):
        return draft
    if isinstance(draft, LoadedModel):
        return _model_draft(lm, draft, draft.info.id)
    spec = DEFAULT_DRAFT if draft is None or not str(draft).strip() else str(draft).strip()
    ng = parse_ngram(spec)
    if ng is not None:
        return _ngram_draft(lm, spec, *ng)
    n = parse_layers(spec)
    if n is not None:
        return _layers_draft(lm, spec, n)
    return _model_draft(lm, load_model(spec, residual_map=False), spec)  # a draft's own hidden states are never drawn

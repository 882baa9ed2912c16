"""Draft models for speculative decoding: cheap models that propose tokens for the target to check.

Two kinds work offline:

    "layers:N"   self-speculative: the target's own first N decoder layers, then its final
                 norm and LM head (an early exit, as in LayerSkip and Draft & Verify). It is a
                 view of the target: the same weight tensors, no copy, no extra memory.
    a model      any other model whose tokenizer is the target's (a smaller one of the same
                 family): a Hub id, a local directory, or an already loaded LoadedModel.

Speculative sampling compares the two models' probabilities token by token, so a draft
must share the target's vocabulary exactly; one that does not is refused.
"""
from __future__ import annotations

import copy
import re
import threading
from dataclasses import dataclass

from torch import nn

from .arch import find_arch
from .errors import SpeculativeError
from .loading import LoadedModel, load_model
from .records import DraftInfo

LAYERS_SPEC = re.compile(r"^\s*layers\s*:\s*(-?\d+)\s*$")


@dataclass
class Draft:
    """A draft ready to propose: a module called like a causal LM, and what it is."""

    model: nn.Module  # forward(input_ids, past_key_values, use_cache, logits_to_keep) -> .logits
    info: DraftInfo
    lock: threading.Lock  # the target's own lock for "layers": they share modules (and their hooks)
    context_length: int

    def new_cache(self):
        from transformers import DynamicCache

        return DynamicCache(config=self.model.config)


def default_spec(lm: LoadedModel) -> str:
    """The first third of the target's layers: "layers:10" for a 30-layer model."""
    return f"layers:{max(1, lm.info.n_layers // 3)}"


def parse_layers(spec: str) -> int | None:
    """N of a "layers:N" spec; None when the spec names a model instead."""
    m = LAYERS_SPEC.match(spec)
    if m is None:
        if spec.strip().lower().startswith("layers"):
            raise SpeculativeError(f"'{spec}' is not a layer draft: write layers:N, e.g. layers:10 for the first 10 layers")
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
        raise SpeculativeError(f"a layer draft takes 1 to {L - 1} of the target's {L} layers, not {n}: try layers:{max(1, L // 3)}")
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
            "a draft must use the target's tokenizer (pick a smaller model of the same family, or layers:N)"
        )
    va, vb = lm.tokenizer.get_vocab(), other.tokenizer.get_vocab()
    if va != vb:
        diff = sorted(set(va.items()) ^ set(vb.items()), key=lambda kv: kv[1])[:3]
        raise SpeculativeError(
            f"the draft '{other.info.id}' has a different vocabulary from the target '{lm.info.id}' "
            f"(e.g. {', '.join(f'{t!r}={i}' for t, i in diff)}): a draft must use the target's tokenizer "
            "(pick a smaller model of the same family, or layers:N)"
        )


def _model_draft(lm: LoadedModel, other: LoadedModel, spec: str) -> Draft:
    if other.model is lm.model:
        raise SpeculativeError("the draft is the target itself: pick a smaller model, or layers:N for the target's first N layers")
    check_vocabulary(lm, other)
    info = DraftInfo(spec=spec, kind="model", id=other.info.id, n_layers=other.info.n_layers,
                     n_params=other.info.n_params, shares_weights=False)
    return Draft(other.model, info, other.lock, other.info.context_length)


def make_draft(lm: LoadedModel, draft: str | LoadedModel | Draft | None = None) -> Draft:
    """A draft for this target from a spec ("layers:N", a Hub id, a local directory), a
    loaded model, or a Draft already made (returned as it is). None: `default_spec(lm)`."""
    if isinstance(draft, Draft):
        return draft
    if isinstance(draft, LoadedModel):
        return _model_draft(lm, draft, draft.info.id)
    spec = default_spec(lm) if draft is None or not str(draft).strip() else str(draft).strip()
    n = parse_layers(spec)
    if n is not None:
        return _layers_draft(lm, spec, n)
    return _model_draft(lm, load_model(spec, residual_map=False), spec)  # a draft's own hidden states are never drawn

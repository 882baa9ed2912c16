"""The model's attention: eager, so that every weight can be captured, except in a pass whose weights are mostly not kept.

A trace keeps a prefill's whole T x T attention up to MAX_MATRIX_TOKENS tokens, and beyond that only each row's last
query (pipeline/generate.py). Eager attention still makes the whole matrix: for a 2,001-token prompt 30 products and
softmaxes of 9 x 2,001 x 2,001, which made the prefill 11 s here, 4 s with torch's fused `scaled_dot_product_attention`
instead. So in a pass whose caller reads only its last query's weights (`last_query_only`: a captured pass that keeps
one row of logits) and whose every row has more than MAX_MATRIX_TOKENS keys and queries, `attention` computes the
output with the fused kernel (the same mask, added to the same scores) and the last query's weights with the eager
formula, for that query alone: the returned weights are (batch, heads, 1, keys). Every other pass (a decode step, a
short prompt, a speculative check, a forced run that reads every row, any pass outside the capture) is the family's
own eager attention, unchanged.

Only the families whose attention is the plain formula use it (FUSED_FAMILIES), and a layer with a sliding window,
softcapping or sinks never takes the fused path. Their config names the implementation NAME, registered with
transformers' attention and mask interfaces (the mask is eager's: additive, 0 or the dtype's minimum); every other
family keeps "eager".
"""
from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

import torch
from torch.nn import functional as F

NAME = "llm_viz"  # config._attn_implementation of a model loaded by pipeline.loading
MAX_MATRIX_TOKENS = 512  # the prefill's T x T attention is kept up to this prompt length (pipeline/generate.py)
FUSED_FAMILIES = ("llama", "mistral", "qwen2", "qwen3")  # modeling files whose eager attention is the plain formula


_PASS = threading.local()  # .last_only: the pass running on this thread reads no query's weights but the last


@contextmanager
def last_query_only(on: bool = True):
    """Within it, on this thread, a long pass may keep only its last query's weights: for a caller that reads no other
    row (pipeline.capture.run_with_cache, for a pass that keeps one row of logits). Outside it every pass is eager."""
    before = getattr(_PASS, "last_only", False)
    _PASS.last_only = on
    try:
        yield
    finally:
        _PASS.last_only = before


def _family(module):
    """The module's own modeling file: its eager attention (softcapping, sinks and windows are its business) and its
    repeat_kv (each key/value head shared by its group of query heads)."""
    return sys.modules[type(module).__module__]


def _fused_ok(module, query, attention_mask, kwargs) -> bool:
    """Inside last_query_only, a pass of more than MAX_MATRIX_TOKENS queries, every row seeing more than that many keys
    at its last query, with no sliding window, softcapping or sinks."""
    if not getattr(_PASS, "last_only", False) or query.shape[2] <= MAX_MATRIX_TOKENS or attention_mask is None or attention_mask.dim() != 4:
        return False
    if kwargs.get("sliding_window") or kwargs.get("softcap") or getattr(module, "sinks", None) is not None:
        return False
    seen = (attention_mask[:, 0, -1, :] == 0).sum(-1)  # each row's keys at its last query (eager's mask: 0 = attended)
    return bool(seen.min() > MAX_MATRIX_TOKENS)


def attention(module, query, key, value, attention_mask, scaling: float, dropout: float = 0.0, **kwargs):
    """transformers' attention interface: (output (batch, T, heads, d), weights). See the module's docstring."""
    if not _fused_ok(module, query, attention_mask, kwargs):
        return _family(module).eager_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
    repeat, groups = _family(module).repeat_kv, module.num_key_value_groups
    k, v = repeat(key, groups), repeat(value, groups)
    mask = attention_mask[:, :, :, : k.shape[-2]]
    out = F.scaled_dot_product_attention(query, k, v, attn_mask=mask, scale=scaling)
    last = torch.matmul(query[:, :, -1:], k.transpose(2, 3)) * scaling + mask[:, :, -1:]  # eager's formula, the last query
    weights = F.softmax(last, dim=-1, dtype=torch.float32).to(query.dtype)
    return out.transpose(1, 2).contiguous(), weights


def register() -> str:
    """Make NAME known to transformers (once a process is enough; again is harmless): returns NAME."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(NAME, attention)
    AttentionMaskInterface.register(NAME, eager_mask)
    return NAME


def use(model) -> None:
    """A loaded model's attention (pipeline.loading.prepare): `attention` for FUSED_FAMILIES, eager for every other."""
    model.set_attn_implementation(register() if getattr(model.config, "model_type", "") in FUSED_FAMILIES else "eager")

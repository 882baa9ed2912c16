"""Model families: the modules hooks attach to, found by structure, and the model's shape.

A leaf module: everything in the pipeline may import it; it imports nothing of the pipeline
but the plain records.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from pipeline.trace.records import ModelInfo


@dataclass
class Arch:
    """The modules that hooks attach to, found by structure rather than by model family."""

    embed: torch.nn.Module
    layers: list  # decoder blocks
    attn: list  # attention module of each block
    mlp: list  # feed-forward module of each block
    norm: torch.nn.Module  # final norm
    lm_head: torch.nn.Module
    positions: torch.nn.Module | None = None  # learned position embedding added to the input (GPT-2's wpe)


def _first_attr(obj, names: tuple[str, ...]):
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def find_arch(model: torch.nn.Module) -> Arch:
    base = model.get_decoder() if hasattr(model, "get_decoder") else None
    base = base if base is not None else getattr(model, model.base_model_prefix)
    layers = _first_attr(base, ("layers", "h", "blocks"))
    norm = _first_attr(base, ("norm", "ln_f", "final_layernorm", "final_layer_norm"))
    assert layers is not None and norm is not None, f"unsupported architecture {type(model).__name__}: no decoder layers / final norm found"
    attn = [_first_attr(l, ("self_attn", "attn", "attention")) for l in layers]
    mlp = [_first_attr(l, ("mlp", "feed_forward")) for l in layers]
    assert all(a is not None for a in attn) and all(m is not None for m in mlp), "unsupported block layout"
    wpe = getattr(base, "wpe", None)
    positions = wpe if isinstance(wpe, torch.nn.Embedding) else None
    return Arch(model.get_input_embeddings(), list(layers), attn, mlp, norm, model.get_output_embeddings(), positions)


def model_info(model, *, model_id: str, source: str) -> ModelInfo:
    c = model.config

    def get(*names, default=None):
        return next((getattr(c, n) for n in names if getattr(c, n, None) is not None), default)

    n_heads = int(get("num_attention_heads", "n_head"))
    d_model = int(get("hidden_size", "n_embd"))
    return ModelInfo(
        id=model_id,
        source=source,
        family=str(c.model_type),
        n_layers=int(get("num_hidden_layers", "n_layer")),
        n_heads=n_heads,
        n_kv_heads=int(get("num_key_value_heads", default=n_heads)),
        head_dim=int(get("head_dim", default=d_model // n_heads)),
        d_model=d_model,
        vocab_size=int(model.get_output_embeddings().weight.shape[0]),
        context_length=int(get("max_position_embeddings", "n_positions", "n_ctx", default=2048)),
        dtype=str(next(model.parameters()).dtype).replace("torch.", ""),
        n_params=int(sum(p.numel() for p in model.parameters())),
        sliding_windows=sliding_windows(model),
    )


def sliding_windows(model) -> tuple[int, ...]:
    """Per layer, the window of a sliding-window attention layer (0: full attention), as the KV
    cache the model builds for itself sees them (Mistral's window, Gemma 2/3's alternating layers)."""
    from transformers import DynamicCache

    try:
        layers = DynamicCache(config=model.config).layers
    except (TypeError, ValueError, AttributeError):  # a config the cache cannot read: assume full attention
        return ()
    return tuple(int(getattr(layer, "sliding_window", 0) or 0) for layer in layers)

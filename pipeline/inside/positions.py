"""How the model knows order: its position scheme, and the demonstration that swapping two prompt
tokens changes what it attends to.

    pos = position_info(lm)                          # PositionRecord: RoPE frequencies or learned positions
    swap = swap_demo(lm, token_ids, i, j)            # SwapRecord: two prompt tokens swapped, attention compared
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from pipeline.capture import run_with_cache
from pipeline.errors import SettingsError
from pipeline.loading import LoadedModel
from pipeline.inside.logit_lens import text_config
from pipeline.trace.records import PositionRecord, SwapRecord

LEARNED_POSITIONS_SHOWN = 256  # learned position vectors projected by position_info


def _rope_config(lm: LoadedModel) -> tuple[float | None, float]:
    """(rope_theta, partial_rotary_factor) from the config (transformers 5 rope_parameters, or older keys)."""
    c = text_config(lm)
    rp = getattr(c, "rope_parameters", None)
    rp = rp if isinstance(rp, dict) else {}
    if rp and not ("rope_theta" in rp or "rope_type" in rp):  # per layer type (Gemma 3): take the first
        rp = next((v for v in rp.values() if isinstance(v, dict)), {})
    theta = rp.get("rope_theta", getattr(c, "rope_theta", None))
    factor = rp.get("partial_rotary_factor", getattr(c, "partial_rotary_factor", None))
    return (None if theta is None else float(theta)), float(factor if factor is not None else 1.0)


def position_info(lm: LoadedModel) -> PositionRecord:
    """How the model knows order: rotary embeddings (the inverse frequencies of the model's own
    rotary module, or computed from the config), learned position vectors (GPT-2's wpe, the
    first 256 in the model's fixed embedding projection), or neither."""
    theta, factor = _rope_config(lm)
    buf = None
    for name, b in lm.model.named_buffers():
        if name.split(".")[-1] == "inv_freq":
            buf = b
            break
    if buf is not None:
        inv = buf.detach().float().cpu().numpy().astype(np.float32)
        return PositionRecord("rope", theta, int(2 * inv.size), inv, None)
    if theta is not None:
        dim = int(lm.info.head_dim * factor)
        inv = (1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)).astype(np.float32)
        return PositionRecord("rope", theta, dim, inv, None)
    if lm.arch.positions is not None:
        w = lm.arch.positions.weight
        n = min(lm.info.context_length, LEARNED_POSITIONS_SHOWN, w.shape[0])
        with torch.inference_mode():
            xy = lm.projection.apply(w[:n].detach().float().cpu().numpy())
        return PositionRecord("learned", None, None, None, xy)
    return PositionRecord("none", None, None, None, None)


def _last_query_attention(lm: LoadedModel, ids: list[int]) -> tuple[np.ndarray, int]:
    """(L, T) attention of the last query (mean of heads) per layer, and the top next token."""
    cap = run_with_cache(lm, ids)
    L = len(lm.arch.layers)
    att = torch.stack([cap[f"blocks.{l}.attn.pattern"][0, :, -1, :].float().mean(0) for l in range(L)])
    top = int(cap["logits"][0, -1, : lm.info.vocab_size].argmax())
    return att.cpu().numpy().astype(np.float32), top


def swap_demo(lm: LoadedModel, token_ids: Sequence[int] | str, i: int, j: int) -> SwapRecord:
    """Two prefill passes, the prompt as is and with tokens i and j swapped: the attention of the
    last query (mean of heads) in every layer, the swapped run's keys put back in the original
    order (column i of the swapped run's picture is the token originally at i, which sat at j).
    A model blind to order would give identical pictures; swapping two equal tokens changes
    nothing (diff 0). A string is tokenised as plain text."""
    ids = lm.tokens.plain_ids(token_ids) if isinstance(token_ids, str) else [int(t) for t in token_ids]
    T = len(ids)
    if T < 2:
        raise SettingsError(f"swapping needs a prompt of at least 2 tokens, not {T}", key="error.swap_short", n=T)
    if T >= lm.info.context_length:
        raise SettingsError(f"the prompt is {T} tokens but the model's context window holds {lm.info.context_length}", key="error.swap_too_long", n=T,
                            window=lm.info.context_length)
    for name, v in (("i", i), ("j", j)):
        if int(v) != v or not 0 <= v < T:
            raise SettingsError(f"token position {name}={v} is outside the prompt: pick a whole number from 0 to {T - 1}", key="error.swap_position",
                                setting=f"{name}={v}", high=T - 1)
    i, j = int(i), int(j)
    if i == j:
        raise SettingsError(f"i and j are both {i}: pick two different token positions to swap", key="error.swap_same", value=i)
    swapped = list(ids)
    swapped[i], swapped[j] = ids[j], ids[i]
    att, top = _last_query_attention(lm, ids)
    att_sw, top_sw = _last_query_attention(lm, swapped)
    perm = list(range(T))
    if ids[i] != ids[j]:  # equal tokens: the swap moves nothing (the runs are the same), so nothing to put back
        perm[i], perm[j] = j, i
    att_sw = att_sw[:, perm]
    return SwapRecord(
        pieces=tuple(lm.tokens.pieces(ids)),
        swapped_pieces=tuple(lm.tokens.pieces(swapped)),
        i=i,
        j=j,
        attention=att,
        attention_swapped=att_sw,
        max_abs_diff=float(np.abs(att - att_sw).max()),
        top_piece=lm.tokens.piece(top),
        top_piece_swapped=lm.tokens.piece(top_sw),
    )

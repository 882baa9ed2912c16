"""Arithmetic on the records that the pipeline and the page both use (no torch: viz/ imports it)."""
from __future__ import annotations

from pipeline.trace.records import ModelInfo


def kv_positions(info: ModelInfo, positions: int) -> list[int]:
    """Positions each layer's KV cache holds once `positions` tokens went through: all of them, or
    for a sliding-window layer of window w only the last w - 1 (the next query brings the w-th)."""
    windows = info.sliding_windows or (0,) * info.n_layers
    return [min(positions, w - 1) if w else positions for w in windows]


def kv_cache_bytes(info: ModelInfo, positions: int, bytes_per_value: int) -> int:
    """2 (keys, values) x KV heads x head size x bytes x the positions each layer holds."""
    return 2 * info.n_kv_heads * info.head_dim * bytes_per_value * sum(kv_positions(info, positions))

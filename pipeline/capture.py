"""Forward hooks that capture a forward pass, named by module path (TransformerLens style).

Hooks are global state on the modules: they are installed only inside `capture(...)` and
removed in `finally`, so nothing is left behind when a forward pass raises. They are
installed around one forward pass at a time, never across a `yield`, so a generator that is
abandoned mid-way cannot leave hooks on a model other people use.

Names, in the order a forward pass produces them:
    blocks.0.resid_pre          input to block 0            (1, T, d_model)
                                (the embedding as the model itself prepares it: scaled,
                                plus learned positions, whatever the family does)
    blocks.{i}.attn.pattern     attention after softmax     (1, heads, q, k)
    blocks.{i}.attn.out         attention block output      (1, T, d_model)
    blocks.{i}.mlp.out          feed-forward block output   (1, T, d_model)
    blocks.{i}.resid_post       residual stream after block (1, T, d_model)
    ln_final                    final norm output           (1, T, d_model)

The logits are not hooked: `run_with_cache` takes them from the model's own output, which
includes any final soft-capping or scaling the model applies after its LM head.

`run_with_cache` is the one forward pass of the project: generation, speculative verification
and drafting, the residual-map fit, the swap demo and the KV comparison all go through it. It
takes the model's lock (one pass at a time: hooks and a shared KV-less model are global state)
and times the pass inside the lock, so waiting for another visitor's pass is never counted as
the model's own time.
"""
from __future__ import annotations

import time
from contextlib import contextmanager, nullcontext
from typing import Iterator, Sequence

import torch

from .arch import Arch


def hook_names(n_layers: int) -> list[str]:
    """The ordered list of names one forward pass captures."""
    names = ["blocks.0.resid_pre"]
    for i in range(n_layers):
        names += [f"blocks.{i}.attn.pattern", f"blocks.{i}.attn.out", f"blocks.{i}.mlp.out", f"blocks.{i}.resid_post"]
    return names + ["ln_final"]


def _first_tensor(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def _pattern(out):
    w = out[1] if isinstance(out, (tuple, list)) and len(out) > 1 else None
    assert isinstance(w, torch.Tensor), "attention weights were not returned: load the model with attn_implementation='eager'"
    return w


@contextmanager
def capture(arch: Arch) -> Iterator[dict[str, torch.Tensor]]:
    """Install the hooks; yield the dict they fill (detached tensors, in execution order)."""
    store: dict[str, torch.Tensor] = {}

    def put(name, pick):
        def hook(_module, _inp, out):
            store[name] = pick(out).detach()

        return hook

    def block_input(_module, args, kwargs):
        store["blocks.0.resid_pre"] = (args[0] if args else kwargs["hidden_states"]).detach()

    handles = [arch.layers[0].register_forward_pre_hook(block_input, with_kwargs=True)]
    try:
        for i, (layer, attn, mlp) in enumerate(zip(arch.layers, arch.attn, arch.mlp)):
            handles.append(attn.register_forward_hook(put(f"blocks.{i}.attn.pattern", _pattern)))
            handles.append(attn.register_forward_hook(put(f"blocks.{i}.attn.out", _first_tensor)))
            handles.append(mlp.register_forward_hook(put(f"blocks.{i}.mlp.out", _first_tensor)))
            handles.append(layer.register_forward_hook(put(f"blocks.{i}.resid_post", _first_tensor)))
        handles.append(arch.norm.register_forward_hook(put("ln_final", _first_tensor)))
        yield store
    finally:
        for h in handles:
            h.remove()


def residual_stream(arch: Arch, cap: dict[str, torch.Tensor], rows) -> torch.Tensor:
    """(L+1, ..., d_model) the residual stream at capture rows `rows`: the input to block 0, then
    the output of every block."""
    return torch.stack([cap["blocks.0.resid_pre"][0, rows]] + [cap[f"blocks.{i}.resid_post"][0, rows] for i in range(len(arch.layers))])


def hooks_installed(arch: Arch) -> int:
    """How many forward (and forward pre-) hooks are on the captured modules (0 outside `capture`)."""
    mods = [arch.embed, arch.norm, arch.lm_head, *arch.layers, *arch.attn, *arch.mlp]
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in mods)


class Captured(dict):
    """What one `run_with_cache` pass captured: the named activations (`hook_names`), plus
    "logits" (the model's own output, the last `keep` positions: (1, keep, vocab))."""

    ms: float = 0.0  # the forward pass (with its hooks), timed inside the model's lock
    wait_ms: float = 0.0  # time spent waiting for the lock before the pass could start


def run_with_cache(lm, ids: Sequence[int], *, cache=None, keep: int = 1, hooks: bool = True) -> Captured:
    """One forward pass of `ids` (a list of token ids; the KV `cache` is extended when given),
    with the capture hooks when `hooks`. `lm` is anything with `.model`, `.lock` and, for hooks,
    `.arch` (a LoadedModel, or a draft). The hooks are removed before this returns."""
    model = lm.model
    x = torch.as_tensor([list(ids)], dtype=torch.long, device=model.device)  # (1, T)
    t0 = time.perf_counter()
    with lm.lock:
        t1 = time.perf_counter()
        with torch.inference_mode(), (capture(lm.arch) if hooks else nullcontext({})) as store:
            out = model(input_ids=x, past_key_values=cache, use_cache=cache is not None, logits_to_keep=keep)
        t2 = time.perf_counter()
    result = Captured(store)
    result["logits"] = out.logits.detach()  # (1, keep, vocab)
    result.ms, result.wait_ms = (t2 - t1) * 1000.0, (t1 - t0) * 1000.0
    return result

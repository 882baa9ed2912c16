"""Forward hooks that capture a forward pass, named by module path (TransformerLens style).

Hooks are global state on the modules: they are installed only inside `capture(...)` and
removed in `finally`, so nothing is left behind when a forward pass raises. They are
installed around one forward pass at a time, never across a `yield`, so a generator that is
abandoned mid-way cannot leave hooks on a model other people use.

A hook here is the module's `forward` wrapped for the pass (an instance attribute over the
class's method), not a `register_forward_hook` handle: a module with torch hooks takes
`nn.Module`'s slow call path on every call, and a handle costs time to register and remove, on
each of a hundred-odd hooked modules every pass; a wrapper costs a small fraction of that
(docs/decode_profile.md). The wrapper sees what a forward hook would see: the module's inputs
and the output its `forward` returned (before any torch forward hook of someone else runs).

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

import functools
import time
from contextlib import contextmanager, nullcontext
from typing import Iterator, Sequence

import torch

from pipeline import attention
from pipeline.arch import Arch
from pipeline.model_thread import elsewhere


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


class _Target:
    """The dict a wrapper writes into: the capture in progress."""

    def __init__(self, store: dict | None = None):
        self.store = store


def _wrapper(inner, before, after, target: _Target):
    """A forward that records, into `target.store`, what a forward hook would see: `before`
    gets the inputs, `after` the output `inner` (the module's own forward) returned."""

    def forward(*args, **kwargs):
        store = target.store
        if before is not None:
            before(store, args, kwargs)
        out = inner(*args, **kwargs)
        after(store, out)
        return out

    forward.capture_hook = True  # hooks_installed counts these
    return forward


def _put(name: str):
    def after(store, out):
        store[name] = _first_tensor(out).detach()

    return after


def _attention(i: int):
    pattern, out = f"blocks.{i}.attn.pattern", f"blocks.{i}.attn.out"

    def after(store, o):  # one module, two names: the weights after softmax, then the block's output
        store[pattern] = _pattern(o).detach()
        store[out] = _first_tensor(o).detach()

    return after


def _block_input(store, args, kwargs):
    store["blocks.0.resid_pre"] = (args[0] if args else kwargs["hidden_states"]).detach()


class _Plan(_Target):
    """What each captured module records, and a ready wrapper per module, made once per Arch:
    putting ready wrappers in place costs a fraction of making every closure anew for every pass.
    The ready wrappers write into `self.store`, set by the capture that installs them."""

    def __init__(self, arch: Arch):
        super().__init__()
        self.items = []  # (module, before, after, ready wrapper)
        for i, (layer, attn, mlp) in enumerate(zip(arch.layers, arch.attn, arch.mlp)):
            self._add(attn, None, _attention(i))
            self._add(mlp, None, _put(f"blocks.{i}.mlp.out"))
            self._add(layer, _block_input if i == 0 else None, _put(f"blocks.{i}.resid_post"))
        self._add(arch.norm, None, _put("ln_final"))

    def _add(self, module, before, after):
        own_class_forward = type(module).forward.__get__(module)  # what `module.forward` is with nothing on the instance
        self.items.append((module, before, after, _wrapper(own_class_forward, before, after, self)))


def _plan(arch: Arch) -> _Plan:
    plan = arch.__dict__.get("_capture_plan")
    if plan is None:
        plan = arch.__dict__["_capture_plan"] = _Plan(arch)  # lives and dies with the Arch
    return plan


@contextmanager
def capture(arch: Arch, store: dict | None = None) -> Iterator[dict[str, torch.Tensor]]:
    """Install the hooks; yield the dict they fill (`store`, or a new one: detached tensors, in
    execution order)."""
    store = {} if store is None else store
    plan, mine = _plan(arch), _Target(store)
    use_ready = plan.store is None  # no other capture of this Arch is using the ready wrappers
    installed = []
    try:
        if use_ready:
            plan.store = store
        for module, before, after, ready in plan.items:
            own = module.__dict__.get("forward")  # an instance-level forward already there (accelerate's, another capture's), or None
            module.__dict__["forward"] = ready if own is None and use_ready else _wrapper(module.forward, before, after, mine)
            installed.append((module, own))  # nn.Module.__call__ looks `forward` up on the instance first
        yield store
    finally:
        for module, own in reversed(installed):
            if own is None:
                module.__dict__.pop("forward", None)
            else:
                module.__dict__["forward"] = own
        if use_ready:
            plan.store = None


@functools.lru_cache(maxsize=16)
def block_names(what: str, n_layers: int) -> tuple[str, ...]:
    """("blocks.0.<what>", ..., "blocks.<n-1>.<what>"), made once per model shape."""
    return tuple(f"blocks.{i}.{what}" for i in range(n_layers))


def captured_rows(cap: dict[str, torch.Tensor], names: Sequence[str], rows) -> torch.Tensor:
    """(len(names), ..., d_model) capture rows `rows` of each named (1, T, d_model) tensor, stacked.

    A one-token pass (every decode step) joins the tensors whole, with one `cat`: indexing each
    tensor first costs ~2 us of torch's Python overhead per block, four times per step. The
    values are the same copies either way."""
    ts = [cap[n] for n in names]
    if ts[0].shape[1] == 1:
        return torch.cat(ts)[:, rows]  # (N, 1, d) -> (N, d) for a row, (N, 1, d) for a slice
    return torch.stack([t[0, rows] for t in ts])


def residual_stream(arch: Arch, cap: dict[str, torch.Tensor], rows) -> torch.Tensor:
    """(L+1, ..., d_model) the residual stream at capture rows `rows`: the input to block 0, then
    the output of every block."""
    return captured_rows(cap, ("blocks.0.resid_pre",) + block_names("resid_post", len(arch.layers)), rows)


def hooks_installed(arch: Arch) -> int:
    """How many hooks are on the captured modules: capture's wrapped forwards, and torch forward
    (and forward pre-) hooks anyone registered (0 outside `capture`, unless someone else hooks)."""
    mods = [arch.embed, arch.norm, arch.lm_head, *arch.layers, *arch.attn, *arch.mlp]
    wrapped = sum(getattr(m.__dict__.get("forward"), "capture_hook", False) for m in mods)
    return wrapped + sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in mods)


def kv_bytes(cache, upto: int | None = None) -> int:
    """Bytes held by the cache's key and value tensors (of their first `upto` positions, when
    given), measured from the tensors."""
    total = 0
    for layer in getattr(cache, "layers", []):
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if isinstance(t, torch.Tensor):
                t = t if upto is None else t[..., :upto, :]  # (batch, kv_heads, positions, head_dim)
                total += t.numel() * t.element_size()
    return total


class Captured(dict):
    """What one `run_with_cache` pass captured: the named activations (`hook_names`), plus
    "logits" (the model's own output, the last `keep` positions: (rows, keep, vocab))."""

    ms: float = 0.0  # the forward pass (with its hooks), timed inside the model's lock
    wait_ms: float = 0.0  # time spent waiting for the lock before the pass could start
    rows: int = 1  # how many generations the pass ran for (pipeline.batching: a batched decode step)


def run_with_cache(lm, ids, *, cache=None, keep: int = 1, hooks: bool = True, attention_mask=None, position_ids=None) -> Captured:
    """One forward pass of `ids` (a list of token ids, or a list of rows of ids: a batch; the KV
    `cache` is extended when given), with the capture hooks when `hooks`. `lm` is anything with
    `.model`, `.lock` and, for hooks, `.arch` (a LoadedModel, or a draft). A batch of rows that
    are not aligned (pipeline.batching) passes the model's own `attention_mask` (rows, keys) and
    `position_ids` (rows, T). The hooks are removed before this returns."""
    d = elsewhere(lm)
    if d is not None:  # another thread's pass (Draw many's prefill, speculative, a branch): on the model's thread
        t0 = time.perf_counter()
        result = d.call(functools.partial(run_with_cache, lm, ids, cache=cache, keep=keep, hooks=hooks, attention_mask=attention_mask,
                                          position_ids=position_ids))
        result.wait_ms = max(result.wait_ms, (time.perf_counter() - t0) * 1000.0 - result.ms)  # (its wait for the thread too)
        return result
    model = lm.model
    rows = [list(ids)] if not ids or not isinstance(ids[0], (list, tuple)) else [list(r) for r in ids]
    x = torch.as_tensor(rows, dtype=torch.long, device=model.device)  # (rows, T)
    extra = {k: v.to(model.device) for k, v in (("attention_mask", attention_mask), ("position_ids", position_ids)) if v is not None}
    t0 = time.perf_counter()
    result = Captured()  # the hooks fill it directly (no copy of ~120 entries after the pass)
    with lm.lock:
        t1 = time.perf_counter()
        # (one row of logits kept: one query's attention read, so a long pass may skip the others': pipeline/attention.py)
        with torch.inference_mode(), (capture(lm.arch, result) if hooks else nullcontext()), attention.last_query_only(keep == 1):
            out = model(input_ids=x, past_key_values=cache, use_cache=cache is not None, logits_to_keep=keep, **extra)
        t2 = time.perf_counter()
    result["logits"] = out.logits.detach()  # (rows, keep, vocab)
    result.ms, result.wait_ms, result.rows = (t2 - t1) * 1000.0, (t1 - t0) * 1000.0, len(rows)
    return result

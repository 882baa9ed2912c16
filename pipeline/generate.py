"""Prefill + KV-cached decode, as a generator yielding one immutable record per token.

    gen = start(lm, "Why is the sky blue?", Settings(temperature=0.7, seed=1))
    gen.prompt            # PromptRecord: rendered chat template, ids, pieces
    for step in gen:      # StepRecord per new token, CPU data only
        print(step.text, end="")
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Iterator, Sequence

import numpy as np
import torch

from pipeline import attention as attention_impl, batching
from pipeline.sampling import stages as sampling
from pipeline.formulas import kv_cache_bytes
from pipeline.inside.analyses import trace_extras
from pipeline.capture import block_names, captured_rows, kv_bytes, residual_stream
from pipeline.loading import LoadedModel, rms_rows
from pipeline.trace.records import PromptRecord, Segment, Settings, StageRecord, StepRecord, Trace
from pipeline.errors import SettingsError
from pipeline.tokens import Detokenizer

TOP_N = 100  # candidates kept per step, by raw logit


def validate(settings: Settings) -> None:
    """Raise SettingsError (one sentence: what is wrong, what to do) for out-of-range settings."""
    settings.stages()  # the sampler's own checks
    if int(settings.max_new_tokens) != settings.max_new_tokens or settings.max_new_tokens < 1:
        raise SettingsError(f"max new tokens must be a whole number of at least 1, not {settings.max_new_tokens}", key="error.max_new",
                            value=settings.max_new_tokens)
    if int(settings.seed) != settings.seed or settings.seed < 0:
        raise SettingsError(f"the seed must be a whole number, 0 or more, not {settings.seed}", key="error.seed", value=settings.seed)


def eos_ids(lm: LoadedModel) -> set[int]:
    ids = set()
    gc = getattr(lm.model, "generation_config", None)
    for src in (getattr(gc, "eos_token_id", None), lm.tokenizer.eos_token_id):
        if src is not None:
            ids |= set(src) if isinstance(src, (list, tuple)) else {int(src)}
    return ids


def stop_reason(token: int, n_new: int, max_new_tokens: int, position: int, context_length: int, stop_ids: set[int]) -> str | None:
    """Why generation stops after `token`, the `n_new`-th new token, chosen by the query at
    `position`; None if it goes on."""
    if token in stop_ids:
        return "eos"
    if n_new >= max_new_tokens:
        return "max_new_tokens"
    if position + 2 >= context_length:  # the context is full with this token
        return "context_limit"
    return None


def replay_detokenizer(lm: LoadedModel, tokens: Sequence[int]) -> Detokenizer:
    """A detokeniser that has released `tokens` as generation did, one at a time (so the bytes
    of an unfinished character are still held back, as they were then)."""
    detok = Detokenizer(lm.tokens)
    for t in tokens:
        detok.add(t)
    return detok


def new_rng(seed: int, state: str | None = None) -> np.random.Generator:
    """The generation's random stream: from the seed, or resumed from a recorded state
    (StepRecord.rng_state), so a continuation draws what one longer run would have drawn."""
    rng = np.random.default_rng(seed)
    if state:
        rng.bit_generator.state = json.loads(state)
    return rng


def rng_state(rng: np.random.Generator) -> str:
    """The random stream's state as JSON text (PCG64: two 128-bit integers)."""
    return json.dumps(rng.bit_generator.state, separators=(",", ":"))


def kv_formula(lm: LoadedModel, positions: int) -> int:
    """The cache's size by formula (sliding-window layers hold only their window)."""
    bytes_per = lm.__dict__.get("_bytes_per")  # (asked once: the model's parameters are walked to find it)
    if bytes_per is None:
        bytes_per = lm.__dict__["_bytes_per"] = torch.finfo(next(lm.model.parameters()).dtype).bits // 8
    return kv_cache_bytes(lm.info, positions, bytes_per)


@dataclass
class Generation:
    """One generation: the prompt record (ready at once) and the steps (lazily, by iterating)."""

    lm: LoadedModel
    settings: Settings
    prompt: PromptRecord
    prefix: tuple[int, ...] = ()  # already generated tokens to continue from
    ignore_eos: bool = False  # benchmarks: always run to max_new_tokens
    steps: list[StepRecord] = field(default_factory=list)  # the new steps, as they come
    rng_state: str | None = None  # resume the random stream from here (None: fresh from the seed)
    kept: tuple[StepRecord, ...] = ()  # earlier steps this generation continues (their tokens are `prefix`)
    base: Trace | None = None  # the trace `kept` came from (continuations): its settings and segments
    first_new: int = 0  # the first step made with `settings` (continuations: where they begin)

    def __iter__(self) -> Iterator[StepRecord]:
        if self.kept and self.kept[-1].stop_reason == "eos":  # a branch that forced the end: nothing follows
            return
        stop_ids = set() if self.ignore_eos else eos_ids(self.lm)
        for rec in _run(self.lm, self.settings, self.prompt, self.prefix, stop_ids, self.rng_state):
            self.steps.append(rec)
            yield rec

    def trace(self) -> Trace:
        """The trace so far: the kept steps, then the new ones."""
        extra = {}
        if self.base is not None and self.base.speculative is not None:  # the speculative rounds that made the kept steps
            n = len(self.kept)
            extra = dict(speculative=self.base.speculative, rounds=tuple(r for r in self.base.rounds if r.first_step + len(r.token_ids) <= n))
        return build_trace(self.lm, self.settings, self.prompt, self.kept + tuple(self.steps), base=self.base, first_new=self.first_new, **extra)


def build_trace(lm: LoadedModel, settings: Settings, prompt: PromptRecord, steps: Sequence[StepRecord], *, base: Trace | None = None,
                first_new: int = 0, **extra) -> Trace:
    """The one place a Trace is made from a generation, with the model's parameter counts, position
    scheme and projections (cheap; the machine's limits and the logit lens are added by
    pipeline.inside.with_inside).

    `base`: the trace a continuation (+1 token, re-sample, branch) extends. Its settings stay the
    trace's: they are what its earlier steps were made with. When the steps from `first_new` on
    were made with other settings, a Segment says so."""
    first, segments = settings, ()
    if base is not None:
        first, segments = base.settings, tuple(sg for sg in base.segments if sg.first_step < first_new)
        before = segments[-1].settings if segments else first
        if replace(settings, max_new_tokens=before.max_new_tokens) != before:
            segments += (Segment(first_new, settings),)
        elif not segments:  # the same settings, run longer: the trace says how long
            first = replace(first, max_new_tokens=settings.max_new_tokens)
    return Trace(lm.info, first, prompt, tuple(steps), lm.projection, lm.vocab_cloud, segments=segments, **trace_extras(lm), **extra)


def start(lm: LoadedModel, text: str, settings: Settings, *, prefix: Sequence[int] = (), ignore_eos: bool = False,
          rng_state: str | None = None) -> Generation:
    """Tokenise and validate eagerly (errors surface before streaming); generate lazily.

    `prefix`: tokens already generated, to continue from (settings.max_new_tokens counts them);
    `rng_state`: the random stream's state after them (StepRecord.rng_state), so the
    continuation draws what one longer run would have drawn. pipeline.continuation plans these."""
    validate(settings)
    if not isinstance(text, str) or not text.strip():
        raise SettingsError("the prompt is empty: type some text for the model to continue", key="error.prompt_empty")
    enc = lm.tokens.encode_prompt(text, chat=settings.chat, system_prompt=settings.system_prompt, parse_special=settings.parse_special)
    n, ctx = len(enc.ids) + len(prefix), lm.info.context_length
    if n >= ctx:
        raise SettingsError(f"the prompt is {n} tokens but the model's context window holds {ctx}: shorten it to under {ctx} tokens",
                            key="error.prompt_too_long", n=n, window=ctx)
    emb = lm.model.get_input_embeddings()
    with torch.inference_mode():
        vecs = emb.weight[torch.as_tensor(enc.ids, dtype=torch.long)].float().cpu().numpy()  # (T, d_model)
    text_ids = lm.tokens.plain_ids(text)
    prompt = PromptRecord(
        text=text,
        system_prompt=settings.system_prompt if settings.chat else None,
        rendered=enc.rendered,
        token_ids=tuple(enc.ids),
        pieces=tuple(lm.tokens.pieces(enc.ids)),
        embed_2d=lm.projection.apply(vecs) if len(enc.ids) else np.zeros((0, 2), np.float32),
        text_ids=tuple(text_ids),
        text_pieces=tuple(lm.tokens.pieces(text_ids)),
        raw_pieces=tuple(lm.tokens.raw_piece(int(i)) for i in enc.ids),
        piece_bytes=tuple(lm.tokens.piece_bytes(int(i)) for i in enc.ids),
    )
    return Generation(lm, settings, prompt, tuple(int(i) for i in prefix), ignore_eos, rng_state=rng_state or None)


def run_trace(lm: LoadedModel, text: str, settings: Settings) -> Trace:
    gen = start(lm, text, settings)
    for _ in gen:
        pass
    return gen.trace()


def top_n(logits: np.ndarray, n: int) -> np.ndarray:
    """Ids of the n largest logits, by logit descending (ties by id)."""
    n = min(n, logits.size)
    cand = sampling.top_candidates(logits, n)  # a few hundred ids holding the n largest, or None
    if cand is not None:
        order = cand[np.lexsort((cand, -logits[cand]))]
        if order.size == n or logits[order[n - 1]] != logits[order[n]]:
            return order[:n]  # the n largest are one set: the same ids, in the same order, as below
        # a tie straddles the n-th place: which tied ids come in is the partition's choice; ask it
    idx = np.argpartition(-logits, n - 1)[:n]
    return idx[np.lexsort((idx, -logits[idx]))]


@torch.inference_mode()
def _run(lm: LoadedModel, settings: Settings, prompt: PromptRecord, prefix: tuple[int, ...], stop_ids: set[int],
         rng_state_in: str | None = None) -> Iterator[StepRecord]:
    context = list(prompt.token_ids) + list(prefix)
    row = batching.open_row(lm)  # 1. the prefill alone, on this thread; then each token as a row of the process's decode loop
    step = _Steps(lm, settings, context, list(prompt.pieces) + lm.tokens.pieces(prefix), replay_detokenizer(lm, prefix),
                  len(prefix), stop_ids, new_rng(settings.seed, rng_state_in), row)
    try:
        t0 = time.perf_counter()
        rec, token = step(row.prefill(context), t0)
        yield rec
        if token is not None:
            yield from row.decode(token, step)
    finally:
        row.close()  # a closed generator (a page gone, a newer run) frees its row


@dataclass
class _Steps:
    """A generation's state between its passes. Called with each pass's capture (the row's own: run
    alone, or its slice of the decode loop's batch, on the loop's thread), it makes that step's record
    and says the next token to feed (None: the generation stops)."""

    lm: LoadedModel
    settings: Settings
    context: list[int]  # the prompt and every token so far
    pieces: list[str]
    detok: Detokenizer
    index: int  # the step the next capture makes
    stop_ids: set[int]
    rng: np.random.Generator
    row: batching.Row
    first: bool = True  # the next capture is the prefill's

    def __call__(self, cap, t0: float | None = None) -> tuple[StepRecord, int | None]:
        """`t0`: when this thread began the pass (None: the decode loop ran it, as one row of its batch)."""
        lm, settings, context = self.lm, self.settings, self.context
        t1 = time.perf_counter()
        phase, self.first = ("prefill" if self.first else "decode"), False
        position = len(context) - 1
        # 2. the next-token distribution, over the full vocabulary
        logits = cap["logits"][0, -1, : lm.info.vocab_size].float().cpu().numpy()  # (vocab,)
        stages = settings.stages(context)
        res = sampling.apply_stages(logits, stages)
        token = sampling.greedy_or_draw(res, stages, self.rng)
        # 3. why it stops, if it does; the text it releases (the end releases held-back bytes as they are)
        stop = stop_reason(token, self.index + 1, settings.max_new_tokens, position, lm.info.context_length, self.stop_ids)
        text = "" if stop == "eos" else self.detok.add(token, final=stop is not None)
        # 4. the record (the cache's bytes: the row's own, what a pass alone holds)
        fields = record_fields(lm, cap, None, logits, res, stages, token, self.index, phase, position, context, self.pieces, text,
                               kv_cache_bytes=self.row.kv_bytes)
        now = time.perf_counter()
        # the step's own time, not the wait for the lock (in the loop: its pass, then this row's own work)
        ms = cap.ms + (now - t1) * 1000.0 if t0 is None else (now - t0) * 1000.0 - cap.wait_ms
        rec = StepRecord(**fields, stop_reason=stop, ms=ms, wait_ms=cap.wait_ms, rng_state=rng_state(self.rng), batch_rows=cap.rows)
        context.append(token)
        self.pieces.append(rec.piece)
        self.index += 1
        return rec, (None if stop is not None else token)


def token_fields(lm: LoadedModel, token: int) -> dict:
    """The fields of a StepRecord that describe the chosen token itself: its id, how the tokenizer
    shows and stores it, and its input embedding (raw and in the fixed 2D projection)."""
    token = int(token)
    with torch.inference_mode():
        emb = lm.model.get_input_embeddings().weight[token].float().cpu().numpy()  # (d_model,)
    return dict(token_id=token, piece=lm.tokens.piece(token), raw_piece=lm.tokens.raw_piece(token), piece_bytes=lm.tokens.piece_bytes(token),
                embedding=emb, embed_2d=lm.projection.apply(emb))


def _query_rows(pats: list, row: int, position: int) -> np.ndarray:
    """(L, H, position+1) attention of the query at `position` (row `row` of the pass) over keys
    0..position, from each layer's captured (1, H, q, K) pattern. A sliding-window layer's pass
    holds only its window's keys, so its captured row is shorter: its keys are placed at their own
    positions, and every key before the window gets weight 0, which is what the layer gave it."""
    if all(p.shape[2] == 1 and p.shape[3] == position + 1 for p in pats):
        # a decode pass of full-attention layers: each layer's one row covers keys 0..position, so
        # one cat and one copy to numpy replace an index and a copy per layer
        return torch.cat(pats)[:, :, 0, :].float().cpu().numpy()  # (L, H, position+1)
    out = np.zeros((len(pats), pats[0].shape[1], position + 1), np.float32)
    for i, p in enumerate(pats):  # p: (1, H, q, K)
        q, K = p.shape[2], p.shape[3]
        r = row % q
        first = position + (q - 1 - r) + 1 - K  # the position of key 0: the pass's keys end at its last query
        out[i, :, first:] = p[0, :, r, : position + 1 - first].float().cpu().numpy()
    return out


def _same_array(a, b) -> bool:
    """Whether `a` and `b` are the same numpy array or views of the same memory with one layout
    (a speculative pass slices its logits afresh for each use)."""
    if a is b:
        return True
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.dtype == b.dtype
            and a.shape == b.shape and a.strides == b.strides)


def record_fields(
    lm, cap, cache, logits, res, stages, token, index, phase, position, context, pieces, text, *, row: int = -1, kv_cache_bytes: int | None = None
) -> dict:
    """Everything a StepRecord holds but its wall time and stop reason, as CPU data.

    `row` is the query row of the captured pass whose logits chose the token (the last one,
    except in a speculative verification pass, which feeds several tokens at once)."""
    lse = res.logsumexp if _same_array(res.logits, logits) else sampling.logsumexp(logits)  # apply_stages computed it
    probs = logits.astype(np.float64)  # (vocab,) temperature 1: exp(logit - lse), worked in one array
    probs -= lse
    np.exp(probs, out=probs)
    top = top_n(logits, TOP_N)
    return dict(
        index=index,
        phase=phase,
        position=position,
        context_ids=tuple(context),
        context_pieces=tuple(pieces),
        **token_fields(lm, token),
        text=text,
        top_ids=top.astype(np.int64),
        top_pieces=tuple(lm.tokens.pieces(top.tolist())),
        top_logits=logits[top].astype(np.float32),
        top_probs=probs[top].astype(np.float32),
        top_final_probs=res.final_probs[top].astype(np.float32),
        logsumexp=lse,
        entropy=sampling.entropy_bits(probs),
        final_entropy=sampling.entropy_bits(res.final_probs),
        stages=tuple(
            StageRecord(st.name, float(st.param), k, m, p[top].astype(np.float32))
            for st, k, m, p in zip(stages, res.stage_kept, res.stage_mass, res.stage_probs)
        ),
        chosen_prob=float(probs[token]),
        chosen_final_prob=float(res.final_probs[token]),
        **_inside_fields(lm, cap, row, phase, position),
        kv_cache_bytes=kv_bytes(cache) if kv_cache_bytes is None else kv_cache_bytes,
        kv_cache_bytes_formula=kv_formula(lm, position + 1),
        logits=logits,  # (the rest of the vocabulary is summarised from them when the step is written: rest.of_step)
    )


def _inside_fields(lm, cap, row: int, phase: str, position: int) -> dict:
    """The fields of a StepRecord read inside the model for the query at `position` (row `row` of the
    captured pass): attention of every layer and head (and the prefill's whole matrix), the residual
    stream after every block, and the size of what each block's attention and MLP added."""
    L = lm.info.n_layers
    # attention of every layer and head: (1, heads, q, k) per layer in the capture
    pats = [cap[n] for n in block_names("attn.pattern", L)]
    attention = _query_rows(pats, row, position)  # (L, H, position+1)
    matrix = None
    T = position + 1  # prefill: the context so far, all of it fed in this pass
    if phase == "prefill" and T <= attention_impl.MAX_MATRIX_TOKENS:  # (beyond it the pass keeps only the last query's)
        matrix = torch.stack([p[0, :, :T, :T] for p in pats]).float().cpu().numpy()  # (L, H, T, T)
    hidden = residual_stream(lm.arch, cap, row).float().cpu().numpy()  # (L+1, d)
    h64 = hidden.astype(np.float64)
    # one norm over the stacked rows (each row reduced alone, as `row.norm()` does) rather than one per block
    attn_norm = captured_rows(cap, block_names("attn.out", L), row).float().norm(dim=-1)  # (L,)
    mlp_norm = captured_rows(cap, block_names("mlp.out", L), row).float().norm(dim=-1)  # (L,)
    return dict(
        attention=attention,
        attention_matrix=matrix,
        attn_out_norm=attn_norm.cpu().numpy(),
        mlp_out_norm=mlp_norm.cpu().numpy(),
        hidden=hidden,
        resid_2d=lm.resid_projection.apply(rms_rows(hidden)) if lm.resid_projection is not None else None,
        resid_norm=np.linalg.norm(h64, axis=1).astype(np.float32),  # (L+1,)
        update_norm=np.linalg.norm(np.diff(h64, axis=0), axis=1).astype(np.float32),  # (L,)
    )


__all__ = [
    "Generation", "SettingsError", "start", "run_trace", "validate", "build_trace", "record_fields", "token_fields", "stop_reason",
    "kv_bytes", "replay_detokenizer", "new_rng", "rng_state", "top_n", "eos_ids", "TOP_N",
]

"""Speculative decoding, live and exact: a cheap draft proposes k tokens, the target checks them in one pass.

    gen = start_speculative(lm, "Repeat: red, green, blue", Settings(temperature=0.7), k=4, draft="ngram")
    for rnd, steps in gen:        # per round: a RoundRecord, and a StepRecord per token it added
        print(rnd.n_accepted, "of", rnd.k, "accepted:", "".join(s.text for s in steps))

The rule of Leviathan et al. (2023) and Chen et al. (2023). With q the draft's and p the
target's next-token distributions, both after the same sampling stages (temperature,
top-k, top-p, repetition penalty):

  1. the draft draws d_1 .. d_k, one forward pass each, d_i ~ q_i (prompt lookup, "ngram",
     copies them from earlier in the context instead: q_i is one-hot, no model runs, and when
     nothing matches the round is a plain decode step: one target pass of one token);
  2. the target runs once over the context's newest token and all k proposals, which gives
     p_1 .. p_{k+1} (the distribution after each one);
  3. in order, d_i is accepted iff u_i < min(1, p_i(d_i) / q_i(d_i)), u_i uniform in [0, 1);
  4. at the first rejection the round's last token is drawn from max(0, p_i - q_i),
     normalised; if all k are accepted, a bonus token is drawn from p_{k+1};
  5. both KV caches are cut back to the accepted context.

Why it is exact: token x comes out of step i with probability q(x) min(1, p(x)/q(x)) =
min(p(x), q(x)) by acceptance, plus (rejection chance) x (residual) = max(0, p(x) - q(x)),
which sum to p(x). With temperature 0 both are one-hot: a proposal is accepted iff it is
the target's argmax, the residual is the target's argmax, and the text is the target's
greedy text. The draft only decides how many target passes the text costs. For a one-hot q
(prompt lookup) the rule reads: keep d with probability p(d), else draw from p with d removed.

Counting: a proposal is "tested" when its u was drawn; an accepted end-of-sequence token ends
the round, so what follows it is never tested (status "discarded", like the proposals after a
rejection) and never counts as accepted.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np
import torch

from pipeline.sampling import stages as sampling
from pipeline.capture import run_with_cache
from pipeline.speculative.draft import DEFAULT_DRAFT, Draft, lookup, make_draft
from pipeline.errors import SpeculativeError
from pipeline.generate import build_trace, eos_ids, kv_bytes, new_rng, record_fields, replay_detokenizer, start, stop_reason, top_n
from pipeline.loading import LoadedModel
from pipeline.trace.records import (
    BonusRecord,
    PromptRecord,
    ProposalRecord,
    ResidualRecord,
    RoundRecord,
    Settings,
    SpeculativeInfo,
    StepRecord,
    Trace,
    speculative_summary,
)

MAX_K = 16
DEFAULT_K = 4
PAIR_TOP = 10  # ids per distribution kept in a proposal's / residual's record


def validate_k(k) -> int:
    """k as an int (a slider may send 4.0); SpeculativeError unless a whole number in 1..MAX_K."""
    ok = isinstance(k, (int, float, np.integer, np.floating)) and not isinstance(k, bool) and np.isfinite(k) and float(k).is_integer()
    if not ok or not 1 <= k <= MAX_K:
        raise SpeculativeError(f"k (tokens the draft proposes per round) must be a whole number from 1 to {MAX_K}, not {k}", key="error.spec_k",
                               high=MAX_K, value=k)
    return int(k)


# ---------------------------------------------------------------------------------------
# The test, on plain arrays


def accept_prob(p_d: float, q_d: float) -> float:
    """min(1, p/q): the chance that a proposal d ~ q is kept."""
    assert q_d > 0, "a proposal the draft could not have drawn"
    return 1.0 if p_d >= q_d else float(p_d / q_d)


def residual(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, float]:
    """max(0, p - q) normalised, and its total before normalising (the chance of a rejection)."""
    r = np.maximum(p - q, 0.0)
    mass = float(r.sum())
    if mass <= 0:  # p == q up to rounding: a rejection had probability ~0; p is then the right answer
        return np.array(p, dtype=np.float64), 0.0
    return r / mass, mass


def _top_nonzero(x: np.ndarray, n: int = PAIR_TOP) -> np.ndarray:
    """Ids of x's n largest entries that are above zero, largest first (ties by id)."""
    ids = top_n(x, n)
    return ids[x[ids] > 0]


def _proposal(lm, d: int, p: np.ndarray, q: np.ndarray, u: float | None, status: str, source: int | None = None) -> ProposalRecord:
    ids = np.union1d(np.union1d(_top_nonzero(p), _top_nonzero(q)), [d]).astype(np.int64)
    ids = ids[np.lexsort((ids, -np.maximum(p[ids], q[ids])))]
    return ProposalRecord(
        token_id=int(d),
        piece=lm.tokens.piece(int(d)),
        draft_prob=float(q[d]),
        target_prob=float(p[d]),
        accept_prob=accept_prob(p[d], q[d]),
        u=u,
        status=status,
        top_ids=ids,
        top_pieces=tuple(lm.tokens.piece(int(i)) for i in ids),
        top_draft_probs=q[ids].astype(np.float32),
        top_target_probs=p[ids].astype(np.float32),
        source_position=source,
    )


def _residual_record(lm, token: int, r: np.ndarray, mass: float) -> ResidualRecord:
    ids = _top_nonzero(r).astype(np.int64)
    return ResidualRecord(int(token), lm.tokens.piece(int(token)), float(r[token]), mass, ids,
                          tuple(lm.tokens.piece(int(i)) for i in ids), r[ids].astype(np.float32))


# ---------------------------------------------------------------------------------------
# The generation


class RoundResult(NamedTuple):
    round: RoundRecord
    steps: tuple[StepRecord, ...]  # one per token the round added, as the plain generator records them


@dataclass
class SpecGeneration:
    """One speculative generation: the prompt record (ready at once), then rounds (by iterating).

    Iterating yields a RoundResult per round; `iter_steps()` yields only the StepRecords, like
    the plain Generation. While iterating, `target_cache` / `draft_cache` are the live caches."""

    lm: LoadedModel
    draft: Draft
    settings: Settings
    prompt: PromptRecord
    k: int
    prefix: tuple[int, ...] = ()
    ignore_eos: bool = False
    steps: list[StepRecord] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    target_cache: Any = None
    draft_cache: Any = None

    def __iter__(self) -> Iterator[RoundResult]:
        for res in _run(self):
            self.rounds.append(res.round)
            self.steps.extend(res.steps)
            yield res

    def iter_steps(self) -> Iterator[StepRecord]:
        for res in self:
            yield from res.steps

    @property
    def info(self) -> SpeculativeInfo:
        return SpeculativeInfo(self.k, self.draft.info)

    def summary(self) -> dict:
        return speculative_summary(self.rounds)

    def trace(self) -> Trace:
        return build_trace(self.lm, self.settings, self.prompt, tuple(self.steps), speculative=self.info, rounds=tuple(self.rounds))


def start_speculative(
    lm: LoadedModel,
    text: str,
    settings: Settings,
    *,
    k: int = DEFAULT_K,
    draft: str | LoadedModel | Draft | None = None,
    prefix: Sequence[int] = (),
    ignore_eos: bool = False,
) -> SpecGeneration:
    """Validate, tokenise and make the draft eagerly (errors surface before streaming; a model
    draft loads here); generate lazily. `draft`: "ngram[:N]", "layers:N", a Hub id or local
    directory, a LoadedModel or a Draft (see pipeline.speculative.draft); None: pipeline.speculative.draft.DEFAULT_DRAFT."""
    k = validate_k(k)
    plain = start(lm, text, settings, prefix=prefix, ignore_eos=ignore_eos)  # settings and prompt checks
    return SpecGeneration(lm, make_draft(lm, draft), settings, plain.prompt, k, plain.prefix, ignore_eos)


def run_speculative_trace(lm: LoadedModel, text: str, settings: Settings, **kw) -> Trace:
    gen = start_speculative(lm, text, settings, **kw)
    for _ in gen:
        pass
    return gen.trace()


def truncate(cache, n: int) -> int:
    """Cut a KV cache back to its first n positions; returns how many it removed (0 without a cache)."""
    if cache is None:
        return 0
    extra = cache.get_seq_length() - n
    if extra > 0:
        cache.crop(-extra)  # transformers 5: a negative count removes that many from the end
    return max(extra, 0)


class Proposed(NamedTuple):
    tokens: list[int]
    q: list[np.ndarray]  # (vocab,) each: the draft's distribution the token came from (one-hot for a lookup)
    sources: list[int | None]  # lookup: the context position each token was copied from
    match_length: int  # lookup: the n-gram that matched (0: none, or a model draft)
    passes: int  # draft forward passes
    fed: int  # tokens fed to the draft
    wait_ms: float  # time its passes waited for the model's lock


def _propose(draft: Draft, s: Settings, context: list[int], cache, k: int, vocab: int, rng) -> Proposed:
    """The draft's (up to) k proposals."""
    if draft.is_lookup:  # prompt lookup: copied tokens, no model, no randomness
        found = lookup(context, draft.max_ngram, k, draft.min_ngram)
        q = []
        for t in found.tokens:
            q.append(np.zeros(vocab))
            q[-1][t] = 1.0  # (vocab,) one-hot: the draft is certain
        return Proposed(found.tokens, q, list(found.sources), found.n if found.tokens else 0, 0, 0, 0.0)
    proposals: list[int] = []
    q: list[np.ndarray] = []  # (vocab,) each, after the sampling stages
    feed, fed, wait = context[cache.get_seq_length():], 0, 0.0  # first pass: what the cache lacks, then one token
    for _ in range(k):
        # a layer draft runs the target's own modules under the target's own lock; no hooks
        cap = run_with_cache(draft, feed, cache=cache, hooks=False)
        stages = s.stages(context + proposals)
        res = sampling.apply_stages(cap["logits"][0, -1, :vocab].float().cpu().numpy(), stages)  # (vocab,)
        proposals.append(sampling.greedy_or_draw(res, stages, rng))
        q.append(res.final_probs)
        fed, wait = fed + len(feed), wait + cap.wait_ms
        feed = [proposals[-1]]
    return Proposed(proposals, q, [None] * len(proposals), 0, len(proposals), fed, wait)


def _test(lm, prop: Proposed, p_res, p_stages, greedy: bool, rng, stop_ids: set[int]):
    """Steps 3 and 4 of the rule: (proposal records, the round's last token or None, residual, bonus).

    An accepted proposal that ends the text (end of sequence) ends the round: what follows it is
    never tested, and no residual or bonus token is drawn."""
    p = [r.final_probs for r in p_res]
    records: list[ProposalRecord] = []
    proposals, q, src = prop.tokens, prop.q, prop.sources

    def untested(after: int) -> list[ProposalRecord]:
        return [_proposal(lm, dd, p[j], q[j], None, "discarded", src[j]) for j, dd in enumerate(proposals[after:], after)]

    for i, d in enumerate(proposals):
        u = float(rng.random())
        if u < accept_prob(p[i][d], q[i][d]):
            records.append(_proposal(lm, d, p[i], q[i], u, "accepted", src[i]))
            if d in stop_ids:
                return records + untested(i + 1), None, None, None
            continue
        records.append(_proposal(lm, d, p[i], q[i], u, "rejected", src[i]))
        records += untested(i + 1)
        # the rejected position's token comes from what p has beyond q (for a one-hot q: p without d)
        r, mass = residual(p[i], q[i])
        extra = int(np.argmax(r)) if greedy else sampling.draw(r, rng)
        return records, extra, _residual_record(lm, extra, r, mass), None
    # all accepted (or nothing proposed: a plain decode step): the target's pass holds the next distribution
    k = len(proposals)
    extra = sampling.greedy_or_draw(p_res[k], p_stages[k], rng)
    return records, extra, None, BonusRecord(int(extra), lm.tokens.piece(int(extra)), float(p[k][extra]))


def _step_fields(gen: SpecGeneration, cap, new: list[int], logits, p_res, p_stages, *, row0: int, first_round: bool,
                 context: list[int], pieces: list[str], detok, index: int, stop_ids: set[int]) -> list[tuple[dict, str | None]]:
    """(StepRecord fields, stop reason) of each token a round adds, from the target's row for it (the
    pass's row `row0` + i), stopping as the plain loop does. Extends `context` and `pieces` and feeds
    `detok` as it goes; the step numbers run on from `index`."""
    lm, s, tcache = gen.lm, gen.settings, gen.target_cache
    c, ctx_len, fields = len(context), lm.info.context_length, []
    for i, tok in enumerate(new):
        position = c - 1 + i
        stop = stop_reason(tok, index + 1, s.max_new_tokens, position, ctx_len, stop_ids)
        text = "" if stop == "eos" else detok.add(tok, final=stop is not None)
        phase = "prefill" if first_round and i == 0 else "decode"  # the prefill matrix is stored for the first one
        f = record_fields(lm, cap, tcache, logits[i], p_res[i], p_stages[i], tok, index, phase, position, context, pieces, text,
                          row=row0 + i, kv_cache_bytes=kv_bytes(tcache, upto=position + 1))
        fields.append((f, stop))
        context.append(tok)
        pieces.append(f["piece"])
        index += 1
        if stop is not None:
            break
    return fields


@torch.inference_mode()
def _run(gen: SpecGeneration) -> Iterator[RoundResult]:
    from transformers import DynamicCache

    lm, draft, s = gen.lm, gen.draft, gen.settings
    rng = new_rng(s.seed)  # per round: the draft's draws, then the uniforms, then the residual / bonus draw
    gen.target_cache = tcache = DynamicCache(config=lm.model.config)
    gen.draft_cache = dcache = draft.new_cache()
    stop_ids = set() if gen.ignore_eos else eos_ids(lm)
    V, ctx_len, greedy = lm.info.vocab_size, lm.info.context_length, s.temperature == 0
    context = list(gen.prompt.token_ids) + list(gen.prefix)
    pieces = list(gen.prompt.pieces) + lm.tokens.pieces(gen.prefix)
    detok = replay_detokenizer(lm, gen.prefix)  # an unfinished character of the kept steps stays held back
    index = len(gen.prefix)
    for n_round in itertools.count():
        t0 = time.perf_counter()
        c = len(context)
        left = min(s.max_new_tokens - index, ctx_len - c)  # tokens this generation may still add (>= 1)
        k = max(0, min(gen.k, left - 1, draft.context_length - c))  # a round adds up to k + 1
        # 1. the draft proposes up to k tokens (a layer or model draft: one forward pass each)
        prop = _propose(draft, s, context, dcache, k, V, rng)
        k = len(prop.tokens)  # a lookup that matched nothing proposes none: this round is a plain decode step
        t1 = time.perf_counter()
        # 2. the target scores all of them in one forward pass: p_1 .. p_{k+1}
        feed = context[tcache.get_seq_length():] + prop.tokens
        cap = run_with_cache(lm, feed, cache=tcache, keep=k + 1)  # the target's one pass over all proposals
        logits = cap["logits"][0, -(k + 1):, :V].float().cpu().numpy()  # (k+1, vocab)
        p_stages = [s.stages(context + prop.tokens[:i]) for i in range(k + 1)]
        p_res = [sampling.apply_stages(logits[i], p_stages[i]) for i in range(k + 1)]
        # 3-4. accept with probability min(1, p/q) in order; a residual or bonus token ends the round
        records, extra, residual_rec, bonus_rec = _test(lm, prop, p_res, p_stages, greedy, rng, stop_ids)
        n_acc = sum(r.status == "accepted" for r in records)
        new = prop.tokens[:n_acc] + ([] if extra is None else [int(extra)])
        # 5. roll back: both caches keep the accepted context but its newest token (fed next round)
        t_roll, d_roll = truncate(tcache, c + n_acc), truncate(dcache, c + n_acc)
        # 6. a StepRecord per new token, from the target's row for it, stopping as the plain loop does
        first_step = index
        fields = _step_fields(gen, cap, new, logits, p_res, p_stages, row0=len(feed) - (k + 1), first_round=n_round == 0,
                              context=context, pieces=pieces, detok=detok, index=index, stop_ids=stop_ids)
        index += len(fields)
        stop = fields[-1][1] if fields else None
        assert len(fields) >= min(n_acc, len(new)), "an accepted proposal was cut: k must leave room for the round's last token"
        n_acc = min(n_acc, len(fields))  # acceptance counts only proposals whose tokens were emitted
        # the round's own time: everything but the waits for the model's lock
        wait = prop.wait_ms + cap.wait_ms
        ms = (time.perf_counter() - t0) * 1000.0 - wait
        steps = tuple(StepRecord(**f, stop_reason=st, ms=ms / len(fields), wait_ms=wait / len(fields)) for f, st in fields)
        rnd = RoundRecord(
            index=n_round, position=c - 1, proposals=tuple(records), n_accepted=n_acc, residual=residual_rec, bonus=bonus_rec,
            token_ids=tuple(st.token_id for st in steps), first_step=first_step, draft_passes=prop.passes, target_passes=1,
            draft_tokens_fed=prop.fed, target_tokens_fed=len(feed), draft_rollback=d_roll, target_rollback=t_roll,
            draft_ms=(t1 - t0) * 1000.0 - prop.wait_ms, target_ms=cap.ms, ms=ms, match_length=prop.match_length,
        )
        yield RoundResult(rnd, steps)
        if stop is not None:
            return


__all__ = ["SpecGeneration", "RoundResult", "SpeculativeError", "start_speculative", "run_speculative_trace", "validate_k", "MAX_K",
           "DEFAULT_K", "DEFAULT_DRAFT"]

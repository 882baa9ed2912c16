"""Speculative decoding, live and exact: a cheap draft proposes k tokens, the target checks them in one pass.

    gen = start_speculative(lm, "Why is the sky blue?", Settings(temperature=0.7), k=4, draft="layers:10")
    for rnd, steps in gen:        # per round: a RoundRecord, and a StepRecord per token it added
        print(rnd.n_accepted, "of", rnd.k, "accepted:", "".join(s.text for s in steps))

The rule of Leviathan et al. (2023) and Chen et al. (2023). With q the draft's and p the
target's next-token distributions, both after the same sampling stages (temperature,
top-k, top-p, repetition penalty):

  1. the draft draws d_1 .. d_k, one forward pass each, d_i ~ q_i;
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
greedy text. The draft only decides how many target passes the text costs.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np
import torch

from . import sampling
from .draft import Draft, make_draft
from .errors import SpeculativeError
from .capture import run_with_cache
from .generate import build_trace, eos_ids, record_fields, start
from .loading import LoadedModel
from .records import (
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
from .tokens import Detokenizer

MAX_K = 16
DEFAULT_K = 4
PAIR_TOP = 10  # ids per distribution kept in a proposal's / residual's record


def validate_k(k) -> int:
    """k as an int (a slider may send 4.0); SpeculativeError unless a whole number in 1..MAX_K."""
    ok = isinstance(k, (int, float, np.integer, np.floating)) and not isinstance(k, bool) and np.isfinite(k) and float(k).is_integer()
    if not ok or not 1 <= k <= MAX_K:
        raise SpeculativeError(f"k (tokens the draft proposes per round) must be a whole number from 1 to {MAX_K}, not {k}")
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
    n = min(n, x.size)
    idx = np.argpartition(-x, n - 1)[:n]
    return idx[x[idx] > 0]


def _proposal(lm, d: int, p: np.ndarray, q: np.ndarray, u: float | None, status: str) -> ProposalRecord:
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
    )


def _residual_record(lm, token: int, r: np.ndarray, mass: float) -> ResidualRecord:
    ids = _top_nonzero(r)
    ids = ids[np.lexsort((ids, -r[ids]))].astype(np.int64)
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
    draft loads here); generate lazily. `draft`: "layers:N", a Hub id or local directory, a
    LoadedModel or a Draft (see pipeline.draft); None takes the target's first third of layers."""
    k = validate_k(k)
    plain = start(lm, text, settings, prefix=prefix, ignore_eos=ignore_eos)  # settings and prompt checks
    return SpecGeneration(lm, make_draft(lm, draft), settings, plain.prompt, k, plain.prefix, ignore_eos)


def run_speculative_trace(lm: LoadedModel, text: str, settings: Settings, **kw) -> Trace:
    gen = start_speculative(lm, text, settings, **kw)
    for _ in gen:
        pass
    return gen.trace()


def _stages(s: Settings, context: Sequence[int]) -> list:
    return sampling.build_stages(
        temperature=s.temperature, top_k=s.top_k, top_p=s.top_p, repetition_penalty=s.repetition_penalty, context_ids=context
    )


def _draft_logits(draft: Draft, ids: list[int], cache, vocab: int) -> np.ndarray:
    """One draft forward pass (no hooks); the next-token logits after its last token."""
    # a layer draft runs the target's own modules under the target's own lock
    out = run_with_cache(draft, ids, cache=cache, hooks=False)
    return out["logits"][0, -1, :vocab].float().cpu().numpy()  # (vocab,)


def truncate(cache, n: int) -> int:
    """Cut a KV cache back to its first n positions; returns how many it removed."""
    extra = cache.get_seq_length() - n
    if extra > 0:
        cache.crop(-extra)  # transformers 5: a negative count removes that many from the end
    return max(extra, 0)


def _kv_bytes_upto(cache, n: int) -> int:
    """Bytes of the first n positions of every key and value tensor, measured from the tensors."""
    total = 0
    for layer in cache.layers:
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if isinstance(t, torch.Tensor):
                total += t[..., :n, :].numel() * t.element_size()
    return total


def _propose(draft: Draft, s: Settings, context: list[int], cache, k: int, vocab: int, rng) -> tuple[list[int], list[np.ndarray], int]:
    """The draft's k proposals, one forward pass each: (tokens, their q distributions, tokens fed)."""
    proposals: list[int] = []
    q: list[np.ndarray] = []  # (vocab,) each, after the sampling stages
    feed, fed = context[cache.get_seq_length():], 0  # first pass: what the cache lacks, then one token
    for _ in range(k):
        stages = _stages(s, context + proposals)
        res = sampling.apply_stages(_draft_logits(draft, feed, cache, vocab), stages)
        proposals.append(sampling.greedy_or_draw(res, stages, rng))
        q.append(res.final_probs)
        fed += len(feed)
        feed = [proposals[-1]]
    return proposals, q, fed


def _test(lm, proposals, q, p_res, p_stages, greedy: bool, rng):
    """Steps 3 and 4 of the rule: (proposal records, the round's last token, residual, bonus)."""
    p = [r.final_probs for r in p_res]
    records: list[ProposalRecord] = []
    for i, d in enumerate(proposals):
        u = float(rng.random())
        if u < accept_prob(p[i][d], q[i][d]):
            records.append(_proposal(lm, d, p[i], q[i], u, "accepted"))
            continue
        records.append(_proposal(lm, d, p[i], q[i], u, "rejected"))
        records += [_proposal(lm, dd, p[j], q[j], None, "discarded") for j, dd in enumerate(proposals[i + 1:], i + 1)]
        # the rejected position's token comes from what p has beyond q
        r, mass = residual(p[i], q[i])
        extra = int(np.argmax(r)) if greedy else sampling.draw(r, rng)
        return records, extra, _residual_record(lm, extra, r, mass), None
    # all accepted: the target's pass already holds the distribution after the last one
    k = len(proposals)
    extra = sampling.greedy_or_draw(p_res[k], p_stages[k], rng)
    return records, extra, None, BonusRecord(int(extra), lm.tokens.piece(int(extra)), float(p[k][extra]))


@torch.inference_mode()
def _run(gen: SpecGeneration) -> Iterator[RoundResult]:
    from transformers import DynamicCache

    lm, draft, s = gen.lm, gen.draft, gen.settings
    rng = np.random.default_rng(s.seed)  # per round: the draft's draws, then the uniforms, then the residual / bonus draw
    gen.target_cache = tcache = DynamicCache(config=lm.model.config)
    gen.draft_cache = dcache = draft.new_cache()
    stop_ids = set() if gen.ignore_eos else eos_ids(lm)
    V, ctx_len, greedy = lm.info.vocab_size, lm.info.context_length, s.temperature == 0
    context = list(gen.prompt.token_ids) + list(gen.prefix)
    pieces = list(gen.prompt.pieces) + lm.tokens.pieces(gen.prefix)
    detok = Detokenizer(lm.tokens)
    for t in gen.prefix:  # as the steps being continued released it: an unfinished character stays held back
        detok.add(t)
    index = len(gen.prefix)
    for n_round in itertools.count():
        t0 = time.perf_counter()
        c = len(context)
        left = min(s.max_new_tokens - index, ctx_len - c)  # tokens this generation may still add (>= 1)
        k = max(0, min(gen.k, left - 1, draft.context_length - c))  # a round adds up to k + 1
        # 1. the draft proposes k tokens, one forward pass each
        proposals, q, draft_fed = _propose(draft, s, context, dcache, k, V, rng)
        t1 = time.perf_counter()
        # 2. the target scores all of them in one forward pass: p_1 .. p_{k+1}
        feed = context[tcache.get_seq_length():] + proposals
        cap = run_with_cache(lm, feed, cache=tcache, keep=k + 1)  # the target's one pass over all proposals
        logits = cap["logits"][0, -(k + 1):, :V].float().cpu().numpy()  # (k+1, vocab)
        t2 = time.perf_counter()
        p_stages = [_stages(s, context + proposals[:i]) for i in range(k + 1)]
        p_res = [sampling.apply_stages(logits[i], p_stages[i]) for i in range(k + 1)]
        # 3-4. accept with probability min(1, p/q) in order; a residual or bonus token ends the round
        records, extra, residual_rec, bonus_rec = _test(lm, proposals, q, p_res, p_stages, greedy, rng)
        n_acc = sum(r.status == "accepted" for r in records)
        new = proposals[:n_acc] + [int(extra)]
        # 5. roll back: both caches keep the accepted context but its newest token (fed next round)
        t_roll, d_roll = truncate(tcache, c + n_acc), truncate(dcache, c + n_acc)
        # 6. a StepRecord per new token, from the target's row for it, stopping as the plain loop does
        row0, first_step, fields, stop = len(feed) - (k + 1), index, [], None
        for i, tok in enumerate(new):
            position = c - 1 + i
            if tok in stop_ids:
                stop = "eos"
            elif index + 1 >= s.max_new_tokens:
                stop = "max_new_tokens"
            elif position + 2 >= ctx_len:
                stop = "context_limit"
            text = "" if stop == "eos" else detok.add(tok, final=stop is not None)
            phase = "prefill" if n_round == 0 and i == 0 else "decode"
            f = record_fields(lm, cap, tcache, logits[i], p_res[i], p_stages[i], tok, index, phase, position, context, pieces, text,
                               row=row0 + i, kv_cache_bytes=_kv_bytes_upto(tcache, position + 1))
            fields.append((f, stop))
            context.append(tok)
            pieces.append(f["piece"])
            index += 1
            if stop is not None:
                break
        ms = (time.perf_counter() - t0) * 1000.0
        steps = tuple(StepRecord(**f, stop_reason=st, ms=ms / len(fields)) for f, st in fields)
        rnd = RoundRecord(
            index=n_round,
            position=c - 1,
            proposals=tuple(records),
            n_accepted=n_acc,
            residual=residual_rec,
            bonus=bonus_rec,
            token_ids=tuple(st.token_id for st in steps),
            first_step=first_step,
            draft_passes=k,
            target_passes=1,
            draft_tokens_fed=draft_fed,
            target_tokens_fed=len(feed),
            draft_rollback=d_roll,
            target_rollback=t_roll,
            draft_ms=(t1 - t0) * 1000.0,
            target_ms=(t2 - t1) * 1000.0,
            ms=ms,
        )
        yield RoundResult(rnd, steps)
        if stop is not None:
            return


__all__ = ["SpecGeneration", "RoundResult", "SpeculativeError", "start_speculative", "run_speculative_trace", "validate_k", "MAX_K"]

"""Records of many continuations drawn at once (pipeline/samples.py), and their file format.

Frozen dataclasses of plain Python data (no torch, no numpy arrays), so viz/samples.py can draw them and the
file `llm-pipeline-samples/1` is their JSON (docs/TRACE_FORMAT.md, "Samples file").
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from pipeline.trace.records import Settings

FORMAT = "llm-pipeline-samples/1"


@dataclass(frozen=True)
class Sample:
    """One continuation: its tokens and, for each, how likely the model made it."""

    index: int  # 0 .. n-1: its place among the continuations
    seed: tuple[int, int]  # (settings.seed, index): the entropy of its own stream, np.random.default_rng(seed)
    token_ids: tuple[int, ...]
    pieces: tuple[str, ...]
    text: str  # what the steps would release, concatenated (pipeline.tokens.Detokenizer, as generation does)
    prob: tuple[float, ...]  # each token's probability in the distribution it was drawn from (after every stage)
    prob_t1: tuple[float, ...]  # its probability at temperature 1, no stage
    entropy_t1: tuple[float, ...]  # bits, of the temperature-1 distribution it was drawn from
    stop_reason: str  # "eos" | "max_new_tokens" | "context_limit"


@dataclass(frozen=True)
class FirstDistribution:
    """The distribution every continuation's first token was drawn from (one context: the same for all):
    its most likely candidates, and every first token drawn, by probability after the stages (descending)."""

    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    probs: tuple[float, ...]  # after every stage: what was sampled from
    probs_t1: tuple[float, ...]  # temperature 1, no stage
    kept: int  # tokens with a probability above 0 after the stages


@dataclass(frozen=True)
class Samples:
    """N continuations of one context, decoded together as one batch."""

    model_id: str
    prompt_ids: tuple[int, ...]  # the prompt as the model reads it (chat template included)
    prefix: tuple[int, ...]  # generated tokens before the continuations (a trace's steps before `start_step`)
    start_step: int  # the step the continuations begin at (len(prefix))
    settings: Settings  # the sampling settings; max_new_tokens is M
    samples: tuple[Sample, ...]
    first: FirstDistribution
    seconds: float  # the generation's own time: prefill and decode, not the waits for the model's lock
    prefill_seconds: float
    wait_seconds: float  # time spent waiting for the model's lock (another visitor's pass)
    forward_passes: int  # 1 prefill + one per position with a continuation still going

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def max_new_tokens(self) -> int:
        return int(self.settings.max_new_tokens)

    @property
    def context_ids(self) -> tuple[int, ...]:
        return self.prompt_ids + self.prefix


def to_json(s: Samples) -> dict:
    """The samples file's content (`llm-pipeline-samples/1`), plain JSON types."""
    return {
        "format": FORMAT,
        "model": s.model_id,
        "prompt": {"token_ids": list(s.prompt_ids)},
        "prefix": {"token_ids": list(s.prefix)},
        "start_step": s.start_step,
        "settings": asdict(s.settings),
        "n": s.n,
        "max_new_tokens": s.max_new_tokens,
        "seconds": s.seconds,
        "prefill_seconds": s.prefill_seconds,
        "wait_seconds": s.wait_seconds,
        "forward_passes": s.forward_passes,
        "first": asdict(s.first),
        "samples": [{**asdict(x), "seed": list(x.seed)} for x in s.samples],
    }


def _tuples(d: dict, cls) -> dict:
    return {f.name: tuple(d[f.name]) if isinstance(d[f.name], list) else d[f.name] for f in fields(cls)}


def from_json(d: dict) -> Samples:
    """A samples file's content read back (ValueError if it is not `llm-pipeline-samples/1`)."""
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise ValueError(f"not a samples file: its format is not {FORMAT}")
    samples = tuple(Sample(**_tuples(x, Sample)) for x in d["samples"])
    return Samples(d["model"], tuple(d["prompt"]["token_ids"]), tuple(d["prefix"]["token_ids"]), int(d["start_step"]),
                   Settings(**d["settings"]), samples, FirstDistribution(**_tuples(d["first"], FirstDistribution)),
                   float(d["seconds"]), float(d["prefill_seconds"]), float(d["wait_seconds"]), int(d["forward_passes"]))


__all__ = ["FORMAT", "FirstDistribution", "Sample", "Samples", "from_json", "to_json"]

"""Going on from a trace: "+1 token", re-sample from a step, branch with another candidate.

    gen = continue_generation(lm, trace, settings, n_new=1)                          # +1 token
    gen = continue_generation(lm, trace, settings, n_new=8, start_step=5)            # re-sample from step 5
    gen = continue_generation(lm, trace, settings, n_new=8, start_step=5, force_rank=2)  # branch at step 5
    for step in gen: ...      # the new steps only
    gen.trace()               # the kept steps, then the new ones

A continuation must write what one longer run writes. So:
  1. the kept steps are the trace's own, but the last one is put back as it was before the end:
     no stop reason, and none of the held-back bytes that the end released as "�" (the
     continuation's detokeniser holds them again, and releases the whole character later);
  2. the random stream resumes from the state recorded after the last kept step's draws
     (StepRecord.rng_state) when the seed is unchanged; a new seed starts a fresh stream;
  3. settings.max_new_tokens counts the kept steps, as one run of that length would;
  4. the steps made with other settings are a Segment of the trace, not the trace's settings.
"""
from __future__ import annotations

from dataclasses import replace

from pipeline.branch import forced_step
from pipeline.errors import SettingsError
from pipeline.generate import Generation, replay_detokenizer, start
from pipeline.indices import clamp_index
from pipeline.loading import LoadedModel
from pipeline.trace.records import Settings, StepRecord, Trace


def _check(lm: LoadedModel, prev: Trace | None) -> Trace:
    if prev is None or not prev.steps:
        raise SettingsError("there is no generation on screen to continue: press Generate first", key="error.continue_nothing")
    if prev.model.id != lm.info.id or prev.model.vocab_size != lm.info.vocab_size:
        raise SettingsError(f"the trace on screen was made by {prev.model.id}, not by the loaded model {lm.info.id}: "
                            "it can be explored but not continued; press Generate to make one with this model",
                            key="error.continue_other_model", made_by=prev.model.id, loaded=lm.info.id)
    return prev


def as_before_the_end(lm: LoadedModel, steps: tuple[StepRecord, ...]) -> tuple[StepRecord, ...]:
    """`steps` with the last one put back as it was before generation ended there (step 1 above)."""
    last = steps[-1] if steps else None
    if last is None or last.stop_reason is None or last.stop_reason == "eos":
        return steps
    text = replay_detokenizer(lm, [s.token_id for s in steps[:-1]]).add(last.token_id)  # not final: holds back
    return steps[:-1] + (replace(last, text=text, stop_reason=None),)


def _stream_state(prev: Trace, kept: tuple[StepRecord, ...], settings: Settings) -> str | None:
    """The random stream to resume (step 2 above): None starts fresh from settings.seed."""
    if not kept or settings.seed != prev.settings_at(kept[-1].index).seed:
        return None
    return kept[-1].rng_state or None  # "" in traces made before the state was recorded


def _kept(lm: LoadedModel, prev: Trace, start_step: int | None, force_rank: int | None) -> tuple[tuple[StepRecord, ...], int]:
    """(the steps kept, the index of the first step made with the new settings)."""
    steps = prev.steps
    if start_step is None:  # +1 token: after the last step
        if steps[-1].stop_reason == "eos":
            raise SettingsError("the model ended its answer here (end of sequence), so nothing follows it: "
                                "re-sample from an earlier step, or click another candidate to branch", key="error.continue_ended")
        return steps, len(steps)
    s = int(start_step)
    if force_rank is None:  # re-sample from step s
        s = clamp_index(s, len(steps) + 1)  # keep 0 .. all of the steps
        return steps[:s], s
    s = clamp_index(s, len(steps))
    base, k = steps[s], int(force_rank)
    if not 0 <= k < len(base.top_ids):
        raise SettingsError("click one of the candidate bars to branch; the last bar stands for the rest of the vocabulary",
                            key="error.branch_rest")
    if int(base.top_ids[k]) == base.token_id:
        raise SettingsError(f"the model already chose {base.piece!r} at this step: click another candidate to branch",
                            key="error.branch_same", token=base.piece)
    forced = forced_step(lm, steps[:s], base, int(base.top_ids[k]))
    # a forced token draws nothing: the stream after it is the stream before it
    forced = replace(forced, rng_state=steps[s - 1].rng_state if s else "")
    return steps[:s] + (forced,), s


def continue_generation(lm: LoadedModel, prev: Trace | None, settings: Settings, *, n_new: int, start_step: int | None = None,
                        force_rank: int | None = None) -> Generation:
    """A Generation that goes on from `prev` (see the module's docstring). `start_step` None:
    after the last step; `start_step`=s: from step s (re-sample); with `force_rank`=r, step s
    takes the step's candidate of rank r instead of the model's token (a branch)."""
    prev = _check(lm, prev)
    kept, first_new = _kept(lm, prev, start_step, force_rank)
    kept = as_before_the_end(lm, kept)
    ps = prev.settings
    settings = replace(settings, chat=ps.chat, system_prompt=ps.system_prompt, parse_special=ps.parse_special,
                       max_new_tokens=len(kept) + int(n_new))
    gen = start(lm, prev.prompt.text, settings, prefix=[s.token_id for s in kept], rng_state=_stream_state(prev, kept, settings))
    if gen.prompt.token_ids != prev.prompt.token_ids:
        raise SettingsError("the loaded model's tokenizer reads this trace's prompt differently: press Generate to start afresh",
                            key="error.continue_tokenizer")
    gen.prompt, gen.kept, gen.base, gen.first_new = prev.prompt, kept, prev, first_new
    return gen


__all__ = ["continue_generation", "as_before_the_end"]

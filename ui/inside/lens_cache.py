"""The logit lens of a step, shared by every session: the trace's own record, or computed once with the model.

    rec = LENS.get(lm, trace, step)   # the lens of a step (trace's own, or computed once); None when neither can be

LENS is process-wide state (docs/state.md): the last LENS_CACHE_SIZE records computed, behind its own lock.
"""
from __future__ import annotations

import threading

from pipeline.trace.records import LensRecord, StepRecord, Trace
from ui.model_match import same_model

LENS_CACHE_SIZE = 256  # lens records kept across sessions (one is ~40 KB)


class LensCache:
    """Logit-lens records shared by every session, the last `size` computed, keyed by what
    determines them: (model id, context ids, token id)."""

    def __init__(self, size: int = LENS_CACHE_SIZE):
        self.size, self._d, self._guard = size, {}, threading.Lock()
        self.computed = 0  # how many lens records this cache has computed (tests read it)

    def __len__(self) -> int:
        return len(self._d)

    def get(self, lm, trace: Trace, st: StepRecord) -> LensRecord | None:
        """The lens of step `st`: the trace's own record when it carries one, else computed with `lm`
        (once) when `lm` made the trace and the step kept its hidden states; else None."""
        return self.get_many(lm, trace, [st])[0]

    def get_many(self, lm, trace: Trace, steps) -> list[LensRecord | None]:
        """`get` of each step; the ones to compute are read out together (pipeline.inside.logit_lens.logit_lens_many). No
        model lock: the lens reads the weights past any capture's wrappers, so the decode loop goes on meanwhile."""
        from pipeline.inside import analyses as inside

        own = {(r.step, r.token_id): r for r in trace.lens}
        lm = same_model(lm, trace)
        out, todo = [], []
        for st in steps:
            rec = own.get((st.index, st.token_id))
            if rec is None and lm is not None and st.hidden is not None:
                with self._guard:
                    rec = self._d.get((lm.info.id, st.context_ids, st.token_id))
                if rec is None:
                    todo.append(len(out))
            out.append(rec)
        for i, rec in zip(todo, inside.logit_lens_many(lm, [steps[i] for i in todo]) if todo else ()):
            out[i] = rec
            with self._guard:
                while len(self._d) >= self.size:
                    self._d.pop(next(iter(self._d)))
                self._d[(lm.info.id, steps[i].context_ids, steps[i].token_id)] = rec
                self.computed += 1
        return out


# Process-wide (docs/state.md): every session's lens records, at most LENS_CACHE_SIZE (~10 MB), the oldest
# dropped first; written by LensCache.get_many under the cache's own lock.
LENS = LensCache()

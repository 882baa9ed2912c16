"""The logit lens of a step, shared by every session: the trace's own record, or computed once with the model.

    rec = LENS.get(lm, trace, step)   # the lens of a step (trace's own, or computed once); None when neither can be

LENS is process-wide state (docs/state.md): the last LENS_CACHE_SIZE records computed, behind its own lock.
"""
from __future__ import annotations

import threading

from pipeline.records import LensRecord, StepRecord, Trace
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
        from pipeline import inside

        for rec in trace.lens:
            if rec.step == st.index and rec.token_id == st.token_id:
                return rec
        lm = same_model(lm, trace)
        if lm is None or st.hidden is None:
            return None
        key = (lm.info.id, st.context_ids, st.token_id)
        # the model's lock: its final norm and LM head must not run while another session's forward
        # pass has hooks on them (and two sessions asking for one step compute it once)
        with lm.lock:
            with self._guard:
                if key in self._d:
                    return self._d[key]
            rec = inside.logit_lens(lm, st)
            with self._guard:
                while len(self._d) >= self.size:
                    self._d.pop(next(iter(self._d)))
                self._d[key] = rec
                self.computed += 1
        return rec


# Process-wide (docs/state.md): every session's lens records, at most LENS_CACHE_SIZE (~10 MB), the oldest
# dropped first; written by LensCache.get under the model's lock and the cache's own.
LENS = LensCache()

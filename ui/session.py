"""What the page does besides drawing: its input parsing and the work behind its buttons, as plain
functions over a loaded model and a trace. No Gradio here, so they are tested on tiny models
without a browser.

    lm = same_model(loaded, trace)                 # the loaded model, if it made `trace`
    rec = LENS.get(lm, trace, step)                # the logit lens of a step (trace's own, or computed once)
    path = write_download(lm, trace, folder)       # the trace file, lens of every step included
    folder = download_folder(root, session_hash)   # one browser session's downloads (remove_download_folder)
    speed = speed_against_plain(lm, trace)         # speculative vs plain decoding, tokens per second
    i, j = default_swap(trace)                     # two word tokens of the prompt, for the swap demo
    settings = settings_from_inputs(...)           # the page's fields as Settings (SettingsError if not numbers)
    n = tokens_to_make(trace, cont, max_new)       # how many tokens Generate, re-sample or a branch makes
"""
from __future__ import annotations

import hashlib
import math
import re
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path

from pipeline.errors import SettingsError
from pipeline.indices import clamp_index
from pipeline.records import LensRecord, ModelInfo, Settings, StepRecord, Trace

LENS_CACHE_SIZE = 256  # lens records kept across sessions (one is ~40 KB)


def same_model(lm, trace: Trace | None):
    """`lm` when it is the model that made `trace` (so its weights can answer for it), else None."""
    return lm if lm is not None and trace is not None and lm.info.id == trace.model.id else None


def known_weights(info: ModelInfo, lm) -> ModelInfo:
    """`info` with how its weights are stored, where a trace made before that was recorded ("") is
    of the embedded model and the loaded model is the embedded one too: the package ships one
    file, so its storage is known. Otherwise `info` as it is (the page then says only the dtype
    the model computed in, never a precision it cannot vouch for)."""
    if info.weights or lm is None or info.source != "embedded":
        return info
    if lm.info.source != "embedded" or lm.info.id != info.id or not lm.info.weights:
        return info
    return replace(info, weights=lm.info.weights)


def sentence(e: Exception) -> str:
    """An error's message as a sentence: a capital first letter and a full stop."""
    t = str(e)
    return f"{t[:1].upper()}{t[1:]}" + ("" if t.endswith((".", "!", "?")) else ".")


# -- the logit lens -----------------------------------------------------------------------------
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


LENS = LensCache()


# -- the download -------------------------------------------------------------------------------
def trace_for_download(lm, trace: Trace, cache: LensCache = LENS) -> Trace:
    """The trace with what the inside-the-model views need from the model (the logit lens of every
    step, parameter counts, position scheme, this machine's limits), when `lm` made it; else as is."""
    from pipeline import inside

    lm = same_model(lm, trace)
    if lm is None:
        return trace
    lens = tuple(r for r in (cache.get(lm, trace, st) for st in trace.steps) if r is not None)
    return inside.with_inside(lm, replace(trace, lens=lens), steps=())


DOWNLOAD_SUFFIX = ".json.gz"  # the trace format /2, gzip-compressed (pipeline/trace_io)


def write_download(lm, trace: Trace, folder: Path, cache: LensCache = LENS) -> Path:
    """Write `trace` (with its inside-the-model data, see trace_for_download) as the one trace file
    in `folder`, replacing the one before; return its path. Called when someone downloads, never
    after every run: the lens of every step costs one pass of the norm and LM head per layer."""
    if not trace.steps:
        raise SettingsError("there is no generation on screen to download: press Generate first")
    folder.mkdir(parents=True, exist_ok=True)
    for old in list(folder.glob("trace-*")):
        old.unlink(missing_ok=True)
    from pipeline import trace_io

    full = trace_for_download(lm, trace, cache)
    return trace_io.save(full, folder / f"trace-{time.strftime('%Y%m%d-%H%M%S')}{DOWNLOAD_SUFFIX}")


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def download_folder(root: Path, session_hash: str | None) -> Path:
    """The folder under `root` for one browser session's downloads ("shared" without a session). The
    hash is the browser's to choose, so only a plain name is used as it is; any other (".." or "a/b")
    by its digest: always a folder inside `root`, and never "shared" or another one of ours."""
    if not session_hash:
        return root / "shared"
    h = str(session_hash)
    name = h if _PLAIN_NAME.fullmatch(h) else hashlib.sha256(h.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return root / f"session-{name}"


def remove_download_folder(root: Path, session_hash: str | None) -> bool:
    """Remove a session's download folder once its page has closed (a trace file is up to ~50 MB, and a
    class opens many sessions); True if there was one. The shared folder stays: it has no session."""
    if not session_hash:
        return False
    folder = download_folder(root, session_hash)
    existed = folder.is_dir()
    shutil.rmtree(folder, ignore_errors=True)
    return existed


# -- the other inside-the-model views -----------------------------------------------------------
def accounting_for(lm, trace: Trace):
    """(accounting records of every step, machine, params), or None when neither the trace nor the
    model that made it holds parameter counts."""
    from pipeline import inside

    lm = same_model(lm, trace)
    params = trace.params or (inside.param_counts(lm) if lm else None)
    if params is None:
        return None
    machine = trace.machine or inside.measure_machine(lm.lock if lm else None)
    return [inside.accounting(trace.model, params, st, machine) for st in trace.steps], machine, params


def position_for(lm, trace: Trace):
    """The trace's position scheme, or the model's when it made the trace; else None."""
    from pipeline import inside

    lm = same_model(lm, trace)
    return trace.position or (inside.position_info(lm) if lm else None)


def default_swap(trace: Trace) -> tuple[int, int]:
    """Two word tokens of what the person typed (the first and the last), for the swap demo."""
    p = trace.prompt
    n, ids = len(p.text_ids), list(p.token_ids)
    start = next((a for a in range(len(ids) - n, -1, -1) if n and ids[a:a + n] == list(p.text_ids)), None)
    span = range(start, start + n) if start is not None else range(len(ids))
    words = [k for k in span if p.pieces[k].strip().isalpha()]
    if len(words) < 2:
        raise SettingsError("the prompt needs two word tokens to swap: type the positions to swap instead")
    return words[0], words[-1]


# -- speculative decoding: the speed-up, measured ------------------------------------------------
def speed_against_plain(lm, trace: Trace) -> dict:
    """Tokens per second of the speculative run (its rounds' own wall time) and of plain decoding of
    the same prompt and settings for as many tokens (its steps' own wall time), both traced alike."""
    from pipeline.generate import start

    n = len(trace.steps)
    plain = list(start(lm, trace.prompt.text, replace(trace.settings, max_new_tokens=n), ignore_eos=True))
    spec_s = sum(r.ms for r in trace.rounds) / 1000
    plain_s = sum(st.ms for st in plain) / 1000
    return {"speculative_tok_s": n / spec_s if spec_s else 0.0, "plain_tok_s": len(plain) / plain_s if plain_s else 0.0}


# -- how many tokens a click makes ----------------------------------------------------------------
def tokens_to_make(prev: Trace | None, cont: dict | None, max_new: int) -> int:
    """Generate: `max_new`. A re-sample or a branch from step s of `prev` (`cont`, the keywords of
    pipeline.continuation.continue_generation): what brings the answer to `max_new` tokens in all,
    at least one after the fork. SettingsError when the step is not a number."""
    if cont is None or cont.get("start_step") is None or prev is None:
        return max_new
    try:
        s, n = int(cont["start_step"]), len(prev.steps)
    except (TypeError, ValueError) as e:
        raise SettingsError(f"pick a step on the step slider to go on from ({e})") from e
    # as pipeline.continuation keeps them: a re-sample the steps before s, a branch those and the forced one
    kept = clamp_index(s, n + 1) if cont.get("force_rank") is None else clamp_index(s, n) + 1
    return max(1, max_new - kept)


# -- the page's fields --------------------------------------------------------------------------
def settings_from_inputs(mode, system, temperature, top_k, top_p, seed, max_new) -> Settings:
    """The sampling fields of the page as Settings ("Raw text" mode: no chat template, no system
    prompt; an empty system prompt: the template's own). SettingsError if one is not a number."""
    chat = mode != "Raw text"
    try:
        if not all(math.isfinite(float(x)) for x in (temperature, top_k, top_p, seed, max_new)):
            raise SettingsError("a setting is not a finite number: give each field a number within its range")
        return Settings(
            temperature=float(temperature), top_k=int(top_k) if float(top_k).is_integer() else float(top_k),
            top_p=float(top_p), seed=int(seed), max_new_tokens=int(max_new), chat=chat,
            system_prompt=(system if system and system.strip() else None) if chat else None,
        )
    except (TypeError, ValueError, OverflowError) as e:
        raise SettingsError(f"a setting is not a number ({e})") from e

"""The model, the app's only global: loaded in the background, and how a click starts a run with it.

Environment: LLM_VIZ_LOAD_GATE=PATH (for tests) holds the model's loading until that file exists;
LLM_VIZ_MAX_PROMPT_TOKENS caps a prompt's length; LLM_VIZ_DRAFT_MODEL offers a smaller model as a draft.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path

from pipeline import session
from pipeline.errors import SettingsError
from pipeline.records import Trace
from viz import page

ROOT = Path(__file__).resolve().parents[1]
MAX_NEW_TOKENS = 512
# Longer prompts work in the pipeline, but a CPU prefill with every attention map captured
# grows with the square of the length: the page keeps a class's wait short.
MAX_PROMPT_TOKENS = int(os.environ.get("LLM_VIZ_MAX_PROMPT_TOKENS", 2048))


class ModelHolder:
    """Loads the model in the background so the page (with the example trace) is up at once."""

    def __init__(self, spec: str | None):
        self.spec, self.lm, self.error, self.status = spec, None, None, "loading the model ..."
        self.ready = threading.Event()

    def start(self) -> "ModelHolder":
        threading.Thread(target=self._load, daemon=True).start()
        return self

    def _load(self):
        from pipeline.loading import load_model

        gate = os.environ.get("LLM_VIZ_LOAD_GATE")
        while gate and not Path(gate).exists():  # tests: loading waits until the file appears
            time.sleep(0.2)
        try:
            self.lm = load_model(self.spec, progress=self._progress)
            self.status = page.model_markdown(self.lm.info)
        except Exception as e:  # shown on the page; the example trace stays explorable
            self.error = str(e)
            self.status = f"**Model failed to load:** {e}"
        finally:
            self.ready.set()

    def _progress(self, msg: str):
        print(msg, flush=True)
        self.status = f"_{msg.strip()}_"

    def get(self):
        if not self.ready.wait(timeout=3):
            raise SettingsError(f"the model is still loading ({self.status.strip('_')}); the example trace below "
                                "can be explored meanwhile: try Generate again in a moment")
        if self.lm is None:
            raise SettingsError(f"the model could not be loaded: {self.error}. Restart the app with --model "
                                "pointing at a working model")
        return self.lm


HOLDER: ModelHolder | None = None  # set once by start() (app.py's main); None when only the page is built


def start(spec: str | None) -> ModelHolder:
    """Begin loading the model `spec` (a Hub id or a folder; None: the embedded one) in the background."""
    global HOLDER
    HOLDER = ModelHolder(spec).start()
    return HOLDER


def status() -> str:
    """The model line the page shows (empty when no model was started)."""
    return HOLDER.status if HOLDER else ""


def loaded():
    """The loaded model, or None while it loads (or when it failed to load)."""
    return HOLDER.lm if HOLDER is not None else None


def same_model(trace: Trace | None):
    """The loaded model when it is the one that made `trace` (so its weights can answer for it)."""
    return session.same_model(loaded(), trace)


DRAFTS: dict = {}  # (target id, draft spec) -> Draft, made once (a model draft loads once)
DRAFT_MODEL = os.environ.get("LLM_VIZ_DRAFT_MODEL")  # a smaller model with the same tokenizer, offered as a draft
SPEC_COST_FILE = ROOT / "assets" / "speculative_cost.json"  # `python -m pipeline bench --cost-curve --json` on this machine


def spec_cost():
    from pipeline.speculative_cost import from_json

    return from_json(SPEC_COST_FILE.read_text(encoding="utf-8")) if SPEC_COST_FILE.exists() else None


def _draft(lm, spec: str):
    from pipeline.draft import DEFAULT_DRAFT, make_draft

    spec = (spec or "").strip() or DEFAULT_DRAFT
    key = (lm.info.id, spec)
    if key not in DRAFTS:
        DRAFTS[key] = make_draft(lm, spec)
    return DRAFTS[key]


def start_run(prompt, settings, prev: Trace | None, cont: dict | None, n_new: int, spec: tuple):
    """(lm, the generation a click asks for): a fresh one (`cont` None; speculative when `spec`'s
    first item is on), or one going on from the trace on screen (pipeline.continuation)."""
    lm = HOLDER.get()
    if not 1 <= n_new <= MAX_NEW_TOKENS:
        raise SettingsError(f"max new tokens must be between 1 and {MAX_NEW_TOKENS} on this page, not {n_new}")
    spec_on, spec_k, spec_draft = spec
    if cont is not None:  # +1 token, re-sample, branch: as one longer run would have written it
        from pipeline.continuation import continue_generation

        gen = continue_generation(lm, prev, settings, n_new=n_new, **cont)
    elif spec_on:
        from pipeline.speculative import start_speculative

        gen = start_speculative(lm, prompt, replace(settings, max_new_tokens=n_new), k=spec_k, draft=_draft(lm, spec_draft))
    else:
        from pipeline.generate import start

        gen = start(lm, prompt, replace(settings, max_new_tokens=n_new))
    if len(gen.prompt.token_ids) > MAX_PROMPT_TOKENS:
        raise SettingsError(f"the prompt is {len(gen.prompt.token_ids)} tokens; this page takes up to {MAX_PROMPT_TOKENS} "
                            "(every attention map of the prompt is drawn): shorten it")
    return lm, gen

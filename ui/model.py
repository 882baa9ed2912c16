"""The model, the global that matters (docs/state.md lists every process-wide object): loaded in the background, and
how a click starts a run with it.

Environment: LLM_VIZ_LOAD_GATE=PATH (for tests) holds the model's loading until that file exists;
LLM_VIZ_MAX_PROMPT_TOKENS caps a prompt's length; LLM_VIZ_DRAFT_MODEL offers a smaller model as a draft.
"""
from __future__ import annotations

import gc
import os
import threading
import time
from dataclasses import replace
from pathlib import Path

from ui import messages, model_match
from pipeline.errors import SettingsError
from pipeline.trace.records import Trace
from viz import page
from viz.text import languages, speaking, t, thousands

ROOT = Path(__file__).resolve().parents[1]
MAX_NEW_TOKENS = 512
# Longer prompts work in the pipeline, but a CPU prefill with every attention map captured
# grows with the square of the length: the page keeps a class's wait short.
MAX_PROMPT_TOKENS = int(os.environ.get("LLM_VIZ_MAX_PROMPT_TOKENS", 2048))




class ModelNotReady(SettingsError):
    """A run refused for want of the model; the refusal also redraws the page's model line."""


def _same_text(line) -> str:
    return " ".join(str(line or "").split())  # (a Markdown value may come back re-indented)


class ModelHolder:
    """Loads the model in the background so the page (with the example trace) is up at once.

    A click is answered at once and as the page's model line said when it was clicked (`get`): a line
    that said "loading" never starts a run, even when the model arrived since. Else the click became a
    whole run of what the page held then (the default chat prompt, 64 tokens), and while a run of
    Generate is pending the page drops every further click on it (Gradio's trigger_mode "once"): the
    prompt typed next, clicked once the line said "Model:", went unanswered for over a minute on a busy
    2-core machine (issue 23). A click used to wait up to 3 s for the model, which widened that window."""

    def __init__(self, spec: str | None):
        self.spec, self.lm, self.error, self.line = spec, None, None, None
        self.ready = threading.Event()
        # every line the page may have been sent while loading (in each language the page speaks)
        self.loading_lines = {_same_text(t("model.loading", lang)) for lang in languages()}

    @property
    def status(self) -> str:
        """The page's model line, in the language speaking: the model, why it failed, or how far loading has come."""
        if self.lm is not None and self.error is None:
            return page.model_markdown(self.lm.info)
        if self.error is not None:
            return f"**{t('model.failed', error=messages.said(self.error))}**"
        return f"_{messages.said(self.line).strip()}_" if self.line else t("model.loading")

    def line_and_done(self) -> tuple[str, bool]:
        """(the model line, whether loading has ended), for the page's status tick. Whether loading has ended is read
        first: it is set only once the model or its error is there, so the line read after it is final whenever it says
        so. Read the other way, a load that ended between the two stopped the tick on a line that still said "loading",
        and that page said so for ever (a browser test waited 300 s for it)."""
        done = self.ready.is_set()
        return self.status, done

    def start(self) -> "ModelHolder":
        threading.Thread(target=self._load, daemon=True).start()
        return self

    def _load(self):
        from pipeline import batching
        from pipeline.loading import import_libraries, load_model

        gate = os.environ.get("LLM_VIZ_LOAD_GATE")
        try:  # the model first, then the line that says so: once the page reads "Model:", get() has it
            import_libraries()  # (before a test's gate: the gate holds the load itself)
            while gate and not Path(gate).exists():  # tests: loading waits until the file appears
                time.sleep(0.2)
            lm = load_model(self.spec, progress=self._progress)
            batching.start(lm)  # the decode loop, and the machine measured on its thread, before any visitor comes
            self.lm = lm
        except Exception as e:  # shown on the page (in each visitor's language: ui/messages.py); the example trace stays explorable
            self.error = e
        finally:
            self.ready.set()

    def _progress(self, msg: str):
        """A loading step (pipeline.loading's line, a pipeline.errors.Said where the page can say it in its language)."""
        print(msg, flush=True)
        for lang in languages():  # before any page can be sent it, in any language
            with speaking(lang):
                self.loading_lines.add(_same_text(f"_{messages.said(msg).strip()}_"))
        self.line = msg

    def get(self, shown: str | None = None):
        """The model, or at once the reason (ModelNotReady) there is none. `shown`: the model line the page
        showed when it was clicked (None: no page, as for the API). Whether loading has ended is read first, the model
        after it, as in line_and_done: read the other way, a load that ended between the two read as a failure ("could
        not be loaded: None")."""
        done = self.ready.is_set()
        lm = self.lm
        if lm is not None and _same_text(shown) not in self.loading_lines:
            return lm
        if lm is not None:  # loaded since the page last asked: the refusal redraws its line
            raise ModelNotReady(t("model.not_ready_done"))
        if not done:
            raise ModelNotReady(t("model.not_ready_loading", line=self.status.strip("_")))
        raise ModelNotReady(t("model.not_ready_failed", error=messages.said(self.error)))


def settle_heap_once_loaded():
    """Once the model has loaded (app.py calls this when the page is built and served): collect once, then freeze what
    the process holds (gc.freeze). The model, the tokenizer, Gradio's page and the libraries, ~536,000 objects, live as
    long as the process, and Python's oldest-generation collection walked them all each time it ran: 270 ms with every
    thread stopped, every running generation with it (seen mid-run with 16 visitors through /trace), now ~0. Objects
    made later (runs, records, sessions) are collected as before."""
    def settle():
        HOLDER.ready.wait()
        gc.collect()
        gc.freeze()

    threading.Thread(target=settle, name="settle-heap", daemon=True).start()


# Process-wide state (docs/state.md lists it all): HOLDER, the model, set once; DRAFTS below, the drafts made for it.
HOLDER: ModelHolder | None = None  # set once by start() (app.py's main); None when only the page is built


def start(spec: str | None) -> ModelHolder:
    """Begin loading the model `spec` (a Hub id or a folder; None: the embedded one) in the background."""
    global HOLDER
    HOLDER = ModelHolder(spec).start()
    return HOLDER


def status() -> str:
    """The model line the page is built with: empty until the page has asked (its first load, then a
    timer): a line it was built with says nothing of when it was clicked (see ModelHolder.get)."""
    return ""


def loaded():
    """The loaded model, or None while it loads (or when it failed to load)."""
    return HOLDER.lm if HOLDER is not None else None


def same_model(trace: Trace | None):
    """The loaded model when it is the one that made `trace` (so its weights can answer for it)."""
    return model_match.same_model(loaded(), trace)


# (target id, draft spec) -> Draft, made once (a model draft loads once). Process-wide, no lock, and no bound: one entry per
# distinct spec a run asks for (the Draft dropdown takes typed values), kept for the process's life (docs/state.md).
DRAFTS: dict = {}
DRAFT_MODEL = os.environ.get("LLM_VIZ_DRAFT_MODEL")  # a smaller model with the same tokenizer, offered as a draft
SPEC_COST_FILE = ROOT / "assets" / "speculative_cost.json"  # `python -m pipeline bench --cost-curve --json` on this machine


def spec_cost():
    from pipeline.speculative.cost import from_json

    return from_json(SPEC_COST_FILE.read_text(encoding="utf-8")) if SPEC_COST_FILE.exists() else None


def _draft(lm, spec: str):
    from pipeline.speculative.draft import DEFAULT_DRAFT, make_draft

    spec = (spec or "").strip() or DEFAULT_DRAFT
    key = (lm.info.id, spec)
    if key not in DRAFTS:
        DRAFTS[key] = make_draft(lm, spec)
    return DRAFTS[key]


def start_run(prompt, settings, prev: Trace | None, cont: dict | None, n_new: int, spec: tuple, shown: str | None = None):
    """(lm, the generation a click asks for): a fresh one (`cont` None; speculative when `spec`'s
    first item is on), or one going on from the trace on screen (pipeline.continuation). `shown`: the
    page's model line when it was clicked (ModelHolder.get)."""
    lm = HOLDER.get(shown)
    if not 1 <= n_new <= MAX_NEW_TOKENS:
        raise SettingsError(t("model.max_new", high=thousands(MAX_NEW_TOKENS), value=thousands(n_new) if isinstance(n_new, int) else n_new))
    spec_on, spec_k, spec_draft = spec
    if cont is not None:  # +1 token, re-sample, branch: as one longer run would have written it
        from pipeline.continuation import continue_generation

        gen = continue_generation(lm, prev, settings, n_new=n_new, **cont)
    elif spec_on:
        from pipeline.speculative.decoding import start_speculative

        gen = start_speculative(lm, prompt, replace(settings, max_new_tokens=n_new), k=spec_k, draft=_draft(lm, spec_draft))
    else:
        from pipeline.generate import start

        gen = start(lm, prompt, replace(settings, max_new_tokens=n_new))
    if len(gen.prompt.token_ids) > MAX_PROMPT_TOKENS:
        raise SettingsError(t("model.prompt_too_long", n=thousands(len(gen.prompt.token_ids)), high=thousands(MAX_PROMPT_TOKENS)))
    return lm, gen

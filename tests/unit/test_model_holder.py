"""The model holder answers a click at once, and as the page's model line said when it was clicked."""
from __future__ import annotations

import threading
import time

import pytest

from ui import model
from ui.model import ModelHolder, ModelNotReady
from viz.text import t

LOADING = t("model.loading")

LOADED_LINE = "Model: **SmolLM2-135M-Instruct** (embedded)"


def _holder(lm=None, ready=False, error=None) -> ModelHolder:
    h = ModelHolder(None)  # never started: the test sets what loading would
    h.lm, h.error = lm, error
    if ready:
        h.ready.set()
    return h


def test_a_click_while_loading_is_refused_at_once():
    h = _holder()
    t0 = time.perf_counter()
    with pytest.raises(ModelNotReady, match="still loading"):
        h.get(LOADING)
    assert time.perf_counter() - t0 < 0.5, "a click must not wait for the model"


def test_a_click_made_while_the_line_said_loading_starts_no_run_though_the_model_is_there():
    lm = object()
    h = _holder(lm, ready=True)
    # (the message keeps the words "still loading": assets/links.js waits for the model line on them)
    with pytest.raises(ModelNotReady, match="still loading .* just finished"):
        h.get(LOADING)
    with pytest.raises(ModelNotReady):
        h.get("  loading the model\n ...  ")  # the same line, however Markdown re-spaced it
    h._progress("converting the GGUF ...")  # a progress line is a loading line too
    with pytest.raises(ModelNotReady):
        h.get("_converting the GGUF ..._")
    assert h.get(LOADED_LINE) is lm
    assert h.get("Viewing a saved trace of tiny-llama") is lm
    assert h.get("") is lm  # the line the page is built with (model.status()): not yet asked
    assert h.get(None) is lm  # no page (the API)


def test_a_model_that_failed_to_load_says_so():
    h = _holder(ready=True, error="no such model")
    with pytest.raises(ModelNotReady, match="could not be loaded: no such model"):
        h.get("**Model failed to load:** no such model")


def test_the_page_is_built_with_an_empty_model_line():
    assert model.status() == ""


def test_what_lives_as_long_as_the_process_is_frozen_once_the_model_is_there(monkeypatch):
    """app.py's settle_heap_once_loaded: nothing until the model is there, then every object alive is frozen out of the
    collector's walks (a full collection walked ~536,000 of them: 270 ms with every generation stopped)."""
    import gc
    import threading

    h = _holder()
    monkeypatch.setattr(model, "HOLDER", h)
    gc.unfreeze()
    try:
        alive = len(gc.get_objects())
        model.settle_heap_once_loaded()
        settle = next(th for th in threading.enumerate() if th.name == "settle-heap")
        settle.join(0.3)
        assert settle.is_alive() and gc.get_freeze_count() == 0  # the model still loading: nothing frozen yet
        h.ready.set()
        settle.join(30)
        assert not settle.is_alive() and gc.get_freeze_count() >= 0.9 * alive
    finally:
        gc.unfreeze()


class _FinishesWhileRead(ModelHolder):
    """A holder whose load finishes just after its line is read: the moment a page's status tick can meet."""

    @property
    def status(self) -> str:
        line = super().status
        self.lm = self.lm or object()
        self.ready.set()
        return line


def test_a_load_that_finishes_during_a_status_tick_keeps_the_timer_until_the_line_says_so(monkeypatch):
    from ui.listeners import status_tick

    monkeypatch.setattr(model, "HOLDER", _FinishesWhileRead(None))
    line, timer = status_tick()
    assert line == LOADING
    assert timer.active, "the timer stopped on a line that still says loading: the page would say so for ever"
    monkeypatch.setattr(model, "HOLDER", _holder(ready=True, error="no such model"))  # a load that has ended (here failed)
    line, timer = status_tick()
    assert "no such model" in line and not timer.active


class _EndsWhenAsked(threading.Event):
    """A holder's `ready` whose load ends (the model there) at the moment it is first asked whether it has."""

    def __init__(self, holder: ModelHolder):
        super().__init__()
        self.holder = holder

    def is_set(self) -> bool:
        if not super().is_set():
            self.holder.lm = object()
            self.set()
        return super().is_set()


def test_a_click_as_loading_ends_is_never_told_the_model_failed():
    h = _holder()
    h.ready = _EndsWhenAsked(h)
    with pytest.raises(ModelNotReady, match="still loading .* just finished"):
        h.get(LOADING)
    assert h.get(LOADED_LINE) is h.lm

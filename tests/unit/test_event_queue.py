"""The app's event queue spends no time on Gradio's monitoring summary (app.queue).

Gradio's queue builds a pandas table of up to 10,000 past events after every event ends, for a /monitoring
dashboard the app does not offer: 11-25 ms of CPU an event on the 2-core machine (docs/benchmarks.md, "A class
generating at once"). Here: the app's queue never builds it, while a bare queue does."""
from __future__ import annotations

import gradio as gr
import pytest

import app


def _records(n: int) -> list[dict]:
    return [{"time": float(i), "status": "success", "process_time": 0.01 * i, "function": f"fn_{i % 7}", "session_hash": "s"}
            for i in range(n)]


def _summarised(demo: gr.Blocks, monkeypatch) -> int:
    """How many pandas tables the queue builds while 5 events end (as Gradio's queue records and summarises them)."""
    q, built = demo._queue, []
    real = q._get_df
    monkeypatch.setattr(q, "_get_df", lambda records: built.append(len(records)) or real(records))
    for k in range(5):
        q.events_recorded += 1
        q.compute_analytics_summary(_records(100 + k))
    return len(built)


def test_the_apps_queue_never_builds_the_monitoring_table(monkeypatch):
    monkeypatch.delenv("GRADIO_ANALYTICS_CACHE_FREQUENCY", raising=False)
    with gr.Blocks() as demo:
        gr.Textbox()
    assert app.queue(demo) is demo
    assert _summarised(demo, monkeypatch) == 0


def test_a_bare_queue_builds_it_after_every_event(monkeypatch):
    """(The check above can fail: Gradio's own default summarises every event.)"""
    monkeypatch.delenv("GRADIO_ANALYTICS_CACHE_FREQUENCY", raising=False)
    with gr.Blocks() as demo:
        gr.Textbox()
    demo.queue()
    assert _summarised(demo, monkeypatch) == 5


@pytest.fixture(autouse=True)
def _keep_environment(monkeypatch):
    """app.queue sets a variable of the process: undone after each test (monkeypatch restores it)."""
    monkeypatch.setenv("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1")

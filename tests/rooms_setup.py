"""A class room of a tiny model's trace, served by the rooms' API on a test client: what the unit tests of the rooms
share (tests/unit/test_room*.py); its fixtures `lm` and `setup` are in
tests/unit/conftest.py."""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from pipeline.generate import run_trace
from pipeline.trace.records import Settings
from ui.rooms import rooms
from ui.rooms import api as rooms_api


def room_setup(lm, monkeypatch):
    """(client, store, room, clock): a room at step 2 of a trace kept without full logits, the clock in a list to move."""
    trace = run_trace(lm, "The quick brown fox", Settings(temperature=0.8, seed=1, max_new_tokens=4))
    trace = trace.__class__(**{**trace.__dict__, "steps": tuple(s.__class__(**{**s.__dict__, "logits": None}) for s in trace.steps)})
    clock = [1000.0]
    store = rooms.Rooms(model_of=lambda t: lm, clock=lambda: clock[0])
    monkeypatch.setattr(rooms_api, "ROOMS", store)
    app = FastAPI()
    app.include_router(rooms_api.router)
    room = store.create(trace, 2)
    return TestClient(app), store, room, clock


"""Fixtures the class-room tests share (tests/unit/test_room*.py): `lm`, a tiny model, and `setup`, a room of its trace
served on a test client (tests/rooms_setup.py). A test module's own fixture of the same name takes their place."""
from __future__ import annotations

import pytest

from tests import tiny
from tests.rooms_setup import room_setup


@pytest.fixture(scope="module")
def lm():
    return tiny.loaded("llama", ctx=128)


@pytest.fixture()
def setup(lm, monkeypatch):
    return room_setup(lm, monkeypatch)

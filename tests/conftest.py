"""Marks by folder, and a guard that keeps the quick loop quick.

Every test under tests/browser/ is marked `browser` and every test under tests/integration/ is
marked `integration` here, from where its file lives, so a new file cannot forget its mark
(a `pytestmark` in a conftest.py is ignored by pytest). The quick loop is then

    .venv/bin/python -m pytest -q -m "not browser and not integration"

Any other test (a unit test) that tries to load the default model or start app.py fails at
once with a message saying what to do instead; tests/unit/test_marks.py proves both.

And a run always ends: a test stuck for longer than pyproject.toml's `timeout` fails (pytest-timeout), and a
thread a test left running (not a daemon) is named at the end instead of holding the process open for ever.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FOLDER_MARKS = {"browser": "browser", "integration": "integration"}  # folder under tests/ -> mark

UNIT_ONLY = ("a unit test must not {what}: it runs in the quick loop (-m 'not browser and not integration'). "
             "Use a tiny random model (tests/tiny.py) instead, or move the test to tests/integration/ "
             "(the embedded model) or tests/browser/ (the app).")


def folder_mark(path: Path) -> str | None:
    """The mark a test file gets from its folder: tests/browser/... -> "browser", and so on."""
    try:
        top = Path(path).resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return None
    return FOLDER_MARKS.get(top)


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection reads the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        mark = folder_mark(item.path)
        if mark and item.get_closest_marker(mark) is None:
            item.add_marker(mark)


class UnitTestBoundary(AssertionError):
    """A unit test reached for the embedded model or the app."""


def _refusing_popen(real_popen):
    class RefusingPopen(real_popen):
        def __init__(self, args, *a, **kw):
            words = [w for x in ([args] if isinstance(args, (str, bytes, Path)) else args) for w in str(x).split()]
            if any(Path(w).name == "app.py" for w in words):
                raise UnitTestBoundary(UNIT_ONLY.format(what="start app.py"))
            super().__init__(args, *a, **kw)

    return RefusingPopen


@pytest.fixture(autouse=True)
def _unit_tests_stay_small(request, monkeypatch):
    """In a test that is neither `browser` nor `integration`: refuse the default model and app.py."""
    if any(request.node.get_closest_marker(m) for m in FOLDER_MARKS.values()):
        yield
        return
    from pipeline import loading

    real_resolve = loading.resolve

    def resolve(spec):
        path, shown, source = real_resolve(spec)
        if source == "embedded" or path == loading.HUB_DEFAULT:
            raise UnitTestBoundary(UNIT_ONLY.format(what=f"load the default model {shown}"))
        return path, shown, source

    monkeypatch.setattr(loading, "resolve", resolve)  # load_model looks it up here on every call
    monkeypatch.setattr(subprocess, "Popen", _refusing_popen(subprocess.Popen))
    yield


_STATUS = {"exit": 0}


def pytest_sessionfinish(session, exitstatus):
    _STATUS["exit"] = int(exitstatus)


def pytest_unconfigure(config):
    """After the summary: threads some test left running would keep the interpreter from exiting (a CI run that never
    ends). Name them and end the process with the suite's own status."""
    left = [th for th in threading.enumerate() if th is not threading.main_thread() and not th.daemon and th.is_alive()
            and getattr(getattr(th, "_target", None), "__module__", "") != "concurrent.futures.thread"]  # (a pool's: ended at exit)
    for th in left:
        th.join(5)
    left = [th.name for th in left if th.is_alive()]
    if left:
        print(f"\ntests left threads running: {left}; ending the run with its own status", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(_STATUS["exit"])

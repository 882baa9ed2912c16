"""The quick loop, `pytest -m "not browser and not integration"`, selects every unit test and
nothing that starts the app or loads the embedded model (tests/conftest.py marks by folder)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import UnitTestBoundary, folder_mark

ROOT = Path(__file__).resolve().parents[2]
QUICK = "not browser and not integration"


def collect(*args: str, cwd: Path = ROOT) -> set[str]:
    """Node ids pytest selects, collected (never run) in a fresh process, as a person would type it."""
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                       cwd=cwd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return {line for line in r.stdout.splitlines() if "::" in line}


def files(ids: set[str]) -> set[str]:
    return {i.split("::")[0] for i in ids}


def files_under(folder: str) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / folder).rglob("test_*.py")}


def test_the_quick_loop_selects_every_unit_test_and_nothing_else():
    every = collect()
    quick = collect("-m", QUICK)
    units = {i for i in every if i.startswith("tests/unit/")}
    assert quick == units, f"unit tests left out: {sorted(units - quick)[:5]}; others let in: {sorted(quick - units)[:5]}"
    assert files(quick) == files_under("unit") and len(quick) > 300
    assert files(every - quick) == files_under("browser") | files_under("integration")


def test_a_new_file_that_forgets_its_mark_gets_it_from_its_folder(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    browser: b\n    integration: i\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    for folder in ("unit", "browser", "integration"):
        (tmp_path / "tests" / folder).mkdir()
        (tmp_path / "tests" / folder / f"test_new_{folder}.py").write_text("def test_it():\n    pass\n")  # no mark
    assert collect("-m", QUICK, "tests", cwd=tmp_path) == {"tests/unit/test_new_unit.py::test_it"}
    assert collect("-m", "browser", "tests", cwd=tmp_path) == {"tests/browser/test_new_browser.py::test_it"}
    assert collect("-m", "integration", "tests", cwd=tmp_path) == {"tests/integration/test_new_integration.py::test_it"}


def test_marks_come_from_the_folder():
    assert folder_mark(ROOT / "tests" / "browser" / "test_new.py") == "browser"
    assert folder_mark(ROOT / "tests" / "integration" / "sub" / "test_new.py") == "integration"
    assert folder_mark(ROOT / "tests" / "unit" / "test_new.py") is None
    assert folder_mark(Path("/elsewhere/tests/browser/test_new.py")) is None


def test_a_unit_test_cannot_load_the_embedded_model():
    # Without the guard this would load SmolLM2 (a minute) and then fail: "DID NOT RAISE".
    from pipeline.loading import load_model

    for spec in (None, "default", "HuggingFaceTB/SmolLM2-135M-Instruct"):
        with pytest.raises(UnitTestBoundary, match="tests/integration"):
            load_model(spec)


def test_a_unit_test_cannot_start_the_app():
    # Without the guard the app would start (and time out here).
    with pytest.raises(UnitTestBoundary, match="start app.py"):
        subprocess.run([sys.executable, str(ROOT / "app.py"), "--port", "0"], cwd=ROOT, timeout=5)
    with pytest.raises(UnitTestBoundary, match="start app.py"):
        subprocess.run(f"{sys.executable} app.py", shell=True, cwd=ROOT, timeout=5)
    # other commands are let through
    assert subprocess.run([sys.executable, "-c", "print('ok')"], capture_output=True, text=True).stdout == "ok\n"

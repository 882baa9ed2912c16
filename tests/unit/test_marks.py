"""The quick loop, `pytest -m "not browser and not integration"`, selects every unit test and
nothing that starts the app or loads the embedded model (tests/conftest.py marks by folder)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import UnitTestBoundary, folder_mark

ROOT = Path(__file__).resolve().parents[2]
QUICK = "not browser and not integration"


# A plugin for the collecting process: prints each collected item, whether -m kept it, and its marks.
PROBE = """
def pytest_deselected(items):
    for i in items:
        print("DESELECTED", i.nodeid, ",".join(sorted(m.name for m in i.iter_markers())))

def pytest_collection_finish(session):
    for i in session.items:
        print("SELECTED", i.nodeid, ",".join(sorted(m.name for m in i.iter_markers())))
"""


def collect(tmp_path: Path, *args: str, cwd: Path = ROOT) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """({selected node id: marks}, {deselected node id: marks}): collected (never run) in a fresh
    process, with the selection a person would type."""
    (tmp_path / "quick_loop_probe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "quick_loop_probe", *args],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out: dict[str, dict[str, set[str]]] = {"SELECTED": {}, "DESELECTED": {}}
    for line in r.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind in out:
            node, _, marks = rest.rpartition(" ")  # parametrised ids may hold spaces; marks never do
            out[kind][node] = set(filter(None, marks.split(",")))
    return out["SELECTED"], out["DESELECTED"]


def files(ids) -> set[str]:
    return {i.split("::")[0] for i in ids}


def files_under(folder: str) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / folder).rglob("test_*.py")}


def test_the_quick_loop_selects_every_unit_test_and_nothing_else(tmp_path):
    quick, rest = collect(tmp_path, "-m", QUICK)
    assert files(quick) == files_under("unit") and len(quick) > 300
    assert files(rest) == files_under("browser") | files_under("integration")
    for node, marks in rest.items():
        assert folder_mark(ROOT / node.split("::")[0]) in marks, (node, marks)


def test_the_long_walks_are_browser_tests_the_default_run_keeps_and_not_walk_skips(tmp_path):
    walks, others = collect(tmp_path, "-m", "walk")
    everything, _ = collect(tmp_path)
    assert 10 <= len(walks) <= 30, sorted(walks)  # (a few long walks, not a second suite)
    assert all("browser" in marks and "walk" in marks for marks in walks.values()), walks
    assert set(walks) <= set(everything) and set(others) | set(walks) == set(everything)
    skipped, _ = collect(tmp_path, "-m", "browser and not walk")
    assert not set(skipped) & set(walks) and len(skipped) > 150


def test_a_new_file_that_forgets_its_mark_gets_it_from_its_folder(tmp_path):
    tree = tmp_path / "project"
    (tree / "tests").mkdir(parents=True)
    (tree / "pytest.ini").write_text("[pytest]\nmarkers =\n    browser: b\n    integration: i\n")
    (tree / "tests" / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    for folder in ("unit", "browser", "integration"):
        (tree / "tests" / folder).mkdir()
        (tree / "tests" / folder / f"test_new_{folder}.py").write_text("def test_it():\n    pass\n")  # no mark
    quick, rest = collect(tmp_path, "-m", QUICK, "tests", cwd=tree)
    assert quick == {"tests/unit/test_new_unit.py::test_it": set()}
    assert rest == {"tests/browser/test_new_browser.py::test_it": {"browser"},
                    "tests/integration/test_new_integration.py::test_it": {"integration"}}


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

"""ui.generation.RUNS: per page session, a newer run makes the older one stop at its next token."""
from ui.generation import Runs


def test_a_newer_run_of_the_same_page_supersedes_the_older_only():
    runs = Runs()
    a = runs.begin("page-1")
    other = runs.begin("page-2")
    assert not runs.superseded("page-1", a) and not runs.superseded("page-2", other)
    b = runs.begin("page-1")
    assert runs.superseded("page-1", a) and not runs.superseded("page-1", b)
    assert not runs.superseded("page-2", other)  # another page's run goes on
    runs.end("page-1", a)  # the older ending leaves the newer registered
    assert runs.superseded("page-1", a) and not runs.superseded("page-1", b)
    runs.end("page-1", b)
    assert runs._newest == {"page-2": other}  # nothing kept for a page with no run


def test_runs_outside_a_page_never_stop_each_other():
    runs = Runs()
    a, b = runs.begin(None), runs.begin(None)
    assert not runs.superseded(None, a) and not runs.superseded(None, b)
    assert Runs.session() is None  # (no event running)

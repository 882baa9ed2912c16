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


def test_the_last_step_streamed_is_kept_for_the_runs_finish_only():
    """A Stop can end a run on a token made but never streamed: the run's finish puts the slider on the trace's last
    step when the page was on the last step streamed to it (ui/generation.py's finish), and asks only once."""
    runs = Runs()
    assert runs.last_streamed("page-1") is None
    runs.streamed("page-1", 7)
    runs.streamed("page-1", 8)
    runs.streamed(None, 3)  # (outside a page: nothing kept)
    assert runs.last_streamed("page-1") == 8 and runs.last_streamed("page-1") is None and runs._shown == {}


def test_a_stopped_runs_finish_puts_the_page_on_the_traces_last_step_unless_it_was_moved(monkeypatch):
    """Stop ended the run on a token made and never streamed (the trace 10 steps, the page on step 8, the last one it
    was sent): the finish puts the slider on step 9, so the text shows every token made. A person who dragged the
    slider back during the run keeps their step (the slider's range only)."""
    import gradio as gr

    from tests.synthetic import make_trace
    from ui import layout, model
    from ui.generation import RUNS, Generation

    with gr.Blocks():
        page = layout.layout(None, "status", model.spec_cost())
    gen, trace = Generation(page), make_trace(n_steps=10)
    monkeypatch.setattr(Runs, "session", staticmethod(lambda: "page-1"))

    def slider_after(step):
        out = gen.finish(True, trace, step, 0, "all", 0.7, 0, 0.9, 0.0, 1.0)
        return out[page.C.slider]._constructor_args[0]

    RUNS.streamed("page-1", 8)
    assert slider_after(8) == dict(minimum=0, maximum=9, value=9, step=1, interactive=True)
    RUNS.streamed("page-1", 8)
    assert slider_after(3) == dict(minimum=0, maximum=9, step=1, interactive=True)  # (dragged back: kept)
    assert "value" not in slider_after(8)  # (nothing streamed by a run of this page: kept)

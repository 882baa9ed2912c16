"""The step slider passes a step beyond the range the server last sent (the trace clamps it),
where Gradio's own slider refuses it and the event never runs."""
import gradio as gr
import pytest

from ui.step_slider import StepSlider


def test_gradio_refuses_a_step_past_its_remembered_maximum():
    with pytest.raises(gr.Error, match="greater than maximum"):
        gr.Slider(0, 2, step=1).preprocess(8)


def test_the_step_slider_passes_it_through_as_an_int():
    s = StepSlider(0, 2, step=1)
    assert s.preprocess(8) == 8 and s.preprocess(3.0) == 3 and s.preprocess(-4) == 0
    assert s.preprocess(None) == 0 and s.preprocess("x") == 0 and s.preprocess(float("nan")) == 0


def test_the_page_draws_it_with_gradios_own_slider():
    assert StepSlider(0, 2).get_block_name() == "slider"


def test_one_clamp_for_every_index_from_outside():
    from pipeline.indices import clamp_index

    assert [clamp_index(i, 5) for i in (-3, 0, 2, 4, 9, 3.7, "2")] == [0, 0, 2, 4, 4, 3, 2]
    assert clamp_index(7, 0) == 0 and clamp_index(-5, 3, low=-1) == -1  # no steps; -1: the prompt alone
    assert clamp_index(None, 5, default=4) == 4 and clamp_index("all", 3, default=9) == 2
    with pytest.raises(TypeError):
        clamp_index(None, 5)


def test_the_slider_range_is_one_rule_for_the_page_and_its_updates():
    """The page's first slider (ui/layout.py) and every update (views.slider) come from slider_props: with one
    step it shows 0..1 on step 0, locked; with none, the same; with n steps, 0..n-1 on the last."""
    from types import SimpleNamespace

    from ui.views import slider, slider_props

    one, five = SimpleNamespace(steps=[0]), SimpleNamespace(steps=list(range(5)))
    assert slider_props(one) == dict(minimum=0, maximum=1, value=0, step=1, interactive=False)
    assert slider_props(None) == dict(minimum=0, maximum=1, value=0, step=1, interactive=False)
    assert slider_props(five) == dict(minimum=0, maximum=4, value=4, step=1, interactive=True)
    assert slider_props(five, 9)["value"] == 4 and slider_props(five, 2)["value"] == 2
    # an update that keeps the step a person dragged to sends no value (what Gradio sends: the arguments given)
    assert "value" not in slider(five, keep_value=True)._constructor_args[0] and slider(five, 2).maximum == 4

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

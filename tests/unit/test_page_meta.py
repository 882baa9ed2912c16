"""The server's distribution figure names the step and the settings it was computed with (layout.meta),
whichever way the page asks for it: the contract the page's tests read beside the fields on screen."""
import pytest

from tests.synthetic import make_trace
from viz import page


@pytest.mark.parametrize("settings", [dict(temperature=0.0, top_k=0, top_p=0.5, min_p=0.0, repetition_penalty=1.0),
                                      dict(temperature=1.3, top_k=5, top_p=0.8, min_p=0.05, repetition_penalty=1.3)])
def test_render_names_the_fields_settings_not_the_traces(settings):
    trace = make_trace(n_steps=4, temperature=0.7, top_k=0, top_p=0.9)
    out = page.render(trace, step=2, layer=0, head="all", **settings)
    assert out["dist"].layout.meta == {"step": 2, **settings}
    only = page.render(trace, step=1, layer=0, head="all", only=("dist",), **settings)
    assert only["dist"].layout.meta == {"step": 1, **settings}
    for key in page.STEP_FIGURES - {"dist"}:
        assert out[key].layout.meta == {"step": 2}, key


def test_distribution_only_names_the_clamped_step_and_the_settings_as_numbers():
    trace = make_trace(n_steps=3)
    fig = page.distribution_only(trace, step=99, temperature="0.35", top_k=12.0, top_p="0.5")  # (as Gradio may hand them)
    assert fig.layout.meta == {"step": 2, "temperature": 0.35, "top_k": 12, "top_p": 0.5, "min_p": 0.0, "repetition_penalty": 1.0}
    assert type(fig.layout.meta["top_k"]) is int

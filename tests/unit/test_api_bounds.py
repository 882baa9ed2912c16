"""/trace refuses what a link refuses, before the model or its tokenizer sees it (ui/api.py)."""
import pytest

from pipeline.errors import SettingsError
from ui import api
from ui.links import MAX_TEXT


def never(*a, **kw):
    pytest.fail("the model was asked to run on input that should have been refused")


@pytest.mark.parametrize("prompt, system, says", [
    ("x" * (MAX_TEXT + 1), "", f"the prompt is longer than {MAX_TEXT} characters"),
    ("Hi", "y" * (MAX_TEXT + 1), f"the system prompt is longer than {MAX_TEXT} characters"),
    ("   ", "", "the prompt is empty"),
    (None, "", "the prompt is empty"),
])
def test_overlong_or_empty_text_is_refused_before_the_model(tmp_path, prompt, system, says):
    with pytest.raises(SettingsError, match=says):
        api.run_trace(never, tmp_path, prompt, "chat", system, 0.7, 0, 0.9, 0, 8)


@pytest.mark.parametrize("kw, says", [
    (dict(temperature=float("nan")), "not a finite number"),
    (dict(temperature=-1), "temperature must be 0"),
    (dict(temperature="hot"), "not a number"),
    (dict(top_k=1e400), "not a (finite )?number"),  # (1e400 reads as inf)
    (dict(seed=-3), "seed"),
])
def test_numbers_out_of_range_are_refused_with_a_sentence(tmp_path, kw, says):
    args = dict(temperature=0.7, top_k=0, top_p=0.9, seed=0) | kw
    with pytest.raises(SettingsError, match=says):
        api.run_trace(never, tmp_path, "Hi", "chat", "", args["temperature"], args["top_k"], args["top_p"], args["seed"], 8)

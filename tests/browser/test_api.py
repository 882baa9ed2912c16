"""The app's scripting API over HTTP, with gradio_client: /trace is the one endpoint offered (the
page's events are hidden), and it returns the trace of a real generation by the loaded model."""
from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import httpx
import pytest
from gradio_client import Client

from pipeline.trace import records
from pipeline.trace import files as trace_io

pytestmark = pytest.mark.browser

PARAMS = ["prompt", "mode", "system_prompt", "temperature", "top_k", "top_p", "seed", "max_new_tokens", "min_p", "repetition_penalty", "lens"]
PROMPT = "Name three colours."


@pytest.fixture(scope="module")
def client(app_url):
    return Client(app_url, verbose=False)


def call_trace(client, timeout: float = 300, **kw) -> str:
    """/trace, called again while the app's model is still loading (the app says so and refuses)."""
    deadline = time.time() + timeout
    while True:
        try:
            return client.predict(api_name="/trace", **kw)
        except Exception as e:  # noqa: BLE001 (the app's refusal reaches the client as an AppError)
            if "still loading" not in str(e) or time.time() > deadline:
                raise
            time.sleep(2)


def test_info_lists_only_trace_with_named_parameters(app_url, client):
    info = httpx.get(f"{app_url}/gradio_api/info", timeout=30).json()
    assert list(info["named_endpoints"]) == ["/trace"]
    assert info["unnamed_endpoints"] == {}
    ep = info["named_endpoints"]["/trace"]
    assert [p["parameter_name"] for p in ep["parameters"]] == PARAMS
    assert "trace file" in ep["description"]
    assert list(client.view_api(print_info=False, return_format="dict")["named_endpoints"]) == ["/trace"]


def test_trace_returns_the_greedy_run_of_the_pipeline(client, tmp_path):
    path = call_trace(client, prompt=PROMPT, mode="chat", system_prompt="You are brief.", temperature=0, top_k=5,
                      top_p=1.0, seed=7, max_new_tokens=6)
    assert str(path).endswith(".json.gz")  # (scripts/classroom_load.py count_tokens reads it by this name)
    data = Path(path).read_bytes()
    assert json.loads(gzip.decompress(data))["schema"] == records.SCHEMA == "llm-pipeline-trace/2"
    got = trace_io.loads(data)
    s = got.settings
    assert (s.temperature, s.top_k, s.top_p, s.seed, s.max_new_tokens, s.chat, s.system_prompt) == (0, 5, 1.0, 7, 6, True, "You are brief.")
    assert got.prompt.text == PROMPT

    from pipeline.generate import start
    from pipeline.loading import load_model

    gen = start(load_model(None), PROMPT, s)
    for _ in gen:
        pass
    want = gen.trace()
    assert len(got.steps) == len(want.steps) and (len(got.steps) == 6 or got.stop_reason == "eos")
    assert [st.token_id for st in got.steps] == [st.token_id for st in want.steps]
    assert got.text == want.text and got.text.strip()
    assert [r.step for r in got.lens] == [st.index for st in got.steps]  # (the logit lens of every step, by default)


def test_trace_raw_mode(client):
    got = trace_io.loads(Path(call_trace(client, prompt="The sky is", mode="raw", temperature=0, max_new_tokens=2)).read_bytes())
    assert got.settings.chat is False and got.settings.system_prompt is None and len(got.steps) <= 2
    bare = trace_io.loads(Path(call_trace(client, prompt="The sky is", mode="raw", temperature=0, max_new_tokens=2, lens=False)).read_bytes())
    assert bare.lens == () and len(got.lens) == len(got.steps) and bare.text == got.text


@pytest.mark.parametrize("kw, says", [
    (dict(prompt="   "), "prompt is empty"),
    (dict(prompt="Hi", mode="poem"), "poem is not in the list of choices: ['chat', 'raw']"),  # (Gradio's own check)
    (dict(prompt="Hi", temperature=-1), "temperature must be"),
    (dict(prompt="Hi", max_new_tokens=100000), "max new tokens must be between 1 and 512"),
    (dict(prompt="Hi", top_p=7), "top-p must be in (0, 1]"),
    (dict(prompt="Hi", top_k=-5), "top-k must be a whole number, 0 (off) or more"),
    (dict(prompt="Hi", seed=-3), "the seed must be a whole number, 0 or more"),
])
def test_bad_input_gives_a_clear_error(client, kw, says):
    with pytest.raises(Exception) as e:
        call_trace(client, **kw)
    assert says in str(e.value).lower(), str(e.value)


def test_the_pages_events_are_not_callable_by_name(client):
    with pytest.raises(ValueError, match="Cannot find a function"):
        client.predict("hi", api_name="/generate")

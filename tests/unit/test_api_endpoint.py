"""/trace as a gr.api endpoint (ui/api.py), without a model: what /gradio_api/info says, that no
component of the page is made for it, its concurrency group, and, over HTTP with gradio_client,
the file it returns and the sentences it refuses with."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import gradio as gr
import pytest
from gradio_client import Client

from pipeline.errors import SettingsError
from ui import api, downloads

PARAMS = ["prompt", "mode", "system_prompt", "temperature", "top_k", "top_p", "seed", "max_new_tokens", "min_p", "repetition_penalty", "lens"]
DEFAULTS = [None, "chat", "", 0.7, 0, 0.9, 0, 64, 0.0, 1.0, True]
LIMIT = 512  # (ui/model.py's MAX_NEW_TOKENS)


class Gen:
    """A generation of no steps: run_trace iterates it and asks for its trace."""

    def __init__(self, prompt, settings):
        self.prompt, self.settings = prompt, settings

    def __iter__(self):
        return iter(())

    def trace(self):
        return self


def fake_start_run(prompt, settings, prev, cont, n_new, spec):
    if not 1 <= n_new <= LIMIT:  # (ui/model.py start_run's own check and words)
        raise SettingsError(f"max new tokens must be between 1 and {LIMIT} on this page, not {n_new}")
    return None, Gen(prompt, settings)


def fake_write_download(lm, gen, folder: Path, *, lens: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    s = gen.settings
    path = folder / "trace-test.json.gz"
    path.write_bytes(gzip.compress(json.dumps(dict(prompt=gen.prompt, chat=s.chat, system=s.system_prompt, seed=s.seed,
                                                   top_k=s.top_k, max_new_tokens=s.max_new_tokens, min_p=s.min_p,
                                                   repetition_penalty=s.repetition_penalty, lens=lens)).encode()))
    return path


def build(folder: Path) -> tuple[gr.Blocks, list]:
    """A page of one event, published: (the page, the blocks publish added)."""
    with gr.Blocks() as demo:
        box = gr.Textbox(elem_id="page-box")
        gr.Button("Generate").click(lambda: "hi", None, box, api_name="generate")
    before = set(demo.blocks)
    api.publish(demo, fake_start_run, folder, LIMIT)
    return demo, [demo.blocks[i] for i in set(demo.blocks) - before]


def test_info_shows_only_trace_with_its_parameters_described(tmp_path):
    demo, _ = build(tmp_path)
    info = demo.get_api_info()
    assert list(info["named_endpoints"]) == ["/trace"] and info["unnamed_endpoints"] == {}
    ep = info["named_endpoints"]["/trace"]
    ps = ep["parameters"]
    assert [p["parameter_name"] for p in ps] == PARAMS
    assert [p["parameter_default"] for p in ps] == DEFAULTS
    assert [p["parameter_has_default"] for p in ps] == [False] + [True] * 10
    assert [p["python_type"]["type"] for p in ps] == ["str", "Literal['chat', 'raw']", "str", "float", "int", "float", "int", "int", "float", "float", "bool"]
    assert ps[1]["type"]["enum"] == ["chat", "raw"]  # (scripts/classroom_load.py fill_args matches choices by it)
    assert [p["label"] for p in ps] == list(api.labels(LIMIT).values())
    assert ps[7]["label"] == f"max_new_tokens (1 to {LIMIT})"
    assert "trace file" in ep["description"] and "llm-pipeline-trace/2" in ep["description"]
    assert [(r["label"], r["python_type"]["type"]) for r in ep["returns"]] == [(api.RETURN_LABEL, "filepath")]


def test_no_component_of_the_page_is_made_and_trace_shares_generates_slots(tmp_path):
    demo, added = build(tmp_path)
    assert {type(b).__name__ for b in added} == {"Api"}  # (gr.api's placeholders: nothing drawn, nothing hidden)
    assert len(added) == len(PARAMS) + 1
    trace = next(f for f in demo.fns.values() if f.api_name == "trace")
    page = next(f for f in demo.fns.values() if f.api_name == "generate")
    from ui.api import GENERATE_SLOTS

    assert (trace.concurrency_limit, trace.concurrency_id) == (GENERATE_SLOTS, "generate") and GENERATE_SLOTS >= 30  # (a class at once)
    assert (trace.api_visibility, page.api_visibility) == ("public", "private")
    assert not trace.targets  # (no button: called by name only)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    patch.setattr(downloads, "write_download", fake_write_download)
    demo, _ = build(tmp_path_factory.mktemp("api"))
    demo.queue().launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        yield Client(demo.local_url, verbose=False, download_files=str(tmp_path_factory.mktemp("got")))
    finally:
        demo.close()
        patch.undo()


def test_trace_returns_a_local_path_to_the_file(served):
    path = served.predict(prompt="Hi", system_prompt="Be brief.", top_k=2.6, seed=7, max_new_tokens=6, api_name="/trace")
    assert isinstance(path, str) and path.endswith(".json.gz") and Path(path).is_file()
    got = json.loads(gzip.decompress(Path(path).read_bytes()))
    assert got == dict(prompt="Hi", chat=True, system="Be brief.", seed=7, top_k=3, max_new_tokens=6, min_p=0.0,
                       repetition_penalty=1.0, lens=True)  # (whole numbers rounded, as gr.Number did; the lens by default)
    samplers = json.loads(gzip.decompress(Path(served.predict(prompt="Hi", min_p=0.05, repetition_penalty=1.3, api_name="/trace")).read_bytes()))
    assert (samplers["min_p"], samplers["repetition_penalty"]) == (0.05, 1.3)
    raw = json.loads(gzip.decompress(Path(served.predict(prompt="Hi", mode="raw", api_name="/trace")).read_bytes()))
    assert (raw["chat"], raw["system"], raw["max_new_tokens"]) == (False, None, 64)
    bare = json.loads(gzip.decompress(Path(served.predict(prompt="Hi", lens=False, api_name="/trace")).read_bytes()))
    assert bare["lens"] is False


@pytest.mark.parametrize("kw, says", [
    (dict(prompt="   "), "the prompt is empty"),
    (dict(prompt="Hi", mode="poem"), "poem is not in the list of choices: ['chat', 'raw']"),
    (dict(prompt="Hi", temperature=-1), "temperature must be"),
    (dict(prompt="Hi", temperature="hot"), "not a number"),
    (dict(prompt="Hi", max_new_tokens=100000), f"max new tokens must be between 1 and {LIMIT}"),
    (dict(prompt="Hi", top_p=7), "top-p must be in (0, 1]"),
    (dict(prompt="Hi", top_k=-5), "top-k must be a whole number, 0 (off) or more"),
    (dict(prompt="Hi", seed=-3), "the seed must be a whole number, 0 or more"),
    (dict(prompt="Hi", min_p=1.5), "min-p must be in [0, 1]"),
    (dict(prompt="Hi", repetition_penalty=0), "repetition penalty must be a positive number"),
    (dict(prompt="Hi", lens="yes"), "lens must be true or false, not 'yes'"),
])
def test_bad_input_comes_back_as_the_sentence(served, kw, says):
    with pytest.raises(Exception) as e:
        served.predict(api_name="/trace", **kw)
    msg = str(e.value)
    assert says in msg.lower(), msg
    assert msg[:1].isupper() and msg.endswith("."), msg  # (messages.sentence)


def test_the_page_events_are_not_callable_by_name(served):
    with pytest.raises(ValueError, match="Cannot find a function"):
        served.predict(api_name="/generate")

"""The app's scripting API: one documented endpoint, /trace; every event of the page itself hidden.

The page's own events (a slider moved, a tab opened, Generate) stay callable by the page, which
calls them by number through the queue; with api_visibility "private" they are left out of
/gradio_api/info, the page's "Use via API" and gradio_client's view_api (Gradio 6 checks the
setting only there). /trace is a `gr.api` endpoint (no Textbox, Number or File of its own: its
parameters come from the type hints of its function, held by gr.api's placeholders, gr.Api, which
nothing draws); it runs a generation with the loaded model,
in the same concurrency group as the page's Generate (so it waits for a slot like a click does),
and returns its trace file as a `gr.FileData`, which Gradio serves as a file (gradio_client
downloads it and returns the local path).

    from gradio_client import Client
    path = Client("http://127.0.0.1:7860/").predict(prompt="Why is the sky blue?", temperature=0, api_name="/trace")
    trace = trace_io.loads(open(path, "rb").read())  # from pipeline.trace import files as trace_io
"""
# (No `from __future__ import annotations` here: gr.api reads the return annotation of /trace's
# function as written, and only the class FileData itself, not its name, makes the result a file.)
import inspect
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Literal

import gradio as gr
from gradio import FileData

from ui import downloads, messages, run_inputs
from pipeline.errors import SettingsError
from pipeline.generate import validate
from ui.links import MAX_TEXT

API_NAME = "trace"
MODES = {"chat": "Chat", "raw": "Raw text"}  # the API's mode -> the page's
# The page's Generate, +1 token, re-sample, a branch (ui/wiring.py) and /trace share these slots: a class of 30 runs at
# once, each generation a row of the model's one decode loop (pipeline.batching). Bounded by memory: a running 64-token
# generation holds 23.8 MB of records (logits, attention, residuals; measured) and 4.6 MB of KV cache, so 32 slots hold
# ~0.9 GB at most (docs/benchmarks.md, "A class generating at once"); a 33rd visitor waits in Gradio's queue.
GENERATE_SLOTS = 32
GENERATE_GROUP = dict(concurrency_limit=GENERATE_SLOTS, concurrency_id="generate")
HEAVY_GROUP = dict(concurrency_limit=4, concurrency_id="heavy")  # Draw many, the ablation maps: many passes a click, each under the model's lock
KEEP_S = 600  # a call's folder is removed this long after (Gradio has copied the file to its cache by then)


def call_folder(root: Path) -> Path:
    """A new folder for one call's file (calls of one client may run at once), after removing the
    folders of calls older than KEEP_S."""
    root.mkdir(parents=True, exist_ok=True)
    for old in root.iterdir():
        if old.is_dir() and time.time() - old.stat().st_mtime > KEEP_S:
            shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix="call-", dir=root))


def hide_internal(demo: gr.Blocks, keep: tuple[str, ...] = (API_NAME,)) -> list[str]:
    """Make every event of `demo` but the `keep` ones private (left out of the API's docs and
    info; the page still calls them). Returns the api names hidden."""
    hidden = []
    for fn in demo.fns.values():
        if fn.api_name not in keep and fn.api_visibility != "private":
            fn.api_visibility = "private"
            hidden.append(str(fn.api_name))
    demo.config = demo.get_config_file()  # (launch builds it again; this keeps an unlaunched one in step)
    return hidden


def run_trace(start_run: Callable, folder: Path, prompt, mode, system_prompt, temperature, top_k, top_p, seed,
              max_new_tokens, min_p=0.0, repetition_penalty=1.0, lens=True) -> Path:
    """One generation to its end, written as a trace file into `folder` (with the logit lens of every step
    unless `lens` is false); SettingsError (with the reason) for bad input or a model not loaded.
    `start_run(prompt, settings, prev, cont, n_new, spec)` is ui/model.py's start_run: the page's own checks and limits."""
    if not isinstance(lens, bool):
        raise SettingsError(f"lens must be true or false, not {lens!r}")
    page_mode = MODES.get(mode) if isinstance(mode, str) else None
    if page_mode is None:  # (the words of the gr.Dropdown /trace had before, which clients may look for)
        raise SettingsError(f"mode must be \"chat\" or \"raw\": {mode} is not in the list of choices: {list(MODES)}")
    if not isinstance(prompt, str) or not prompt.strip():
        raise SettingsError("the prompt is empty: give some text for the model to continue")
    for name, text in (("prompt", prompt), ("system prompt", system_prompt or "")):
        if not isinstance(text, str) or len(text) > MAX_TEXT:  # the bound a link has too (ui/links.py)
            raise SettingsError(f"the {name} is longer than {MAX_TEXT} characters: shorten it")
    settings = run_inputs.settings_from_inputs(page_mode, system_prompt, temperature, top_k, top_p, seed, max_new_tokens, min_p=min_p,
                                               repetition_penalty=repetition_penalty)
    validate(settings)  # (before the model's slot is taken)
    lm, gen = start_run(prompt, settings, None, None, settings.max_new_tokens, (False, 0, None))
    for _ in gen:
        pass
    return downloads.write_download(lm, gen.trace(), folder, lens=lens)


def labels(max_new_tokens: int) -> dict[str, str]:
    """/trace's parameters as /gradio_api/info and "Use via API" describe them (each one's label)."""
    return {"prompt": "prompt (the text the model continues)", "mode": "mode (chat or raw)",
            "system_prompt": "system_prompt (chat mode; empty: the template's own)",
            "temperature": "temperature (0 = greedy, up to 2)", "top_k": "top_k (0 = off)", "top_p": "top_p (1 = off)",
            "seed": "seed", "max_new_tokens": f"max_new_tokens (1 to {max_new_tokens})", "min_p": "min_p (0 = off, up to 1)",
            "repetition_penalty": "repetition_penalty (1 = off)",
            "lens": "lens (the logit lens of every step in the file; false: left out, a third less work)"}


RETURN_LABEL = "trace file (.json.gz)"


def as_text(x):
    """A text parameter as a gr.Textbox hands it on (None stays None; anything else as its str)."""
    return None if x is None else str(x)


def as_whole(x):
    """A whole-number parameter as a gr.Number(precision=0) hands it on: a finite number rounded
    (2.6 -> 3); anything else as it came, for run_trace to refuse with its reason."""
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
        return int(round(x))
    return x


def add_trace_endpoint(demo: gr.Blocks, start_run: Callable, folder: Path, max_new_tokens: int):
    """Add /trace to `demo` with gr.api: its parameters are `trace`'s (names, type hints, defaults),
    described by `labels`; it returns the trace file. `max_new_tokens`: the page's limit (start_run
    refuses more, with the reason)."""
    described = labels(max_new_tokens)

    def trace(prompt: str, mode: Literal["chat", "raw"] = "chat", system_prompt: str = "", temperature: float = 0.7,
              top_k: int = 0, top_p: float = 0.9, seed: int = 0, max_new_tokens: int = 64, min_p: float = 0.0,
              repetition_penalty: float = 1.0, lens: bool = True) -> FileData:
        """Generate text from `prompt` with the app's loaded model and return the trace file (.json.gz,
        format llm-pipeline-trace/2: every step's token, candidates, attention and inside-the-model data;
        read it with pipeline.trace.files.loads). mode: "chat" (the chat template, with system_prompt; empty: the
        template's own) or "raw" (the text as it is). temperature 0 is greedy; top_k 0, top_p 1, min_p 0 and
        repetition_penalty 1 are off (stages in transformers' order: repetition penalty, temperature, top-k, top-p,
        min-p); seed fixes the sampling. lens false leaves the logit lens out of the file (the read-out of every
        layer at every step: a third of a 32-token call's work; the file cannot have it back, and the page's Inside
        tab says so). Waits for a free generation slot, like the page's Generate."""
        try:
            path = run_trace(start_run, call_folder(folder / "api"), as_text(prompt), mode, as_text(system_prompt),
                             temperature, as_whole(top_k), top_p, as_whole(seed), as_whole(max_new_tokens), min_p, repetition_penalty, lens)
        except SettingsError as e:
            raise gr.Error(messages.sentence(e)) from e
        return FileData(path=str(path), orig_name=path.name)  # (Gradio copies it to its cache and serves it)

    with demo:
        dep = gr.api(trace, api_name=API_NAME, **GENERATE_GROUP)
    # gr.api labels its parameters "1st", "2nd"...: each one's description instead, as the info shows it
    for block_id, name in zip(dep["inputs"], inspect.signature(trace).parameters, strict=True):
        demo.blocks[block_id].label = described[name]
    demo.blocks[dep["outputs"][0]].label = RETURN_LABEL
    return demo


def publish(demo: gr.Blocks, start_run: Callable, folder: Path, max_new_tokens: int) -> gr.Blocks:
    """The page's API as offered: /trace, and nothing of the page's own events."""
    add_trace_endpoint(demo, start_run, folder, max_new_tokens)
    hide_internal(demo)
    return demo

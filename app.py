"""The live visualizer: a Gradio page over a real model, traced through forward hooks.

Layout and listeners only. The model is the one global; each person's trace lives in
gr.State. Data flows pipeline -> records -> viz -> here.

    python app.py [--model HUB_ID_OR_DIR] [--port 7860] [--host 127.0.0.1] [--share]

Environment: LLM_VIZ_DOWNLOAD_DIR=DIR holds the folder of trace files made for download (default:
the system's temporary folder); that folder is removed at exit. For tests: LLM_VIZ_LOAD_GATE=PATH holds the model's loading
until that file exists, so a test can act while the model is still loading (as the first visitor
of a waking Space does).
"""
from __future__ import annotations

import argparse
import html
import atexit
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

import gradio as gr

from pipeline import gallery, session, trace_io
from pipeline.records import Trace
from pipeline.errors import SettingsError, TraceFormatError
from viz import branches as branches_viz
from viz import page
from viz import tour as tour_viz
from viz.captions import CAPTIONS
from ui import api, links
from ui.step_slider import StepSlider
from ui import viewer_wiring as viewer

ROOT = Path(__file__).resolve().parent
EXAMPLE = ROOT / "assets" / "example_trace.json.gz"
CSS = (ROOT / "assets" / "style.css").read_text(encoding="utf-8")
PAGE_JS = (ROOT / "assets" / "page.js").read_text(encoding="utf-8")
# While streaming, the figures refresh at most this often (seconds): the distribution, and the
# heavy ones (attention, embeddings, KV). Text and token chips follow every token.
DIST_EVERY_S = float(os.environ.get("LLM_VIZ_DIST_EVERY_S", 1.0))
HEAVY_EVERY_S = float(os.environ.get("LLM_VIZ_HEAVY_EVERY_S", 4.0))
MAX_NEW_TOKENS = 512
# Longer prompts work in the pipeline, but a CPU prefill with every attention map captured
# grows with the square of the length: the page keeps a class's wait short.
MAX_PROMPT_TOKENS = int(os.environ.get("LLM_VIZ_MAX_PROMPT_TOKENS", 2048))


# -- the model (the only global) ---------------------------------------------------------------
class ModelHolder:
    """Loads the model in the background so the page (with the example trace) is up at once."""

    def __init__(self, spec: str | None):
        self.spec, self.lm, self.error, self.status = spec, None, None, "loading the model ..."
        self.ready = threading.Event()

    def start(self) -> "ModelHolder":
        threading.Thread(target=self._load, daemon=True).start()
        return self

    def _load(self):
        from pipeline.loading import load_model

        gate = os.environ.get("LLM_VIZ_LOAD_GATE")
        while gate and not Path(gate).exists():  # tests: loading waits until the file appears
            time.sleep(0.2)
        try:
            self.lm = load_model(self.spec, progress=self._progress)
            self.status = page.model_markdown(self.lm.info)
        except Exception as e:  # shown on the page; the example trace stays explorable
            self.error = str(e)
            self.status = f"**Model failed to load:** {e}"
        finally:
            self.ready.set()

    def _progress(self, msg: str):
        print(msg, flush=True)
        self.status = f"_{msg.strip()}_"

    def get(self):
        if not self.ready.wait(timeout=3):
            raise SettingsError(f"the model is still loading ({self.status.strip('_')}); the example trace below "
                                "can be explored meanwhile: try Generate again in a moment")
        if self.lm is None:
            raise SettingsError(f"the model could not be loaded: {self.error}. Restart the app with --model "
                                "pointing at a working model")
        return self.lm


HOLDER: ModelHolder | None = None


def example_trace() -> Trace | None:
    try:
        return trace_io.load(EXAMPLE)
    except (OSError, TraceFormatError) as e:
        print(f"example trace unavailable: {e}", flush=True)
        return None


# -- helpers ----------------------------------------------------------------------------------
def _unchanged() -> dict:
    """An update that changes nothing (Gradio reads an empty dict as one missing value)."""
    return {C["output"]: gr.skip()}


def _view(trace: Trace | None, step, layer, head, temperature, top_k, top_p, *, heavy=True, only=None) -> dict:
    """Every panel for one step of a trace (or the `only` ones), as {component: value}."""
    if trace is None:
        return {}
    out = page.render(trace, step=step, layer=layer, head=head, temperature=temperature, top_k=top_k, top_p=top_p, heavy=heavy, only=only)
    return {C[k]: v for k, v in out.items()}


def _slider(trace: Trace | None, value=None):
    n = len(trace.steps) if trace else 0
    top = max(n - 1, 0)
    v = top if value is None else max(0, min(int(value), top))
    # a Gradio slider needs minimum < maximum: with one step or none it shows 0..1, locked
    return gr.Slider(minimum=0, maximum=max(top, 1), value=v, step=1, interactive=n > 1)


def _layer_head_choices(trace: Trace | None):
    L = trace.model.n_layers if trace else 1
    H = trace.model.n_heads if trace else 1
    return gr.Dropdown(choices=list(range(L))), gr.Dropdown(choices=["all"] + list(range(H)))


# a folder of our own (inside LLM_VIZ_DOWNLOAD_DIR when set), removed at exit
DOWNLOADS = Path(tempfile.mkdtemp(prefix="llm-viz-traces-", dir=os.environ.get("LLM_VIZ_DOWNLOAD_DIR") or None))
atexit.register(shutil.rmtree, DOWNLOADS, ignore_errors=True)
DOWNLOAD = "Download trace"


def download_click(trace: Trace | None, request: gr.Request = None):
    """The trace file, built now that someone asked for it (the logit lens of every step is computed
    here, not after every run), into the hidden download button that the page's script then clicks."""
    if not trace or not trace.steps:
        yield {C["download_file"]: None}
        return
    yield {C["download"]: gr.Button("Preparing the file …", interactive=False), C["download_file"]: None}
    folder = DOWNLOADS / (getattr(request, "session_hash", None) or "shared")
    try:
        path = str(session.write_download(_lm(), trace, folder))
    except (OSError, SettingsError) as e:
        gr.Warning(f"Could not write the trace file: {session.sentence(e)}")
        path = None
    yield {C["download"]: gr.Button(DOWNLOAD, interactive=True), C["download_file"]: path}


# -- listeners --------------------------------------------------------------------------------
DRAFTS: dict = {}  # (target id, draft spec) -> Draft, made once (a model draft loads once)
DRAFT_MODEL = os.environ.get("LLM_VIZ_DRAFT_MODEL")  # a smaller model with the same tokenizer, offered as a draft
SPEC_COST_FILE = ROOT / "assets" / "speculative_cost.json"  # `python -m pipeline bench --cost-curve --json` on this machine


def _spec_cost():
    from pipeline.speculative_cost import from_json

    return from_json(SPEC_COST_FILE.read_text(encoding="utf-8")) if SPEC_COST_FILE.exists() else None


def _draft(lm, spec: str):
    from pipeline.draft import DEFAULT_DRAFT, make_draft

    spec = (spec or "").strip() or DEFAULT_DRAFT
    key = (lm.info.id, spec)
    if key not in DRAFTS:
        DRAFTS[key] = make_draft(lm, spec)
    return DRAFTS[key]


def _start_run(prompt, settings, prev: Trace | None, cont: dict | None, n_new: int, spec: tuple):
    """(lm, the generation a click asks for): a fresh one (`cont` None; speculative when `spec`'s
    first item is on), or one going on from the trace on screen (pipeline.continuation)."""
    lm = HOLDER.get()
    if not 1 <= n_new <= MAX_NEW_TOKENS:
        raise SettingsError(f"max new tokens must be between 1 and {MAX_NEW_TOKENS} on this page, not {n_new}")
    spec_on, spec_k, spec_draft = spec
    if cont is not None:  # +1 token, re-sample, branch: as one longer run would have written it
        from pipeline.continuation import continue_generation

        gen = continue_generation(lm, prev, settings, n_new=n_new, **cont)
    elif spec_on:
        from pipeline.speculative import start_speculative

        gen = start_speculative(lm, prompt, replace(settings, max_new_tokens=n_new), k=spec_k, draft=_draft(lm, spec_draft))
    else:
        from pipeline.generate import start

        gen = start(lm, prompt, replace(settings, max_new_tokens=n_new))
    if len(gen.prompt.token_ids) > MAX_PROMPT_TOKENS:
        raise SettingsError(f"the prompt is {len(gen.prompt.token_ids)} tokens; this page takes up to {MAX_PROMPT_TOKENS} "
                            "(every attention map of the prompt is drawn): shorten it")
    return lm, gen


def _streamed(trace: Trace, i: int, layer, head, temperature, top_k, top_p, live: bool, clock: dict) -> dict:
    """The update for step `i` while streaming: the text and the token chips every token, figures at
    a bounded rate (drawing them costs the browser far more than the model's step)."""
    now = time.perf_counter()
    out = {state_c: trace, C["output"]: page.output_only(trace, step=i), C["tokens"]: page.tokens_only(trace, step=i),
           C["slider"]: _slider(trace)}
    if trace.speculative:
        out[C["spec"]] = page.speculative.rounds_html(trace.rounds, step=i, pieces=page.context_pieces(trace))
    if not live:  # text only while generating: the model runs at full speed on a small machine
        pass
    elif now - clock["heavy"] >= HEAVY_EVERY_S:
        clock["heavy"] = clock["dist"] = now
        out.update(_view(trace, i, layer, head, temperature, top_k, top_p, heavy=True))
    elif now - clock["dist"] >= DIST_EVERY_S:
        clock["dist"] = now
        out[C["dist"]] = page.distribution_only(trace, step=i, temperature=temperature, top_k=top_k, top_p=top_p)
    return out


def stream(prompt, system, mode, temperature, top_k, top_p, seed, max_new, layer, head, live, spec_on, spec_k, spec_draft, state,
           cont: dict | None = None, one_step=False):
    """Generate and stream: cheap panels every token, heavy ones at a bounded rate, `finish` draws all
    at the end. `cont`: go on from the trace on screen, as pipeline.continuation.continue_generation's
    keywords ({"start_step": None} after its last step; a step to re-sample from; with "force_rank",
    a branch); `one_step`: one token."""
    prev: Trace | None = state
    try:
        settings = session.settings_from_inputs(mode, system, temperature, top_k, top_p, seed, max_new)
        n_new = 1 if one_step else session.tokens_to_make(prev, cont, settings.max_new_tokens)
        spec = (bool(spec_on) and cont is None and not one_step, spec_k, spec_draft)  # +1 token and re-sample stay plain
        lm, gen = _start_run(prompt, settings, prev, cont, n_new, spec)
    except SettingsError as e:
        # a warning, not an error: the panels keep what they show, and nothing typed is touched
        yield _refused(e)
        return
    trace, kept = gen.trace(), getattr(gen, "kept", ())
    layers, heads = _layer_head_choices(trace)  # (after a loaded trace of another model)
    first = {C["ran"]: True, state_c: trace, C["viewer_data"]: viewer.live_message(), C["download"]: gr.Button(DOWNLOAD, interactive=False), C["info"]: HOLDER.status,
             C["layer"]: layers, C["head"]: heads,
             C["spec_summary"]: page.speculative_summary_html(trace), C["spec"]: page.speculative.rounds_html(())}
    if kept:  # continuing: the kept steps stay on screen
        first.update(_view(trace, len(kept) - 1, layer, head, temperature, top_k, top_p))
        first[C["slider"]] = _slider(trace)
    else:
        first.update({C["output"]: page.output_only(trace), C["tokens"]: page.tokens_only(trace)})
    yield first
    if kept and kept[-1].stop_reason == "eos":  # a forced end of sequence: nothing follows
        return
    clock = dict(dist=time.perf_counter(), heavy=time.perf_counter())  # the first token goes out as text, at once
    for _ in gen:  # a plain generation yields steps; a speculative one rounds of 1 to k+1 steps
        trace = gen.trace()
        yield _streamed(trace, len(trace.steps) - 1, layer, head, temperature, top_k, top_p, live, clock)
    if trace.speculative and trace.steps:
        yield {C["spec_summary"]: page.speculative_summary_html(trace) + "<p><i>Measuring plain decoding of the same prompt and "
               "settings, for the speed-up …</i></p>"}
        speed = session.speed_against_plain(lm, trace)
        yield {C["spec_summary"]: page.speculative_summary_html(trace, speed)}


def _refused(e: Exception) -> dict:
    """A refused run: the warning, and one update that changes nothing but the `ran` flag. (A
    generator that yields nothing makes Gradio set every output to None: an empty step slider.)"""
    gr.Warning(session.sentence(e))
    return {C["ran"]: False}


def finish(ran, trace, step, layer, head, temperature, top_k, top_p):
    """After streaming ends or is stopped: every panel for the last step. Nothing when the run was refused."""
    if not ran or trace is None:
        return _unchanged()
    step = len(trace.steps) - 1
    return {**_view(trace, step, layer, head, temperature, top_k, top_p), C["slider"]: _slider(trace, step),
            C["download"]: gr.Button(DOWNLOAD, interactive=bool(trace.steps)), C["bundle_req"]: f"{id(trace)}:{time.time()}"}


# -- inside the model: one tab at a time, the one open, for the step on screen ----------------
SAMPLING_ROWS = ((1.0, 0, 1.0), (0.7, 0, 0.9), (0.3, 0, 1.0))  # temperature, top-k, top-p of the side-by-side columns
INSIDE = {"lens": ("lens_html", "lens_plot"), "residual": ("resid_plot", "contrib_plot"), "position": ("pos_plot",), "kvc": (),
          "accounting": ("acc_html", "acc_plot"), "sampling": ("cmp_plot",), "branches": (), "bytes": ("bytes_html",),
          "context": ("ctx_html", "ctx_plot")}


def _lm():
    """The loaded model, or None while it loads (or when it failed to load)."""
    return HOLDER.lm if HOLDER is not None else None


def _same_model(trace: Trace | None):
    """The loaded model when it is the one that made `trace` (so its weights can answer for it)."""
    return session.same_model(_lm(), trace)


def _note(text: str) -> str:
    return f"<p class='inside-note'>{html.escape(text)}</p>"


def _no_lens(trace: Trace) -> str:
    """Why the logit lens of a step cannot be shown, and what to do."""
    lm = _lm()
    if lm is not None and _same_model(trace) is None:
        return (f"This trace was made by {trace.model.id}, not by the loaded model ({lm.info.id}), and was saved without its "
                "logit lens: the lens needs the final norm and LM head of the model that made it. Start the app with that "
                "model (--model) to see it, or generate with this one.")
    if lm is None and not trace.lens:
        return "The logit lens runs the model's final norm and LM head: it appears here once the model has loaded."
    return ("The logit lens needs this step's hidden states. They are captured while the model generates, and a trace "
            "downloaded from this page carries the lens of every step: generate with the model, or load such a trace.")


def inside_view(tab, trace, step, *rest) -> dict:
    """The open tab of "Inside the model" for the step on screen, as {component: value}."""
    from viz import bytes_view, compute, context, lens as lens_viz, position as pos_viz, residual, sampling_compare

    if trace is None or not trace.steps or tab not in INSIDE or not INSIDE[tab]:
        return {C["lens_html"]: gr.skip()}  # (an empty dict would read as one missing value)
    cmp, (price_in, price_out, seed) = rest[:9], rest[9:12]
    s = max(0, min(int(step or 0), len(trace.steps) - 1))
    st = trace.steps[s]
    out = {}
    try:
        if tab == "lens":
            rec = session.LENS.get(_lm(), trace, st)
            out = {C["lens_html"]: lens_viz.lens_summary_html(rec, forced=st.forced),
                   C["lens_plot"]: lens_viz.logit_lens_figure(rec, trace.model.n_layers, forced=st.forced)} \
                if rec is not None else {C["lens_html"]: _note(_no_lens(trace)), C["lens_plot"]: None}
        elif tab == "residual":
            label = f"step {st.index}"
            out = {C["resid_plot"]: residual.residual_path_figure(st.resid_2d, st.resid_norm, st.update_norm, piece=st.context_pieces[-1], step=st.index)
                   if st.resid_2d is not None else None,
                   C["contrib_plot"]: residual.contributions_figure(st.attn_out_norm, st.mlp_out_norm, st.resid_norm, st.update_norm,
                                                                    piece=st.context_pieces[-1], step=st.index)}
            if st.resid_2d is None:
                gr.Info(f"This trace has no residual path for {label} (it was saved before the path was recorded): generate again to see it.")
        elif tab == "position":
            pos = session.position_for(_lm(), trace)
            out = {C["pos_plot"]: pos_viz.position_figure(pos, list(st.context_pieces)) if pos is not None else None}
        elif tab == "accounting":
            acc = None if trace.speculative else session.accounting_for(_lm(), trace)
            if trace.speculative:  # its steps came k + 1 at a time from rounds of draft and verify passes
                out = {C["acc_html"]: _note("This generation was speculative: its tokens came from rounds of draft passes and one "
                                            "verify pass each (section 7), not one pass per token, so a per-step account of one "
                                            "pass would not be true of it. Generate without speculative decoding to see it."),
                       C["acc_plot"]: None}
            elif acc is None:
                out = {C["acc_html"]: _note("This trace holds no parameter counts and was made by another model: load that model "
                                            "to see its compute and memory accounting."), C["acc_plot"]: None}
            else:
                recs, machine, params = acc
                out = {C["acc_html"]: compute.accounting_html(recs[s], machine, params, trace.model), C["acc_plot"]: compute.accounting_figure(recs, s)}
        elif tab == "sampling":
            if any(v in (None, "") for v in cmp):
                raise SettingsError("each of the three columns needs a temperature, a top-k and a top-p")
            rows = [dict(temperature=float(cmp[3 * n]), top_k=int(cmp[3 * n + 1]), top_p=float(cmp[3 * n + 2])) for n in range(3)]
            out = {C["cmp_plot"]: sampling_compare.sampling_compare_figure(st, rows, vocab_size=trace.model.vocab_size,
                                                                            repetition_penalty=trace.settings.repetition_penalty, seed=int(seed or 0))}
        elif tab == "bytes":
            out = {C["bytes_html"]: bytes_view.bytes_html(trace.prompt, trace.steps, s)}
        elif tab == "context":
            pin = float(price_in) if price_in not in (None, "") else None
            pout = float(price_out) if price_out not in (None, "") else None
            out = {C["ctx_html"]: context.context_html(trace, s, price_in_per_m=pin, price_out_per_m=pout), C["ctx_plot"]: context.context_figure(trace, s)}
    except (SettingsError, ValueError, TypeError) as e:
        gr.Warning(session.sentence(e))
        return {C["lens_html"]: gr.skip()}  # (an empty dict would read as one missing value)
    return out or {C["lens_html"]: gr.skip()}


def kv_compare_click(trace, step):
    from pipeline import inside
    from viz import compute

    lm = _same_model(trace)
    if trace is None or not trace.steps:
        return gr.skip(), gr.skip()
    if lm is None:
        gr.Warning("Recomputing a step needs the model that made this trace; it is not the one loaded (or it is still loading).")
        return gr.skip(), gr.skip()
    s = max(0, min(int(step or 0), len(trace.steps) - 1))
    kvc = inside.kv_compare(lm, trace, trace.steps[s].index)
    pieces = [lm.tokens.piece(int(i)) for i in kvc.top_ids]
    return compute.kv_compare_html(kvc, pieces), compute.kv_compare_figure(kvc, pieces)


def swap_click(trace, i, j):
    from pipeline import inside
    from viz import position as pos_viz

    lm = _same_model(trace)
    if trace is None or lm is None:
        gr.Warning("Swapping tokens runs the model: it must be the model that made this trace, and loaded.")
        return gr.skip(), gr.skip(), gr.skip()
    try:
        if i in (None, "") or j in (None, "") or int(i) == int(j):  # two words of what the person typed
            i, j = session.default_swap(trace)
        swap = inside.swap_demo(lm, list(trace.prompt.token_ids), int(i), int(j))
    except (SettingsError, ValueError) as e:
        gr.Warning(session.sentence(e))
        return gr.skip(), gr.skip(), gr.skip()
    return pos_viz.swap_figure(swap), int(i), int(j)


def load_trace(file, layer, head, temperature, top_k, top_p, request: gr.Request = None):
    """An uploaded trace file onto the page (or a Trace already read: a gallery one, shared by every session)."""
    if file is None:
        return _unchanged()
    if isinstance(file, Trace):
        trace = file
    else:
        try:
            trace = trace_io.load(file if isinstance(file, str) else getattr(file, "name", str(file)))  # .json(.gz), /1 or /2
        except (OSError, EOFError, TraceFormatError) as e:
            gr.Warning(f"Could not read that trace: {e}")
            return _unchanged()
    if not trace.steps:
        gr.Warning("That trace holds no generated steps.")
        return _unchanged()
    L, H = _layer_head_choices(trace)
    s = trace.settings
    return {
        state_c: trace, **_view(trace, len(trace.steps) - 1, 0, "all", s.temperature, s.top_k, s.top_p),
        C["slider"]: _slider(trace), C["layer"]: gr.Dropdown(choices=list(range(trace.model.n_layers)), value=0),
        C["head"]: gr.Dropdown(choices=["all"] + list(range(trace.model.n_heads)), value="all"),
        C["temperature"]: s.temperature, C["top_k"]: s.top_k, C["top_p"]: s.top_p, C["seed"]: s.seed,
        C["info"]: page.model_markdown(session.known_weights(trace.model, _lm()), loaded_from_file=True), C["download"]: gr.Button(DOWNLOAD, interactive=True),
        C["spec_summary"]: page.speculative_summary_html(trace),
    }


def viewer_calls(view_in, inside_in, inside_out, inside_kw):
    """The server calls the page's step viewer still makes: one per change of layer, head or overview
    metric, and one after the step slider settles (the light panels and the open inside tab)."""
    for k in ("layer", "head"):
        C[k].input(viewer.attention_message, [state_c, C["layer"], C["head"]], C["viewer_data"], show_progress="hidden",
                   concurrency_limit=None, trigger_mode="always_last")
    C["metric"].input(viewer.overview_message, [state_c, C["metric"]], C["viewer_data"], show_progress="hidden", concurrency_limit=None)
    settle_out = [C[k] for k in viewer.FIVE]
    C["settled"].click(lambda *a: viewer.settled_view(C, *a), [*view_in, C["metric"]], settle_out, show_progress="hidden",
                       concurrency_limit=None, trigger_mode="always_last").then(inside_view, inside_in, inside_out, **inside_kw)


# -- layout -----------------------------------------------------------------------------------
C: dict = {}
state_c = None


def build(example: Trace | None) -> gr.Blocks:
    global state_c
    from pipeline.draft import DEFAULT_DRAFT, draft_choices

    tabs: dict = {}
    spec_cost = _spec_cost()
    # Gradio keeps a copy of every file it serves: clear those older than an hour, hourly
    with gr.Blocks(title="LLM pipeline visualizer", delete_cache=(3600, 3600)) as demo:
        # Each session's trace. It starts empty and gets the example on page load: Gradio would
        # otherwise deep-copy the example per session and re-serialise it on every update.
        state_c = gr.State(None)
        C["ran"] = gr.State(False)  # whether the last Generate (or +1, re-sample, branch) ran, or was refused
        gr.Markdown("# Watch a language model think, one token at a time\n" + CAPTIONS["intro"], elem_id="intro")
        C["info"] = gr.Markdown(HOLDER.status if HOLDER else "", elem_id="model-info")
        with gr.Row(equal_height=False):
            with gr.Column(scale=4, min_width=320):
                C["mode"] = gr.Radio(["Chat", "Raw text"], value="Chat", label="Mode", elem_id="mode")
                # one line that grows as text is pasted in: Enter generates (Gradio's multi-line boxes take Enter as a newline)
                C["prompt"] = gr.Textbox(label="Prompt (Enter generates)", value="Why is the sky blue?", lines=1, max_lines=12, elem_id="prompt",
                                         placeholder="Type a prompt and press Enter")
                C["system"] = gr.Textbox(label="System prompt (chat mode; empty: the template's own default)", lines=2, elem_id="system-prompt")
                with gr.Row():
                    C["generate"] = gr.Button("Generate", variant="primary", elem_id="generate")
                    C["step"] = gr.Button("+1 token", elem_id="step")
                    C["stop"] = gr.Button("Stop", variant="stop", elem_id="stop")
                C["live"] = gr.Checkbox(value=True, label="Redraw the figures while generating (off: text only until the end, fastest)",
                                        elem_id="live-figures")
                with gr.Accordion("Sampling", open=True):
                    C["temperature"] = gr.Slider(0, 2, value=0.7, step=0.05, label="Temperature (0 = greedy)", elem_id="temperature")
                    C["top_k"] = gr.Slider(0, 200, value=0, step=1, label="Top-k (0 = off)", elem_id="top-k")
                    C["top_p"] = gr.Slider(0.01, 1, value=0.9, step=0.01, label="Top-p (1 = off)", elem_id="top-p")
                    with gr.Row():
                        # no minimum: a negative seed gets the pipeline's warning, which says what to type (Gradio's own
                        # check would be an error toast that names no field)
                        C["seed"] = gr.Number(value=0, precision=0, label="Seed", elem_id="seed")
                        C["max_new"] = gr.Number(value=64, precision=0, minimum=1, maximum=MAX_NEW_TOKENS, label="Max new tokens", elem_id="max-new-tokens")
                    C["resample"] = gr.Button("Re-sample from the step on screen", elem_id="resample", size="sm")
                with gr.Accordion("Speculative decoding", open=False, elem_id="speculative-settings"):
                    C["spec_on"] = gr.Checkbox(value=False, label="Speculative decoding: a cheap draft proposes, the model checks",
                                               elem_id="speculative")
                    C["spec_k"] = gr.Slider(1, 8, value=4, step=1, label="k: draft proposals per round", elem_id="spec-k")
                    C["spec_draft"] = gr.Dropdown(draft_choices(example.model.n_layers if example else 30, DRAFT_MODEL), value=DEFAULT_DRAFT,
                                                  allow_custom_value=True, label="Draft", elem_id="spec-draft",
                                                  info="ngram = copy from earlier in the text (no model: wins on this machine); "
                                                       "layers:N = this model's own first N layers; or the Hub id / local directory of a "
                                                       "smaller model with the same tokenizer")
                with gr.Row():
                    C["download"] = gr.Button(DOWNLOAD, elem_id="download-trace", interactive=False, size="sm")
                    # filled when Download is clicked, then clicked by the page's script (hidden)
                    C["download_file"] = gr.DownloadButton("file", elem_id="download-file", elem_classes="hidden-input")
                    C["upload"] = gr.UploadButton("Load trace", file_types=[".json", ".gz"], elem_id="upload-trace", size="sm")
                links.layout(C)  # the gallery's dropdown and "Copy link" (ui/links.py)
            with gr.Column(scale=7, min_width=480):
                gr.Markdown(CAPTIONS["output"], elem_classes="caption")
                C["output"] = gr.HTML(elem_id="output")
                with gr.Row(equal_height=True):
                    C["slider"] = StepSlider(0, 1, value=0, step=1, label="Step on screen (drag to scrub back)", elem_id="step-slider", scale=5)
                    C["play"] = gr.Button("▶ Play", elem_id="play", scale=1, size="sm")  # played in the page (assets/app_viewer.js)
                    C["boundaries"] = gr.Checkbox(value=True, label="Show token boundaries", elem_id="boundaries", scale=1)
                    C["tour"] = gr.Button("🧭 Walk me through this step", elem_id="tour", scale=2, size="sm")
                with gr.Group(visible=False, elem_id="tour-panel") as C["tour_group"]:
                    C["tour_box"] = gr.HTML(elem_id="tour-box")
                    with gr.Row():
                        C["tour_back"] = gr.Button("‹ Back", elem_id="tour-back", size="sm")
                        C["tour_next"] = gr.Button("Next ›", elem_id="tour-next", size="sm", variant="primary")
                        C["tour_end"] = gr.Button("End the tour", elem_id="tour-end", size="sm")
                with gr.Column(elem_id="panel-tokens"):
                    gr.Markdown("### 1 · Tokens\n" + CAPTIONS["tokens"], elem_classes="caption")
                    C["tokens"] = gr.HTML(elem_id="tokens-html")
                    C["compare"] = gr.HTML(elem_id="tokenizer-compare")
        with gr.Row(equal_height=False):
            with gr.Column(elem_id="panel-distribution"):
                gr.Markdown("### 4 · Next-token distribution\n" + CAPTIONS["distribution"], elem_classes="caption")
                C["dist"] = gr.Plot(show_label=False, elem_id="dist-plot")
            with gr.Column(elem_id="panel-embeddings"):
                gr.Markdown("### 2 · Embeddings\n" + CAPTIONS["embeddings"], elem_classes="caption")
                C["emb"] = gr.Plot(show_label=False, elem_id="emb-plot")
        with gr.Column(elem_id="panel-attention"):
            gr.Markdown("### 3 · Attention\n" + CAPTIONS["attention"], elem_classes="caption")
            with gr.Row():
                C["layer"] = gr.Dropdown(choices=list(range(example.model.n_layers if example else 1)), value=0, label="Layer", elem_id="layer", scale=1)
                C["head"] = gr.Dropdown(choices=["all"] + list(range(example.model.n_heads if example else 1)), value="all", label="Head", elem_id="head", scale=1)
                C["metric"] = gr.Radio(["entropy", "newest", "first"], value="entropy", label="Overview: per head", elem_id="overview-metric", scale=2)
            with gr.Row(equal_height=False):
                C["attn"] = gr.Plot(show_label=False, elem_id="attn-plot", scale=3)
                C["overview"] = gr.Plot(show_label=False, elem_id="attn-overview", scale=2)
        with gr.Column(elem_id="panel-kv"):
            gr.Markdown("### 5 · KV cache and timing\n" + CAPTIONS["kv"], elem_classes="caption")
            C["kv_text"] = gr.HTML(elem_id="kv-summary")
            C["kv"] = gr.Plot(show_label=False, elem_id="kv-plot")
        with gr.Column(elem_id="panel-inside"):
            gr.Markdown("### 6 · Inside the model\n" + CAPTIONS["inside"], elem_classes="caption")
            with gr.Tabs(elem_id="inside-tabs"):
                with gr.Tab("Logit lens", id="lens", elem_id="tab-lens") as tabs["lens"]:
                    gr.Markdown(CAPTIONS["lens"], elem_classes="caption")
                    C["lens_html"] = gr.HTML(elem_id="lens-summary")
                    C["lens_plot"] = gr.Plot(show_label=False, elem_id="lens-plot")
                with gr.Tab("Residual", id="residual", elem_id="tab-residual") as tabs["residual"]:
                    gr.Markdown(CAPTIONS["residual"], elem_classes="caption")
                    C["resid_plot"] = gr.Plot(show_label=False, elem_id="residual-plot")
                    gr.Markdown(CAPTIONS["contributions"], elem_classes="caption")
                    C["contrib_plot"] = gr.Plot(show_label=False, elem_id="contributions-plot")
                with gr.Tab("Position", id="position", elem_id="tab-position") as tabs["position"]:
                    gr.Markdown(CAPTIONS["position"], elem_classes="caption")
                    C["pos_plot"] = gr.Plot(show_label=False, elem_id="position-plot")
                    with gr.Row(equal_height=True):
                        C["swap_i"] = gr.Number(value=None, precision=0, minimum=0, label="Swap prompt position (equal: two of your words)", elem_id="swap-i", scale=1)
                        C["swap_j"] = gr.Number(value=None, precision=0, minimum=0, label="with position", elem_id="swap-j", scale=1)
                        C["swap_btn"] = gr.Button("Swap them and compare attention", elem_id="swap-button", scale=2)
                    C["swap_plot"] = gr.Plot(show_label=False, elem_id="swap-plot")
                with gr.Tab("KV cache", id="kvc", elem_id="tab-kvc") as tabs["kvc"]:
                    gr.Markdown(CAPTIONS["kv_compare"], elem_classes="caption")
                    C["kvc_btn"] = gr.Button("Recompute the step on screen without the cache", elem_id="kvc-button")
                    C["kvc_html"] = gr.HTML(elem_id="kvc-summary")
                    C["kvc_plot"] = gr.Plot(show_label=False, elem_id="kvc-plot")
                with gr.Tab("Compute", id="accounting", elem_id="tab-accounting") as tabs["accounting"]:
                    gr.Markdown(CAPTIONS["accounting"], elem_classes="caption")
                    C["acc_html"] = gr.HTML(elem_id="accounting-summary")
                    C["acc_plot"] = gr.Plot(show_label=False, elem_id="accounting-plot")
                with gr.Tab("Sampling ×3", id="sampling", elem_id="tab-sampling") as tabs["sampling"]:
                    gr.Markdown(CAPTIONS["sampling_compare"], elem_classes="caption")
                    with gr.Row():
                        for n, (t, k, pp) in enumerate(SAMPLING_ROWS):
                            with gr.Group():
                                C[f"cmp_t{n}"] = gr.Number(value=t, step=0.05, label=f"{n + 1}: temperature", elem_id=f"cmp-t{n}")
                                C[f"cmp_k{n}"] = gr.Number(value=k, precision=0, label="top-k", elem_id=f"cmp-k{n}")
                                C[f"cmp_p{n}"] = gr.Number(value=pp, step=0.01, label="top-p", elem_id=f"cmp-p{n}")
                    C["cmp_btn"] = gr.Button("Draw 1,000 tokens from each", elem_id="sampling-button")
                    C["cmp_plot"] = gr.Plot(show_label=False, elem_id="sampling-plot")
                with gr.Tab("Branches", id="branches", elem_id="tab-branches") as tabs["branches"]:
                    gr.Markdown(CAPTIONS["branching"], elem_classes="caption")
                    C["branches_html"] = gr.HTML(branches_viz.branches_html([], None), elem_id="branches")
                    with gr.Row(equal_height=True):
                        C["branch_pick"] = gr.Radio([], label="Show branch", elem_id="branch-pick", scale=3)
                        C["branch_rank"] = gr.Number(value=2, precision=0, minimum=1, maximum=100, label="Candidate rank to force",
                                                     elem_id="branch-rank", scale=1)
                        C["branch_btn"] = gr.Button("Force it at the step on screen, generate on", elem_id="branch-button", scale=2)
                with gr.Tab("Bytes", id="bytes", elem_id="tab-bytes") as tabs["bytes"]:
                    gr.Markdown(CAPTIONS["bytes"], elem_classes="caption")
                    C["bytes_html"] = gr.HTML(elem_id="bytes-html")
                with gr.Tab("Context", id="context", elem_id="tab-context") as tabs["context"]:
                    gr.Markdown(CAPTIONS["context"], elem_classes="caption")
                    with gr.Row():
                        C["price_in"] = gr.Number(value=None, minimum=0, label="Price per million input tokens ($)", elem_id="price-in")
                        C["price_out"] = gr.Number(value=None, minimum=0, label="Price per million output tokens ($)", elem_id="price-out")
                    C["ctx_html"] = gr.HTML(elem_id="context-summary")
                    C["ctx_plot"] = gr.Plot(show_label=False, elem_id="context-plot")
        with gr.Column(elem_id="panel-speculative"):
            gr.Markdown("### 7 · Speculative decoding\n" + CAPTIONS["speculative"], elem_classes="caption")
            C["spec_summary"] = gr.HTML(elem_id="spec-summary")
            C["spec"] = gr.HTML(elem_id="spec-rounds")
            if spec_cost is not None:
                gr.HTML(page.speculative.cost_curve_html(spec_cost), elem_id="spec-cost-text")
                gr.Plot(page.speculative.cost_curve_figure(spec_cost), show_label=False, elem_id="spec-cost-plot")
        # the step viewer's messages to the page (ui/viewer_wiring.py), and the page's "the step slider settled"
        C["viewer_data"] = gr.Textbox(elem_id="viewer-data", elem_classes="hidden-input", container=False, lines=1, max_lines=1)
        C["settled"] = gr.Button("settled", elem_id="step-settled", elem_classes="hidden-input")
        C["bundle_req"] = gr.Textbox(elem_classes="hidden-input", container=False, lines=1, max_lines=1)
        # set by the page's script: a click on a candidate bar ("rank|nonce"), the panel the tour points at
        C["branch_req"] = gr.Textbox(elem_id="branch-request", elem_classes="hidden-input", container=False)
        C["branch_go"] = gr.Button("branch", elem_id="branch-go", elem_classes="hidden-input")
        C["tour_target"] = gr.Textbox(elem_id="tour-target", elem_classes="hidden-input", container=False)
        branches_c, pending_c, tour_i, tab_c = gr.State([]), gr.State(None), gr.State(0), gr.State("lens")
        inside_in = [tab_c, state_c, C["slider"], *[C[f"cmp_{x}{n}"] for n in range(3) for x in "tkp"], C["price_in"], C["price_out"], C["seed"]]
        inside_out = [C[k] for keys in INSIDE.values() for k in keys]
        inside_kw = dict(show_progress="hidden", concurrency_limit=None, trigger_mode="always_last")

        view_in = [state_c, C["slider"], C["layer"], C["head"], C["temperature"], C["top_k"], C["top_p"]]
        all_out = [C["ran"], state_c] + [C[k] for k in page.PANEL_KEYS] + [C["slider"], C["download"], C["spec_summary"], C["info"],
                                                                             C["layer"], C["head"], C["viewer_data"]]
        gen_in = [C["prompt"], C["system"], C["mode"], C["temperature"], C["top_k"], C["top_p"], C["seed"], C["max_new"], C["layer"], C["head"], C["live"],
                  C["spec_on"], C["spec_k"], C["spec_draft"], state_c]
        fin_in = [C["ran"], *view_in]
        fin_out = [C[k] for k in page.PANEL_KEYS] + [C["slider"], C["download"], C["bundle_req"]]

        # the viewer bundle of the trace on screen, for the page (after a run, a load, a branch shown)
        send_bundle = (viewer.bundle_message, [state_c, C["layer"], C["head"], C["metric"]], C["viewer_data"])
        C["viewer_data"].change(None, C["viewer_data"], None, js=viewer.INBOX_JS, api_visibility="private")

        def gen_fn(*a):
            yield from stream(*a)

        def step_fn(*a):
            trace = a[-1]
            # the trace on screen goes on when the prompt box still holds its prompt (continue_generation
            # refuses one of another model, with the reason); a new prompt starts afresh
            cont = trace is not None and trace.steps and trace.prompt.text == a[0] and trace.steps[-1].stop_reason in (None, "max_new_tokens")
            yield from stream(*a, cont={"start_step": None} if cont else None, one_step=True)

        def resample_fn(step, *a):
            yield from stream(*a, cont={"start_step": step})

        events = []
        for trigger, fn, extra, name in ((C["generate"].click, gen_fn, [], "generate"), (C["prompt"].submit, gen_fn, [], None),
                                         (C["step"].click, step_fn, [], "step"), (C["resample"].click, resample_fn, [C["slider"]], "resample")):
            ev = trigger(fn, extra + gen_in, all_out, concurrency_limit=4, concurrency_id="generate", show_progress="hidden",
                         api_name=name, api_visibility="public" if name else "private")
            ev.then(finish, fin_in, fin_out, show_progress="hidden").then(inside_view, inside_in, inside_out, **inside_kw)
            events.append(ev)
        def branch_fn(rank, step, *a):
            prev = a[-1]
            try:
                k, s = int(rank), int(step)
            except (TypeError, ValueError):
                yield _refused(SettingsError("pick a candidate to branch: click its bar in the distribution, or type its rank"))
                return
            pend = None
            if prev is not None and 0 <= s < len(prev.steps) and 0 <= k < len(prev.steps[s].top_ids):
                base = prev.steps[s]
                pend = dict(parent=prev, fork=s, token_id=int(base.top_ids[k]), forced=base.top_pieces[k], model=base.piece)
            for n, out in enumerate(stream(*a, cont={"start_step": s, "force_rank": k})):
                yield {**out, pending_c: pend} if n == 0 else out

        def record_branch(trace, branches, pend):
            """After a branch ran: keep its parent and it in the list (same prompt and model only)."""
            same = [b for b in branches if trace is not None and b.trace.prompt.rendered == trace.prompt.rendered
                    and b.trace.model.id == trace.model.id]
            if pend and trace is not None and trace is not pend["parent"] and len(trace.steps) > pend["fork"] \
                    and trace.steps[pend["fork"]].token_id == pend["token_id"]:
                if not any(b.trace is pend["parent"] for b in same):
                    same.append(branches_viz.Branch(branches_viz.branch_label(len(same)), pend["parent"], None))
                same.append(branches_viz.Branch(branches_viz.branch_label(len(same)), trace, pend["fork"], pend["forced"], pend["model"]))
            labels = [b.label for b in same]
            on = next((b.label for b in same if b.trace is trace), None)
            return same, branches_viz.branches_html(same, trace), gr.Radio(choices=labels, value=on), None

        def show_branch(label, branches, layer, head, temperature, top_k, top_p):
            b = next((b for b in branches if b.label == label), None)
            if b is None:
                return _unchanged()
            t = b.trace
            return {state_c: t, **_view(t, len(t.steps) - 1, layer, head, temperature, top_k, top_p), C["slider"]: _slider(t),
                    C["branches_html"]: branches_viz.branches_html(branches, t)}

        branch_in = [C["slider"], *gen_in]
        branch_out = [*all_out, pending_c]
        def branch_click(req, *a):  # "rank|nonce" from the page's script (0-based rank)
            yield from branch_fn(str(req or "").split("|")[0], *a)

        def branch_typed(rank, *a):  # the rank a person typed (1-based)
            yield from branch_fn(int(rank) - 1 if rank else None, *a)

        for trigger, rank_in, fn in ((C["branch_go"].click, C["branch_req"], branch_click), (C["branch_btn"].click, C["branch_rank"], branch_typed)):
            ev = trigger(fn, [rank_in, *branch_in], branch_out, concurrency_limit=4, concurrency_id="generate", show_progress="hidden")
            ev.then(finish, fin_in, fin_out, show_progress="hidden").then(inside_view, inside_in, inside_out, **inside_kw).then(
                record_branch, [state_c, branches_c, pending_c], [branches_c, C["branches_html"], C["branch_pick"], pending_c], show_progress="hidden")
            events.append(ev)
        C["branch_pick"].input(show_branch, [C["branch_pick"], branches_c, C["layer"], C["head"], C["temperature"], C["top_k"], C["top_p"]],
                               [state_c, *[C[k] for k in page.PANEL_KEYS], C["slider"], C["branches_html"]], show_progress="hidden").then(
            *send_bundle).then(inside_view, inside_in, inside_out, **inside_kw)

        def tour_show(trace, step, i):
            if trace is None or not trace.steps:
                gr.Warning("Generate some text first: the tour walks through one step of it.")
                return {C["tour_target"]: ""}
            s = max(0, min(int(step), len(trace.steps) - 1))
            stages = tour_viz.tour_stages(trace, s)
            i = max(0, min(int(i), len(stages) - 1))
            return {C["tour_group"]: gr.Group(visible=True), C["tour_box"]: tour_viz.tour_html(trace, s, i), tour_i: i,
                    C["tour_target"]: stages[i].target}

        tour_out = [C["tour_group"], C["tour_box"], tour_i, C["tour_target"]]
        focus_js = ("(t) => { document.querySelectorAll('.tour-focus').forEach(e => e.classList.remove('tour-focus')); "
                    "const el = t ? document.getElementById(t) : null; "
                    "if (el) { el.classList.add('tour-focus'); el.scrollIntoView({behavior: 'smooth', block: 'center'}); } }")
        for btn, delta in ((C["tour"], None), (C["tour_next"], 1), (C["tour_back"], -1)):
            fn = (lambda d: (lambda t, s, i: tour_show(t, s, 0 if d is None else i + d)))(delta)
            btn.click(fn, [state_c, C["slider"], tour_i], tour_out, show_progress="hidden").then(
                None, [C["tour_target"]], None, js=focus_js)
        C["tour_end"].click(lambda: {C["tour_group"]: gr.Group(visible=False), C["tour_target"]: ""}, None, tour_out,
                            show_progress="hidden").then(None, [C["tour_target"]], None, js=focus_js)

        C["stop"].click(finish, fin_in, fin_out, cancels=events, show_progress="hidden").then(inside_view, inside_in, inside_out, **inside_kw)
        # finish asks for the bundle through its own event: a run's chain (Generate, Stop) ends without
        # waiting for it, so Generate, whose click is ignored while its chain is pending, can be clicked again
        C["bundle_req"].change(*send_bundle, show_progress="hidden", api_visibility="private")
        C["download"].click(download_click, state_c, [C["download"], C["download_file"]], show_progress="hidden").then(
            None, None, None, js="() => document.querySelector('#download-file')?.click()")  # (no file: a click does nothing)
        for key, tab in tabs.items():  # the open tab is drawn when opened and follows the step slider
            tab.select((lambda k: lambda: k)(key), None, tab_c, show_progress="hidden").then(inside_view, inside_in, inside_out, **inside_kw)
        C["cmp_btn"].click(inside_view, inside_in, inside_out, **inside_kw)
        for k in ("price_in", "price_out"):
            C[k].input(inside_view, inside_in, inside_out, **inside_kw)
        C["kvc_btn"].click(kv_compare_click, [state_c, C["slider"]], [C["kvc_html"], C["kvc_plot"]], show_progress="minimal")
        C["swap_btn"].click(swap_click, [state_c, C["swap_i"], C["swap_j"]], [C["swap_plot"], C["swap_i"], C["swap_j"]], show_progress="minimal")

        panels = [C[k] for k in page.PANEL_KEYS]
        viewer_calls(view_in, inside_in, inside_out, inside_kw)
        # the whole trace's text: the page's step viewer shows the step on screen
        C["boundaries"].input(lambda t, b: page.output_only(t, boundaries=b) if t else gr.skip(),
                              [state_c, C["boundaries"]], C["output"], show_progress="hidden")
        C["upload"].upload(load_trace, [C["upload"], C["layer"], C["head"], C["temperature"], C["top_k"], C["top_p"]],
                           [state_c, *panels, C["slider"], C["layer"], C["head"], C["temperature"], C["top_k"], C["top_p"], C["seed"], C["info"], C["download"], C["spec_summary"]]).then(
            *send_bundle).then(inside_view, inside_in, inside_out, **inside_kw)
        def on_load():
            t = example  # immutable: every session can share the one object
            if t is None:
                return {C["info"]: HOLDER.status}
            s = t.settings
            # the five step panels come in the bundle, drawn by the page; the light ones from here
            return {state_c: t, **_view(t, len(t.steps) - 1, 0, "all", s.temperature, s.top_k, s.top_p, only=viewer.LIGHT),
                    C["slider"]: _slider(t), C["info"]: HOLDER.status, C["spec_summary"]: page.speculative_summary_html(t)}

        opened = demo.load(on_load, None, [state_c, *panels, C["slider"], C["info"], C["spec_summary"]], show_progress="hidden").then(*send_bundle).then(
            inside_view, inside_in, inside_out, **inside_kw)
        load_out = [state_c, *panels, C["slider"], C["layer"], C["head"], C["temperature"], C["top_k"], C["top_p"], C["seed"], C["info"], C["download"], C["spec_summary"]]
        links.wire(links.Deps(C, state_c, load_trace, load_out, _view, _slider, send_bundle, (inside_view, inside_in, inside_out, inside_kw)), opened)

        def status_tick():  # until the model has loaded (or failed), then the timer stops
            return HOLDER.status, gr.Timer(active=not HOLDER.ready.is_set())

        status_timer = gr.Timer(1.0)
        status_timer.tick(status_tick, None, [C["info"], status_timer], show_progress="hidden")
    return api.publish(demo, _start_run, DOWNLOADS, MAX_NEW_TOKENS)  # /trace; the page's events hidden from the API


def main(argv=None):
    global HOLDER
    ap = argparse.ArgumentParser(description="LLM pipeline visualizer")
    ap.add_argument("--model", default=os.environ.get("LLM_VIZ_MODEL"), help="Hub id or local directory (default: embedded SmolLM2-135M-Instruct)")
    ap.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"), help="0.0.0.0 to serve other machines (a Space sets GRADIO_SERVER_NAME)")
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT", os.environ.get("GRADIO_SERVER_PORT", 7860))))
    ap.add_argument("--share", action="store_true", help="also open a public gradio.live link")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # a clean exit on SIGTERM, so atexit clean-ups run
    HOLDER = ModelHolder(a.model).start()
    example = example_trace()
    threading.Thread(target=viewer.warm, args=(example,), daemon=True).start()  # the page's first bundle, made ahead
    demo = build(example)
    demo.queue(default_concurrency_limit=8)
    gr.set_static_paths(viewer.static_paths() + [str(gallery.GALLERY_DIR)])  # the page's scripts; the saved traces
    demo.launch(server_name=a.host, server_port=a.port, share=a.share, css=CSS, js=PAGE_JS, head=viewer.head_html(), theme=gr.themes.Soft(),
                show_error=True)


if __name__ == "__main__":
    main()

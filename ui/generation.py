"""The listeners of a run: Generate, +1 token, re-sample, branch (streamed), the drawing after it ends
(`finish`), and the branches kept and shown.

A Generation holds the page's components (ui/layout.py's Page); its methods are the functions the
events call (ui/wiring.py), with the values of their inputs in order.
"""
from __future__ import annotations

import html
import os
import threading
import time

import gradio as gr

from pipeline import offheap
from pipeline.errors import SettingsError
from pipeline.trace.records import Trace
from viz import branches as branches_viz
from viz import page
from viz.text import t
from ui import bridge, messages, model, run_inputs
from ui.speed import speed_against_plain
from ui import viewer_wiring as viewer
from ui.page import Page
from ui.views import ViewOptions, layer_head_choices, panels, slider, unchanged

# While streaming, the figures refresh at most this often (seconds): the distribution, and the
# heavy ones (attention, embeddings, KV). Text and token chips follow every token.
DIST_EVERY_S = float(os.environ.get("LLM_VIZ_DIST_EVERY_S", 1.0))
HEAVY_EVERY_S = float(os.environ.get("LLM_VIZ_HEAVY_EVERY_S", 4.0))


class Runs:
    """Per page session, the newest run: one that a newer run of the same page has begun since stops
    at its next token (Generate clicked again while it streams starts afresh)."""

    def __init__(self):
        self._newest: dict[str, int] = {}
        self._shown: dict[str, int] = {}  # the last step each page's run streamed to it (until its `finish`)
        self._n = 0
        self._lock = threading.Lock()

    @staticmethod
    def session() -> str | None:
        """The page session of the event running now (None outside an event, as in tests)."""
        from gradio.context import LocalContext

        return getattr(LocalContext.request.get(None), "session_hash", None)

    def begin(self, key: str | None) -> int:
        with self._lock:
            self._n += 1
            if key is not None:
                self._newest[key] = self._n
            return self._n

    def superseded(self, key: str | None, n: int) -> bool:
        return key is not None and self._newest.get(key, n) != n

    def stop(self, key: str | None):
        """Stop clicked: the page's run yields nothing more (its last pass, under way when Gradio cancelled it, would
        otherwise still reach the page, drawn after Generate was clicked again as if it were the new run's)."""
        with self._lock:
            if key is not None and key in self._newest:
                self._newest[key] = 0  # (no run's number)

    def streamed(self, key: str | None, i: int):
        """Step `i` went out to the page (the step slider put on it)."""
        if key is not None:
            with self._lock:
                self._shown[key] = i

    def last_streamed(self, key: str | None) -> int | None:
        """The last step the page's run streamed to it (None: none), forgotten once asked (the run's `finish`)."""
        with self._lock:
            return self._shown.pop(key, None) if key is not None else None

    def end(self, key: str | None, n: int):
        with self._lock:
            if key is not None and self._newest.get(key) in (n, 0):
                del self._newest[key]


def stop_clicked():
    """Stop's own listener (beside the one that cancels the run and draws its last step): RUNS.stop."""
    RUNS.stop(RUNS.session())


# Process-wide (docs/state.md): every page session's newest run, an entry only while a run goes; behind Runs._lock.
RUNS = Runs()


class Generation:
    def __init__(self, p: Page):
        self.p, self.C = p, p.C

    def _streamed(self, trace: Trace, i: int, opts: ViewOptions, live: bool, clock: dict) -> dict:
        """The update for step `i` while streaming: the text and the token chips every token, figures at
        a bounded rate (drawing them costs the browser far more than the model's step)."""
        C = self.C
        now = time.perf_counter()
        out = {self.p.state: trace, C.output: page.output_only(trace, step=i), C.tokens: page.tokens_only(trace, step=i),
               C.slider: slider(trace)}
        if trace.speculative:
            out[C.spec] = page.speculative.rounds_html(trace.rounds, step=i, pieces=page.context_pieces(trace))
        if not live:  # text only while generating: the model runs at full speed on a small machine
            pass
        elif trace.steps[i].stop_reason is not None:  # the run's last step: its figures are the page's to draw (finish's
            pass  # bundle); drawn here, Gradio's drawing of them held the page 150-200 ms as the run ended
        elif now - clock["heavy"] >= HEAVY_EVERY_S:
            clock["heavy"] = clock["dist"] = now
            out.update(panels(C, trace, i, opts, heavy=True))
        elif now - clock["dist"] >= DIST_EVERY_S:
            clock["dist"] = now
            out[C.dist] = page.distribution_only(trace, step=i, temperature=opts.temperature, top_k=opts.top_k, top_p=opts.top_p,
                                                 min_p=opts.min_p, repetition_penalty=opts.repetition_penalty)
        return out

    def stream(self, prompt, system, mode, temperature, top_k, top_p, min_p, repetition_penalty, seed, max_new, layer, head, live,
               spec_on, spec_k, spec_draft, shown, state, cont: dict | None = None, one_step=False):
        """Generate and stream: cheap panels every token, heavy ones at a bounded rate, `finish` draws all
        at the end. `shown`: the page's model line when it was clicked (ui/model.py's ModelHolder.get).
        `cont`: go on from the trace on screen, as pipeline.continuation.continue_generation's keywords
        ({"start_step": None} after its last step; a step to re-sample from; with "force_rank", a branch);
        `one_step`: one token."""
        C, prev = self.C, state
        opts = ViewOptions(layer, head, temperature, top_k, top_p, min_p, repetition_penalty)
        try:
            settings = run_inputs.settings_from_inputs(mode, system, temperature, top_k, top_p, seed, max_new, min_p=min_p,
                                                       repetition_penalty=repetition_penalty)
            n_new = 1 if one_step else run_inputs.tokens_to_make(prev, cont, settings.max_new_tokens)
            spec = (bool(spec_on) and cont is None and not one_step, spec_k, spec_draft)  # +1 token and re-sample stay plain
            lm, gen = model.start_run(prompt, settings, prev, cont, n_new, spec, shown=shown)
        except SettingsError as e:
            # a warning, not an error: the panels keep what they show, and nothing typed is touched
            yield self._refused(e)
            return
        trace, kept = gen.trace(), getattr(gen, "kept", ())
        layers, heads = layer_head_choices(trace)  # (after a loaded trace of another model)
        first = {C.ran: True, self.p.state: trace, C.bridge: viewer.live_message(), C.download: gr.Button(t("button.download"), interactive=False),
                 C.info: model.HOLDER.status, C.layer: layers, C.head: heads,
                 C.spec_summary: page.speculative_summary_html(trace), C.spec: page.speculative.rounds_html(()),
                 C.example: gr.Dropdown(value=None), C.example_look: ""}  # (the page shows this generation, not a gallery trace)
        if kept:  # continuing: the kept steps stay on screen
            first.update(panels(C, trace, len(kept) - 1, opts))
            first[C.slider] = slider(trace)
        else:
            first.update({C.output: page.output_only(trace), C.tokens: page.tokens_only(trace)})
        key = RUNS.session()
        n = RUNS.begin(key)
        RUNS.streamed(key, len(kept) - 1 if kept else -1)
        try:
            yield first
            if kept and kept[-1].stop_reason == "eos":  # a forced end of sequence: nothing follows
                return
            clock = dict(dist=time.perf_counter(), heavy=time.perf_counter())  # the first token goes out as text, at once
            for _ in gen:  # a plain generation yields steps; a speculative one rounds of 1 to k+1 steps
                if RUNS.superseded(key, n):  # a newer run of this page has begun, or Stop was clicked: the page is not this run's
                    return
                trace = gen.trace()
                yield self._streamed(trace, len(trace.steps) - 1, opts, live, clock)
                # (after the yield: Gradio asks for the next update once this one went out; a Stop that cancels the run
                # while it goes out leaves the page on the step before, which `finish` must still take for the last)
                RUNS.streamed(key, len(trace.steps) - 1)
        finally:
            RUNS.end(key, n)
        if trace.speculative and trace.steps:
            yield {C.spec_summary: page.speculative_summary_html(trace) + f"<p><i>{html.escape(t('note.spec_measuring'))}</i></p>"}
            speed = speed_against_plain(lm, trace)
            yield {C.spec_summary: page.speculative_summary_html(trace, speed)}

    def _refused(self, e: Exception) -> dict:
        """A refused run: the warning, and one update that changes nothing but the `ran` flag (and the model
        line, when the model was the reason). (A generator that yields nothing makes Gradio set every
        output to None: an empty step slider.)"""
        gr.Warning(messages.sentence(e))
        loading = isinstance(e, model.ModelNotReady)  # (the page's script may wait for the model: assets/link_actions.js)
        return {self.C.ran: False, self.C.bridge: bridge.say("refused", loading=loading), **({self.C.info: model.HOLDER.status} if loading else {})}

    def finish(self, ran, trace, step, layer, head, temperature, top_k, top_p, min_p, repetition_penalty):
        """After streaming ends or is stopped: every panel for the last step. Nothing when the run was refused."""
        C = self.C
        # the slider on the last step when the page was on the last step streamed to it (a Stop can end the run on a
        # token made and never streamed: the text showed one step less than the trace held); a person who has dragged
        # it elsewhere since keeps the step they chose (the slider's range only)
        last = RUNS.last_streamed(RUNS.session())
        follow = last is not None and step is not None and int(step) >= last
        if not ran or trace is None:
            return unchanged(C)
        step = len(trace.steps) - 1
        # the run's big arrays leave the heap for a mapped file (same bytes), beside the page's drawing
        threading.Thread(target=offheap.move_off_heap, args=(trace,), daemon=True).start()
        # the text, chips and rounds of the whole trace; the step panels are the page's to draw from the bundle asked
        # for here (drawn here too they would be drawn twice: by Gradio, then by the page), but for a step past its frames
        only = None if step >= viewer.MAX_FRAMES else viewer.LIGHT
        return {**panels(C, trace, step, ViewOptions(layer, head, temperature, top_k, top_p, min_p, repetition_penalty), only=only),
                C.slider: slider(trace, keep_value=not follow),
                C.download: gr.Button(t("button.download"), interactive=bool(trace.steps)), C.bundle_req: f"{id(trace)}:{time.time()}"}

    # -- the buttons that start a run (their inputs: the stream's, some with one before) ----------
    # (each takes `stream`'s parameters by name: ui/wiring.py's Wires.run_in)
    def gen_fn(self, **run):
        yield from self.stream(**run)

    def step_fn(self, **run):
        trace = run["state"]
        # the trace on screen goes on when the prompt box still holds its prompt (continue_generation
        # refuses one of another model, with the reason); a new prompt starts afresh
        cont = trace is not None and trace.steps and trace.prompt.text == run["prompt"] and trace.steps[-1].stop_reason in (None, "max_new_tokens")
        yield from self.stream(**run, cont={"start_step": None} if cont else None, one_step=True)

    def resample_fn(self, step, **run):
        yield from self.stream(**run, cont={"start_step": step})

    # -- branches --------------------------------------------------------------------------------
    def branch_fn(self, rank, step, **run):
        prev = run["state"]
        try:
            k, s = int(rank), int(step)
        except (TypeError, ValueError):
            yield self._refused(SettingsError(t("error.branch_pick")))
            return
        pend = None
        if prev is not None and 0 <= s < len(prev.steps) and 0 <= k < len(prev.steps[s].top_ids):
            base = prev.steps[s]
            pend = dict(parent=prev, fork=s, token_id=int(base.top_ids[k]), forced=base.top_pieces[k], model=base.piece)
        for n, out in enumerate(self.stream(**run, cont={"start_step": s, "force_rank": k})):
            yield {**out, self.p.pending: pend} if n == 0 else out

    def branch_click(self, step, evt: gr.EventData, **run):  # the page's "branch" message: {"rank": 0-based} (ui/bridge.py)
        yield from self.branch_fn(bridge.data(evt).get("rank"), step, **run)

    def branch_typed(self, rank, step, **run):  # the rank a person typed (1-based)
        yield from self.branch_fn(int(rank) - 1 if rank else None, step, **run)

    def record_branch(self, trace, branches, pend):
        """After a branch ran: keep its parent and it in the list (same prompt and model only)."""
        same = branches_viz.same_prompt(branches, trace)
        if pend and trace is not None and trace is not pend["parent"] and len(trace.steps) > pend["fork"] \
                and trace.steps[pend["fork"]].token_id == pend["token_id"]:
            if not any(b.trace is pend["parent"] for b in same):
                same.append(branches_viz.Branch(branches_viz.branch_label(len(same)), pend["parent"], None))
            same.append(branches_viz.Branch(branches_viz.branch_label(len(same)), trace, pend["fork"], pend["forced"], pend["model"]))
        labels = [b.label for b in same]
        on = next((b.label for b in same if b.trace is trace), None)
        return same, branches_viz.branches_html(same, trace), gr.Radio(choices=labels, value=on), None

    def show_branch(self, label, branches, layer, head, temperature, top_k, top_p, min_p, repetition_penalty):
        C = self.C
        b = next((b for b in branches if b.label == label), None)
        if b is None:
            return unchanged(C)
        t = b.trace
        return {self.p.state: t, **panels(C, t, len(t.steps) - 1, ViewOptions(layer, head, temperature, top_k, top_p, min_p,
                                                                            repetition_penalty)),
                C.slider: slider(t), C.branches_html: branches_viz.branches_html(branches, t)}

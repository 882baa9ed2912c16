"""The page's events: which listener runs when, on which inputs and outputs, and what follows it.

wire() runs inside the page's gr.Blocks after ui/layout.py has laid it out, and wires the events
in one fixed order (Gradio numbers them in that order). Every chain that changes the step or the
trace on screen ends with the open "inside the model" tab drawn anew. This is the one module that
attaches listeners to events (a structure test holds it): the others give it listeners and triggers
(ui/listeners.py, ui/generation.py, ui/links.py, ui/inside's actions, ui/language.py's relabelling).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial

import gradio as gr

from viz import panels as viz_panels
from ui import bridge, class_room, language, links, token_tax
from ui import viewer_wiring as viewer
from ui.api import HEAVY_GROUP, GENERATE_GROUP
from ui.generation import Generation, stop_clicked
from ui.inside.listeners import Inside
from ui.page import Page
from ui.listeners import Listeners, session_closed, status_tick
from ui.samples import SamplesPanel
from ui.views import Call, panels_of_values, slider

@dataclass
class Wires:
    """The listeners and the named input groups several events share. Each listener is taken once: Gradio
    puts the events of one function object in one concurrency group."""
    p: Page
    gen: Generation
    other: Listeners
    finish: Call  # every panel of the last step once a run ends (or is stopped); asks for the bundle
    inside: Call  # the open "inside the model" tab, drawn anew
    send_bundle: Call  # the viewer bundle of the trace on screen, for the page
    view_in: dict  # the page's named input groups (ui/page.py): the step on screen and how it is drawn,
    drawn_in: dict  # how it is drawn (the layer and head, the sampling settings),
    run_in: dict  # what a run reads (Generation.stream's parameters)
    all_out: list
    panels: list
    load_out: list

    @classmethod
    def of(cls, p: Page, example) -> "Wires":
        C, state = p.C, p.state
        gen = Generation(p)
        ins = Inside(p)  # (the tabs' registry: ui/inside/tabs.py)
        inside_kw = dict(show_progress="hidden", concurrency_limit=None, trigger_mode="always_last")
        panels = list(p.step_panels.values())
        return cls(
            p=p, gen=gen, other=Listeners(p, example),
            finish=Call(gen.finish, dict(ran=C.ran, **p.view()), [*panels, C.slider, C.download, C.bundle_req], dict(show_progress="hidden")),
            inside=Call(ins.inside_view, ins.inputs, ins.outputs, inside_kw),
            send_bundle=Call(viewer.bundle_message, dict(trace=state, layer=C.layer, head=C.head, metric=C.metric), C.bridge),
            view_in=p.view(), drawn_in=p.drawn(), run_in=p.run(),
            all_out=[C.ran, state, *panels, C.slider, C.download, C.spec_summary, C.info, C.layer, C.head, C.bridge,
                     C.example, C.example_look],
            panels=panels,
            load_out=[C.ran, state, *panels, C.slider, C.layer, C.head, C.prompt, C.mode, C.system, C.temperature, C.top_k,
                      C.top_p, C.min_p, C.repetition_penalty, C.seed, C.max_new, C.info, C.download, C.spec_summary, C.example, C.example_look],
        )

    def shown(self, ev, flag=None, **marks):
        """After a trace is shown (`ev`): its viewer bundle sent to the page (with `marks` added to the message, e.g.
        joined=True), then the open "inside" tab drawn; with `flag` (a gr.State the listener set), only when it holds
        True (a refused file changed nothing)."""
        send = Call(_marked(viewer.bundle_message, **marks), self.send_bundle.inputs, self.p.C.bridge) if marks else self.send_bundle
        if flag is None:
            return self.inside.after(send.after(ev))
        return self.inside.only_if(flag, {self.p.C.lens_html: gr.skip()}).after(send.only_if(flag, gr.skip()).after(ev))


def wire(demo: gr.Blocks, p: Page, example) -> None:
    """Every event of the page, in the order the page has always had them."""
    w = Wires.of(p, example)
    events = _generation(w) + _branches(w)
    _tour(w)
    _stop_and_files(w, events)
    _inside_tabs(w)
    _viewer_calls(w)
    _upload(w)
    _guess(w)
    _class(w)
    _samples(w)
    _token_tax(w)
    _page_open(demo, w)


def _generation(w: Wires) -> list:
    """Generate (and Enter in the prompt), +1 token, re-sample: streamed, then `finish`, then the open tab.

    Generate or Enter while a run streams is never dropped (Gradio's default for a click, trigger_mode
    "once", drops it while the last is pending: a prompt sent during a 64-token run went unanswered,
    issue 23): the new run starts and the one on screen stops at its next token (ui/generation.py's
    RUNS). `finish` keeps its last call ("always_last"), so the run that ends last is drawn whole."""
    C, gen = w.p.C, w.gen
    gen_fn = gen.gen_fn
    events = []
    for trigger, fn, extra in ((C.generate.click, gen_fn, {}), (C.prompt.submit, gen_fn, {}), (C.step.click, gen.step_fn, {}),
                               (C.resample.click, gen.resample_fn, {"step": C.slider})):
        ev = trigger(fn, outputs=w.all_out, inputs_kwargs={**extra, **w.run_in}, **GENERATE_GROUP,
                     show_progress="hidden", trigger_mode="multiple" if fn is gen_fn else None)  # (ui/api.py hides them all)
        w.inside.after(w.finish.after(ev, trigger_mode="always_last"))
        events.append(ev)
    return events


def _branches(w: Wires) -> list:
    """A branch (a candidate bar clicked: the page's "branch" message; or a rank typed), kept in the list; a kept branch shown."""
    C, gen, p = w.p.C, w.gen, w.p
    branch_out = [*w.all_out, p.pending]
    events = []
    for trigger, rank_in, fn in ((bridge.listen(C.bridge, "branch"), {}, gen.branch_click),
                                 (C.branch_btn.click, {"rank": C.branch_rank}, gen.branch_typed)):
        ev = trigger(fn, outputs=branch_out, inputs_kwargs={**rank_in, "step": C.slider, **w.run_in}, **GENERATE_GROUP,
                     show_progress="hidden")
        w.inside.after(w.finish.after(ev)).then(gen.record_branch, outputs=[p.branches, C.branches_html, C.branch_pick, p.pending],
                                                inputs_kwargs=dict(trace=p.state, branches=p.branches, pend=p.pending), show_progress="hidden")
        events.append(ev)
    w.shown(C.branch_pick.input(gen.show_branch, outputs=[p.state, *w.panels, C.slider, C.branches_html], show_progress="hidden",
                                inputs_kwargs=dict(label=C.branch_pick, branches=p.branches, **w.drawn_in)))
    return events


def _samples(w: Wires) -> None:
    """Draw many: N continuations in the generation queue; one of them opened as a branch (the page's "sample_open"), then
    drawn as any trace shown is (its bundle, the open tab)."""
    C, p = w.p.C, w.p
    panel = SamplesPanel(p)
    draw_in = dict(trace=p.state, step=C.slider, **vars(p.sampling), seed=C.seed, n=C.samples_n, m=C.samples_m, shown=C.info)
    C.samples_run.click(panel.draw, outputs=[C.samples_result, C.samples_state], inputs_kwargs=draw_in, **HEAVY_GROUP,
                        show_progress="minimal")
    open_out = [C.ran, p.state, *w.panels, C.slider, p.branches, C.branches_html, C.branch_pick]
    ev = bridge.listen(C.bridge, "sample_open")(panel.open, outputs=open_out, **HEAVY_GROUP,
                                                show_progress="hidden", inputs_kwargs=dict(samples=C.samples_state, trace=p.state,
                                                                                          branches=p.branches, shown=C.info, **w.drawn_in))
    w.shown(ev, C.ran)


def _tour(w: Wires) -> None:
    """The tour's buttons: start, next, back, end; the page then points at the stage's panel (the bridge's "tour")."""
    C, p, tour_show = w.p.C, w.p, w.other.tour_show
    tour_out = [C.tour_group, C.tour_box, p.tour_i, C.bridge, C.tour_next, C.tour_back]
    for btn, delta in ((C.tour, None), (C.tour_next, 1), (C.tour_back, -1)):
        fn = (lambda d: (lambda trace, step, i: tour_show(trace, step, 0 if d is None else i + d)))(delta)
        btn.click(fn, outputs=tour_out, inputs_kwargs=dict(trace=p.state, step=C.slider, i=p.tour_i), show_progress="hidden")
    C.tour_end.click(lambda: {C.tour_group: gr.Group(visible=False), C.bridge: bridge.say("tour", target="")}, None, tour_out,
                     show_progress="hidden")


def _stop_and_files(w: Wires, events: list) -> None:
    """Stop (cancels every run), the bundle `finish` asks for, and the two downloads."""
    C, p = w.p.C, w.p
    w.inside.after(w.finish.on(C.stop.click, cancels=events))
    C.stop.click(stop_clicked, None, None, queue=False, show_progress="hidden")  # (the stopped run yields nothing more)
    # finish asks for the bundle through its own event: a run's chain (Generate, Stop) ends without
    # waiting for it, so Generate, whose click is ignored while its chain is pending, can be clicked again
    w.send_bundle.on(C.bundle_req.change, show_progress="hidden")
    click_file = dict(fn=None, js="() => document.querySelector('#download-file')?.click()")  # (no file: a click does nothing)
    C.download.click(w.other.download_click, outputs=[C.download, C.download_file], inputs_kwargs=dict(trace=p.state),
                     show_progress="hidden").then(**click_file)
    C.download_page.click(w.other.download_page_click, outputs=[C.download_page, C.download_file], show_progress="hidden",
                          inputs_kwargs=dict(trace=p.state, layer=C.layer, head=C.head, metric=C.metric)).then(**click_file)


def _inside_tabs(w: Wires) -> None:
    """Panel 6: the open tab is drawn when opened and follows the step slider; its buttons and fields."""
    C, p = w.p.C, w.p
    # Gradio selects the open tab as the page mounts: nothing to draw then (the page asks for the tab once its
    # panel scrolls into view, assets/app_viewer.js); a tab a person opens is drawn
    moved = p.tab_moved
    for key, tab in p.tabs.items():
        opened = tab.select((lambda k: lambda was: {p.tab: k, moved: k != was})(key), p.tab, {p.tab, moved}, show_progress="hidden")
        w.inside.only_if(moved, {C.lens_html: gr.skip()}).after(opened)
    ins = Inside(p)
    w.inside.on(gr.on, triggers=ins.redraws())
    for trigger, fn, inputs, outputs in ins.actions():  # (a tab's own buttons: the KV cache's recompute, the swap)
        trigger(fn, outputs=outputs, inputs_kwargs=inputs, show_progress="minimal")


def _viewer_calls(w: Wires) -> None:
    """The server calls the page's step viewer still makes: one per change of layer, head or overview
    metric, and one after the step slider settles (the page's "settled": the open inside tab, when on
    screen). (The text's "Colour by" radio needs no call: the page colours the text itself, assets/colour_by.js.)"""
    C, state = w.p.C, w.p.state
    gr.on([C.layer.input, C.head.input], viewer.attention_message, outputs=C.bridge, show_progress="hidden", concurrency_limit=None,
          trigger_mode="always_last", inputs_kwargs=dict(trace=state, layer=C.layer, head=C.head))
    C.metric.input(viewer.overview_message, outputs=C.bridge, inputs_kwargs=dict(trace=state, metric=C.metric), show_progress="hidden",
                   concurrency_limit=None)
    settle_out = [C[k] for k in viewer.FIVE]
    w.inside.after(Call(partial(viewer.settled_view, C), {**w.view_in, "metric": C.metric}, settle_out,
                        dict(show_progress="hidden", concurrency_limit=None, trigger_mode="always_last")).on(bridge.listen(C.bridge, "settled")))


def _upload(w: Wires) -> None:
    """A trace file loaded from disk. A refused file (`ran` False) changed nothing, so its follow-ups do nothing:
    the Inside panel's would recompute what is on screen, waiting for the model if another person's run has it."""
    C = w.p.C
    w.shown(C.upload.upload(w.other.load_trace, outputs=w.load_out, inputs_kwargs=dict(file=C.upload)), C.ran)


def _guess(w: Wires) -> None:
    """Guess first: a guess sent (Reveal or Enter) is rated at the step on screen; the page shows the step once the
    rating is there (assets/guess.js). Not in the model's run queue: a rating is one short forward pass at most."""
    C = w.p.C
    def rated(trace, step, guess):  # the rating, and the page told it is there (assets/guess.js)
        return {C.guess_result: w.other.rate_guess(trace, step, guess), C.bridge: bridge.say("rated")}

    gr.on([C.guess_btn.click, C.guess.submit], rated, outputs=[C.guess_result, C.bridge], show_progress="hidden", concurrency_limit=8,
          inputs_kwargs=dict(trace=w.p.state, step=C.slider, guess=C.guess))


def _class(w: Wires) -> None:
    """A class room: started from the trace on screen; the teacher's new trace sent to it; a student's page joining
    one (its trace loaded as a file is); a reloaded teacher's page getting its room back. The page asks through the
    bridge (assets/room.js: its address with each message); the room's step, guesses and reveal go through its JSON API."""
    C, p, quiet = w.p.C, w.p, dict(show_progress="hidden")
    on = partial(bridge.listen, C.bridge)
    C.class_start.click(None, js="() => window.LLMBridge.send('class_start')", **quiet)

    def started(room, trace, step, evt: gr.EventData):  # (the join link is made from the page's own address)
        card, room = class_room.start_class(bridge.data(evt).get("address"), trace, step, room)
        return {C.class_info: card, p.room: room, C.bridge: bridge.say("class_card")}  # (assets/room.js: the card is there)

    on("class_start")(started, outputs=[C.class_info, p.room, C.bridge], inputs_kwargs=dict(room=p.room, trace=p.state, step=C.slider),
                      **quiet)
    on("class_sync")(class_room.sync_class, inputs_kwargs=dict(room=p.room, trace=p.state, step=C.slider), **quiet)

    def joined(evt: gr.EventData):  # a student's page: the room's trace (None, said in a warning: nothing changes)
        return w.other.load_trace(class_room.join_trace(bridge.data(evt).get("code")))

    w.shown(on("join")(joined, outputs=w.load_out, **quiet), C.ran, joined=True)

    def resumed(evt: gr.EventData):  # a reloaded teacher's page: its room's card, trace and step back
        d = bridge.data(evt)
        hit = class_room.resume_class(d.get("saved"), d.get("address"))
        if hit is None:
            return {C.ran: False}
        r, card, room = hit
        st = r.trace.settings
        return {**w.other.load_trace(r.trace), C.slider: slider(r.trace, r.step), C.class_info: card, p.room: room,
                C.bridge: bridge.say("class_card"), **panels_of_values(C, r.trace, r.step, 0, "all", st.temperature, st.top_k,
                                                                       st.top_p, st.min_p, st.repetition_penalty, only=viewer.LIGHT)}

    w.shown(on("resume")(resumed, outputs=[*w.load_out, C.class_info, p.room, C.bridge], **quiet), C.ran)


def _marked(message, **marks):
    """`message` (a listener that returns a message for the page, or gr.skip()) with `marks` added to what it says."""
    def marked(**kw):
        m = message(**kw)
        return json.dumps({**json.loads(m), **marks}) if isinstance(m, str) else m
    return marked


def _token_tax(w: Wires) -> None:
    """The same sentence in other languages: counted when its section opens, and with the learner's own sentence."""
    C = w.p.C
    gr.on([C.tax_box.expand, C.tax_count.click, C.tax_own.submit], token_tax.view, inputs_kwargs=dict(own=C.tax_own),
          outputs=C.tax_html, show_progress="hidden", concurrency_limit=None)


def _page_open(demo: gr.Blocks, w: Wires) -> None:
    """The page opened: a link's fields written in the browser at once, the example trace, then the rest of
    what a link asks for (ui/links.py); the model's status line until it has loaded."""
    C, p = w.p.C, w.p
    # (the open "inside" tab is asked for by the page once that panel scrolls into view: assets/app_viewer.js)
    # (its bundle says `opened`: assets/room.js asks for a room's trace only after it, else that trace would come after the room's)
    loaded = demo.load(w.other.on_load, None, [p.state, C.info, C.spec_summary, *(C[k] for k in viz_panels.LIGHT_KEYS)], show_progress="hidden")
    relabel = language.relabelling(demo)  # Gradio's labels in the visitor's language (ui/language.py)
    if relabel is not None:  # (asked by a page not in English only: assets/language.js)
        bridge.listen(C.bridge, "words")(relabel[0], None, relabel[1], show_progress="hidden", queue=False)
    opened = Call(_marked(viewer.bundle_message, opened=True), w.send_bundle.inputs, C.bridge).after(loaded)
    _links(w, opened, demo)
    C.status_timer.tick(status_tick, None, [C.info, C.status_timer], show_progress="hidden")
    demo.unload(session_closed)  # the page closed: its session's download folder goes (ui/listeners.py)


def _links(w: Wires, opened, demo: gr.Blocks) -> None:
    """A link's fields written in the browser (the page's load, no server asked); the "Example traces" dropdown; a
    lesson's step; the rest of the link read after `opened` (the page's own load chain: the example trace does not
    arrive after a gallery one); "Copy link" (ui/links.py)."""
    C, p, quiet = w.p.C, w.p, dict(show_progress="hidden")
    d = links.Deps(C, p.state, w.other.load_trace, w.load_out, partial(panels_of_values, C), slider)
    fields = [C[k] for k in links.FIELDS]  # (a script in the browser takes its inputs in order: the fields, FIELDS's order)
    demo.load(None, fields, fields, js=f"(...v) => window.LLMLinkFields.open({json.dumps(links.tables(C))}, v)", **quiet)
    flag, ex_out = C.link_example, links.example_outputs(d)  # (flag: whether the link opened an example: its bundle and tab follow)

    def chosen(name):
        return links.chosen(d, name)

    w.shown(C.example.input(chosen, outputs=ex_out, inputs_kwargs=dict(name=C.example), **quiet))

    def picked(evt: gr.EventData):  # a step of the lesson (assets/room.js)
        return links.picked(d, bridge.data(evt))

    w.shown(bridge.listen(C.bridge, "lesson")(picked, outputs=[*ex_out, C.example], **quiet))
    link_out = list(dict.fromkeys([*ex_out, flag, C.example, C.bridge]))

    def from_link(request: gr.Request = None):  # (named and annotated: Gradio fills `request` in)
        return links.from_link(d, flag, request)

    w.shown(opened.then(from_link, outputs=[c for c in link_out if c not in fields], **quiet), flag)

    def copy(prompt, mode, system, temperature, top_k, top_p, min_p, repetition_penalty, seed, max_new, step, trace, evt: gr.EventData):
        values = dict(prompt=prompt, mode=mode, system=system, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                      repetition_penalty=repetition_penalty, seed=seed, max_new=max_new)
        return links.copy_answer(trace, step, values, bridge.data(evt))

    C.copy_link.click(None, js="() => window.LLMBridge.send('copy')", **quiet)
    bridge.listen(C.bridge, "copy")(copy, outputs=[C.link_box, C.bridge], **quiet,
                                    inputs_kwargs=dict(**{k: C[k] for k in links.FIELDS}, step=C.slider, trace=p.state))

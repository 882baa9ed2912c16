"""The page's events: which listener runs when, on which inputs and outputs, and what follows it.

wire() runs inside the page's gr.Blocks after ui/layout.py has laid it out, and wires the events
in one fixed order (Gradio numbers them in that order). Every chain that changes the step or the
trace on screen ends with the open "inside the model" tab drawn anew.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import gradio as gr

from viz import page
from ui import class_room, links
from ui import viewer_wiring as viewer
from ui.generation import Generation
from ui.inside import INSIDE, Inside, kv_compare_click, swap_click
from ui.layout import Page
from ui.listeners import Listeners, session_closed, status_tick
from ui.views import Call, panels_of_values, slider

FOCUS_JS = ("(t) => { document.querySelectorAll('.tour-focus').forEach(e => e.classList.remove('tour-focus')); "
            # the card beside the page on a wide screen (assets/style.css): the page narrows, its plots take the new width
            "const b = document.body.classList, was = b.contains('touring'), on = !!t && innerWidth >= 1300; "
            "b.toggle('touring', on); if (on !== was) dispatchEvent(new Event('resize')); "
            "const el = t ? document.getElementById(t) : null; "
            "if (el) { el.classList.add('tour-focus'); el.scrollIntoView({behavior: 'smooth', block: 'center'}); } }")


# for assets/room.js: the page's own first trace is in (a room's trace asked for after it is not overwritten by it), and
# a room's trace joined (the viewer message it sent: its bundle's key, the trace the student's page then follows)
OPENED_JS = "() => { window.LLMOpened = true; }"
JOINED_JS = "(m) => { document.dispatchEvent(new CustomEvent('llmroom:joined', {detail: m})); }"


@dataclass
class Wires:
    """The listeners and the input and output lists several events share. Each listener is taken
    once: Gradio puts the events of one function object in one concurrency group."""
    p: Page
    gen: Generation
    other: Listeners
    finish: Call  # every panel of the last step once a run ends (or is stopped); asks for the bundle
    inside: Call  # the open "inside the model" tab, drawn anew
    send_bundle: Call  # the viewer bundle of the trace on screen, for the page
    view_in: dict  # the step on screen and how it is drawn, by the names the listeners take
    drawn_in: dict  # how it is drawn: the layer and head, the sampling settings
    run_in: dict  # what a run reads (Generation.stream's parameters)
    all_out: list
    panels: list
    load_out: list

    @classmethod
    def of(cls, p: Page, example) -> "Wires":
        C, state = p.C, p.state
        gen = Generation(p)
        cmp = {f"cmp_{x}{n}": C[f"cmp_{x}{n}"] for n in range(3) for x in "tkp"}  # the side-by-side sampler's three rows
        inside_in = dict(tab=p.tab, trace=state, step=C.slider, **cmp, price_in=C.price_in, price_out=C.price_out, seed=C.seed)
        inside_out = [C[k] for keys in INSIDE.values() for k in keys]
        inside_kw = dict(show_progress="hidden", concurrency_limit=None, trigger_mode="always_last")
        panels = [C[k] for k in page.PANEL_KEYS]
        drawn_in = dict(layer=C.layer, head=C.head, temperature=C.temperature, top_k=C.top_k, top_p=C.top_p)  # how a trace is drawn
        view_in = dict(trace=state, step=C.slider, **drawn_in)
        return cls(
            p=p, gen=gen, other=Listeners(p, example),
            finish=Call(gen.finish, dict(ran=C.ran, **view_in), [*panels, C.slider, C.download, C.bundle_req], dict(show_progress="hidden")),
            inside=Call(Inside(p).inside_view, inside_in, inside_out, inside_kw),
            send_bundle=Call(viewer.bundle_message, [state, C.layer, C.head, C.metric], C.viewer_data),
            view_in=view_in, drawn_in=drawn_in,
            run_in=dict(prompt=C.prompt, system=C.system, mode=C.mode, temperature=C.temperature, top_k=C.top_k, top_p=C.top_p, seed=C.seed,
                        max_new=C.max_new, layer=C.layer, head=C.head, live=C.live, spec_on=C.spec_on, spec_k=C.spec_k,
                        spec_draft=C.spec_draft, shown=C.info, state=state),  # the model line as clicked: a click while it said "loading" starts no run
            all_out=[C.ran, state, *panels, C.slider, C.download, C.spec_summary, C.info, C.layer, C.head, C.viewer_data,
                     C.example, C.example_look],
            panels=panels,
            load_out=[C.ran, state, *panels, C.slider, C.layer, C.head, C.prompt, C.mode, C.system, C.temperature, C.top_k,
                      C.top_p, C.seed, C.max_new, C.info, C.download, C.spec_summary, C.example, C.example_look],
        )


def wire(demo: gr.Blocks, p: Page, example) -> None:
    """Every event of the page, in the order the page has always had them."""
    w = Wires.of(p, example)
    # the viewer's messages go to the page's script (assets/app_viewer.js)
    p.C.viewer_data.change(None, p.C.viewer_data, None, js=viewer.INBOX_JS, api_visibility="private")
    events = _generation(w) + _branches(w)
    _tour(w)
    _stop_and_files(w, events)
    _inside_tabs(w)
    _viewer_calls(w)
    _upload(w)
    _guess(w)
    _class(w)
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
    for trigger, fn, extra, name in ((C.generate.click, gen_fn, {}, "generate"), (C.prompt.submit, gen_fn, {}, None),
                                     (C.step.click, gen.step_fn, {}, "step"), (C.resample.click, gen.resample_fn, {"step": C.slider}, "resample")):
        ev = trigger(fn, outputs=w.all_out, inputs_kwargs={**extra, **w.run_in}, concurrency_limit=4, concurrency_id="generate",
                     show_progress="hidden", api_name=name, api_visibility="public" if name else "private",
                     trigger_mode="multiple" if fn is gen_fn else None)
        w.inside.after(w.finish.after(ev, trigger_mode="always_last"))
        events.append(ev)
    return events


def _branches(w: Wires) -> list:
    """A branch (a candidate bar clicked, or a rank typed), kept in the list; a kept branch shown."""
    C, gen, p = w.p.C, w.gen, w.p
    record = gen.record_branch
    branch_out = [*w.all_out, p.pending]
    events = []
    for trigger, rank_in, fn in ((C.branch_go.click, {"req": C.branch_req}, gen.branch_click),
                                 (C.branch_btn.click, {"rank": C.branch_rank}, gen.branch_typed)):
        ev = trigger(fn, outputs=branch_out, inputs_kwargs={**rank_in, "step": C.slider, **w.run_in}, concurrency_limit=4,
                     concurrency_id="generate", show_progress="hidden")
        w.inside.after(w.finish.after(ev)).then(
            record, [p.state, p.branches, p.pending], [p.branches, C.branches_html, C.branch_pick, p.pending], show_progress="hidden")
        events.append(ev)
    shown = C.branch_pick.input(gen.show_branch, outputs=[p.state, *w.panels, C.slider, C.branches_html], show_progress="hidden",
                                inputs_kwargs=dict(label=C.branch_pick, branches=p.branches, **w.drawn_in))
    w.inside.after(w.send_bundle.after(shown))
    return events


def _tour(w: Wires) -> None:
    """The tour's buttons: start, next, back, end; the page then points at the stage's panel."""
    C, p, tour_show = w.p.C, w.p, w.other.tour_show
    tour_out = [C.tour_group, C.tour_box, p.tour_i, C.tour_target, C.tour_next, C.tour_back]
    for btn, delta in ((C.tour, None), (C.tour_next, 1), (C.tour_back, -1)):
        fn = (lambda d: (lambda t, s, i: tour_show(t, s, 0 if d is None else i + d)))(delta)
        btn.click(fn, [p.state, C.slider, p.tour_i], tour_out, show_progress="hidden").then(
            None, [C.tour_target], None, js=FOCUS_JS)
    C.tour_end.click(lambda: {C.tour_group: gr.Group(visible=False), C.tour_target: ""}, None, tour_out,
                     show_progress="hidden").then(None, [C.tour_target], None, js=FOCUS_JS)


def _stop_and_files(w: Wires, events: list) -> None:
    """Stop (cancels every run), the bundle `finish` asks for, and the two downloads."""
    C = w.p.C
    w.inside.after(w.finish.on(C.stop.click, cancels=events))
    # finish asks for the bundle through its own event: a run's chain (Generate, Stop) ends without
    # waiting for it, so Generate, whose click is ignored while its chain is pending, can be clicked again
    w.send_bundle.on(C.bundle_req.change, show_progress="hidden", api_visibility="private")
    C.download.click(w.other.download_click, w.p.state, [C.download, C.download_file], show_progress="hidden").then(
        None, None, None, js="() => document.querySelector('#download-file')?.click()")  # (no file: a click does nothing)
    C.download_page.click(w.other.download_page_click, [w.p.state, C.layer, C.head, C.metric], [C.download_page, C.download_file],
                          show_progress="hidden").then(None, None, None, js="() => document.querySelector('#download-file')?.click()")


def _inside_tabs(w: Wires) -> None:
    """Panel 6: the open tab is drawn when opened and follows the step slider; its buttons and fields."""
    C, p = w.p.C, w.p
    # Gradio selects the open tab as the page mounts: nothing to draw then (the page asks for the tab once its
    # panel scrolls into view, assets/app_viewer.js); a tab a person opens is drawn
    moved = gr.State(False)
    for key, tab in p.tabs.items():
        opened = tab.select((lambda k: lambda was: {p.tab: k, moved: k != was})(key), p.tab, {p.tab, moved}, show_progress="hidden")
        w.inside.only_if(moved, {C.lens_html: gr.skip()}).after(opened)
    for trigger in (C.cmp_btn.click, C.price_in.input, C.price_out.input):
        w.inside.on(trigger)
    C.kvc_btn.click(kv_compare_click, [p.state, C.slider], [C.kvc_html, C.kvc_plot], show_progress="minimal")
    C.swap_btn.click(swap_click, [p.state, C.swap_i, C.swap_j], [C.swap_plot, C.swap_i, C.swap_j], show_progress="minimal")


def _viewer_calls(w: Wires) -> None:
    """The server calls the page's step viewer still makes: one per change of layer, head or overview
    metric, and one after the step slider settles (the open inside tab, when on screen); and the
    text drawn with or without token boundaries."""
    C, state = w.p.C, w.p.state
    for k in ("layer", "head"):
        C[k].input(viewer.attention_message, [state, C.layer, C.head], C.viewer_data, show_progress="hidden",
                   concurrency_limit=None, trigger_mode="always_last")
    C.metric.input(viewer.overview_message, [state, C.metric], C.viewer_data, show_progress="hidden", concurrency_limit=None)
    settle_out = [C[k] for k in viewer.FIVE]
    w.inside.after(Call(partial(viewer.settled_view, C), {**w.view_in, "metric": C.metric}, settle_out,
                        dict(show_progress="hidden", concurrency_limit=None, trigger_mode="always_last")).on(C.settled.click))
    # the whole trace's text: the page's step viewer shows the step on screen
    C.boundaries.input(lambda t, b: page.output_only(t, boundaries=b) if t else gr.skip(),
                       [state, C.boundaries], C.output, show_progress="hidden")


def _upload(w: Wires) -> None:
    """A trace file loaded from disk. A refused file (`ran` False) changed nothing, so its follow-ups do nothing:
    the Inside panel's would recompute what is on screen, waiting for the model if another person's run has it."""
    C = w.p.C
    loaded = C.upload.upload(w.other.load_trace, outputs=w.load_out, inputs_kwargs=dict(file=C.upload, **w.drawn_in))
    w.inside.only_if(C.ran, {C.lens_html: gr.skip()}).after(w.send_bundle.only_if(C.ran, gr.skip()).after(loaded))


def _guess(w: Wires) -> None:
    """Guess first: a guess sent (Reveal or Enter) is rated at the step on screen; the page shows the step once the
    rating is there (assets/guess.js). Not in the model's run queue: a rating is one short forward pass at most."""
    C = w.p.C
    for trigger in (C.guess_btn.click, C.guess.submit):
        trigger(w.other.rate_guess, outputs=C.guess_result, show_progress="hidden", concurrency_limit=8,
                inputs_kwargs=dict(trace=w.p.state, step=C.slider, guess=C.guess))


def _class(w: Wires) -> None:
    """A class room: started from the trace on screen; the teacher's new trace sent to it; a student's page joining
    one (its trace loaded as a file is). The room's step, guesses and reveal go through its JSON API (assets/room.js)."""
    C, p, quiet = w.p.C, w.p, dict(show_progress="hidden")
    C.class_start.click(None, None, C.class_addr, js="() => location.origin + location.pathname", **quiet).then(
        class_room.start_class, [C.class_addr, p.state, C.slider, p.room], [C.class_info, p.room], **quiet)
    C.class_sync.click(class_room.sync_class, [p.room, p.state, C.slider], None, **quiet)
    joined = C.room_join_go.click(lambda code, *drawn: w.other.load_trace(class_room.join_trace(code), *drawn),
                                  [C.room_join, *w.drawn_in.values()], w.load_out, **quiet)
    sent = w.send_bundle.only_if(C.ran, gr.skip()).after(joined)
    w.inside.only_if(C.ran, {C.lens_html: gr.skip()}).after(sent)
    sent.then(None, C.viewer_data, None, js=JOINED_JS, **quiet)

    def resumed(saved, address, *drawn):  # a reloaded teacher's page: its room's card, trace and step back
        hit = class_room.resume_class(saved, address)
        if hit is None:
            return {C.ran: False}
        r, card, room = hit
        st = r.trace.settings
        return {**w.other.load_trace(r.trace, *drawn), C.slider: slider(r.trace, r.step), C.class_info: card, p.room: room,
                **panels_of_values(C, r.trace, r.step, 0, "all", st.temperature, st.top_k, st.top_p, only=viewer.LIGHT)}

    back = C.class_resume_go.click(None, None, C.class_addr, js="() => location.origin + location.pathname", **quiet).then(
        resumed, [C.class_resume, C.class_addr, *w.drawn_in.values()], [*w.load_out, C.class_info, p.room], **quiet)
    w.inside.only_if(C.ran, {C.lens_html: gr.skip()}).after(w.send_bundle.only_if(C.ran, gr.skip()).after(back))


def _page_open(demo: gr.Blocks, w: Wires) -> None:
    """The page opened: a link's fields written in the browser at once, the example trace, then the rest of
    what a link asks for (ui/links.py); the model's status line until it has loaded."""
    C, p = w.p.C, w.p
    # (the open "inside" tab is asked for by the page once that panel scrolls into view: assets/app_viewer.js)
    opened = w.send_bundle.after(demo.load(w.other.on_load, None, [p.state, C.info], show_progress="hidden"))
    opened.then(None, None, None, js=OPENED_JS, show_progress="hidden")
    links.wire(links.Deps(C, p.state, w.other.load_trace, w.load_out, partial(panels_of_values, C), slider, w.send_bundle, w.inside), opened, demo)
    status_timer = gr.Timer(1.0)
    status_timer.tick(status_tick, None, [C.info, status_timer], show_progress="hidden")
    demo.unload(session_closed)  # the page closed: its session's download folder goes (ui/listeners.py)

"""Where each panel is laid out: every component of the page, by name, and nothing about events.

layout() runs inside the page's gr.Blocks and returns a Page (ui/page.py): `C` (name -> component, the names
the listeners and ui/links.py use), the session's trace (`state`), the "Inside the model" tabs and
the few per-session values the events keep. The events are in ui/wiring.py.
"""
from __future__ import annotations

import html
from dataclasses import asdict
from functools import partial
from itertools import groupby

import gradio as gr

from pipeline.sampling import grid as slider_grid
from pipeline.trace.records import Trace
from viz import output, page, panels
from viz import room as room_viz
from viz.captions import captions
from viz.glossary import gloss
from viz.text import t
from viz.text import language as speaking_now
from ui import bridge, examples, language, links
from ui.inside import tabs as inside_tabs
from ui.model import DRAFT_MODEL, MAX_NEW_TOKENS
from ui.step_slider import StepSlider
from ui.page import Page
from ui.views import Components, ViewOptions, slider_props

# (assets/room.js loads after the page is drawn) a class's join link (?room=CODE) shows none of the page's own example:
# from the page's first paint (the join box is drawn before the text) until the room's trace is on screen, only "Joining
# class ..."; a code typed before room.js is there is kept for it (the form never submits itself: the page stays)
JOINING_JS = ("if (/[?&]room=/.test(location.search)) document.documentElement.classList.add('room-joining');"
              "element.querySelector('form')?.addEventListener('submit', (e) => { e.preventDefault(); window.LLMJoinAsked = true; });")


SKIP_JS = ("element.addEventListener('click', (e) => { const box = document.querySelector('#prompt textarea');"
           " if (e.target.closest('a') && box) { e.preventDefault(); box.focus(); } });")


def _skip_html() -> str:
    return f"<a class='skip-link' href='#lesson'>{html.escape(t('a11y.skip'))}</a>"


def layout(example: Trace | None, status: str, spec_cost) -> Page:
    """Every component, in page order (inside the open gr.Blocks). The first screen is the lesson: an
    example to try, the prompt, the text with the step slider, and beside them the next-token
    distribution with the sampling sliders above it; then the settings, then the stages in the model's
    order (tokens, embeddings, attention, KV cache), inside the model, speculative decoding."""
    p = Page()
    C = p.C
    first = _first_values(example)
    # Each session's trace. It starts empty and gets the example on page load: Gradio would
    # otherwise deep-copy the example per session and re-serialise it on every update.
    p.state = gr.State(None)
    C.ran = gr.State(False)  # whether the last Generate (or +1, re-sample, branch) ran, or was refused
    # first of all, for the keyboard: a link past the title and the pickers to the prompt (shown when it has the focus)
    language.again(gr.HTML(_skip_html(), elem_id="skip-link", js_on_load=SKIP_JS), value=_skip_html)
    _md(lambda: "# " + t("title.page"), elem_id="intro")
    C.info = gr.Markdown(status, elem_id="model-info")
    # the language picker (assets/language.js draws it): at the title line's right, on every screen and in a class room
    gr.HTML("<span class='language-slot'></span>", elem_id="language-bar", js_on_load="window.LLMLanguage && window.LLMLanguage.picker(element);")
    # a student types the class code the teacher's screen shows (assets/room.js opens ?room=CODE, or says why not): in the
    # title's line on a wide screen, under it on a phone (assets/style.css)
    language.again(gr.HTML(room_viz.join_box_html(), elem_id="join-class", js_on_load=JOINING_JS), value=room_viz.join_box_html)
    with gr.Row(equal_height=False, elem_id="lesson"):
        with gr.Column(scale=5, min_width=320, elem_id="lesson-text"):
            _prompt(C)
            _text(C, first, example)
        with gr.Column(scale=6, min_width=340, elem_id="lesson-distribution"):
            _card(C, panels.CARD["panel-distribution"], example, first)
            # (the text's caption, which names the chart: under the chart, so that on a phone the chart comes first)
            _md(partial(_caption, "output"), elem_classes="caption", elem_id="output-caption")
            _samples(C)
    _settings(C, example)
    _step_cards(C, example, first)
    with gr.Column(elem_id="panel-inside"):
        _md(lambda: f"### {INSIDE_NUMBER} · {t('title.inside')}\n" + _caption("inside"), elem_classes="caption")
        with gr.Tabs(elem_id="inside-tabs"):
            _inside_tabs(C, p.tabs)
    _speculative(C, spec_cost, first, example)
    _hidden(C)
    p.branches, p.pending, p.tour_i, p.tab = gr.State([]), gr.State(None), gr.State(0), gr.State("lens")
    p.room = gr.State(None)
    # (a run's end asks for the viewer bundle through this State's change: its own event, ui/wiring.py)
    C.bundle_req = gr.State(None)
    C.link_example = gr.State(False)  # whether the page's link opened an example (ui/links.py)
    p.tab_moved = gr.State(False)  # whether a tab opened is another than the open one (ui/wiring.py)
    C.status_timer = gr.Timer(1.0)  # the model's status line, redrawn until it has loaded
    links.remember_tables(C)  # (the page's head writes a link's fields with them)
    return p


def _first_values(example: Trace | None) -> dict:
    """What the page opens with, the same for every visitor: the example's light panels (its text, chips,
    rounds) at its last step, as the components' values, so a page opens drawn with no round trip (the
    panels that follow the step come in the viewer bundle the page's head names: ui/viewer_wiring.py)."""
    if example is None or not example.steps:
        return {}
    return page.render(example, step=len(example.steps) - 1, **asdict(ViewOptions.of(example)), only=panels.LIGHT_KEYS)


_FIRST: dict = {}  # (id of the example, language) -> its first values in that language


def first_values(example: Trace | None) -> dict:
    """_first_values in the language speaking (made once per language): the page's first panels for a visitor
    whose language is not English (ui/listeners.py's on_load)."""
    key = (id(example), speaking_now())
    if key not in _FIRST:
        while len(_FIRST) >= 16:  # (one example in the app: a few languages; tests build many pages)
            _FIRST.pop(next(iter(_FIRST)))
        _FIRST[key] = _first_values(example)
    return _FIRST[key]


INSIDE_NUMBER = 5  # "Inside the model": after the step cards (viz.panels.CARDS), before speculative decoding


def _prompt(C: Components) -> None:
    """The top of the left column: an example to try, the prompt, and the buttons that run the model."""
    with gr.Row(equal_height=True, elem_id="example-row"):
        C.example = gr.Dropdown(examples.example_choices(), value=None, label=t("label.example"), elem_id="example-traces",
                                scale=1, min_width=150)
        C.mode = gr.Radio([(t("choice.mode.chat"), links.MODES["chat"]), (t("choice.mode.raw"), links.MODES["raw"])],
                          value=links.MODES["chat"], label=t("label.mode"), elem_id="mode", scale=1, min_width=150)
    C.example_look = gr.Markdown(elem_id="example-look")  # the example's one sentence (ui/links.py)
    # one line that grows as text is pasted in: Enter generates (Gradio's multi-line boxes take Enter as a newline)
    C.prompt = gr.Textbox(label=t("label.prompt"), value="Why is the sky blue?", lines=1, max_lines=12, elem_id="prompt",
                          placeholder=t("placeholder.prompt"))
    with gr.Row(elem_id="run-buttons"):
        C.generate = gr.Button(t("button.generate"), variant="primary", elem_id="generate", min_width=100)
        C.step = gr.Button(t("button.step"), elem_id="step", min_width=80)
        C.stop = gr.Button(t("button.stop"), variant="stop", elem_id="stop", min_width=70)


SLIDER_MIN_W = 180  # five sliders: three then two in the lesson's column on a laptop (four left the fifth's end cut off)


def _sampling(C: Components) -> None:
    """Temperature, top-k, top-p, min-p, repetition penalty: above the distribution they reshape (what-if, no model needed)."""
    with gr.Row(elem_id="sampling-sliders"):
        def grid(g: slider_grid.Grid, value, label: str, elem_id: str) -> gr.Slider:  # (the one table of the grids)
            return gr.Slider(g.lo, g.hi, value=value, step=g.step, label=label, elem_id=elem_id, min_width=SLIDER_MIN_W)

        C.temperature = grid(slider_grid.TEMPERATURE, 0.7, t("label.temperature"), "temperature")
        C.top_k = grid(slider_grid.TOP_K, 0, t("label.top_k"), "top-k")
        C.top_p = grid(slider_grid.TOP_P, 0.9, t("label.top_p"), "top-p")
        C.min_p = grid(slider_grid.MIN_P, 0, t("label.min_p"), "min-p")
        C.repetition_penalty = grid(slider_grid.REPETITION_PENALTY, 1, t("label.repetition_penalty"), "repetition-penalty")


def _samples(C: Components) -> None:
    """Draw many (ui/samples.py): N continuations from the step on screen, under the distribution they are drawn from."""
    from ui.samples import OPEN_JS

    with gr.Column(elem_id="samples"):
        _md(lambda: t("samples.heading", what=t("samples.heading_what")), elem_classes="caption")
        with gr.Row(equal_height=True):
            C.samples_n = gr.Number(16, minimum=2, maximum=32, precision=0, step=1, label=t("label.samples_n"), elem_id="samples-n",
                                    min_width=120)
            C.samples_m = gr.Number(24, minimum=1, maximum=64, precision=0, step=1, label=t("label.samples_m"), elem_id="samples-m",
                                    min_width=120)
            C.samples_run = gr.Button(t("button.samples_run"), elem_id="samples-run", min_width=90)
        C.samples_result = gr.HTML("", elem_id="samples-result", js_on_load=OPEN_JS)
        C.samples_state = gr.State(None)


def _settings(C: Components, example: Trace | None) -> None:
    """Below the first screen: the rest of a run's settings, speculative decoding, files and links."""
    from pipeline.speculative.draft import DEFAULT_DRAFT, draft_choices

    with gr.Row(equal_height=False, elem_id="run-settings"):
        with gr.Column(scale=5, min_width=320):
            C.system = gr.Textbox(label=t("label.system"), lines=2, elem_id="system-prompt")
            with gr.Row():
                # no minimum: a negative seed gets the pipeline's warning, which says what to type (Gradio's own
                # check would be an error toast that names no field)
                C.seed = gr.Number(value=0, precision=0, label=t("label.seed"), elem_id="seed")
                C.max_new = gr.Number(value=64, precision=0, minimum=1, maximum=MAX_NEW_TOKENS, label=t("label.max_new"),
                                      elem_id="max-new-tokens")
            C.live = gr.Checkbox(value=True, label=t("label.live"), elem_id="live-figures")
        with gr.Column(scale=6, min_width=320):
            with gr.Accordion(t("label.speculative_settings"), open=False, elem_id="speculative-settings"):
                C.spec_on = gr.Checkbox(value=False, label=t("label.spec_on"), elem_id="speculative")
                C.spec_k = gr.Slider(1, 8, value=4, step=1, label=t("label.spec_k"), elem_id="spec-k")
                C.spec_draft = gr.Dropdown(draft_choices(example.model.n_layers if example else 30, DRAFT_MODEL), value=DEFAULT_DRAFT,
                                           allow_custom_value=True, label=t("label.spec_draft"), elem_id="spec-draft",
                                           info=t("info.spec_draft"))
            with gr.Row():
                C.download = gr.Button(t("button.download"), elem_id="download-trace", interactive=False, size="sm")
                C.download_page = gr.Button(t("button.download_page"), elem_id="download-page", size="sm")  # one file that works offline
                C.upload = gr.UploadButton(t("button.upload"), file_types=[".json", ".gz"], elem_id="upload-trace", size="sm")
            with gr.Row(equal_height=True):  # "Copy link" and the link it wrote (ui/links.py)
                C.copy_link = gr.Button(t("button.copy_link"), elem_id="copy-link", size="sm", scale=1)
                C.link_box = gr.Textbox(show_label=False, placeholder=t("placeholder.link_box"), elem_id="link-box", scale=3,
                                        lines=1, max_lines=1, interactive=True)


def _text(C: Components, first: dict, example: Trace | None) -> None:
    """The text being written, the step slider with Play, the tour."""
    _panel(C, panels.BY_KEY["output"], first)
    # the legend of the "Colour by" mode chosen, drawn by the page (assets/colour_by.js; none for token boundaries)
    C.colour_legend = gr.HTML(output.LEGEND_HOST, elem_id="colour-legend")
    with gr.Row(equal_height=True):
        C.slider = StepSlider(**slider_props(example), label=t("label.slider"), elem_id="step-slider", scale=5)
        C.play = gr.Button(t("button.play"), elem_id="play", scale=1, size="sm", min_width=80)  # played in the page (assets/app_viewer.js)
        C.play_speed = gr.Dropdown([(t("choice.speed.slow"), "slow"), (t("choice.speed.normal"), "normal"), (t("choice.speed.fast"), "fast")],
                                   value="normal", label=t("label.play_speed"), elem_id="play-speed", scale=2,
                                   interactive=True, min_width=140)  # (read by the page's script: 1, 4 or 12 steps a second)
    with gr.Row(equal_height=True, elem_id="step-tools"):
        C.resample = gr.Button(t("button.resample"), elem_id="resample", size="sm", scale=2, min_width=100)
        C.tour = gr.Button(t("button.tour"), elem_id="tour", scale=2, size="sm", min_width=100)
        C.present = gr.Button(t("button.present"), elem_id="present-toggle", size="sm", scale=1, min_width=100)  # (assets/page.js)
        C.guess_on = gr.Checkbox(value=False, label=t("label.guess_on"), elem_id="guess-toggle", scale=1, min_width=130)  # (assets/guess.js)
    # what the text is coloured by: the page colours it from the numbers on its spans, with no request (assets/colour_by.js)
    C.colour_by = gr.Radio([(t("choice.colour_by.boundaries"), "boundaries"), (t("choice.colour_by.prob"), "prob"),
                            (t("choice.colour_by.surprise"), "surprise"), (t("choice.colour_by.entropy"), "entropy"),
                            (t("choice.colour_by.none"), "none")], value=output.DEFAULT_MODE, label=t("label.colour_by"),
                           elem_id="colour-by", interactive=True)  # (no server event: interactive all the same)
    _guess(C)
    with gr.Group(visible=False, elem_id="tour-panel") as C.tour_group:
        C.tour_box = gr.HTML(elem_id="tour-box")
        with gr.Row():
            C.tour_back = gr.Button(t("button.tour_back"), elem_id="tour-back", size="sm")
            C.tour_next = gr.Button(t("button.tour_next"), elem_id="tour-next", size="sm", variant="primary")
            C.tour_end = gr.Button(t("button.tour_end"), elem_id="tour-end", size="sm")


def _guess(C: Components) -> None:
    """Guess first: while it is on, the step's token and the model's distribution stay hidden until a guess is sent
    (assets/guess.js hides and shows; ui/listeners.py rates the guess)."""
    gr.HTML("", elem_id="room-head")  # a student's page in a class: "Class ABC DEF · step 10 · What comes next?" (assets/room.js)
    # (the id on a Column: a Group writes its elem_id on two nested elements, and an id names one)
    with gr.Column(elem_id="guess-box"), gr.Group():
        with gr.Row(equal_height=True):  # (the label and the button name the same act: room.js words them for a class)
            C.guess = gr.Textbox(label=t("label.guess"), max_length=40, lines=1,
                                 placeholder=t("placeholder.guess"), elem_id="guess-input", scale=4)
            C.guess_btn = gr.Button(t("button.guess"), elem_id="guess-submit", variant="primary", scale=1, min_width=100)
        C.guess_result = gr.HTML(elem_id="guess-result")
    gr.HTML("", elem_id="room-bar")  # a student's page in a class: following the teacher, their guess sent (assets/room.js)
    with gr.Row(elem_id="class-row"):
        C.class_start = gr.Button(t("button.class_start"), elem_id="class-start", size="sm", scale=0, min_width=170)
    C.class_info = gr.HTML(elem_id="class-info")  # the room's code, QR and controls (viz/room.py)


HAND_LAID = ("panel-distribution", "panel-speculative")  # cards placed by hand: on the first screen, after "Inside the model"


def _md(make, **props) -> gr.Markdown:
    """A Markdown of the page's words, written by `make` (again in the visitor's language as the page opens)."""
    return language.again(gr.Markdown(make(), **props), value=make)


def _caption(key: str) -> str:
    """A caption, its glossary words marked (a hover or a tap says what they mean: viz/glossary.py)."""
    return gloss(captions()[key])


def _heading(card: panels.Card) -> str:
    """A card's title (numbered, but the first screen's), with its caption unless that comes after its panels."""
    title = f"### {card.number} · {card.title}" if card.number else f"### {card.title}"
    return title if card.caption_below else title + "\n" + _caption(card.caption)


def _panel(C: Components, p: panels.Panel, first: dict) -> None:
    """A panel's component, by its key (viz.panels): a figure or HTML (`first`: the values the page opens with)."""
    C[p.key] = (gr.Plot(first.get(p.key), show_label=False, elem_id=p.elem_id, scale=p.scale) if p.kind == "plot"
                else gr.HTML(first.get(p.key), elem_id=p.elem_id))


def _attention_controls(C: Components, example: Trace | None) -> None:
    """Panel 3's layer, head and overview metric (above its plots)."""
    with gr.Row():
        C.layer = gr.Dropdown(choices=list(range(example.model.n_layers if example else 1)), value=0, label=t("label.layer"), elem_id="layer", scale=1)
        C.head = gr.Dropdown(choices=[(t("choice.head.all"), "all")] + list(range(example.model.n_heads if example else 1)), value="all", label=t("label.head"), elem_id="head", scale=1)
        C.metric = gr.Radio([(t("choice.metric.entropy"), "entropy"), (t("choice.metric.newest"), "newest"), (t("choice.metric.first"), "first")],
                           value="entropy", label=t("label.metric"), elem_id="overview-metric", scale=2)


CONTROLS = {"panel-attention": _attention_controls, "panel-distribution": lambda C, example: _sampling(C)}  # a card's own controls, between its heading and its panels


def _card(C: Components, card: panels.Card, example: Trace | None, first: dict) -> None:
    """A numbered card: its heading and caption, its controls, its panels (in one row when side by side)."""
    with gr.Column(elem_id=card.elem_id):
        _md(partial(_heading, card), elem_classes="caption")
        if card.elem_id in CONTROLS:
            CONTROLS[card.elem_id](C, example)
        if card.side_by_side:
            with gr.Row(equal_height=False):
                for p in panels.in_card(card.elem_id):
                    _panel(C, p, first)
        else:
            for p in panels.in_card(card.elem_id):
                _panel(C, p, first)
        if card.caption_below:  # (the page's own wording, where it has one: viz/captions.py's "<key>_app")
            _md(partial(_caption, card.caption + "_app" if card.caption + "_app" in captions() else card.caption), elem_classes="caption")
        if card.elem_id in AFTER:
            AFTER[card.elem_id](C)


def _token_tax(C: Components) -> None:
    """"The same sentence in other languages" (ui/token_tax.py): counted when opened, a learner's own sentence added."""
    with gr.Accordion(t("tax.title"), open=False, elem_id="token-tax") as C.tax_box:
        C.tax_html = gr.HTML("", elem_id="token-tax-body")
        with gr.Row(equal_height=True):
            C.tax_own = gr.Textbox(label=t("tax.own_label"), lines=1, max_lines=4, max_length=2000, elem_id="tax-own", scale=4)
            C.tax_count = gr.Button(t("tax.own_button"), elem_id="tax-count", scale=1, min_width=90)


AFTER = {"panel-tokens": _token_tax}  # a card's own part after its panels


def _step_cards(C: Components, example: Trace | None, first: dict) -> None:
    """Every card not placed by hand, in page order (viz.panels.CARDS); cards sharing a `row` side by side."""
    for row, cards in groupby((c for c in panels.CARDS if c.elem_id not in HAND_LAID), key=lambda c: c.row):
        if row:
            with gr.Row(equal_height=False):
                for card in cards:
                    _card(C, card, example, first)
        else:
            for card in cards:
                _card(C, card, example, first)


def _inside_tabs(C: Components, tabs: dict) -> None:
    """The tabs of "Inside the model" (inside the open gr.Tabs), from the registry (ui/inside/tabs.py): each tab's
    caption and components, each tab kept in `tabs` by its id."""
    for tab in inside_tabs.TABS:
        with gr.Tab(tab.title, id=tab.id, elem_id=tab.elem_id) as tabs[tab.id]:
            _md(partial(_caption, tab.caption), elem_classes="caption")
            _inside_parts(C, tab.parts)


INSIDE_KINDS = {"html": gr.HTML, "plot": gr.Plot, "number": gr.Number, "button": gr.Button, "radio": gr.Radio}
INSIDE_BOXES = {"row": gr.Row, "group": gr.Group}


def _inside_parts(C: Components, parts: tuple) -> None:
    """A tab's declared parts as components, each in `C` by its key: its rows and groups, captions, fields and panels."""
    for part in parts:
        if isinstance(part, inside_tabs.Box):
            with INSIDE_BOXES[part.kind](**part.props):
                _inside_parts(C, part.parts)
        elif part.kind == "caption":
            _md(partial(_caption, part.key), elem_classes="caption")
        else:
            C[part.key] = INSIDE_KINDS[part.kind](elem_id=part.elem_id, **part.props)


def _speculative(C: Components, spec_cost, first: dict, example: Trace | None) -> None:
    """Panel 7: the rounds of a speculative run, and this machine's cost curve when measured."""
    with gr.Column(elem_id="panel-speculative"):
        _md(partial(_heading, panels.CARD["panel-speculative"]), elem_classes="caption")
        C.spec_summary = gr.HTML(page.speculative_summary_html(example) if first else None, elem_id="spec-summary")  # (ui/listeners.py's on_load)
        _panel(C, panels.BY_KEY["spec"], first)
        if spec_cost is not None:
            cost_text, cost_plot = (lambda: page.speculative.cost_curve_html(spec_cost),
                                    lambda: static_figure(page.speculative.cost_curve_figure(spec_cost)))
            language.again(gr.HTML(cost_text(), elem_id="spec-cost-text"), value=cost_text)
            language.again(gr.HTML(cost_plot(), elem_id="spec-cost-plot"), value=cost_plot)


def static_figure(fig) -> str:
    """A figure no event redraws, as HTML the page's script draws with the viewer's Plotly.js (assets/app_viewer.js):
    a gr.Plot with a value would make Gradio load its own copy of Plotly.js as the page opens."""
    return f"<div class='static-figure' data-figure='{html.escape(fig.to_json(), quote=True)}'></div>"


def _hidden(C: Components) -> None:
    """The page's two hidden components: the bridge between the page's scripts and the server (ui/bridge.py), and
    the file a download button makes (filled when Download is clicked, then clicked by the page's script)."""
    C.bridge = gr.HTML("", html_template="", js_on_load=bridge.on_load_js(), elem_id="bridge", elem_classes="hidden-input",
                       container=False, padding=False, apply_default_css=False)
    C.download_file = gr.DownloadButton("file", elem_id="download-file", elem_classes="hidden-input")

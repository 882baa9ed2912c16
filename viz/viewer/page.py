"""One self-contained HTML file per trace: the page template (assets/viewer.html) with Plotly.js,
the viewer bundle (viz/viewer/bundle.py) and the page's scripts (VIEWER_SCRIPTS, in assets/) inlined, the
page's words before them (viz.text's catalogue), and the page's own "Guess first" (its data from
viz/viewer/guess.py, its script assets/viewer_guess.js: the app has its own). It makes no request of any kind."""
from __future__ import annotations

import functools
import html
import json
import re
from pathlib import Path

from pipeline.trace.records import Trace

from viz import page, panels
from viz.distribution import short_number
from viz.captions import captions
from viz.output import colour_controls_html, colour_data, piece_title, stop_words
from viz.style import html_piece
from viz.text import catalogue_js, language, t, thousands
from viz.viewer.bundle import MAX_FRAMES, bundle_json, viewer_bundle
from viz.viewer.guess import guess_json

ASSETS = Path(__file__).resolve().parents[2] / "assets"
TEMPLATE = ASSETS / "viewer.html"
# The page's Plotly.js: plotly.js's cartesian bundle and scattergl (the trace types the figures use), built by
# scripts/plotly_bundle/ from the plotly.js of the plotly package's own full bundle (tests/unit/test_plotly_bundle.py).
# 1.8 MB to load and run at each page open and to carry in each exported page, against 4.8 MB: ~0.35-0.47 s against
# ~1.0-1.1 s in Chromium here (docs/benchmarks.md). The app's <head> loads it by URL (ui/viewer_wiring.py); an exported
# page inlines it (render_html).
PLOTLY_JS = ASSETS / "vendor" / "plotly-cartesian-gl.min.js"
SLOT = re.compile(r"\{\{([A-Z_]+|T:[a-z_.]+|CSS:[a-z_.]+)\}\}")  # a value; T:key the catalogue's words; CSS:key as a CSS string
# the viewer's scripts in assets/, in the order they load, after Plotly.js and the text catalogue (viz.text.head_script;
# each needs those before it): text.js (the page's words and numbers) first; the offline page inlines them, the app
# loads them by URL (ui/viewer_wiring.py), the browser tests too
VIEWER_SCRIPTS = ("text.js", "figure_text.js", "announce.js", "colour_by.js", "viewer_phone.js", "viewer_plot.js", "viewer_text.js", "viewer_sampling.js", "viewer_sampling_range.js", "viewer_frames.js",
                  "viewer.js")
# the offline page's Guess first, after them (its own slot: not one of the scripts the app loads)
GUESS_SCRIPT = "viewer_guess.js"
# the sampling sliders (assets/viewer.js reads them), between the distribution's caption and its plot
def _slider(elem_id: str, label: str, aria: str) -> str:
    """One sampling slider of the offline page: its label (the app's own, ui/layout.py), a range and a number box."""
    label, aria, number = (html.escape(x, quote=True) for x in (label, aria, t("label.number_aria", name=aria)))
    return (f'    <div id="{elem_id}" class="slider"><label>{label}</label>\n'
            f'      <input type="range" aria-label="{aria}"><input type="number" aria-label="{number}"></div>\n')


def sampling_controls() -> str:
    return ('  <div class="sampling">\n' + _slider("temperature", t("label.temperature"), t("label.temperature_aria"))
            + _slider("top-k", t("label.top_k"), t("label.top_k_aria")) + _slider("top-p", t("label.top_p"), t("label.top_p_aria"))
            + _slider("min-p", t("label.min_p"), t("label.min_p_aria"))
            + _slider("repetition-penalty", t("label.repetition_penalty"), t("label.repetition_penalty_aria"))
            + "  </div>\n")


@functools.lru_cache(maxsize=1)
def plotly_js() -> tuple[str, str]:
    """(the text of PLOTLY_JS, its plotly.js version): read and checked once a process, not at every export."""
    js = PLOTLY_JS.read_text(encoding="utf-8")
    m = re.search(r"plotly\.js(?: \([a-z -]+\))? v([0-9][0-9.]*)", js[:400])
    assert "</script" not in js.lower(), "plotly.js would end its <script> element early"
    return js, m.group(1) if m else "?"


def _inline_script(name: str) -> str:
    js = (ASSETS / name).read_text(encoding="utf-8")
    assert "</script" not in js.lower(), f"assets/{name} would end its <script> element early"
    return js


def output_html(trace: Trace, n_steps: int) -> str:
    """Each step's text in its own span (data-step), escaped; a step that released no text (end of
    sequence, half a character) shows its token, marked as such."""
    parts = []
    for s in trace.steps[:n_steps]:
        title, data = piece_title(s, s.index), colour_data(s)  # (the app's spans' numbers: viz/output.py, assets/colour_by.js)
        if s.text:
            parts.append(f"<span class='step' data-step='{s.index}'{data} title=\"{html.escape(title)}\">{html.escape(s.text)}</span>")
        else:
            why = t("viewer.why_eos" if s.stop_reason == "eos" else "viewer.why_partial")
            parts.append(f"<span class='step special' data-step='{s.index}'{data} title=\"{html.escape(title + ' · ' + why)}\">"
                         f"{html_piece(s.piece, 24)}</span>")
    stop = trace.stop_reason if n_steps == len(trace.steps) else None
    tail = f"<div class='stop-reason caption'>■ {html.escape(stop_words(stop))}</div>" if stop else ""
    return "".join(parts) + tail


def _settings_words(st) -> str:
    words = [t("viewer.temperature", temperature=short_number(st.temperature)), t("viewer.top_k", k=thousands(st.top_k) if st.top_k else t("common.off")),
             t("viewer.top_p", p=short_number(st.top_p)) if st.top_p < 1 else t("viewer.top_p_off")]
    if getattr(st, "min_p", 0.0) > 0:
        words.append(t("viewer.min_p", p=short_number(st.min_p)))
    if st.repetition_penalty != 1.0:
        words.append(t("viewer.penalty_setting", p=short_number(st.repetition_penalty)))
    return t("viewer.seed", settings=", ".join(words), seed=st.seed)


def settings_line(trace: Trace) -> str:
    """How the tokens were sampled (each segment's settings too), and whether reshaping is exact."""
    segments = "".join(t("viewer.segment", step=sg.first_step, settings=_settings_words(sg.settings)) for sg in trace.segments)
    text = [t("viewer.sampled_with", settings=_settings_words(trace.settings), segments=segments)]
    if trace.settings.repetition_penalty != 1.0:
        text.append(t("viewer.penalty", p=short_number(trace.settings.repetition_penalty)))
    if all(s.logits is not None for s in trace.steps):
        text.append(t("viewer.exact"))
    elif all(s.logits is not None or s.rest is not None for s in trace.steps):  # (a step with logits is exact)
        text.append(t("viewer.within"))
    elif trace.settings.repetition_penalty != 1.0:
        text.append(t("viewer.approximate"))
    else:
        text.append(t("viewer.ranges"))
    return html.escape(" ".join(text))


def model_line(trace: Trace) -> str:
    md = page.model_markdown(trace.model, loaded_from_file=True)  # escaped already, **bold** marks
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", md)


def _section(card: panels.Card, extra: dict[str, str]) -> str:
    """A card of the page with its panels that follow the step (viz.panels), each an empty plot the viewer draws."""
    grow = {p.elem_id: f' class="grow{p.scale}"' if card.side_by_side else "" for p in panels.in_card(card.elem_id)}
    plots = [f'<div id="{p.elem_id}"{grow[p.elem_id]}><div class="plot"></div></div>' for p in panels.in_card(card.elem_id) if p.follows_step]
    if card.side_by_side:  # one row, each as wide as its panel's scale (assets/viewer.css: .grow2, .grow3)
        body = '  <div class="row">\n' + "".join(f"    {x}\n" for x in plots) + "  </div>\n"
    else:
        body = "".join(f"  {x}\n" for x in plots)
    return (f'<section id="{card.elem_id}" class="card">\n  <h2>{html.escape(card.title)}</h2>\n'
            f'  <p class="caption">{extra.get("caption", html.escape(captions()[card.caption]))}</p>\n'
            f'{extra.get("controls", "")}{body}</section>')


def step_sections(trace: Trace, bundle: dict) -> str:
    """The cards holding a panel that follows the step, in page order; the distribution's with the sampling
    sliders and how the trace was sampled, the attention's caption naming the block and head shown."""
    head = bundle["attention"]["head"]
    extras = {
        "panel-distribution": {"controls": sampling_controls() + f'  <p class="caption">{settings_line(trace)}</p>\n'},
        "panel-attention": {"caption": html.escape(captions()["attention"] + " " + t(
            "viewer.attention_shown", layer=bundle["attention"]["layer"], head=t("viewer.every_head") if head is None else t("viewer.one_head", head=head)))},
    }
    cards = [c for c in panels.CARDS if any(p.follows_step for p in panels.in_card(c.elem_id))]
    return "\n\n".join(_section(c, extras.get(c.elem_id, {})) for c in cards)


def top_n_words(trace: Trace, n_steps: int) -> str:
    """How many candidates the file keeps per step: '100', or '20–100' when the steps differ."""
    sizes = sorted({len(s.top_ids) for s in trace.steps[:n_steps]})
    return thousands(sizes[0]) if len(sizes) == 1 else f"{thousands(sizes[0])}–{thousands(sizes[-1])}"


def footer_html(plotly_version: str) -> str:
    return html.escape(t("offline.footer", command="\0", module="\1", version=plotly_version)).replace(
        "\0", "<code>python -m pipeline html</code>").replace("\1", "<code>pipeline.sampling</code>")


def render_html(trace: Trace, *, layer: int = 0, head: int | None = 0, max_frames: int = MAX_FRAMES, bundle: dict | None = None) -> str:
    """The whole page as one string. `bundle`: the trace's viewer bundle when already made (the app
    has the one its page shows); else made here for `layer`, `head` (None: every head) and `max_frames`."""
    bundle = bundle or viewer_bundle(trace, layer=layer, head=head, max_frames=max_frames)
    n = bundle["n_steps"]
    js, version = plotly_js()
    note = "" if n == len(trace.steps) else f"<p class='note'>{html.escape(t('viewer.truncated', n=thousands(len(trace.steps)), shown=thousands(n)))}</p>"
    slots = {
        "LANG": language(),
        "TITLE": html.escape(f"{trace.model.id}: {trace.prompt.text[:60]}"),
        "STYLE": (ASSETS / "viewer.css").read_text(encoding="utf-8"),
        "PLOTLY_JS": js, "PLOTLY_VERSION": version,
        "MODEL_LINE": model_line(trace), "NOTE": note,
        "PROMPT_HTML": html.escape(trace.prompt.text),
        "OUTPUT_HTML": output_html(trace, n),
        "COLOUR_BY": colour_controls_html(),
        "SETTINGS_LINE": settings_line(trace),
        "CAPTION_OUTPUT": html.escape(captions()["output"]),
        "STEP_SECTIONS": step_sections(trace, bundle),
        "BUNDLE": bundle_json(bundle),
        "VIEWER_JS": "\n".join([catalogue_js(), *(_inline_script(f) for f in VIEWER_SCRIPTS)]),  # the words first (viz.text)
        "GUESS_CAPTION": html.escape(t("offline.guess_caption", n=top_n_words(trace, n))),
        "FOOTER": footer_html(version),
        "GUESS_DATA": guess_json(trace, bundle),
        "GUESS_JS": _inline_script(GUESS_SCRIPT),
    }
    template = TEMPLATE.read_text(encoding="utf-8")
    for key in SLOT.findall(template):  # the page's words, in the page's language (none written in the template)
        if key.startswith("T:"):
            slots[key] = html.escape(t(key[2:]))
        elif key.startswith("CSS:"):
            slots[key] = json.dumps(t(key[4:]), ensure_ascii=False).replace("<", "\\3c ")
    missing = set(SLOT.findall(template)) - set(slots)
    assert not missing, f"assets/viewer.html has slots nothing fills: {sorted(missing)}"
    return SLOT.sub(lambda m: slots[m.group(1)], template)  # one pass: inserted text is never scanned again


def write_html(trace: Trace, path: str | Path, **kw) -> int:
    """Write the page; returns its size in bytes."""
    text = render_html(trace, **kw)
    Path(path).write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))

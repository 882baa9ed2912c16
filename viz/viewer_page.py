"""One self-contained HTML file per trace: the page template (assets/viewer.html) with Plotly.js,
the viewer bundle (viz/viewer.py) and the page's scripts (VIEWER_SCRIPTS, in assets/) inlined, the
page's words before them (viz.text's catalogue), and the page's own "Guess first" (its data from
viz/viewer_guess.py, its script assets/viewer_guess.js: the app has its own). It makes no request of any kind."""
from __future__ import annotations

import html
import re
from pathlib import Path

from pipeline.records import Trace

from . import page, panels
from .captions import CAPTIONS
from .output import STOP_WORDS
from .style import html_piece, visible
from .text import catalogue_js
from .viewer import MAX_FRAMES, bundle_json, viewer_bundle
from .viewer_guess import guess_json

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TEMPLATE = ASSETS / "viewer.html"
SLOT = re.compile(r"\{\{([A-Z_]+)\}\}")
# the viewer's scripts in assets/, in the order they load, after Plotly.js and the text catalogue (viz.text.head_script;
# each needs those before it): text.js (the page's words and numbers) first; the offline page inlines them, the app
# loads them by URL (ui/viewer_wiring.py), the browser tests too
VIEWER_SCRIPTS = ("text.js", "viewer_plot.js", "viewer_text.js", "viewer_sampling.js", "viewer_frames.js", "viewer.js")
# the offline page's Guess first, after them (its own slot: not one of the scripts the app loads)
GUESS_SCRIPT = "viewer_guess.js"
# the sampling sliders (assets/viewer.js reads them), between the distribution's caption and its plot
SAMPLING_CONTROLS = """  <div class="sampling">
    <div id="temperature" class="slider"><label>Temperature (0 = greedy)</label>
      <input type="range" aria-label="temperature"><input type="number" aria-label="temperature (number)"></div>
    <div id="top-k" class="slider"><label>Top-k (0 = off)</label>
      <input type="range" aria-label="top-k"><input type="number" aria-label="top-k (number)"></div>
    <div id="top-p" class="slider"><label>Top-p (1 = off)</label>
      <input type="range" aria-label="top-p"><input type="number" aria-label="top-p (number)"></div>
  </div>
"""


def _plotly() -> tuple[str, str]:
    """(plotly.min.js as shipped by the plotly package, its version)."""
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    m = re.search(r"plotly\.js v([0-9][0-9.]*)", js[:400])
    assert "</script" not in js.lower(), "plotly.min.js would end its <script> element early"
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
        title = (f"step {s.index} · id {s.token_id} · {visible(s.piece)!r} · p={s.chosen_final_prob:.3f} sampled from "
                 f"({s.chosen_prob:.3f} at temperature 1)")
        if s.text:
            parts.append(f"<span class='step' data-step='{s.index}' title=\"{html.escape(title)}\">{html.escape(s.text)}</span>")
        else:
            why = "end of sequence" if s.stop_reason == "eos" else "no text yet (part of a character)"
            parts.append(f"<span class='step special' data-step='{s.index}' title=\"{html.escape(title + ' · ' + why)}\">"
                         f"{html_piece(s.piece, 24)}</span>")
    stop = trace.stop_reason if n_steps == len(trace.steps) else None
    tail = f"<div class='stop-reason caption'>■ {html.escape(STOP_WORDS.get(stop, f'stopped: {stop}'))}</div>" if stop else ""
    return "".join(parts) + tail


def _settings_words(st) -> str:
    words = [f"temperature {st.temperature:g}", f"top-k {st.top_k or 'off'}", f"top-p {st.top_p:g}" if st.top_p < 1 else "top-p off"]
    if st.repetition_penalty != 1.0:
        words.append(f"repetition penalty {st.repetition_penalty:g}")
    return ", ".join(words) + f" (seed {st.seed})"


def settings_line(trace: Trace) -> str:
    """How the tokens were sampled (each segment's settings too), and whether reshaping is exact."""
    text = f"The tokens were sampled with {_settings_words(trace.settings)}"
    text += "".join(f"; from step {sg.first_step} on with {_settings_words(sg.settings)}" for sg in trace.segments) + "."
    if trace.settings.repetition_penalty != 1.0:
        text += f" The repetition penalty {trace.settings.repetition_penalty:g} applies at every slider position."
    if all(s.logits is not None for s in trace.steps):
        text += " Reshaping here is exact: the trace holds every step's full-vocabulary logits."
    elif all(s.rest is not None for s in trace.steps):
        text += (" Reshaping here is within 1e-3 of the model: the trace keeps each step's top candidates and a summary of"
                 " the rest of its vocabulary (exact at the trace's own settings).")
    elif trace.settings.repetition_penalty != 1.0:
        text += (" Reshaping here is approximate: the trace holds only each step's top candidates, so other settings are"
                 " applied to them alone.")
    else:
        text += (" The trace holds only each step's top candidates: at other settings a number is shown as the range it"
                 " must lie in.")
    return html.escape(text)


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
            f'  <p class="caption">{extra.get("caption", html.escape(CAPTIONS[card.caption]))}</p>\n'
            f'{extra.get("controls", "")}{body}</section>')


def step_sections(trace: Trace, bundle: dict) -> str:
    """The cards holding a panel that follows the step, in page order; the distribution's with the sampling
    sliders and how the trace was sampled, the attention's caption naming the block and head shown."""
    head = bundle["attention"]["head"]
    extras = {
        "panel-distribution": {"controls": SAMPLING_CONTROLS + f'  <p class="caption">{settings_line(trace)}</p>\n'},
        "panel-attention": {"caption": html.escape(CAPTIONS["attention"] + f" Shown: block {bundle['attention']['layer']}, "
                                                   + ("every head" if head is None else f"head {head}")
                                                   + "; the overview beside it has every block and head.")},
    }
    cards = [c for c in panels.CARDS if any(p.follows_step for p in panels.in_card(c.elem_id))]
    return "\n\n".join(_section(c, extras.get(c.elem_id, {})) for c in cards)


def top_n_words(trace: Trace, n_steps: int) -> str:
    """How many candidates the file keeps per step: '100', or '20–100' when the steps differ."""
    sizes = sorted({len(s.top_ids) for s in trace.steps[:n_steps]})
    return f"{sizes[0]:,}" if len(sizes) == 1 else f"{sizes[0]:,}–{sizes[-1]:,}"


def render_html(trace: Trace, *, layer: int = 0, head: int | None = 0, max_frames: int = MAX_FRAMES, bundle: dict | None = None) -> str:
    """The whole page as one string. `bundle`: the trace's viewer bundle when already made (the app
    has the one its page shows); else made here for `layer`, `head` (None: every head) and `max_frames`."""
    bundle = bundle or viewer_bundle(trace, layer=layer, head=head, max_frames=max_frames)
    n = bundle["n_steps"]
    js, version = _plotly()
    note = "" if n == len(trace.steps) else (
        f"<p class='note'>This trace has {len(trace.steps)} steps; the file holds the first {n} "
        f"(export with a larger --max-frames for more).</p>")
    slots = {
        "TITLE": html.escape(f"{trace.model.id}: {trace.prompt.text[:60]}"),
        "STYLE": (ASSETS / "viewer.css").read_text(encoding="utf-8"),
        "PLOTLY_JS": js, "PLOTLY_VERSION": version,
        "MODEL_LINE": model_line(trace), "NOTE": note,
        "PROMPT_HTML": html.escape(trace.prompt.text),
        "OUTPUT_HTML": output_html(trace, n),
        "SETTINGS_LINE": settings_line(trace),
        "CAPTION_OUTPUT": html.escape(CAPTIONS["output"]),
        "STEP_SECTIONS": step_sections(trace, bundle),
        "BUNDLE": bundle_json(bundle),
        "VIEWER_JS": "\n".join([catalogue_js(), *(_inline_script(f) for f in VIEWER_SCRIPTS)]),  # the words first (viz.text)
        "GUESS_TOP_N": top_n_words(trace, n),
        "GUESS_DATA": guess_json(trace, bundle),
        "GUESS_JS": _inline_script(GUESS_SCRIPT),
    }
    template = TEMPLATE.read_text(encoding="utf-8")
    missing = set(SLOT.findall(template)) - set(slots)
    assert not missing, f"assets/viewer.html has slots nothing fills: {sorted(missing)}"
    return SLOT.sub(lambda m: slots[m.group(1)], template)  # one pass: inserted text is never scanned again


def write_html(trace: Trace, path: str | Path, **kw) -> int:
    """Write the page; returns its size in bytes."""
    text = render_html(trace, **kw)
    Path(path).write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))

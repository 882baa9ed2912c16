"""The page's language per visitor (ui/language.py, viz.text's match/preferred): which one a request speaks, every
listener run speaking it, the catalogue route, links that carry the language, and Gradio's labels put in it."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from gradio.context import LocalContext

from ui import language, links
from viz.text import catalogue, known, language as speaking_now, languages, match, preferred, speaking, t

ROOT = Path(__file__).resolve().parents[2]


def req(referer: str = "", accept: str = ""):
    return SimpleNamespace(headers={k: v for k, v in (("referer", referer), ("accept-language", accept)) if v})


@pytest.mark.parametrize("tag, want", [("fr", "fr"), ("fr-CA", "fr"), ("FR_fr", "fr"), ("pt", "pt-BR"), ("pt-PT", "pt-BR"),
                                       ("zh-Hans-CN", "zh-CN"), ("zh", "zh-CN"), ("de-CH", "de"), ("en-GB", "en"),
                                       ("ko", None), ("", None), ("../fr", None), (None, None), ("x" * 40, None)])
def test_a_tag_names_a_language_of_the_page_or_none(tag, want):
    assert match(tag) == want
    assert known(tag) == (want or "en")


def test_a_browsers_languages_in_their_order_and_weight():
    assert preferred("fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7") == "fr"
    assert preferred("en-US,fr;q=0.9") == "en"
    assert preferred("ko, ru;q=0.9, de;q=0.1") == "de"  # the first the page speaks, even of low weight
    assert preferred("de;q=0.5, es;q=0.8") == "es"  # the weight orders, not the place
    assert preferred("fr;q=0, de") == "de"  # q=0: "not this one"
    assert preferred("ru, ko") == "en" and preferred("") == "en" and preferred(["ja", "pt-BR"]) == "pt-BR"


def test_a_request_speaks_its_pages_lang_then_its_browsers():
    assert language.of(req("http://h/?lang=de&step=3", "fr")) == "de"  # the address first
    assert language.of(req("http://h/?step=3", "fr-FR,fr;q=0.9")) == "fr"  # then the browser
    assert language.of(req("http://h/?lang=ko", "es")) == "es"  # a language the page does not speak: the browser's
    assert language.of(req("", "")) == "en" and language.of(None) == "en"


def _call_as(fn, request, *a):
    token = LocalContext.request.set(request)
    try:
        return fn(*a)
    finally:
        LocalContext.request.reset(token)


def test_every_kind_of_listener_speaks_its_callers_language():
    plain = language.speaking_caller(lambda: (speaking_now(), t("button.generate")))
    assert _call_as(plain, req("http://h/?lang=fr")) == ("fr", catalogue("fr")["button.generate"])
    assert _call_as(plain, req(accept="de")) == ("de", catalogue("de")["button.generate"])
    assert speaking_now() == "en"  # and nothing stays set after it

    def gen(n):
        for _ in range(n):
            yield speaking_now()
    wrapped = language.speaking_caller(gen)
    it = _call_as(wrapped, req("http://h/?lang=es"), 2)
    assert _call_as(lambda: list(it), req("http://h/?lang=es")) == ["es", "es"]

    async def coro():
        return speaking_now()
    assert _call_as(lambda: _own_loop(language.speaking_caller(coro)), req("http://h/?lang=zh-CN")) == "zh-CN"


def _own_loop(fn):
    """Awaits fn() on a loop of its own thread, in the caller's context: the
    browser tests' Playwright keeps a loop running in this one."""
    import asyncio
    import contextvars
    import threading
    ctx, out = contextvars.copy_context(), []
    th = threading.Thread(target=lambda: out.append(ctx.run(asyncio.run, fn())))
    th.start()
    th.join()
    return out[0]


def test_the_page_speaks_every_listener_but_the_english_api():
    with gr.Blocks() as demo:
        box = gr.Textbox()
        gr.Button("x").click(lambda: speaking_now(), outputs=box)
        gr.api(lambda: speaking_now(), api_name="trace")
    language.speak_all(language.speak_all(demo))  # (twice: still one wrapper)
    page_fn, api_fn = (f.fn for f in demo.fns.values())
    assert _call_as(page_fn, req("http://h/?lang=fr")) == "fr"
    assert _call_as(api_fn, req("http://h/?lang=fr")) == "en"
    assert not hasattr(page_fn.__wrapped__, "__wrapped__")


def test_each_languages_catalogue_is_served_and_nothing_else():
    app = FastAPI()
    app.include_router(language.router)
    c = TestClient(app)
    for lang in languages():
        r = c.get(f"/api/text/{lang}.json")
        assert r.status_code == 200 and r.json() == dict(catalogue(lang)) and "max-age" in r.headers["cache-control"]
    assert c.get("/api/text/ko.json").status_code == 404
    assert c.get("/api/text/fr-CA.json").status_code == 404  # a file's own name only (the page asks by it)


def test_the_head_gives_the_languages_their_names_and_the_english_words():
    head = language.head_html()
    assert head.startswith("<script>") and head.count("<script>") == 1 and "</script>" not in head[:-9]
    data = json.loads(head[len("<script>window.LLMLanguages = "):head.index("; window.LLMTextCatalogue")])
    assert data["names"]["fr"] == "Français" and data["names"]["zh-CN"] == "中文（简体）" and set(data["names"]) == set(languages())


def test_the_pages_language_script_picks_as_the_server_does():
    """assets/language.js's match, run in node over the same tags as viz.text.match."""
    tags = ["fr", "fr-CA", "FR_fr", "pt", "pt-PT", "zh-Hans-CN", "zh", "de-CH", "en-GB", "ko", "", "../fr", "x" * 40]
    script = ("global.window = {location: {search: '', href: 'http://h/'}}; global.navigator = {languages: ['en']};"
              "global.document = {documentElement: {lang: ''}}; global.MutationObserver = class { observe() {} };"
              f"window.LLMLanguages = {json.dumps({'names': {k: k for k in languages()}, 'aliases': language._ALIASES})};"
              + (ROOT / "assets" / "language.js").read_text(encoding="utf-8")
              + f"; console.log(JSON.stringify({json.dumps(tags)}.map(window.LLMLanguage.match)));")
    got = json.loads(subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout)
    assert got == [match(x) for x in tags]


def test_a_link_carries_the_language_it_was_made_in():
    assert "lang=" not in links.make_link("http://h/", example="sky", step=3)
    with speaking("fr"):
        assert links.make_link("http://h/", example="sky", step=3).endswith("&lang=fr")
    assert links.make_link("http://h/", example="sky", lang="en").endswith("lang=en")  # the picker's English is said
    assert links.parse_link({"lang": "fr", "step": "2"}).warnings == []  # the page's own field, never "unknown"


def test_gradio_labels_are_put_in_the_visitors_language():
    with gr.Blocks() as demo:
        s = gr.Slider(0, 2, label=t("label.temperature"))
        r = gr.Radio([(t("choice.mode.chat"), "Chat"), (t("choice.mode.raw"), "Raw text")], label=t("label.mode"))
        b = gr.Button(t("button.generate"))
        md = language.again(gr.Markdown("# " + t("title.page")), value=lambda: "# " + t("title.page"))
        plain = gr.Textbox(label="a name nobody translates")
        ev = demo.load(lambda: None)
        words, outputs = language.relabelling(demo)
        ev.then(words, outputs=outputs)
    fn = list(demo.fns.values())[-1]
    outs = [demo.blocks[i] for i in fn.outputs] if isinstance(fn.outputs[0], int) else fn.outputs
    assert plain not in outs and {s, r, b, md} <= set(outs)
    assert all(u is not None and type(u).__name__ != "dict" or u.get("__type__") == "update" for u in fn.fn())  # English: skipped
    with speaking("de"):
        got = dict(zip(outs, fn.fn()))
    de = catalogue("de")
    assert got[s]["label"] == de["label.temperature"] and got[b]["value"] == de["button.generate"]
    assert got[r]["choices"] == [(de["choice.mode.chat"], "Chat"), (de["choice.mode.raw"], "Raw text")] and got[r]["label"] == de["label.mode"]
    assert got[md]["value"] == "# " + de["title.page"]


def test_the_models_stored_weights_are_told_in_the_language():
    from viz.page import weights_words
    gguf = "GGUF: matrix weights Q4_1, embedding Q8_0, norms F32; computed in float32 (dequantised at load)"
    assert weights_words(gguf) == gguf  # English: pipeline/weights.py's words as they are
    with speaking("fr"):
        fr = weights_words(gguf)
    assert fr.startswith("GGUF: " + catalogue("fr")["model.w_matrix"] + " Q4_1") and "Q8_0" in fr and "computed" not in fr
    assert catalogue("fr")["model.w_dequantised"] in fr


def test_an_examples_title_and_look_come_in_the_language():
    from pipeline import gallery
    from ui import examples
    e = gallery.entry("split-emoji")
    assert examples.entry("split-emoji").title == e.title
    with speaking("de"):
        shown = examples.entry("split-emoji")
        choices = dict((name, title) for title, name in examples.example_choices())
    de = catalogue("de")
    assert shown.title == de["gallery.split_emoji.title"] and shown.look == de["gallery.split_emoji.look"]
    assert choices["split-emoji"] == de["gallery.split_emoji.title"] and choices["text-austen"] == de["passage.text_austen.title"]


def test_relabelling_leaves_every_control_as_interactive_as_it_was():
    """A component in no event is interactive on Gradio's page; made an output of the relabelling alone, it would be
    drawn static: Guess first's checkbox (ticked by the page's script, in no event of its own) must stay clickable."""
    import app
    cfg = app.build(None).get_config_file()
    props = {c["props"].get("elem_id"): c["props"] for c in cfg["components"]}
    assert props["guess-toggle"]["interactive"] is True
    outs = {o for d in cfg["dependencies"] for o in d["outputs"]}
    ins = {i for d in cfg["dependencies"] for i in d["inputs"]}
    relabel = next(d for d in cfg["dependencies"] if d.get("api_name") == "words")  # (ui/language.py relabelling)
    for c in cfg["components"]:
        if c["id"] in relabel["outputs"] and c["id"] not in ins and sum(c["id"] in d["outputs"] for d in cfg["dependencies"]) == 1:
            assert "interactive" not in c["props"] or c["props"]["interactive"] is not None, c["props"].get("elem_id")
    assert outs and ins

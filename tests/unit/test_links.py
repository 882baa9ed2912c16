"""ui/links.py: reading a link's query and writing one (the pure part)."""
from urllib.parse import parse_qsl, urlsplit

from ui.links import Link, make_link, parse_link

NAMES = ("confident", "flat")


def test_a_full_link_fills_every_field():
    link = parse_link({"prompt": "Hello there", "mode": "raw", "system": "Be brief", "temperature": "0", "top_k": "40",
                       "top_p": "0.95", "seed": "7", "max_new_tokens": "5", "step": "3", "run": "1"}, NAMES)
    assert link.warnings == []
    assert link.fields == {"prompt": "Hello there", "mode": "Raw text", "system": "Be brief", "temperature": 0.0, "top_k": 40,
                           "top_p": 0.95, "seed": 7, "max_new": 5}
    assert isinstance(link.fields["top_k"], int) and isinstance(link.fields["temperature"], float)
    assert (link.step, link.run, link.example) == (3, True, None)


def test_bad_values_warn_and_are_left_out():
    link = parse_link({"temperature": "abc", "top_k": "2.5", "top_p": "5", "seed": "nan", "max_new_tokens": "0",
                       "mode": "poetry", "step": "-1", "colour": "red", "prompt": "Hi"}, NAMES)
    assert link.fields == {"prompt": "Hi"}
    assert link.step is None
    text = " ".join(link.warnings)
    for bit in ("temperature='abc'", "top_k='2.5'", "top_p=5", "seed='nan'", "max_new_tokens=0", "mode='poetry'", "step=-1", "'colour'"):
        assert bit in text, bit
    assert len(link.warnings) == 8


def test_unknown_example_lists_the_names():
    link = parse_link({"example": "nope"}, NAMES)
    assert link.example is None
    assert "nope" in link.warnings[0] and "confident, flat" in link.warnings[0]
    assert parse_link({"example": "flat"}, NAMES).example == "flat"


def test_run_only_when_asked():
    assert not parse_link({}, NAMES).run
    assert not parse_link({"run": "0"}, NAMES).run
    assert parse_link({"run": "true"}, NAMES).run
    assert parse_link({}, NAMES) == Link()


def test_make_link_round_trips_through_parse():
    url = make_link("http://host:7860/?old=1#x", prompt="Why & how? 🌪", mode="Chat", system="", temperature=0.7000000000000001,
                    top_k=0, top_p=0.9, seed=3, max_new_tokens=64.0, step=12, example="flat")
    parts = urlsplit(url)
    assert parts.netloc == "host:7860" and parts.path == "/" and not parts.fragment
    q = dict(parse_qsl(parts.query))
    assert q == {"example": "flat", "prompt": "Why & how? 🌪", "mode": "chat", "temperature": "0.7", "top_k": "0", "top_p": "0.9",
                 "seed": "3", "max_new_tokens": "64", "step": "12"}
    link = parse_link(q, NAMES)
    assert link.warnings == [] and link.example == "flat" and link.step == 12
    assert link.fields["prompt"] == "Why & how? 🌪" and link.fields["temperature"] == 0.7 and link.fields["max_new"] == 64


def test_make_link_leaves_out_what_is_not_set():
    assert make_link("http://h/", prompt="", temperature=None) == "http://h/"
    assert make_link("", mode="Raw text") == "?mode=raw"


def test_a_gallery_trace_is_read_once_and_shared_by_every_session():
    from ui import links

    links._TRACES.clear()
    a = links.gallery_trace("flat")
    assert links.gallery_trace("flat") is a and a.steps  # one object: the viewer's bundle cache (keyed by it) hits

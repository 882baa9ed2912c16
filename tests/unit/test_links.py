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
    from ui import examples

    examples._TRACES.clear()
    a = examples.gallery_trace("flat")
    assert examples.gallery_trace("flat") is a and a.steps  # one object: the viewer's bundle cache (keyed by it) hits


def test_the_hosts_own_names_are_passed_over_in_silence():
    """A Space opens its frame with ?__theme=dark (and __sign=... when private): not the person's settings."""
    link = parse_link({"__theme": "dark", "__sign": "eyJhbGciOi", "prompt": "Hi", "__anything": "x"}, NAMES)
    assert link.warnings == [] and link.fields == {"prompt": "Hi"}
    # only the double underscore is the host's: a look-alike is still a setting nobody knows
    link = parse_link({"_theme": "dark", "theme__": "dark"}, NAMES)
    assert len(link.warnings) == 2 and "'_theme'" in link.warnings[0] and "'theme__'" in link.warnings[1]


def test_the_presenter_view_guess_first_and_a_room_are_the_pages_own_and_no_setting():
    """?view=present, ?guess=1 and ?room=CODE are read by the page's scripts (assets/page.js, guess.js, room.js);
    the server neither warns (a student's page opened from the join link) nor fills a field."""
    link = parse_link({"view": "present", "guess": "1", "room": "M6N4FE", "hl": "de", "prompt": "Hi"}, NAMES)  # (hl: the join link's)
    assert link.warnings == [] and link.fields == {"prompt": "Hi"} and not link.run


SPACE = "https://huggingface.co/spaces/teacher/llm-viz"


def test_inside_a_space_a_link_points_at_the_spaces_page():
    from ui.links import link_base

    frame = "https://teacher-llm-viz.hf.space/"
    assert link_base(frame, "teacher/llm-viz") == (SPACE, True)
    assert link_base("https://teacher-llm-viz.HF.space", " teacher/llm-viz ") == (SPACE, True)
    url = make_link(link_base(frame, "teacher/llm-viz")[0], prompt="Hi", temperature=0.5, step=2)
    assert url == SPACE + "?prompt=Hi&temperature=0.5&step=2"
    # the Space's own host (SPACE_HOST), e.g. a custom domain, counts as the frame too
    assert link_base("http://my.school.example:7860/", "teacher/llm-viz", "my.school.example") == (SPACE, True)


def test_outside_a_space_a_link_points_at_the_page_itself():
    from ui.links import link_base, space_page

    for address, space_id, host in (("http://127.0.0.1:7860/", None, None),  # a laptop
                                    ("http://127.0.0.1:7860/", "teacher/llm-viz", "teacher-llm-viz.hf.space"),  # a Space's copy run elsewhere
                                    ("https://teacher-llm-viz.hf.space/", "", None),  # no SPACE_ID: nothing to point at
                                    ("https://evil.example/x.hf.space/", "teacher/llm-viz", None)):  # (the path is not the host)
        assert link_base(address, space_id, host) == (address, False), address
    for bad in ("teacher", "a/b/c", "../etc", "/name", "owner/", "own er/name", "owner/na?me"):
        assert space_page(bad) is None, bad
        assert link_base("https://x.hf.space/", bad) == ("https://x.hf.space/", False)
    # a malformed address (an unclosed IPv6 bracket) is not a crash
    assert link_base("http://[::1", "teacher/llm-viz") == ("http://[::1", False)
    assert link_base("", "teacher/llm-viz") == ("", False)


# -- a link that writes the trace on screen again -------------------------------------------------
def _trace(n=6, stop="max_new_tokens", forced=(), **settings):
    from types import SimpleNamespace

    from pipeline.trace.records import Settings

    steps = [SimpleNamespace(index=i, forced=i in forced, token_id=30 + i, top_ids=(7, 30 + i, 9) if i in forced else (30 + i, 7, 9),
                             stop_reason=stop if i == n - 1 else None) for i in range(n)]
    return SimpleNamespace(settings=Settings(**settings), prompt=SimpleNamespace(text="The sea is"), steps=steps)


def test_a_trace_link_says_how_the_trace_was_made_with_run_and_step():
    from ui.links import trace_link

    t = _trace(temperature=0.9, top_k=40, top_p=0.95, seed=1234, max_new_tokens=64, chat=False)
    q = dict(parse_qsl(urlsplit(trace_link("http://h/?x=1", t, 3)).query))
    # a run stopped at 6 tokens (or made by "+1 token") is written again by 6, not by the field's 64
    assert q == {"prompt": "The sea is", "mode": "raw", "temperature": "0.9", "top_k": "40", "top_p": "0.95", "seed": "1234",
                 "max_new_tokens": "6", "step": "3", "run": "1"}
    link = parse_link(q, NAMES)
    assert link.warnings == [] and link.run and link.step == 3 and link.fields["mode"] == "Raw text"


def test_min_p_and_the_repetition_penalty_travel_in_a_trace_link_when_on():
    from ui.links import trace_link

    t = _trace(temperature=1.1, min_p=0.05, repetition_penalty=1.3, chat=False)
    q = dict(parse_qsl(urlsplit(trace_link("http://h/", t, 2)).query))
    assert (q["min_p"], q["repetition_penalty"]) == ("0.05", "1.3")
    link = parse_link(q, NAMES)
    assert link.warnings == [] and (link.fields["min_p"], link.fields["repetition_penalty"]) == (0.05, 1.3)
    off = dict(parse_qsl(urlsplit(trace_link("http://h/", _trace(chat=False), 2)).query))
    assert "min_p" not in off and "repetition_penalty" not in off  # off: the link stays as short as before
    bad = parse_link({"min_p": "0.9", "repetition_penalty": "0"}, NAMES)
    assert "min_p" not in bad.fields and "repetition_penalty" not in bad.fields and len(bad.warnings) == 2


def test_a_trace_link_keeps_the_chat_system_prompt_and_an_end_of_sequence_run():
    from ui.links import trace_link

    t = _trace(n=4, stop="eos", chat=True, system_prompt="Be brief", max_new_tokens=20)
    q = dict(parse_qsl(urlsplit(trace_link("http://h/", t, 0)).query))
    assert q["mode"] == "chat" and q["system"] == "Be brief" and q["max_new_tokens"] == "20" and q["step"] == "0"


def test_a_branch_on_screen_goes_into_the_link_and_back():
    from ui.links import trace_branches, trace_link

    t = _trace(n=8, forced=(2, 5))
    assert trace_branches(t) == [(2, 2), (5, 2)]  # rank 1 = the likeliest: the forced token was the second candidate
    q = dict(parse_qsl(urlsplit(trace_link("http://h/", t, 7)).query))
    assert q["branch"] == "2:2,5:2"
    assert parse_link(q, NAMES).branches == [(2, 2), (5, 2)]


def test_bad_branches_warn():
    for text in ("3", "a:b", "3:0", "3:2,", "1:1," * 30):
        link = parse_link({"branch": text}, NAMES)
        assert (link.branches == [] and link.warnings) or text == "3:2,", text
    assert parse_link({"branch": "3:2,"}, NAMES).branches == [(3, 2)]


def test_a_gallery_trace_links_by_its_name_only():
    from ui.links import trace_link

    assert trace_link("http://h/", _trace(), 4, example="loop") == "http://h/?example=loop&step=4"


def test_the_pages_script_checks_a_link_with_the_servers_ranges():
    from ui.links import FIELDS, NUMBERS, tables

    t = tables({k: type("F", (), {"value": k})() for k in FIELDS})
    assert set(t["numbers"]) == set(NUMBERS) - {"step"} and t["ids"] == FIELDS and t["defaults"] == {k: k for k in FIELDS}
    for name, (key, kind, lo, hi) in t["numbers"].items():
        assert key in FIELDS and (kind, lo, hi) == ("int" if NUMBERS[name][1] is int else "float", *NUMBERS[name][2:])


def test_the_sliders_moved_since_the_run_are_told_apart_from_the_runs_own():
    from types import SimpleNamespace as NS

    from ui.links import sliders_moved

    tr = NS(settings=NS(temperature=0.7, top_k=0, top_p=0.9, min_p=0.0, repetition_penalty=1.0))
    assert not sliders_moved(tr, 0.7, 0, 0.9, 0, 1) and not sliders_moved(tr, "0.7", "0", "0.9", "0", "1")
    assert sliders_moved(tr, 1.7, 0, 0.9, 0, 1) and sliders_moved(tr, 0.7, 5, 0.9, 0, 1) and sliders_moved(tr, 0.7, 0, 0.9, 0, 1.2)
    assert not sliders_moved(tr, None, 0, 0.9, 0, 1)  # (a field emptied: nothing to say)

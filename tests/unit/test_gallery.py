"""The shipped gallery (assets/gallery/): every entry loads, is format /2, fits its budget, and
shows what its title claims, recomputed here from the loaded trace."""
from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pipeline import gallery
from pipeline.trace import records
from pipeline.errors import GalleryError, PipelineError

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = gallery.entries()


@pytest.fixture(scope="module")
def traces():
    return {e.name: gallery.load(e.name) for e in ENTRIES}


def p_top(step) -> float:
    """The top token's temperature-1 probability, from its raw logit and the logsumexp."""
    return math.exp(float(step.top_logits.max()) - step.logsumexp)


def test_the_gallery_teaches_each_thing_with_url_safe_names():
    assert sorted({e.claim for e in ENTRIES}) == sorted(gallery.CLAIMS)
    for e in ENTRIES:
        assert gallery.NAME.match(e.name) and e.title and len(e.look.split()) >= 8


def test_every_entry_is_format_2_within_budget():
    total = 0
    for e in ENTRIES:
        raw = gallery.path(e.name).read_bytes()
        assert raw[:2] == b"\x1f\x8b", f"{e.file} is not gzip"
        assert json.loads(gzip.decompress(raw))["schema"] == records.SCHEMA == "llm-pipeline-trace/2"
        assert len(raw) <= gallery.MAX_FILE_BYTES, f"{e.file}: {len(raw)} bytes"
        total += len(raw)
    assert total <= gallery.MAX_TOTAL_BYTES


def test_every_entry_loads_and_its_step_exists(traces):
    for e in ENTRIES:
        t = traces[e.name]
        assert t.steps and t.text and t.model.source == "embedded"
        assert e.step in [s.index for s in t.steps]
        assert t.lens, f"{e.name}: saved without the inside-the-model data"


def test_confident(traces):
    for e in [e for e in ENTRIES if e.claim == "confident"]:
        s = traces[e.name].steps[e.step]
        assert p_top(s) > 0.9 and s.entropy < 1.0
        assert s.token_id == int(s.top_ids[0])


def test_flat(traces):
    (e,) = [e for e in ENTRIES if e.claim == "flat"]
    s = traces[e.name].steps[e.step]
    assert p_top(s) < 0.1 and s.entropy > 8.0
    assert s.entropy >= -math.log2(p_top(s))  # Shannon entropy is at least the min-entropy


def test_split_character(traces):
    (e,) = [e for e in ENTRIES if e.claim == "split_char"]
    t = traces[e.name]
    s = t.steps[e.step]
    with pytest.raises(UnicodeDecodeError):
        s.piece_bytes.decode("utf-8")
    assert s.text == "", "an incomplete character must be held back"
    # the following tokens complete it: their bytes together are text with a non-ASCII character
    end = next(k for k in range(e.step + 1, len(t.steps)) if t.steps[k].text)
    joined = b"".join(x.piece_bytes for x in t.steps[e.step : end + 1]).decode("utf-8")
    assert any(ord(c) > 0xFFFF for c in joined), joined  # an emoji lies outside the basic plane
    assert t.steps[end].text.strip() in joined


def test_repetition_loop(traces):
    (e,) = [e for e in ENTRIES if e.claim == "loop"]
    ids = [s.token_id for s in traces[e.name].steps]
    gram = tuple(ids[e.step : e.step + 4])
    starts = [i for i in range(len(ids) - 3) if tuple(ids[i : i + 4]) == gram]
    assert len(starts) >= 3 and len(set(np.diff(starts))) == 1, starts  # the same run, at a fixed period


def test_chat_template(traces):
    (e,) = [e for e in ENTRIES if e.claim == "chat"]
    t = traces[e.name]
    assert t.settings.chat and "<|im_start|>" in t.prompt.rendered and t.prompt.text in t.prompt.rendered
    assert len(t.prompt.token_ids) > len(t.prompt.text_ids) + 10


def test_each_claim_function_rejects_the_other_entries(traces):
    """The claims are not vacuous: each fails on at least one other entry of the gallery."""
    for claim, fn in gallery.CLAIMS.items():
        assert any(not fn(traces[e.name]) for e in ENTRIES if e.claim != claim), claim


def test_unknown_name_and_damaged_manifest(tmp_path):
    with pytest.raises(GalleryError, match="confident"):  # the error lists the names there are
        gallery.load("no-such-example")
    assert issubclass(GalleryError, PipelineError)
    with pytest.raises(GalleryError, match="make_gallery"):
        gallery.entries(tmp_path)
    (tmp_path / gallery.MANIFEST).write_text("{not json")
    with pytest.raises(GalleryError, match="not valid JSON"):
        gallery.entries(tmp_path)
    bad = dict(name="Bad Name!", title="t", look="l", file="x.json.gz", claim="flat", step=0)
    (tmp_path / gallery.MANIFEST).write_text(json.dumps({"format": gallery.MANIFEST_FORMAT, "entries": [bad]}))
    with pytest.raises(GalleryError, match="url-safe"):
        gallery.entries(tmp_path)
    (tmp_path / gallery.MANIFEST).write_text(json.dumps({"format": gallery.MANIFEST_FORMAT, "entries": [{**bad, "name": "ok"}]}))
    with pytest.raises(GalleryError, match="missing"):
        gallery.load("ok", tmp_path)
    (tmp_path / gallery.MANIFEST).write_text(json.dumps({"format": gallery.MANIFEST_FORMAT, "entries": [{**bad, "name": "ok", "file": "../x"}]}))
    with pytest.raises(GalleryError, match="plain file name"):
        gallery.entries(tmp_path)


def test_listing_the_gallery_imports_nothing_heavy():
    code = "import sys, pipeline.gallery as g; g.entries(); assert not {'numpy', 'torch'} & set(sys.modules), sorted(sys.modules)"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# -- the lesson: 5-8 gallery steps for a class to guess, each shows what its kind says ------------------------

LESSON = gallery.lesson()


def prob_of(step, piece: str) -> float:
    """A kept candidate's temperature-1 probability, from its raw logit and the logsumexp (not the stored probs)."""
    (k,) = [k for k, x in enumerate(step.top_pieces) if str(x) == piece]
    return math.exp(float(step.top_logits[k]) - step.logsumexp)


def test_the_lesson_has_one_the_class_gets_one_it_does_not_one_confident_and_wrong_one_flat():
    assert 5 <= len(LESSON) <= 8
    assert {"right", "miss", "confident_wrong", "flat"} <= {x.kind for x in LESSON}
    for x in LESSON:
        assert len(x.say.split()) >= 10 and x.say.count(". ") <= 2, x.say  # one or two plain sentences


def test_each_lesson_step_shows_its_kind_recomputed_from_the_trace(traces):
    for x in LESSON:
        t = traces[x.example]
        s = t.steps[x.step]
        p = math.exp(float(s.top_logits.max()) - s.logsumexp) if s.token_id == int(s.top_ids[0]) else prob_of(s, s.piece)
        assert gallery.LESSON_KINDS[x.kind](t, x.step, x.expect), x
        assert f"{p:.0%}" in x.say or x.kind == "flat", (x.say, p)  # the sentence quotes the model's number
        if x.kind in ("right", "loop"):
            assert s.piece == x.expect and p > 0.5
        if x.kind in ("miss", "confident_wrong"):
            assert s.piece != x.expect and prob_of(s, x.expect) < p
        if x.kind == "confident_wrong":
            assert p > 0.9 and prob_of(s, x.expect) < 0.1 and f"{prob_of(s, x.expect):.0%}" in x.say


def test_the_lesson_kinds_are_not_vacuous(traces):
    """Each kind fails somewhere: on another lesson step, or with another expected guess."""
    for x in LESSON:
        others = [y for y in LESSON if y.kind != x.kind]
        assert any(not gallery.LESSON_KINDS[x.kind](traces[y.example], y.step, y.expect) for y in others), x.kind
    (right,) = [x for x in LESSON if x.kind == "right"]
    assert not gallery.LESSON_KINDS["right"](traces[right.example], right.step, " London")


def test_a_damaged_lesson_is_refused(tmp_path):
    d = json.loads((gallery.GALLERY_DIR / "gallery.json").read_text(encoding="utf-8"))
    d["lesson"] = [{"example": "nowhere", "step": 1, "kind": "right", "expect": "", "say": "x"}]
    (tmp_path / "gallery.json").write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(GalleryError, match="nowhere"):
        gallery.lesson(tmp_path)
    d["lesson"] = [{"example": "flat"}]
    (tmp_path / "gallery.json").write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(GalleryError, match="needs the keys"):
        gallery.lesson(tmp_path)

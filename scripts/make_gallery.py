"""Regenerate assets/gallery/: saved traces that each teach one thing, and their manifest.

    .venv/bin/python scripts/make_gallery.py [NAME ...]   (names: only those entries made again)

Every trace is made by the embedded model with the project's own pipeline (fixed seeds, so the
tokens are the same on every run; timings differ). Each entry's claim is checked on the trace
as made and again on the file as read back, and the sizes are checked against the budgets in
pipeline/gallery.py. The "what to look at" sentences quote numbers read from the traces.
"""
from __future__ import annotations

import gzip
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline import gallery  # noqa: E402
from pipeline.trace import files as trace_io  # noqa: E402
from pipeline.trace.records import Settings, Trace  # noqa: E402


@dataclass(frozen=True)
class Spec:
    name: str
    title: str
    claim: str
    prompt: str
    settings: Settings
    focus: str = ""  # the piece of the step to point at (else the first step the claim holds at)
    after: str = ""  # a sentence the numbers cannot say, after the "what to look at" sentence
    english: str = ""  # (claim "tax") the same prompt in English, whose token count the prompt's must exceed


SPECS = (
    Spec("confident", "A confident step", "confident", "What is the capital of France?",
         Settings(temperature=0.0, seed=0, max_new_tokens=12, chat=True), focus=" Paris"),
    Spec("flat", "A flat distribution", "flat", "My favourite word is",
         Settings(temperature=1.0, seed=0, max_new_tokens=12, chat=False)),
    Spec("split-emoji", "An emoji split across tokens", "split_char", "I love pizza 🍕. I love cats 🐱. I love the sun",
         Settings(temperature=0.7, seed=0, max_new_tokens=12, chat=False)),
    Spec("loop", "A repetition loop", "loop", "I like apples. I like apples. I like",
         Settings(temperature=0.0, seed=0, max_new_tokens=32, chat=False), focus=" I"),
    Spec("chat", "The chat template", "chat", "What is a token?",
         Settings(temperature=0.7, seed=0, max_new_tokens=20, chat=True)),
    Spec("mountain", "Confident and wrong", "confident", "The tallest mountain in the world is",
         Settings(temperature=0.0, seed=0, max_new_tokens=14, chat=False), focus="9",
         after="Yet Everest is 8,849 m high: the model is sure of a wrong digit, and confidence is not correctness."),
    Spec("french", "A question in French", "tax", "Pourquoi le ciel est-il bleu ?",
         Settings(temperature=0.0, seed=0, max_new_tokens=24, chat=True), english="Why is the sky blue?",
         after="This small model was trained mostly on English text: its French answer goes round in circles."),
)


# The lesson (pipeline/gallery.py: LessonStep): steps in the order a class guesses them. Each sentence for the
# teacher quotes the trace's numbers; each kind is checked on the trace (gallery.LESSON_KINDS).
LESSON = (
    ("confident", 5, "right", " Paris"),
    ("loop", 3, "miss", " like"),
    ("mountain", 10, "confident_wrong", "8"),
    ("flat", 1, "flat", ""),
    ("split-emoji", 0, "bytes", ""),
    ("loop", 24, "loop", " apple"),
)


def say(trace: Trace, k: int, kind: str, expect: str) -> str:
    """The lesson step's one sentence for a teacher, with the numbers read from the trace."""
    s = trace.steps[k]
    p, q = s.chosen_prob, gallery._p(s, expect)
    w, e = f"“{s.piece.strip()}”", f"“{expect.strip()}”"
    if kind == "right":
        return (f"Most of a class guesses {e}, and so does the model: {p:.0%}. When the context pins the answer "
                "down, the distribution is one tall bar.")
    if kind == "miss":
        return (f"A class continues the pattern with {e}; the model gave that {q:.0%} and wrote {w} at only {p:.0%}: "
                "no answer stands out, so the class's guesses scatter too.")
    if kind == "confident_wrong":
        return (f"Everest is 8,849 m high, so a class that knows it guesses {e} (the model: {q:.0%}); the model puts "
                f"{p:.0%} on {w}. It is sure and wrong: confidence is not correctness.")
    if kind == "flat":
        return (f"No one gets this one, and no one could: no token gets more than {float(s.top_probs.max()):.0%} "
                f"(entropy {s.entropy:.1f} bits). Ask who decides what is written here: the seed and the temperature.")
    if kind == "bytes":
        return (f"The model's pick ({p:.0%}) is not a word but the bytes {s.piece_bytes.hex(' ')}, the start of an "
                "emoji: a token can be part of a character.")
    return (f"After four repeats the class guesses {e}, and the model agrees at {p:.0%}: at temperature 0 it "
            "copies its own text, a loop it does not leave.")


def lesson(folder: Path) -> list[dict]:
    out = []
    for name, k, kind, expect in LESSON:
        t = gallery.load(name, folder)
        assert gallery.LESSON_KINDS[kind](t, k, expect), f"lesson: {name} step {k} does not show {kind!r}"
        out.append(dict(example=name, step=k, kind=kind, expect=expect, say=say(t, k, kind, expect)))
    return out


def focus_step(spec: Spec, trace: Trace) -> int:
    """The step the entry points at; asserts that the claim holds there."""
    steps = gallery.CLAIMS[spec.claim](trace)
    assert steps, f"{spec.name}: the claim {spec.claim!r} does not hold; text: {trace.text!r}"
    if spec.focus:
        hits = [s.index for s in trace.steps if s.piece == spec.focus and s.index in steps]
        assert hits, f"{spec.name}: no step writes {spec.focus!r} where {spec.claim!r} holds (steps {steps})"
        return hits[0]
    return steps[0]


def look(spec: Spec, trace: Trace, k: int) -> str:
    """One sentence for a teacher, with the numbers read from the trace."""
    s = trace.steps[k]
    p, h = float(s.top_probs.max()), s.entropy
    if spec.claim == "confident":
        return (f"At step {k} the model gives {s.piece.strip()!r} {p:.0%} of its probability (entropy {h:.2f} bits): "
                f"one tall bar: even at temperature 1 it would be drawn about {round(p * 100)} times in 100.")
    if spec.claim == "flat":
        return (f"At step {k} no token gets more than {p:.0%} and the entropy is {h:.1f} bits: many continuations "
                f"are about as likely, so the seed and the temperature decide what is written.")
    if spec.claim == "split_char":
        later = next(t for t in trace.steps if t.index > k and t.text)
        return (f"Step {k} writes the bytes {s.piece_bytes.hex(' ')}, only the start of a character: the text holds "
                f"them back until step {later.index} completes {later.text.strip()!r}.")
    if spec.claim == "loop":
        ids = [t.token_id for t in trace.steps]
        gram = tuple(ids[k : k + gallery.LOOP_N])
        period = next(j for j in range(k + 1, len(ids)) if tuple(ids[j : j + gallery.LOOP_N]) == gram) - k
        text = "".join(t.text for t in trace.steps[k : k + period])
        return (f"With temperature 0 the model always takes its top token, and from step {k} it writes {text!r} "
                f"again and again: a loop it does not leave.")
    if spec.claim == "tax":
        n, m = len(trace.prompt.text_ids), english_tokens(spec, trace)
        return (f"The question takes {n} tokens in French; the same question in English, {spec.english!r}, takes {m}: "
                f"{n / m:.1f} times as many, for the same meaning. Open \"The same sentence in other languages\" in the "
                "Tokens panel to see the tax in ten languages.")
    return (f"Open the tokens: the model reads {len(trace.prompt.token_ids)} tokens, not the "
            f"{len(trace.prompt.text_ids)} you typed; the chat template adds a system prompt and the role markers.")


_TOKENIZER: list = []  # the model's tokenizer, for the English version's count (claim "tax")


def english_tokens(spec: Spec, trace: Trace) -> int:
    """The English version's token count; asserts that the prompt's own is larger (the token tax, made true)."""
    m = len(_TOKENIZER[0](spec.english, add_special_tokens=False)["input_ids"])
    assert len(trace.prompt.text_ids) > m, f"{spec.name}: {len(trace.prompt.text_ids)} tokens, not more than English's {m}"
    return m


def make(lm, spec: Spec, folder: Path) -> dict:
    from pipeline.generate import run_trace
    from pipeline.inside.analyses import with_inside

    t0 = time.perf_counter()
    trace = with_inside(lm, run_trace(lm, spec.prompt, spec.settings))
    k = focus_step(spec, trace)
    file = f"{spec.name}.json.gz"
    out = folder / file
    out.write_bytes(gzip.compress(trace_io.dumps(trace).encode("utf-8"), 9, mtime=0))
    size = out.stat().st_size
    assert size <= gallery.MAX_FILE_BYTES, f"{file} is {size} bytes, over {gallery.MAX_FILE_BYTES}: shorten it"
    print(f"{file}: {len(trace.steps)} steps, {size / 1e6:.2f} MB, {time.perf_counter() - t0:.0f} s, "
          f"step {k}: {trace.steps[k].piece!r}, text {trace.text!r}")
    text = look(spec, trace, k) + (f" {spec.after}" if spec.after else "")
    return dict(name=spec.name, title=spec.title, look=text, file=file, claim=spec.claim, step=k)


def check(folder: Path) -> None:
    """Read every entry back through pipeline.gallery and check its claim and the budgets."""
    total = 0
    for e in gallery.entries(folder):
        t = gallery.load(e.name, folder)
        assert t.steps and e.step in gallery.CLAIMS[e.claim](t), f"{e.name}: claim {e.claim!r} fails on the file"
        total += gallery.path(e.name, folder).stat().st_size
    assert total <= gallery.MAX_TOTAL_BYTES, f"the gallery is {total} bytes, over {gallery.MAX_TOTAL_BYTES}"
    print(f"checked {len(gallery.entries(folder))} entries, {total / 1e6:.2f} MB in all")


def main(only: set[str]) -> None:
    """Every entry made again, or (names given) only those: the others' files and entries stay as they are."""
    from pipeline.loading import load_model

    folder = gallery.GALLERY_DIR
    folder.mkdir(parents=True, exist_ok=True)
    lm = load_model(None)
    _TOKENIZER[:] = [lm.tokenizer]
    kept = {e.name: asdict(e) for e in gallery.entries(folder)} if only else {}
    made = [make(lm, spec, folder) if not only or spec.name in only else kept[spec.name] for spec in SPECS]
    manifest = {"format": gallery.MANIFEST_FORMAT, "model": lm.info.id, "entries": made}
    (folder / gallery.MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    manifest["lesson"] = lesson(folder)
    (folder / gallery.MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    check(folder)


if __name__ == "__main__":
    main(set(sys.argv[1:]))

"""An error as the one sentence the page shows (a gr.Warning, a gr.Error, a class room's refusal), in the visitor's
language.

A pipeline error names its sentence in the catalogue (pipeline/errors.py: `key`, with the plain values it fills in);
`said` writes it in the language speaking (viz.text), its numbers the language's way, and any other error as its own
message says it. `sentence` makes a sentence of it: a capital first letter and a full stop.

    said(e)       "the seed must be a whole number, 0 or more, not -1"  (French: "la graine doit être ...")
    sentence(e)   "The seed must be a whole number, 0 or more, not -1."
"""
from __future__ import annotations

import math
import numbers
from typing import Callable

from viz.text import decimal, number_marks, t, thousands

MB = 1024 * 1024  # (pipeline/trace/bounds.py's)


def _n(x) -> str:
    """A number a person gave or a limit, the language's way (2.5 -> French 2,5; 49151 -> 49,151); anything else as it is."""
    if isinstance(x, bool) or not isinstance(x, numbers.Number):
        return str(x)
    if isinstance(x, numbers.Integral):
        return thousands(int(x))
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    return f"{x:.6g}".replace(".", number_marks()[1])  # (as a person typed it: 0.7, not a float32's 0.7000000298)


def _q(x) -> str:
    """A token's piece, a name or a spec, quoted the language's way."""
    return t("common.quote", text=x)


def _size(n) -> str:
    """A file's size: 12.3 MB (the unit is the same in every language), or its bytes when under a tenth of a MB."""
    return f"{decimal(n / MB, 1)} MB" if n >= MB / 10 else t("messages.bytes", n=thousands(n))


def _hint() -> str:
    return t("error.trace_hint")


# key -> the sentence in the language speaking, from the error's plain values (each key named once, so that
# tests/unit/test_text_catalogue.py sees it used and its placeholders given)
SAY: dict[str, Callable[[dict], str]] = {
    # a run's settings (pipeline/generate.py, pipeline/sampling/stages.py, pipeline/speculative/decoding.py)
    "error.max_new": lambda v: t("error.max_new", value=_n(v["value"])),
    "error.seed": lambda v: t("error.seed", value=_n(v["value"])),
    "error.prompt_empty": lambda v: t("error.prompt_empty"),
    "error.prompt_too_long": lambda v: t("error.prompt_too_long", n=_n(v["n"]), window=_n(v["window"])),
    "error.repetition_penalty": lambda v: t("error.repetition_penalty", value=_n(v["value"])),
    "error.temperature": lambda v: t("error.temperature", value=_n(v["value"])),
    "error.top_k": lambda v: t("error.top_k", value=_n(v["value"])),
    "error.top_p": lambda v: t("error.top_p", value=_n(v["value"])),
    "error.min_p": lambda v: t("error.min_p", value=_n(v["value"])),
    "error.spec_k": lambda v: t("error.spec_k", high=_n(v["high"]), value=_n(v["value"])),
    # going on from the trace on screen (pipeline/continuation.py, pipeline/branch.py)
    "error.continue_nothing": lambda v: t("error.continue_nothing"),
    "error.continue_other_model": lambda v: t("error.continue_other_model", made_by=v["made_by"], loaded=v["loaded"]),
    "error.continue_ended": lambda v: t("error.continue_ended"),
    "error.continue_tokenizer": lambda v: t("error.continue_tokenizer"),
    "error.branch_rest": lambda v: t("error.branch_rest"),
    "error.branch_same": lambda v: t("error.branch_same", token=_q(v["token"])),
    "error.branch_unknown": lambda v: t("error.branch_unknown"),
    "error.token_id": lambda v: t("error.token_id", id=_n(v["id"]), last=_n(v["last"])),
    # the draft of speculative decoding (pipeline/speculative/draft.py)
    "error.draft_ngram": lambda v: t("error.draft_ngram", spec=_q(v["spec"]), example=v["example"]),
    "error.draft_ngram_n": lambda v: t("error.draft_ngram_n", high=_n(v["high"]), n=_n(v["n"]), example=v["example"]),
    "error.draft_ngram_lo": lambda v: t("error.draft_ngram_lo", spec=v["spec"], n=_n(v["n"]), lo=_n(v["lo"])),
    "error.draft_layers": lambda v: t("error.draft_layers", spec=_q(v["spec"])),
    "error.draft_layers_n": lambda v: t("error.draft_layers_n", high=_n(v["high"]), layers=_n(v["layers"]), n=_n(v["n"]), example=v["example"]),
    "error.draft_vocab_size": lambda v: t("error.draft_vocab_size", draft=_q(v["draft"]), draft_n=_n(v["draft_n"]), target=_q(v["target"]),
                                          target_n=_n(v["target_n"])),
    "error.draft_vocab": lambda v: t("error.draft_vocab", draft=_q(v["draft"]), target=_q(v["target"]), example=v["example"]),
    "error.draft_itself": lambda v: t("error.draft_itself"),
    # many continuations, and one of them opened (pipeline/samples.py, pipeline/forced_run.py)
    "error.samples_n": lambda v: t("error.samples_n", high=_n(v["high"]), value=_n(v["value"])),
    "error.samples_m": lambda v: t("error.samples_m", high=_n(v["high"]), value=_n(v["value"])),
    "error.samples_no_room": lambda v: t("error.samples_no_room", n=_n(v["n"]), window=_n(v["window"])),
    "error.samples_nothing": lambda v: t("error.samples_nothing"),
    "error.samples_other_model": lambda v: t("error.samples_other_model", made_by=v["made_by"], loaded=v["loaded"]),
    "error.samples_ended": lambda v: t("error.samples_ended"),
    "error.step_range": lambda v: t("error.step_range", high=_n(v["high"]), value=_n(v["value"])),
    "error.open_empty": lambda v: t("error.open_empty"),
    "error.open_index": lambda v: t("error.open_index", value=_n(v["value"]), high=_n(v["high"])),
    "error.open_stale": lambda v: t("error.open_stale"),
    "error.other_model": lambda v: t("error.other_model", made_by=v["made_by"], loaded=v["loaded"]),
    "error.token_ids": lambda v: t("error.token_ids", last=_n(v["last"])),
    # switching a part off (pipeline/inside/ablate.py), swapping two positions (pipeline/inside/positions.py)
    "error.ablate_no_projection": lambda v: t("error.ablate_no_projection", name=v["name"]),
    "error.ablate_part": lambda v: t("error.ablate_part", parts=v["parts"], value=_q(v["value"])),
    "error.ablate_block": lambda v: t("error.ablate_block", value=_n(v["value"]), high=_n(v["high"])),
    "error.ablate_head": lambda v: t("error.ablate_head", value=_n(v["value"]), high=_n(v["high"])),
    "error.ablate_empty": lambda v: t("error.ablate_empty"),
    "error.ablate_vocab": lambda v: t("error.ablate_vocab"),
    "error.ablate_no_block": lambda v: t("error.ablate_no_block"),
    "error.context_too_long": lambda v: t("error.context_too_long", n=_n(v["n"]), window=_n(v["window"])),
    "error.swap_short": lambda v: t("error.swap_short", n=_n(v["n"])),
    "error.swap_too_long": lambda v: t("error.swap_too_long", n=_n(v["n"]), window=_n(v["window"])),
    "error.swap_position": lambda v: t("error.swap_position", setting=v["setting"], high=_n(v["high"])),
    "error.swap_same": lambda v: t("error.swap_same", value=_n(v["value"])),
    # a guess (pipeline/guess.py), a real-text passage (pipeline/passages.py)
    "error.guess_not_text": lambda v: t("error.guess_not_text"),
    "error.guess_empty": lambda v: t("error.guess_empty"),
    "error.guess_too_long": lambda v: t("error.guess_too_long", n=_n(v["n"])),
    "error.passage_no_start": lambda v: t("error.passage_no_start"),
    "error.passage_length": lambda v: t("error.passage_length", n=_n(v["n"]), high=_n(v["high"])),
    "error.passage_start_read": lambda v: t("error.passage_start_read", token=_q(v["token"]), ids=v["ids"], id=v["id"]),
    # the model (pipeline/loading.py): why it cannot load, and how far loading has come
    "error.model_not_folder": lambda v: t("error.model_not_folder", spec=_q(v["spec"]), example=v["example"]),
    "error.model_no_config": lambda v: t("error.model_no_config", spec=_q(v["spec"])),
    "error.model_load_local": lambda v: t("error.model_load_local", name=_q(v["name"]), reason=v["reason"]),
    "error.model_load_hub": lambda v: t("error.model_load_hub", name=_q(v["name"]), reason=v["reason"]),
    "model.converting": lambda v: t("model.converting", name=v["name"], folder=v["folder"]),
    "model.converted_tokenizer": lambda v: t("model.converted_tokenizer", seconds=_n(v["seconds"])),
    "model.converted": lambda v: t("model.converted", seconds=_n(v["seconds"])),
    # a file that is not a trace (pipeline/trace_*.py): what is wrong (its technical detail as the reader wrote it), what to pick
    "error.trace_damaged": lambda v: t("error.trace_damaged", detail=v["detail"], hint=_hint()),
    "error.trace_contradicts": lambda v: t("error.trace_contradicts", detail=v["detail"], hint=_hint()),
    "error.trace_too_big": lambda v: t("error.trace_too_big", size=_size(v["size"]), limit=_size(v["limit"])),
    "error.trace_gzip_trailing": lambda v: t("error.trace_gzip_trailing", hint=_hint()),
    "error.trace_gzip_short": lambda v: t("error.trace_gzip_short", hint=_hint()),
    "error.trace_gzip": lambda v: t("error.trace_gzip", detail=v["detail"], hint=_hint()),
    "error.trace_inflates": lambda v: t("error.trace_inflates", limit=_size(v["limit"]), size=_size(v["size"]), hint=_hint()),
    "error.trace_newer": lambda v: t("error.trace_newer", schema=v["schema"], hint=_hint()),
    "error.trace_foreign": lambda v: t("error.trace_foreign", schema=v["schema"], hint=_hint()),
    "error.trace_nested": lambda v: t("error.trace_nested", hint=_hint()),
    "error.trace_not_json": lambda v: t("error.trace_not_json", detail=v["detail"], hint=_hint()),
    "error.trace_not_v1": lambda v: t("error.trace_not_v1", schema=v["schema"], found=v["found"], hint=_hint()),
}


def said(e) -> str:
    """An error's message (or a pipeline line, pipeline.errors.Said) in the language speaking, as written (no capital
    added): its catalogue sentence when it names one, else its own text."""
    say = SAY.get(getattr(e, "key", None))
    if say is not None:
        try:
            return say(getattr(e, "values", None) or {})
        except (KeyError, TypeError, ValueError):  # (a value missing: the English, never no sentence at all)
            pass
    return str(e)


def sentence(e) -> str:
    """An error's message as a sentence, in the language speaking: a capital first letter and a full stop."""
    text = said(e)
    text = f"{text[:1].upper()}{text[1:]}"
    return text if text.endswith((".", "!", "?", "。", "！", "？", "…")) else t("messages.full_stop", text=text)

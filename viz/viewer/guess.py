"""Guess first on the offline page: per step the page holds, what assets/viewer_guess.js needs to rate a guess
in the browser as pipeline.guess rates it without a tokenizer (`_best_candidate`), with the trace's own numbers.

The page has no tokenizer and no model, so a guess is matched against the step's kept candidates: the longest
candidate piece the guess (in either spelling, pipeline.guess.variants) is, or starts with before another word or
sign (pipeline.guess._whole_start); outside them only the honest bound is known, the last kept candidate's
probability, never the number of a candidate the guess merely starts with ("banana" is not " b"). Per step (`steps`, one per frame of the viewer
bundle, in order):

- `pieces`: the candidates' pieces as the trace holds them (`str(x) for x in step.top_pieces`);
- `ids`, `p`, `f`: the candidates' token ids, temperature-1 probabilities (`top_probs`) and probabilities in the
  distribution the step was sampled from (`top_final_probs`), each the little-endian bytes of one typed array in
  base64, their types in `dtypes` (viz.viewer.sampling.packed's arrays: the browser reads the very same numbers);
- `id`, `piece`, `chosen`: the sampled token's id, piece and temperature-1 probability (`chosen_prob`);
- `ahead`: the pieces the text goes on with after the step's own, as many as a guess can be long
  (pipeline.guess.written_ahead): a word the model wrote as several tokens, typed whole, is the step's token;
- `space`: 1 when a guess is also tried with a space before it (the context's last piece is not empty and does not
  end in whitespace: pipeline.guess.variants), else 0 (a guess typed with a space before it is tried without it too).

It is its own <script type="application/json" id="guess-data"> on the page (assets/viewer.html), not part of the
viewer bundle the app shares (viz.viewer).
"""
from __future__ import annotations

import numpy as np

from pipeline.guess import space_before, written_ahead
from pipeline.trace.records import Trace

from viz.viewer.bundle import bundle_json
from viz.viewer.sampling import packed

SCHEMA = "llm-viewer-guess/1"


def _dtype(arrays: list, narrow: str, wide: str) -> str:
    """`narrow` (int32 ids, float32 probabilities) when it holds every value exactly as the trace holds it, else `wide`."""
    return narrow if all(np.array_equal(np.asarray(a).astype(narrow), np.asarray(a)) for a in arrays) else wide


def _b64(a: np.ndarray, dtype: str) -> str:
    return packed(a, dtype)["bdata"]


def guess_data(trace: Trace, bundle: dict) -> dict:
    """What the page's Guess first reads, for the bundle's steps (see the module doc)."""
    steps = trace.steps[: bundle["n_steps"]]
    dtypes = {"ids": _dtype([s.top_ids for s in steps], "i4", "f8"),
              "p": _dtype([s.top_probs for s in steps], "f4", "f8"),
              "f": _dtype([s.top_final_probs for s in steps], "f4", "f8")}
    return {
        "schema": SCHEMA, "dtypes": dtypes,
        "steps": [{"pieces": [str(x) for x in s.top_pieces], "ids": _b64(s.top_ids, dtypes["ids"]),
                   "p": _b64(s.top_probs, dtypes["p"]), "f": _b64(s.top_final_probs, dtypes["f"]),
                   "id": int(s.token_id), "piece": str(s.piece), "chosen": float(s.chosen_prob),
                   "ahead": list(written_ahead(trace, i)), "space": int(space_before(s))} for i, s in enumerate(steps)],
    }


def guess_json(trace: Trace, bundle: dict) -> str:
    """guess_data as compact JSON, safe inside an HTML <script> element (viz.viewer.bundle_json)."""
    return bundle_json(guess_data(trace, bundle))


__all__ = ["SCHEMA", "guess_data", "guess_json", "space_before"]

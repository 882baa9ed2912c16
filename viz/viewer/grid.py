"""The sampling sliders' grids (pipeline/sampling/grid.py) and the typed-array packing the viewer bundle's tables use
(viz.viewer.sampling, viz.viewer.sampling_rest; assets/viewer_text.js decodes them)."""
from __future__ import annotations

import base64

import numpy as np

from pipeline.sampling import stages as sampling
from pipeline.sampling import grid as slider_grid

TEMPERATURES = slider_grid.TEMPERATURE.values  # the page's sliders (pipeline/sampling/grid.py, read by ui/layout.py too)
TOP_PS = slider_grid.TOP_P.values  # 1 is off
TOP_K_MAX = slider_grid.TOP_K.hi  # 0 is off
MIN_PS = slider_grid.MIN_P.values  # 0 is off
PENALTIES = slider_grid.REPETITION_PENALTY.values  # 1 is off
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

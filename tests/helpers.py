"""Test helpers shared by the unit and integration tests."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


def records_equal(a: Any, b: Any, *, atol: dict[str, float] | None = None, _name: str = "") -> bool:
    """Deep equality for records holding numpy arrays (exact, NaN-aware).

    `atol`: field name -> absolute tolerance for the arrays held in fields of that name (e.g.
    {"attention": 5e-4} for attention written as float16); their dtype and shape must still match."""
    atol = atol or {}
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        if type(a) is not type(b):
            return False
        return all(records_equal(getattr(a, f.name), getattr(b, f.name), atol=atol, _name=f.name) for f in dataclasses.fields(a))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        if _name in atol:
            return bool(np.allclose(a, b, rtol=0, atol=atol[_name], equal_nan=True))
        return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(records_equal(x, y, atol=atol, _name=_name) for x, y in zip(a, b))
    return a == b

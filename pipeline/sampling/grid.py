"""The five sampling sliders' grids: the one table the page's sliders (ui/layout.py), the viewer's reshaping tables
(viz/viewer/grid.py) and a step's saved rest of the vocabulary (pipeline/sampling/rest.py, whose temperatures are part of the
trace format) all read. No torch, no gradio.

    TEMPERATURE.values    # (0.0, 0.05, ..., 2.0): every position of the temperature slider
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Grid:
    """A slider from `lo` to `hi` by `step` (whole numbers stay whole: top-k)."""

    lo: float
    hi: float
    step: float

    @property
    def values(self) -> tuple[float, ...]:
        """Every position, rounded to the step's own decimals (0.05 * 3 is 0.15, not 0.15000000000000002)."""
        places = len(repr(float(self.step)).split(".")[1].rstrip("0")) if not float(self.step).is_integer() else 0
        n = round((self.hi - self.lo) / self.step)
        return tuple(round(self.lo + self.step * i, places) for i in range(n + 1))


TEMPERATURE = Grid(0, 2, 0.05)  # 0 is greedy
TOP_K = Grid(0, 200, 1)  # 0 is off
TOP_P = Grid(0.01, 1, 0.01)  # 1 is off
MIN_P = Grid(0, 0.5, 0.01)  # 0 is off
REPETITION_PENALTY = Grid(1, 2, 0.05)  # 1 is off

__all__ = ["Grid", "TEMPERATURE", "TOP_K", "TOP_P", "MIN_P", "REPETITION_PENALTY"]

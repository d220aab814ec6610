"""Comparing a native run's outputs with the Python original's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

TOLERANCES = {"float64": 1e-9, "float32": 1e-4}
"""Normwise relative error allowed per element type. Builds keep Python's rounding
(no FMA contraction, no reassociation), so float64 results normally match exactly;
the margin covers libm differences. Integers must match exactly. A float64 result computed
from float32 arrays takes the float32 margin: its float32 intermediates (NumPy's `log` of a
float32 array, as in `-np.log(a32 / b32) / np.log(2.0)`) come from NumPy's own float32
functions, which differ from the C library's by a few units in float32's last place."""


def tolerance_for(dtype: np.dtype) -> float:
    return TOLERANCES.get(np.dtype(dtype).name, 0.0)


@dataclass(frozen=True)
class Comparison:
    """Per-array normwise relative error, `max|got - want| / max|want|`, and the verdict."""

    errors: tuple[tuple[str, float], ...]
    tolerance: float
    mismatched: tuple[str, ...]

    @property
    def max_rel_error(self) -> float:
        return max((e for _, e in self.errors), default=0.0)

    @property
    def correct(self) -> bool:
        return not self.mismatched


def compare_outputs(
    want: Mapping[str, object], got: Mapping[str, object], names: list[str], tolerance_scale: float = 1.0
) -> Comparison:
    """Compare the arrays `names` (the kernel's written arguments) between two runs.

    `tolerance_scale` widens the tolerance where reductions were reassociated (sums in another order)."""
    errors, mismatched, worst_tolerance = [], [], 0.0
    float32_data = any(isinstance(v, np.ndarray) and v.dtype == np.float32 for v in want.values())
    for name in names:
        a = np.asarray(want[name])
        tolerance = tolerance_for(a.dtype)
        if float32_data and a.dtype.kind == "f":
            tolerance = max(tolerance, TOLERANCES["float32"])
        tolerance *= tolerance_scale
        worst_tolerance = max(worst_tolerance, tolerance)
        b = _same_shape(a, got.get(name))
        if b is None:  # not returned, or in another shape: nothing to compare element by element
            errors.append((name, float("inf")))
            mismatched.append(name)
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        both_nan = np.isnan(a64) & np.isnan(b64)
        difference = np.where(both_nan, 0.0, np.abs(a64 - b64))
        scale = float(np.max(np.abs(np.where(both_nan, 0.0, a64)), initial=0.0))
        largest = float(np.max(difference, initial=0.0))
        if np.isnan(largest):
            error = float("inf")
        else:
            error = largest / scale if scale > 0 else largest
        errors.append((name, error))
        if not error <= tolerance:
            mismatched.append(name)
    return Comparison(tuple(errors), worst_tolerance, tuple(mismatched))


def _same_shape(want: np.ndarray, got: object) -> np.ndarray | None:
    """`got` as an array of `want`'s shape, or None. A one-element array stands for a scalar (DaCe returns
    scalars so)."""
    if got is None:
        return None
    try:
        array = np.asarray(got)
    except (TypeError, ValueError):
        return None
    if array.shape == want.shape:
        return array
    if array.size == want.size == 1:
        return array.reshape(want.shape)
    return None

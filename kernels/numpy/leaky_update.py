"""leaky-update: an in-place leaky update of the entries above a threshold (`a[a > t] *= s`)."""

import numpy as np

NAME = "leaky-update"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"m": 8, "n": 8},
    "SMALL": {"m": 128, "n": 128},
    "MEDIUM": {"m": 1024, "n": 1024},
    "LARGE": {"m": 4096, "n": 4096},
    "EXTRALARGE": {"m": 8192, "n": 8192},
}


def init(m: int, n: int) -> dict:
    """Normal random activations."""
    rng = np.random.default_rng(42)
    return {"a": rng.standard_normal((m, n))}


def leaky_update(a, threshold=0.0, slope=0.1):
    a[a < threshold] *= slope
    a[~(a < 2.0)] = 2.0

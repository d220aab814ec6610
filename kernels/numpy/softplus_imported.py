"""softplus-imported: a numerically stable softplus written with names imported from NumPy."""

import numpy as np
from numpy import exp, maximum

NAME = "softplus-imported"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"m": 8, "n": 16},
    "SMALL": {"m": 128, "n": 128},
    "MEDIUM": {"m": 1024, "n": 1024},
    "LARGE": {"m": 4096, "n": 4096},
    "EXTRALARGE": {"m": 8192, "n": 8192},
}


def init(m: int, n: int) -> dict:
    """Normal random float32 activations."""
    rng = np.random.default_rng(42)
    return {"x": (rng.standard_normal((m, n)) * 4).astype(np.float32)}


def softplus_imported(x):
    return log1p_exp(x)


def log1p_exp(v):
    return np.log(1.0 + exp(-np.abs(v))) + maximum(v, 0.0)

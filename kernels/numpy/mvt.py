"""mvt: x1 += A @ y1 and x2 += A.T @ y2, in place. Modelled on PolyBench's mvt."""

import numpy as np

NAME = "mvt"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"n": 40},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 10000},
    "EXTRALARGE": {"n": 20000},
}


def init(n: int) -> dict:
    """Uniform random A (n, n) and vectors x1, x2, y1, y2 (n,)."""
    rng = np.random.default_rng(42)
    return {
        "x1": rng.random(n),
        "x2": rng.random(n),
        "y1": rng.random(n),
        "y2": rng.random(n),
        "A": rng.random((n, n)),
    }


def mvt(x1, x2, y1, y2, A):
    x1 += A @ y1
    x2 += A.T @ y2

"""atax: y := A.T @ (A @ x), a new vector. Modelled on PolyBench's atax, written with `@`."""

import numpy as np

NAME = "atax"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"m": 38, "n": 42},
    "SMALL": {"m": 116, "n": 124},
    "MEDIUM": {"m": 390, "n": 410},
    "LARGE": {"m": 12000, "n": 14000},
    "EXTRALARGE": {"m": 24000, "n": 28000},
}


def init(m: int, n: int) -> dict:
    """Uniform random A (m, n) and x (n,)."""
    rng = np.random.default_rng(42)
    return {"A": rng.random((m, n)), "x": rng.random(n)}


def atax(A, x):
    return A.T @ (A @ x)

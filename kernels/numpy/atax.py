"""atax: y := A.T @ (A @ x), a new vector. Modelled on PolyBench's atax, written with `@`."""

import numpy as np

NAME = "atax"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"m": 38, "n": 42},
    "SMALL": {"m": 116, "n": 124},
    "MEDIUM": {"m": 390, "n": 410},
    "LARGE": {"m": 7000, "n": 8000},
    "EXTRALARGE": {"m": 14000, "n": 16000},
}


def init(m: int, n: int) -> dict:
    """Uniform random A (m, n) and x (n,)."""
    rng = np.random.default_rng(42)
    return {"A": rng.random((m, n)), "x": rng.random(n)}


def atax(A, x):
    return A.T @ (A @ x)

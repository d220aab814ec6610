"""bicg: the two products of a BiCG step, s := A.T @ r and q := A @ p, as a tuple. Modelled on PolyBench's bicg."""

import numpy as np

NAME = "bicg"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"m": 38, "n": 42},
    "SMALL": {"m": 116, "n": 124},
    "MEDIUM": {"m": 390, "n": 410},
    "LARGE": {"m": 12000, "n": 14000},
    "EXTRALARGE": {"m": 24000, "n": 28000},
}


def init(m: int, n: int) -> dict:
    """Uniform random A (n, m), r (n,) and p (m,)."""
    rng = np.random.default_rng(42)
    return {"A": rng.random((n, m)), "r": rng.random(n), "p": rng.random(m)}


def bicg(A, r, p):
    s = A.T @ r
    q = A @ p
    return s, q

"""trisolv: forward substitution, x solving L@x = b for lower triangular L, a new vector. Modelled on PolyBench's trisolv."""

import numpy as np

NAME = "trisolv"
CATEGORY = "linear-algebra/solvers"
SIZES = {
    "MINI": {"n": 40},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 16000},
    "EXTRALARGE": {"n": 28000},
}


def init(n: int) -> dict:
    """A random L (n, n) with a dominant diagonal (only on and below it is read) and a random b (n,)."""
    rng = np.random.default_rng(42)
    return {"L": rng.random((n, n)) / n + np.eye(n), "b": rng.random(n)}


def trisolv(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x

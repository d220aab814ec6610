"""back-substitution: back substitution of an upper-triangular system, the rows taken with `reversed(range(n))`."""

import numpy as np

NAME = "back-substitution"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 16},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 500},
    "LARGE": {"n": 2000},
    "EXTRALARGE": {"n": 4000},
}


def init(n: int) -> dict:
    """A well-conditioned upper-triangular U and a right side b."""
    rng = np.random.default_rng(42)
    u = np.triu(rng.random((n, n))) + n * np.eye(n)
    return {"U": u, "b": rng.random(n)}


def back_substitution(U, b):
    n = len(b)
    x = np.zeros(n)
    for i in reversed(range(n)):
        s = b[i]
        for j in range(i + 1, n):
            s -= U[i, j] * x[j]
        x[i] = s / U[i, i]
    return x

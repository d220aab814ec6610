"""gemver: rank-2 update of A, then x += beta*A.T@y + z and w += alpha*A@x, in place. Modelled on PolyBench's gemver."""

import numpy as np

NAME = "gemver"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"n": 40},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 5000},
    "EXTRALARGE": {"n": 10000},
}


def init(n: int) -> dict:
    """Uniform random A (n, n) and vectors u1, v1, u2, v2, w, x, y, z (n,); alpha 1.5, beta 1.2."""
    rng = np.random.default_rng(42)
    vectors = {name: rng.random(n) for name in ("u1", "v1", "u2", "v2", "w", "x", "y", "z")}
    return {"alpha": 1.5, "beta": 1.2, "A": rng.random((n, n)), **vectors}


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * A.T @ y + z
    w += alpha * A @ x

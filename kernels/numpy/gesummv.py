"""gesummv: y := alpha*A@x + beta*B@x, a new vector. Modelled on PolyBench's gesummv."""

import numpy as np

NAME = "gesummv"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"n": 30},
    "SMALL": {"n": 90},
    "MEDIUM": {"n": 250},
    "LARGE": {"n": 6000},
    "EXTRALARGE": {"n": 12000},
}


def init(n: int) -> dict:
    """Uniform random A, B (n, n) and x (n,); alpha 1.5, beta 1.2."""
    rng = np.random.default_rng(42)
    return {"alpha": 1.5, "beta": 1.2, "A": rng.random((n, n)), "B": rng.random((n, n)), "x": rng.random(n)}


def gesummv(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x

"""ndindex-laplacian: a discrete Laplacian over the interior, its points taken with `np.ndindex`."""

import numpy as np

NAME = "ndindex-laplacian"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 10},
    "SMALL": {"n": 60},
    "MEDIUM": {"n": 300},
    "LARGE": {"n": 1500},
    "EXTRALARGE": {"n": 3000},
}


def init(n: int) -> dict:
    """Uniform random field."""
    rng = np.random.default_rng(42)
    return {"u": rng.random((n, n))}


def ndindex_laplacian(u):
    out = np.zeros_like(u)
    for i, j in np.ndindex(u.shape[0] - 2, u.shape[1] - 2):
        out[i + 1, j + 1] = u[i, j + 1] + u[i + 2, j + 1] + u[i + 1, j] + u[i + 1, j + 2] - 4.0 * u[i + 1, j + 1]
    return out

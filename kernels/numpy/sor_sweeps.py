"""sor-sweeps: successive over-relaxation in place, element by element, the grid's size kept in names."""

import numpy as np

NAME = "sor-sweeps"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 10, "iters": 2},
    "SMALL": {"n": 50, "iters": 4},
    "MEDIUM": {"n": 200, "iters": 10},
    "LARGE": {"n": 1000, "iters": 10},
    "EXTRALARGE": {"n": 2000, "iters": 10},
}


def init(n: int, iters: int) -> dict:
    """Random grid."""
    rng = np.random.default_rng(42)
    return {"G": rng.random((n, n)), "omega": 1.25, "iters": iters}


def sor_sweeps(G, omega, iters):
    m, n = G.shape
    for p in range(iters):
        for i in range(1, m - 1):
            for j in range(1, n - 1):
                G[i, j] = omega * 0.25 * (G[i - 1, j] + G[i + 1, j] + G[i, j - 1] + G[i, j + 1]) + (1.0 - omega) * G[i, j]

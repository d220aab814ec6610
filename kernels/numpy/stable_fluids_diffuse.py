"""stable-fluids: stable fluids' diffusion: Jacobi sweeps, then a boundary helper that writes the grid's edges."""

import numpy as np

NAME = "stable-fluids"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 14, "iters": 4},
    "SMALL": {"n": 62, "iters": 10},
    "MEDIUM": {"n": 254, "iters": 20},
    "LARGE": {"n": 1022, "iters": 20},
    "EXTRALARGE": {"n": 2046, "iters": 20},
}


def init(n: int, iters: int) -> dict:
    """Random density on an (n + 2)-square grid."""
    rng = np.random.default_rng(42)
    return {"x": np.zeros((n + 2, n + 2)), "x0": rng.random((n + 2, n + 2)), "diff": 0.1, "iters": iters}


def _set_bnd(n, x):
    for i in range(1, n + 1):
        x[0, i] = x[1, i]
        x[n + 1, i] = x[n, i]
        x[i, 0] = x[i, 1]
        x[i, n + 1] = x[i, n]
    x[0, 0] = 0.5 * (x[1, 0] + x[0, 1])
    x[0, n + 1] = 0.5 * (x[1, n + 1] + x[0, n])
    x[n + 1, 0] = 0.5 * (x[n, 0] + x[n + 1, 1])
    x[n + 1, n + 1] = 0.5 * (x[n, n + 1] + x[n + 1, n])


def stable_fluids_diffuse(x, x0, diff, iters):
    n = x.shape[0] - 2
    a = diff * n * n
    for k in range(iters):
        x[1:-1, 1:-1] = (x0[1:-1, 1:-1] + a * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])) / (1 + 4 * a)
        _set_bnd(n, x)

"""game-of-life: Conway's life on a torus-free board, neighbours counted with slices and the rules as masks."""

import numpy as np

NAME = "game-of-life"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 16, "steps": 3},
    "SMALL": {"n": 64, "steps": 8},
    "MEDIUM": {"n": 256, "steps": 20},
    "LARGE": {"n": 1024, "steps": 20},
    "EXTRALARGE": {"n": 2048, "steps": 20},
}


def init(n: int, steps: int) -> dict:
    """A random board of 0.0 and 1.0 with a dead border."""
    rng = np.random.default_rng(42)
    z = (rng.random((n, n)) < 0.3).astype(np.float64)
    z[0, :] = z[-1, :] = z[:, 0] = z[:, -1] = 0.0
    return {"Z": z, "steps": steps}


def game_of_life(Z, steps):
    rows, cols = len(Z), len(Z[0])
    N = np.zeros((rows, cols))
    for it in range(steps):
        N[1:-1, 1:-1] = Z[:-2, :-2] + Z[:-2, 1:-1] + Z[:-2, 2:] + Z[1:-1, :-2] + Z[1:-1, 2:] + Z[2:, :-2] + Z[2:, 1:-1] + Z[2:, 2:]
        Z[1:-1, 1:-1] = np.where((N[1:-1, 1:-1] == 3) | ((Z[1:-1, 1:-1] == 1) & (N[1:-1, 1:-1] == 2)), 1.0, 0.0)

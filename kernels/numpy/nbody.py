"""nbody: softened gravitational accelerations of n bodies, all pairs, a new (n, 3) array. Modelled on direct-sum n-body."""

import numpy as np

NAME = "nbody"
CATEGORY = "physics"
SIZES = {
    "MINI": {"n": 16},
    "SMALL": {"n": 64},
    "MEDIUM": {"n": 500},
    "LARGE": {"n": 3000},
    "EXTRALARGE": {"n": 6000},
}


def init(n: int) -> dict:
    """Normal random positions pos (n, 3), masses in [0.5, 1.5) summing to about 1, G 1, softening 0.1."""
    rng = np.random.default_rng(42)
    return {"G": 1.0, "softening": 0.1, "pos": rng.standard_normal((n, 3)), "mass": rng.uniform(0.5, 1.5, n) / n}


def nbody(G, softening, pos, mass):
    n = pos.shape[0]
    x = pos[:, 0]
    y = pos[:, 1]
    z = pos[:, 2]
    # dx[i, j] points from body i to body j; the softening keeps i == j (and close pairs) finite.
    dx = x[None, :] - x[:, None]
    dy = y[None, :] - y[:, None]
    dz = z[None, :] - z[:, None]
    inv_r3 = (dx**2 + dy**2 + dz**2 + softening**2) ** -1.5
    acc = np.empty((n, 3))
    acc[:, 0] = G * np.sum(dx * inv_r3 * mass[None, :], axis=1)
    acc[:, 1] = G * np.sum(dy * inv_r3 * mass[None, :], axis=1)
    acc[:, 2] = G * np.sum(dz * inv_r3 * mass[None, :], axis=1)
    return acc

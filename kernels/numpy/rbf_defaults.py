"""rbf-defaults: a Gaussian RBF kernel matrix with its width left at the default, inputs taken through `np.asarray`."""

import numpy as np

NAME = "rbf-defaults"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"m": 8, "p": 6, "d": 4},
    "SMALL": {"m": 100, "p": 80, "d": 16},
    "MEDIUM": {"m": 800, "p": 600, "d": 32},
    "LARGE": {"m": 3000, "p": 2000, "d": 64},
    "EXTRALARGE": {"m": 6000, "p": 4000, "d": 64},
}


def init(m: int, p: int, d: int) -> dict:
    """Uniform random points."""
    rng = np.random.default_rng(42)
    return {"X": rng.random((m, d)), "Y": rng.random((p, d))}


def rbf_defaults(X, Y, gamma=0.5):
    X = np.asarray(X)
    Y = np.asarray(Y)
    xx = np.sum(X * X, axis=1)
    yy = np.sum(Y * Y, axis=1)
    d2 = xx[:, None] + yy[None, :] - 2.0 * (X @ Y.T)
    return np.exp(-gamma * d2)

"""closure-gradient: a gradient step of least squares through a function and a lambda defined inside."""

import numpy as np

NAME = "closure-gradient"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"m": 8, "n": 4},
    "SMALL": {"m": 200, "n": 50},
    "MEDIUM": {"m": 2000, "n": 200},
    "LARGE": {"m": 8000, "n": 500},
    "EXTRALARGE": {"m": 16000, "n": 1000},
}


def init(m: int, n: int) -> dict:
    """Random features, targets and weights."""
    rng = np.random.default_rng(42)
    return {"X": rng.random((m, n)), "y": rng.random(m), "w": rng.random(n), "lr": 0.01}


def closure_gradient_step(X, y, w, lr):
    def residual(v):
        return X @ v - y

    scale = lambda g: g * (lr / len(y))
    return w - scale(X.T @ residual(w))

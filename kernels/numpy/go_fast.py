"""go-fast: the sum of tanh over the diagonal added to every element, a new array. Modelled on Numba's `go_fast` example."""

import numpy as np

NAME = "go-fast"
CATEGORY = "misc"
SIZES = {
    "MINI": {"n": 32},
    "SMALL": {"n": 128},
    "MEDIUM": {"n": 1000},
    "LARGE": {"n": 8000},
    "EXTRALARGE": {"n": 16000},
}


def init(n: int) -> dict:
    """Uniform random a (n, n) in [-1, 1)."""
    rng = np.random.default_rng(42)
    return {"a": rng.uniform(-1.0, 1.0, (n, n))}


def go_fast(a):
    n = a.shape[0]
    trace = 0.0
    for i in range(n):
        trace += np.tanh(a[i, i])
    return a + trace

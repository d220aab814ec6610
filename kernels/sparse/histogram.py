"""histogram: counts[b] := how many of `bins` equal b. A scatter with `+=` through an index array."""

import numpy as np

from kernels.graphs._sizes import GRAPH_SIZES

NAME = "histogram"
CATEGORY = "sparse"
SIZES = GRAPH_SIZES


def init(n: int, m: int) -> dict:
    """`m` values in `n` bins, skewed towards the low bins."""
    rng = np.random.default_rng(9)
    bins = np.minimum((rng.pareto(1.5, m) * n / 8).astype(np.int64), n - 1)
    return {"n": n, "m": m, "bins": bins, "counts": np.zeros(n, dtype=np.int64)}


def histogram(n, m, bins, counts):
    for b in range(n):
        counts[b] = 0
    for i in range(m):
        counts[bins[i]] += 1

"""histogram-mask: a histogram over even bins, each bin's count a sum of a boolean mask."""

import numpy as np

NAME = "histogram-mask"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 100, "bins": 8},
    "SMALL": {"n": 2000, "bins": 32},
    "MEDIUM": {"n": 100000, "bins": 64},
    "LARGE": {"n": 1000000, "bins": 128},
    "EXTRALARGE": {"n": 4000000, "bins": 256},
}


def init(n: int, bins: int) -> dict:
    """Uniform random values in [0, 1)."""
    rng = np.random.default_rng(42)
    return {"x": rng.random(n), "counts": np.zeros(bins, dtype=np.int64)}


def histogram_mask(x, counts):
    nbins = counts.shape[0]
    for b in range(nbins):
        lo = b / nbins
        hi = (b + 1) / nbins
        counts[b] = np.sum((x >= lo) & (x < hi))

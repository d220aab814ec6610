"""masked-loss: a squared error over the entries a mask keeps, and how many it keeps."""

import numpy as np

NAME = "masked-loss"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 64},
    "SMALL": {"n": 4096},
    "MEDIUM": {"n": 500000},
    "LARGE": {"n": 8000000},
    "EXTRALARGE": {"n": 16000000},
}


def init(n: int) -> dict:
    """Predictions, targets and the entries to keep."""
    rng = np.random.default_rng(42)
    return {"pred": rng.random(n), "target": rng.random(n), "weight": rng.random(n)}


def masked_loss(pred, target, weight):
    err = pred - target
    return np.sum((err * err)[weight > 0.2]) / np.sum(weight > 0.2)

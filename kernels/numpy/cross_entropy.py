"""cross-entropy: mean cross-entropy of logits against label-smoothed targets, a scalar. Modelled on PyTorch's CrossEntropyLoss."""

import numpy as np

NAME = "cross-entropy"
CATEGORY = "deep-learning"
SIZES = {
    "MINI": {"batch": 16, "classes": 10},
    "SMALL": {"batch": 64, "classes": 100},
    "MEDIUM": {"batch": 512, "classes": 1000},
    "LARGE": {"batch": 4096, "classes": 4096},
    "EXTRALARGE": {"batch": 8192, "classes": 8192},
}


def init(batch: int, classes: int) -> dict:
    """Normal random logits (batch, classes); targets put 0.9 on a random class and spread 0.1 over all of them."""
    rng = np.random.default_rng(42)
    labels = rng.integers(0, classes, batch)
    targets = np.full((batch, classes), 0.1 / classes)
    targets[np.arange(batch), labels] += 0.9
    return {"logits": rng.standard_normal((batch, classes)) * 3.0, "targets": targets}


def log_softmax(x):
    shifted = x - np.max(x, axis=1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))


def cross_entropy(logits, targets):
    batch = logits.shape[0]
    return -np.sum(targets * log_softmax(logits)) / batch

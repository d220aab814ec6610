"""batchnorm: training-mode batch normalization of float32 activations, a new array. Modelled on PyTorch's BatchNorm1d."""

import numpy as np

NAME = "batchnorm"
CATEGORY = "deep-learning"
SIZES = {
    "MINI": {"batch": 16, "features": 24},
    "SMALL": {"batch": 64, "features": 96},
    "MEDIUM": {"batch": 256, "features": 512},
    "LARGE": {"batch": 4096, "features": 4096},
    "EXTRALARGE": {"batch": 8192, "features": 8192},
}


def init(batch: int, features: int) -> dict:
    """Float32 activations x (batch, features) with a different mean and spread per feature, random gamma and beta."""
    rng = np.random.default_rng(42)
    x = rng.standard_normal((batch, features)) * rng.uniform(0.5, 3.0, features) + rng.uniform(-2.0, 2.0, features)
    return {
        "x": x.astype(np.float32),
        "gamma": rng.uniform(0.5, 1.5, features).astype(np.float32),
        "beta": rng.uniform(-0.5, 0.5, features).astype(np.float32),
    }


def batchnorm(x, gamma, beta):
    mean = np.mean(x, axis=0)
    var = np.mean((x - mean) ** 2, axis=0)
    return gamma * (x - mean) / np.sqrt(var + 1e-5) + beta

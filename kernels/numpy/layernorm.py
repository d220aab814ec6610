"""layernorm: layer normalization of float32 token vectors, a new array. Modelled on PyTorch's LayerNorm in a transformer."""

import numpy as np

NAME = "layernorm"
CATEGORY = "deep-learning"
SIZES = {
    "MINI": {"tokens": 16, "channels": 32},
    "SMALL": {"tokens": 64, "channels": 128},
    "MEDIUM": {"tokens": 512, "channels": 512},
    "LARGE": {"tokens": 8192, "channels": 2048},
    "EXTRALARGE": {"tokens": 16384, "channels": 4096},
}


def init(tokens: int, channels: int) -> dict:
    """Float32 activations x (tokens, channels) with a different mean and spread per token, random gamma and beta."""
    rng = np.random.default_rng(42)
    x = rng.standard_normal((tokens, channels)) * rng.uniform(0.5, 3.0, (tokens, 1)) + rng.uniform(-2.0, 2.0, (tokens, 1))
    return {
        "x": x.astype(np.float32),
        "gamma": rng.uniform(0.5, 1.5, channels).astype(np.float32),
        "beta": rng.uniform(-0.5, 0.5, channels).astype(np.float32),
    }


def layernorm(x, gamma, beta):
    mean = np.mean(x, axis=1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + 1e-5) + beta

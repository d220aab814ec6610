"""gelu: the tanh approximation of GELU on float32 activations, a new array. Modelled on GPT-2's MLP nonlinearity."""

import numpy as np

NAME = "gelu"
CATEGORY = "deep-learning"
SIZES = {
    "MINI": {"tokens": 16, "channels": 32},
    "SMALL": {"tokens": 64, "channels": 128},
    "MEDIUM": {"tokens": 512, "channels": 512},
    "LARGE": {"tokens": 4096, "channels": 1536},
    "EXTRALARGE": {"tokens": 8192, "channels": 3072},
}


def init(tokens: int, channels: int) -> dict:
    """Normal random float32 activations x (tokens, channels)."""
    rng = np.random.default_rng(42)
    return {"x": (rng.standard_normal((tokens, channels)) * 2.0).astype(np.float32)}


def gelu(x):
    # 0.7978845608028654 is sqrt(2/pi), written as a Python float so that float32 stays float32.
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))

"""mlp: forward pass of a three-layer perceptron (dense, bias, ReLU), a new array. Modelled on a PyTorch nn.Sequential MLP."""

import numpy as np

NAME = "mlp"
CATEGORY = "deep-learning"
SIZES = {
    "MINI": {"batch": 8, "d_in": 16, "hidden1": 32, "hidden2": 24, "d_out": 10},
    "SMALL": {"batch": 32, "d_in": 64, "hidden1": 128, "hidden2": 96, "d_out": 10},
    "MEDIUM": {"batch": 128, "d_in": 256, "hidden1": 512, "hidden2": 384, "d_out": 10},
    "LARGE": {"batch": 1024, "d_in": 2048, "hidden1": 4096, "hidden2": 2048, "d_out": 100},
    "EXTRALARGE": {"batch": 2048, "d_in": 4096, "hidden1": 4096, "hidden2": 4096, "d_out": 100},
}


def init(batch: int, d_in: int, hidden1: int, hidden2: int, d_out: int) -> dict:
    """Normal random inputs x (batch, d_in); weights scaled by 1/sqrt(fan-in) (PyTorch's range) and small random biases."""
    rng = np.random.default_rng(42)

    def dense(fan_in: int, fan_out: int) -> np.ndarray:
        return rng.uniform(-1.0, 1.0, (fan_in, fan_out)) / np.sqrt(fan_in)

    return {
        "x": rng.standard_normal((batch, d_in)),
        "W1": dense(d_in, hidden1),
        "b1": rng.uniform(-0.1, 0.1, hidden1),
        "W2": dense(hidden1, hidden2),
        "b2": rng.uniform(-0.1, 0.1, hidden2),
        "W3": dense(hidden2, d_out),
        "b3": rng.uniform(-0.1, 0.1, d_out),
    }


def relu(x):
    return np.maximum(x, 0.0)


def mlp(x, W1, b1, W2, b2, W3, b3):
    h1 = relu(x @ W1 + b1)
    h2 = relu(h1 @ W2 + b2)
    return h2 @ W3 + b3

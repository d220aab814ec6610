"""attention: one-head causal self-attention on one sequence, a new array. Modelled on NanoGPT's CausalSelfAttention."""

import numpy as np

NAME = "attention"
CATEGORY = "deep-learning"
SIZES = {
    "MINI": {"seq": 16, "channels": 24},
    "SMALL": {"seq": 64, "channels": 64},
    "MEDIUM": {"seq": 256, "channels": 192},
    "LARGE": {"seq": 2048, "channels": 768},
    "EXTRALARGE": {"seq": 4096, "channels": 1024},
}


def init(seq: int, channels: int) -> dict:
    """Normal random tokens x (seq, channels); projection weights scaled by 1/sqrt(channels) and small random biases."""
    rng = np.random.default_rng(42)
    inputs = {"x": rng.standard_normal((seq, channels))}
    for name in ("q", "k", "v", "o"):
        inputs[f"W{name}"] = rng.uniform(-1.0, 1.0, (channels, channels)) / np.sqrt(channels)
        inputs[f"b{name}"] = rng.uniform(-0.1, 0.1, channels)
    return inputs


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def attention(x, Wq, bq, Wk, bk, Wv, bv, Wo, bo):
    T, C = x.shape
    q = x @ Wq + bq
    k = x @ Wk + bk
    v = x @ Wv + bv
    scores = q @ k.T / np.sqrt(C)
    # Causal mask: token i attends to tokens 0..i only; exp(-inf) is 0 in the softmax.
    for i in range(T):
        scores[i, i + 1 :] = -np.inf
    return softmax(scores) @ v @ Wo + bo

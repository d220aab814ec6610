"""conv2d: valid 2-D convolution of NHWC images with bias, a slice product per filter tap, a new array. Modelled on a CNN layer."""

import numpy as np

NAME = "conv2d"
CATEGORY = "deep-learning"
SIZES = {
    "MINI": {"batch": 2, "height": 10, "width": 12, "c_in": 3, "c_out": 4, "kh": 3, "kw": 3},
    "SMALL": {"batch": 4, "height": 24, "width": 24, "c_in": 4, "c_out": 8, "kh": 3, "kw": 3},
    "MEDIUM": {"batch": 8, "height": 48, "width": 48, "c_in": 8, "c_out": 16, "kh": 3, "kw": 3},
    "LARGE": {"batch": 4, "height": 64, "width": 64, "c_in": 16, "c_out": 32, "kh": 5, "kw": 5},
    "EXTRALARGE": {"batch": 8, "height": 128, "width": 64, "c_in": 16, "c_out": 32, "kh": 5, "kw": 5},
}


def init(batch: int, height: int, width: int, c_in: int, c_out: int, kh: int, kw: int) -> dict:
    """Normal random images x (batch, height, width, c_in), filters w (kh, kw, c_in, c_out) and bias (c_out,)."""
    rng = np.random.default_rng(42)
    return {
        "x": rng.standard_normal((batch, height, width, c_in)),
        "w": rng.standard_normal((kh, kw, c_in, c_out)) / np.sqrt(kh * kw * c_in),
        "bias": rng.uniform(-0.1, 0.1, c_out),
    }


def conv2d(x, w, bias):
    batch, height, width, c_in = x.shape
    kh = w.shape[0]
    kw = w.shape[1]
    c_out = w.shape[3]
    out = np.zeros((batch, height - kh + 1, width - kw + 1, c_out))
    for di in range(kh):
        for dj in range(kw):
            for c in range(c_in):
                # Every output pixel's tap (di, dj) on channel c, times that tap's filter row over c_out.
                out += x[:, di : di + height - kh + 1, dj : dj + width - kw + 1, c, None] * w[di, dj, c, :]
    out += bias
    return out

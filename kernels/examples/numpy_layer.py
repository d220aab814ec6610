"""A dense layer written the NumPy way: the engine inlines `relu`, lowers `@` and the bias
broadcast into loops, and returns a new array (`repoos check kernels/examples/numpy_layer.py:layer
--arg x=f64[512,256] --arg w=f64[256,128] --arg b=f64[128]`)."""

import numpy as np


def relu(x):
    return np.maximum(x, 0.0)


def layer(x, w, b):
    return relu(x @ w + b)

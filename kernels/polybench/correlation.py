"""correlation: correlation matrix of the columns of data.

PolyBench/C 4.2.1, datamining.
"""

import math

import numpy as np

NAME = "correlation"
CATEGORY = "datamining"
SIZES = {
    "MINI": {"m": 28, "n": 32},
    "SMALL": {"m": 80, "n": 100},
    "MEDIUM": {"m": 240, "n": 260},
    "LARGE": {"m": 1200, "n": 1400},
    "EXTRALARGE": {"m": 2600, "n": 3000},
}


def init(m: int, n: int) -> dict:
    """PolyBench's init_array: data[i][j] = (double)(i*j)/M + i, float_n = (double)N."""
    i = np.arange(n)[:, None]
    j = np.arange(m)[None, :]
    data = (i * j).astype(np.float64) / m + i
    return {
        "m": m,
        "n": n,
        "float_n": float(n),
        "data": np.ascontiguousarray(data),
        "corr": np.zeros((m, m)),
        "mean": np.zeros(m),
        "stddev": np.zeros(m),
    }


def correlation(m, n, float_n, data, corr, mean, stddev):
    eps = 0.1
    for j in range(m):
        mean[j] = 0.0
        for i in range(n):
            mean[j] += data[i, j]
        mean[j] /= float_n
    for j in range(m):
        stddev[j] = 0.0
        for i in range(n):
            stddev[j] += (data[i, j] - mean[j]) * (data[i, j] - mean[j])
        stddev[j] /= float_n
        stddev[j] = math.sqrt(stddev[j])
        # Near-zero standard deviations are replaced by 1 to avoid a zero divide.
        stddev[j] = 1.0 if stddev[j] <= eps else stddev[j]
    # Center and reduce the column vectors.
    for i in range(n):
        for j in range(m):
            data[i, j] -= mean[j]
            data[i, j] /= math.sqrt(float_n) * stddev[j]
    # The m * m correlation matrix.
    for i in range(m - 1):
        corr[i, i] = 1.0
        for j in range(i + 1, m):
            corr[i, j] = 0.0
            for k in range(n):
                corr[i, j] += data[k, i] * data[k, j]
            corr[j, i] = corr[i, j]
    corr[m - 1, m - 1] = 1.0

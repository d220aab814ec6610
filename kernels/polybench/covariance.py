"""covariance: covariance matrix of the columns of data. PolyBench/C 4.2.1, datamining."""

import numpy as np

NAME = "covariance"
CATEGORY = "datamining"
SIZES = {
    "MINI": {"m": 28, "n": 32},
    "SMALL": {"m": 80, "n": 100},
    "MEDIUM": {"m": 240, "n": 260},
    "LARGE": {"m": 1200, "n": 1400},
    "EXTRALARGE": {"m": 2600, "n": 3000},
}


def init(m: int, n: int) -> dict:
    """PolyBench's init_array: data[i][j] = ((double)i*j)/M, float_n = (double)n."""
    i = np.arange(n)[:, None]
    j = np.arange(m)[None, :]
    data = i.astype(np.float64) * j / m
    return {
        "m": m,
        "n": n,
        "float_n": float(n),
        "data": np.ascontiguousarray(data),
        "cov": np.zeros((m, m)),
        "mean": np.zeros(m),
    }


def covariance(m, n, float_n, data, cov, mean):
    for j in range(m):
        mean[j] = 0.0
        for i in range(n):
            mean[j] += data[i, j]
        mean[j] /= float_n
    for i in range(n):
        for j in range(m):
            data[i, j] -= mean[j]
    for i in range(m):
        for j in range(i, m):
            cov[i, j] = 0.0
            for k in range(n):
                cov[i, j] += data[k, i] * data[k, j]
            cov[i, j] /= float_n - 1.0
            cov[j, i] = cov[i, j]

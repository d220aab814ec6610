"""heat-3d: 3-D heat equation, 7-point stencil alternating between A and B. PolyBench/C 4.2.1, stencils."""

import numpy as np

NAME = "heat-3d"
CATEGORY = "stencils"
SIZES = {
    "MINI": {"tsteps": 20, "n": 10},
    "SMALL": {"tsteps": 40, "n": 20},
    "MEDIUM": {"tsteps": 100, "n": 40},
    "LARGE": {"tsteps": 500, "n": 120},
    "EXTRALARGE": {"tsteps": 1000, "n": 200},
}


def init(tsteps: int, n: int) -> dict:
    """PolyBench's init_array: A[i][j][k] = B[i][j][k] = (i + j + (n-k))*10/n."""
    i = np.arange(n)[:, None, None]
    j = np.arange(n)[None, :, None]
    k = np.arange(n)[None, None, :]
    A = (i + j + (n - k)).astype(np.float64) * 10 / n
    return {"tsteps": tsteps, "n": n, "A": A, "B": A.copy()}


def heat_3d(tsteps, n, A, B):
    for t in range(1, tsteps + 1):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    B[i, j, k] = (
                        0.125 * (A[i + 1, j, k] - 2.0 * A[i, j, k] + A[i - 1, j, k])
                        + 0.125 * (A[i, j + 1, k] - 2.0 * A[i, j, k] + A[i, j - 1, k])
                        + 0.125 * (A[i, j, k + 1] - 2.0 * A[i, j, k] + A[i, j, k - 1])
                        + A[i, j, k]
                    )
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    A[i, j, k] = (
                        0.125 * (B[i + 1, j, k] - 2.0 * B[i, j, k] + B[i - 1, j, k])
                        + 0.125 * (B[i, j + 1, k] - 2.0 * B[i, j, k] + B[i, j - 1, k])
                        + 0.125 * (B[i, j, k + 1] - 2.0 * B[i, j, k] + B[i, j, k - 1])
                        + B[i, j, k]
                    )

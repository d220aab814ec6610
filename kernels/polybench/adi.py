"""adi: alternating-direction implicit solver for 2-D heat diffusion (column then row sweeps). PolyBench/C 4.2.1, stencils."""

import numpy as np

NAME = "adi"
CATEGORY = "stencils"
SIZES = {
    "MINI": {"tsteps": 20, "n": 20},
    "SMALL": {"tsteps": 40, "n": 60},
    "MEDIUM": {"tsteps": 100, "n": 200},
    "LARGE": {"tsteps": 500, "n": 1000},
    "EXTRALARGE": {"tsteps": 1000, "n": 2000},
}


def init(tsteps: int, n: int) -> dict:
    """PolyBench's init_array: u[i][j] = (i + n - j)/n. v, p, q are written before being
    read (zeros here)."""
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    u = (i + n - j).astype(np.float64) / n
    return {"tsteps": tsteps, "n": n, "u": u, "v": np.zeros((n, n)), "p": np.zeros((n, n)), "q": np.zeros((n, n))}


def adi(tsteps, n, u, v, p, q):
    DX = 1.0 / n
    DY = 1.0 / n
    DT = 1.0 / tsteps
    B1 = 2.0
    B2 = 1.0
    mul1 = B1 * DT / (DX * DX)
    mul2 = B2 * DT / (DY * DY)

    a = -mul1 / 2.0
    b = 1.0 + mul1
    c = a
    d = -mul2 / 2.0
    e = 1.0 + mul2
    f = d

    for t in range(1, tsteps + 1):
        # Column Sweep
        for i in range(1, n - 1):
            v[0, i] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = v[0, i]
            for j in range(1, n - 1):
                p[i, j] = -c / (a * p[i, j - 1] + b)
                q[i, j] = (-d * u[j, i - 1] + (1.0 + 2.0 * d) * u[j, i] - f * u[j, i + 1] - a * q[i, j - 1]) / (a * p[i, j - 1] + b)
            v[n - 1, i] = 1.0
            for j in range(n - 2, 0, -1):
                v[j, i] = p[i, j] * v[j + 1, i] + q[i, j]
        # Row Sweep
        for i in range(1, n - 1):
            u[i, 0] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = u[i, 0]
            for j in range(1, n - 1):
                p[i, j] = -f / (d * p[i, j - 1] + e)
                q[i, j] = (-a * v[i - 1, j] + (1.0 + 2.0 * a) * v[i, j] - c * v[i + 1, j] - d * q[i, j - 1]) / (d * p[i, j - 1] + e)
            u[i, n - 1] = 1.0
            for j in range(n - 2, 0, -1):
                u[i, j] = p[i, j] * u[i, j + 1] + q[i, j]

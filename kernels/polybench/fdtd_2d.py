"""fdtd-2d: 2-D finite-difference time-domain update of the E (ex, ey) and H (hz) fields. PolyBench/C 4.2.1, stencils."""

import numpy as np

NAME = "fdtd-2d"
CATEGORY = "stencils"
SIZES = {
    "MINI": {"tmax": 20, "nx": 20, "ny": 30},
    "SMALL": {"tmax": 40, "nx": 60, "ny": 80},
    "MEDIUM": {"tmax": 100, "nx": 200, "ny": 240},
    "LARGE": {"tmax": 500, "nx": 1000, "ny": 1200},
    "EXTRALARGE": {"tmax": 1000, "nx": 2000, "ny": 2600},
}


def init(tmax: int, nx: int, ny: int) -> dict:
    """PolyBench's init_array: _fict_[t] = t, ex[i][j] = i*(j+1)/nx, ey[i][j] = i*(j+2)/ny,
    hz[i][j] = i*(j+3)/nx."""
    i = np.arange(nx)[:, None].astype(np.float64)
    j = np.arange(ny)[None, :]
    return {
        "tmax": tmax,
        "nx": nx,
        "ny": ny,
        "ex": i * (j + 1) / nx,
        "ey": i * (j + 2) / ny,
        "hz": i * (j + 3) / nx,
        "_fict_": np.arange(tmax).astype(np.float64),
    }


def fdtd_2d(tmax, nx, ny, ex, ey, hz, _fict_):
    for t in range(tmax):
        for j in range(ny):
            ey[0, j] = _fict_[t]
        for i in range(1, nx):
            for j in range(ny):
                ey[i, j] = ey[i, j] - 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in range(nx):
            for j in range(1, ny):
                ex[i, j] = ex[i, j] - 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in range(nx - 1):
            for j in range(ny - 1):
                hz[i, j] = hz[i, j] - 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])

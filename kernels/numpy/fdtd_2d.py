"""fdtd-2d: 2-D FDTD (Yee) update of the fields ex, ey, hz with a source row, in place. Modelled on PolyBench's fdtd-2d."""

import numpy as np

NAME = "fdtd-2d"
CATEGORY = "stencils"
SIZES = {
    "MINI": {"tmax": 20, "nx": 20, "ny": 30},
    "SMALL": {"tmax": 40, "nx": 60, "ny": 80},
    "MEDIUM": {"tmax": 100, "nx": 200, "ny": 240},
    "LARGE": {"tmax": 50, "nx": 1000, "ny": 1200},
    "EXTRALARGE": {"tmax": 100, "nx": 1400, "ny": 1700},
}


def init(tmax: int, nx: int, ny: int) -> dict:
    """Uniform random fields ex, ey, hz (nx, ny) and source values fict (tmax,)."""
    rng = np.random.default_rng(42)
    return {
        "ex": rng.random((nx, ny)),
        "ey": rng.random((nx, ny)),
        "hz": rng.random((nx, ny)),
        "fict": rng.random(tmax),
    }


def fdtd_2d(ex, ey, hz, fict):
    tmax = fict.shape[0]
    for t in range(tmax):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])

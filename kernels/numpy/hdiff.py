"""hdiff: fourth-order horizontal diffusion with flux limiters, into out_field. Modelled on the COSMO weather model's hdiff."""

import numpy as np

NAME = "hdiff"
CATEGORY = "weather"
SIZES = {
    "MINI": {"ni": 8, "nj": 10, "nk": 4},
    "SMALL": {"ni": 24, "nj": 24, "nk": 8},
    "MEDIUM": {"ni": 64, "nj": 64, "nk": 16},
    "LARGE": {"ni": 256, "nj": 256, "nk": 80},
    "EXTRALARGE": {"ni": 512, "nj": 512, "nk": 80},
}


def init(ni: int, nj: int, nk: int) -> dict:
    """Uniform random in_field with a halo of 2 in i and j (ni+4, nj+4, nk), coeff (ni, nj, nk) and out_field (ni, nj, nk)."""
    rng = np.random.default_rng(42)
    return {
        "in_field": rng.random((ni + 4, nj + 4, nk)),
        "out_field": rng.random((ni, nj, nk)),
        "coeff": rng.uniform(0.0, 0.1, (ni, nj, nk)),
    }


def hdiff(in_field, out_field, coeff):
    # The Laplacian on the interior plus a halo of 1: lap[a, b] is at in_field[a + 1, b + 1].
    lap = 4.0 * in_field[1:-1, 1:-1, :] - (
        in_field[2:, 1:-1, :] + in_field[:-2, 1:-1, :] + in_field[1:-1, 2:, :] + in_field[1:-1, :-2, :]
    )
    # Fluxes between neighbouring Laplacians; a flux running against the field's own gradient is cut to 0 (the limiter).
    flx = lap[1:, 1:-1, :] - lap[:-1, 1:-1, :]
    flx = np.where(flx * (in_field[2:-1, 2:-2, :] - in_field[1:-2, 2:-2, :]) > 0, 0.0, flx)
    fly = lap[1:-1, 1:, :] - lap[1:-1, :-1, :]
    fly = np.where(fly * (in_field[2:-2, 2:-1, :] - in_field[2:-2, 1:-2, :]) > 0, 0.0, fly)
    out_field[:] = in_field[2:-2, 2:-2, :] - coeff * (flx[1:, :, :] - flx[:-1, :, :] + fly[:, 1:, :] - fly[:, :-1, :])

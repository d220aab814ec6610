"""vadv: implicit vertical advection, a Thomas tridiagonal solve per column, into utens_stage. Modelled on COSMO's vadv."""

import numpy as np

NAME = "vadv"
CATEGORY = "weather"
SIZES = {
    "MINI": {"ni": 6, "nj": 8, "nz": 10},
    "SMALL": {"ni": 16, "nj": 16, "nz": 20},
    "MEDIUM": {"ni": 48, "nj": 48, "nz": 40},
    "LARGE": {"ni": 192, "nj": 192, "nz": 80},
    "EXTRALARGE": {"ni": 384, "nj": 384, "nz": 80},
}


def init(ni: int, nj: int, nz: int) -> dict:
    """Uniform random fields (ni, nj, nz), the vertical wind wcon with one more point in i (ni+1, nj, nz), dtr_stage 3/20."""
    rng = np.random.default_rng(42)
    return {
        "dtr_stage": 3.0 / 20.0,
        "utens_stage": rng.random((ni, nj, nz)),
        "u_stage": rng.random((ni, nj, nz)),
        "wcon": rng.random((ni + 1, nj, nz)),
        "u_pos": rng.random((ni, nj, nz)),
        "utens": rng.random((ni, nj, nz)),
    }


def vadv(dtr_stage, utens_stage, u_stage, wcon, u_pos, utens):
    # The Crank-Nicolson weights of the explicit and the implicit half of the advection are both 0.5.
    ni, nj, nz = utens_stage.shape
    ccol = np.empty((ni, nj, nz))
    dcol = np.empty((ni, nj, nz))

    # Bottom level k = 0: no lower neighbour.
    gcv = 0.25 * (wcon[1:, :, 1] + wcon[:-1, :, 1])
    ccol[:, :, 0] = 0.5 * gcv
    bcol = dtr_stage - ccol[:, :, 0]
    correction = -0.5 * gcv * (u_stage[:, :, 1] - u_stage[:, :, 0])
    dcol[:, :, 0] = dtr_stage * u_pos[:, :, 0] + utens[:, :, 0] + utens_stage[:, :, 0] + correction
    ccol[:, :, 0] = ccol[:, :, 0] / bcol
    dcol[:, :, 0] = dcol[:, :, 0] / bcol

    # Forward sweep: eliminate the lower diagonal level by level.
    for k in range(1, nz - 1):
        gav = -0.25 * (wcon[1:, :, k] + wcon[:-1, :, k])
        gcv = 0.25 * (wcon[1:, :, k + 1] + wcon[:-1, :, k + 1])
        acol = 0.5 * gav
        ccol[:, :, k] = 0.5 * gcv
        bcol = dtr_stage - acol - ccol[:, :, k]
        correction = -0.5 * gav * (u_stage[:, :, k - 1] - u_stage[:, :, k]) - 0.5 * gcv * (u_stage[:, :, k + 1] - u_stage[:, :, k])
        dcol[:, :, k] = dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k] + correction
        divided = 1.0 / (bcol - ccol[:, :, k - 1] * acol)
        ccol[:, :, k] = ccol[:, :, k] * divided
        dcol[:, :, k] = (dcol[:, :, k] - dcol[:, :, k - 1] * acol) * divided

    # Top level k = nz - 1: no upper neighbour.
    gav = -0.25 * (wcon[1:, :, nz - 1] + wcon[:-1, :, nz - 1])
    acol = 0.5 * gav
    bcol = dtr_stage - acol
    correction = -0.5 * gav * (u_stage[:, :, nz - 2] - u_stage[:, :, nz - 1])
    dcol[:, :, nz - 1] = dtr_stage * u_pos[:, :, nz - 1] + utens[:, :, nz - 1] + utens_stage[:, :, nz - 1] + correction
    dcol[:, :, nz - 1] = (dcol[:, :, nz - 1] - dcol[:, :, nz - 2] * acol) / (bcol - ccol[:, :, nz - 2] * acol)

    # Backward sweep: substitute from the top down; the tendency is the change of u over the stage.
    data_col = dcol[:, :, nz - 1].copy()
    utens_stage[:, :, nz - 1] = dtr_stage * (data_col - u_pos[:, :, nz - 1])
    for k in range(nz - 2, -1, -1):
        data_col = dcol[:, :, k] - ccol[:, :, k] * data_col
        utens_stage[:, :, k] = dtr_stage * (data_col - u_pos[:, :, k])

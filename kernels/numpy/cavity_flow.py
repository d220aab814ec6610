"""cavity-flow: pressure Poisson iterations of a lid-driven cavity, p in place. Modelled on Barba's CFD step 11."""

import numpy as np

NAME = "cavity-flow"
CATEGORY = "cfd"
SIZES = {
    "MINI": {"nit": 10, "nx": 16, "ny": 16},
    "SMALL": {"nit": 20, "nx": 41, "ny": 41},
    "MEDIUM": {"nit": 50, "nx": 101, "ny": 101},
    "LARGE": {"nit": 50, "nx": 801, "ny": 801},
    "EXTRALARGE": {"nit": 100, "nx": 1201, "ny": 1121},
}


def init(nit: int, nx: int, ny: int) -> dict:
    """A cavity of side 2 on a (ny, nx) grid, rho 1, dt 0.001, random velocities u, v and pressure p (ny, nx)."""
    rng = np.random.default_rng(42)
    return {
        "nit": nit,
        "rho": 1.0,
        "dt": 0.001,
        "dx": 2.0 / (nx - 1),
        "dy": 2.0 / (ny - 1),
        "u": rng.uniform(-1.0, 1.0, (ny, nx)),
        "v": rng.uniform(-1.0, 1.0, (ny, nx)),
        "p": rng.random((ny, nx)),
    }


def cavity_flow(nit, rho, dt, dx, dy, u, v, p):
    # The source term: rho * (divergence / dt - the squared velocity gradients), centred differences.
    b = np.zeros_like(p)
    dudx = (u[1:-1, 2:] - u[1:-1, :-2]) / (2.0 * dx)
    dudy = (u[2:, 1:-1] - u[:-2, 1:-1]) / (2.0 * dy)
    dvdx = (v[1:-1, 2:] - v[1:-1, :-2]) / (2.0 * dx)
    dvdy = (v[2:, 1:-1] - v[:-2, 1:-1]) / (2.0 * dy)
    b[1:-1, 1:-1] = rho * ((dudx + dvdy) / dt - dudx**2 - 2.0 * dudy * dvdx - dvdy**2)
    for it in range(nit):
        pn = p.copy()
        p[1:-1, 1:-1] = ((pn[1:-1, 2:] + pn[1:-1, :-2]) * dy**2 + (pn[2:, 1:-1] + pn[:-2, 1:-1]) * dx**2) / (
            2.0 * (dx**2 + dy**2)
        ) - dx**2 * dy**2 / (2.0 * (dx**2 + dy**2)) * b[1:-1, 1:-1]
        # dp/dx = 0 at the side walls, dp/dy = 0 at the bottom, p = 0 under the moving lid.
        p[:, -1] = p[:, -2]
        p[0, :] = p[1, :]
        p[:, 0] = p[:, 1]
        p[-1, :] = 0.0

"""arc-distance: great-circle distances of n point pairs on the unit sphere (haversine). Modelled on Pythran's arc_distance."""

import numpy as np

NAME = "arc-distance"
CATEGORY = "geometry"
SIZES = {
    "MINI": {"n": 100},
    "SMALL": {"n": 1000},
    "MEDIUM": {"n": 100000},
    "LARGE": {"n": 4000000},
    "EXTRALARGE": {"n": 16000000},
}


def init(n: int) -> dict:
    """Random latitudes theta in (-pi/2, pi/2) and longitudes phi in (-pi, pi) for the two ends of n pairs."""
    rng = np.random.default_rng(42)
    return {
        "theta_1": rng.uniform(-np.pi / 2, np.pi / 2, n),
        "phi_1": rng.uniform(-np.pi, np.pi, n),
        "theta_2": rng.uniform(-np.pi / 2, np.pi / 2, n),
        "phi_2": rng.uniform(-np.pi, np.pi, n),
    }


def arc_distance(theta_1, phi_1, theta_2, phi_2):
    h = np.sin((theta_2 - theta_1) / 2.0) ** 2 + np.cos(theta_1) * np.cos(theta_2) * np.sin((phi_2 - phi_1) / 2.0) ** 2
    # arctan2 of the two legs, not arcsin of one, stays accurate for antipodal points (h close to 1).
    return 2.0 * np.arctan2(np.sqrt(h), np.sqrt(1.0 - h))

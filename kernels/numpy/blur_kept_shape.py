"""blur-kept-shape: a five-point blur whose loops read the image's shape from a name kept for it (`sx = img.shape`)."""

import numpy as np

NAME = "blur-kept-shape"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"h": 12, "w": 16},
    "SMALL": {"h": 60, "w": 80},
    "MEDIUM": {"h": 400, "w": 600},
    "LARGE": {"h": 2000, "w": 3000},
    "EXTRALARGE": {"h": 4000, "w": 6000},
}


def init(h: int, w: int) -> dict:
    """Uniform random float64 image (h, w)."""
    rng = np.random.default_rng(42)
    return {"img": rng.random((h, w))}


def blur_kept_shape(img):
    sx = img.shape
    out = np.zeros_like(img)
    for i in range(1, sx[0] - 1):
        for j in range(1, sx[1] - 1):
            out[i, j] = 0.2 * (img[i, j] + img[i - 1, j] + img[i + 1, j] + img[i, j - 1] + img[i, j + 1])
    return out

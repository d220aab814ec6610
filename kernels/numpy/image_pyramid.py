"""image-pyramid: one level of an image pyramid: each 2x2 block averaged, the blocks read with strided slices."""

import numpy as np

NAME = "image-pyramid"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"h": 8, "w": 12},
    "SMALL": {"h": 128, "w": 128},
    "MEDIUM": {"h": 1024, "w": 1024},
    "LARGE": {"h": 4096, "w": 4096},
    "EXTRALARGE": {"h": 8192, "w": 8192},
}


def init(h: int, w: int) -> dict:
    """Uniform random float32 image with even sides."""
    rng = np.random.default_rng(42)
    return {"img": rng.random((h, w)).astype(np.float32)}


def image_pyramid(img):
    return 0.25 * (img[0::2, 0::2] + img[1::2, 0::2] + img[0::2, 1::2] + img[1::2, 1::2])

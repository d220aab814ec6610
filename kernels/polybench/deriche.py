"""deriche: Deriche recursive edge-detection filter on a 2-D image (horizontal then vertical passes). PolyBench/C 4.2.1, medley."""

import math

import numpy as np

NAME = "deriche"
CATEGORY = "medley"
SIZES = {
    "MINI": {"w": 64, "h": 64},
    "SMALL": {"w": 192, "h": 128},
    "MEDIUM": {"w": 720, "h": 480},
    "LARGE": {"w": 4096, "h": 2160},
    "EXTRALARGE": {"w": 7680, "h": 4320},
}


def init(w: int, h: int) -> dict:
    """PolyBench's init_array (float32): alpha = 0.25, imgIn[i][j] = ((313*i + 991*j) % 65536)
    / 65535.0f. imgOut, y1, y2 are written before being read (zeros here)."""
    i = np.arange(w)[:, None]
    j = np.arange(h)[None, :]
    imgIn = ((313 * i + 991 * j) % 65536).astype(np.float32) / np.float32(65535.0)
    return {
        "w": w,
        "h": h,
        "alpha": 0.25,
        "imgIn": imgIn,
        "imgOut": np.zeros((w, h), dtype=np.float32),
        "y1": np.zeros((w, h), dtype=np.float32),
        "y2": np.zeros((w, h), dtype=np.float32),
    }


def deriche(w, h, alpha, imgIn, imgOut, y1, y2):
    k = (1.0 - math.exp(-alpha)) * (1.0 - math.exp(-alpha)) / (1.0 + 2.0 * alpha * math.exp(-alpha) - math.exp(2.0 * alpha))
    a1 = k
    a5 = k
    a2 = k * math.exp(-alpha) * (alpha - 1.0)
    a6 = k * math.exp(-alpha) * (alpha - 1.0)
    a3 = k * math.exp(-alpha) * (alpha + 1.0)
    a7 = k * math.exp(-alpha) * (alpha + 1.0)
    a4 = -k * math.exp(-2.0 * alpha)
    a8 = -k * math.exp(-2.0 * alpha)
    b1 = math.pow(2.0, -alpha)
    b2 = -math.exp(-2.0 * alpha)
    c1 = 1.0
    c2 = 1.0

    for i in range(w):
        ym1 = 0.0
        ym2 = 0.0
        xm1 = 0.0
        for j in range(h):
            y1[i, j] = a1 * imgIn[i, j] + a2 * xm1 + b1 * ym1 + b2 * ym2
            xm1 = imgIn[i, j]
            ym2 = ym1
            ym1 = y1[i, j]

    for i in range(w):
        yp1 = 0.0
        yp2 = 0.0
        xp1 = 0.0
        xp2 = 0.0
        for j in range(h - 1, -1, -1):
            y2[i, j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2
            xp2 = xp1
            xp1 = imgIn[i, j]
            yp2 = yp1
            yp1 = y2[i, j]

    for i in range(w):
        for j in range(h):
            imgOut[i, j] = c1 * (y1[i, j] + y2[i, j])

    for j in range(h):
        tm1 = 0.0
        ym1 = 0.0
        ym2 = 0.0
        for i in range(w):
            y1[i, j] = a5 * imgOut[i, j] + a6 * tm1 + b1 * ym1 + b2 * ym2
            tm1 = imgOut[i, j]
            ym2 = ym1
            ym1 = y1[i, j]

    for j in range(h):
        tp1 = 0.0
        tp2 = 0.0
        yp1 = 0.0
        yp2 = 0.0
        for i in range(w - 1, -1, -1):
            y2[i, j] = a7 * tp1 + a8 * tp2 + b1 * yp1 + b2 * yp2
            tp2 = tp1
            tp1 = imgOut[i, j]
            yp2 = yp1
            yp1 = y2[i, j]

    for i in range(w):
        for j in range(h):
            imgOut[i, j] = c2 * (y1[i, j] + y2[i, j])

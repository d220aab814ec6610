"""Where timed inputs live in memory: page-aligned copies, the same layout for every contender.

Timing depends on where arrays sit: with NumPy's own placement (16-byte aligned, wherever
the heap has room) one doitgen build took 0.8 ms in one process and 1.9-2.9 ms in another.
PolyBench aligns its arrays to pages; so do we, staggered so that equal-sized arrays do not
alias in the caches.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

PAGE = 4096
STAGGER = 256  # bytes between the arrays' offsets in their pages: cache-line aligned, never 4K-aliased


def fresh_copy(values: Mapping[str, object]) -> dict[str, object]:
    """Fresh copies of the inputs, each array page-aligned and staggered by its place in the argument list."""
    copies: dict[str, object] = {}
    for index, (name, value) in enumerate(values.items()):
        if isinstance(value, np.ndarray):
            copies[name] = value.copy() if value.dtype.hasobject else _aligned_copy(value, index * STAGGER % PAGE)
        else:
            copies[name] = value
    return copies


def _aligned_copy(array: np.ndarray, offset: int) -> np.ndarray:
    """A C-ordered copy of `array` that starts `offset` bytes into a page."""
    buffer = np.empty(array.nbytes + 2 * PAGE, dtype=np.uint8)
    start = (-buffer.ctypes.data) % PAGE + offset
    copy = buffer[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy

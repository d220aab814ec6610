"""A kernel's temporaries, kept from one call to the next.

NumPy allocates every temporary afresh and frees it after the call; so did a built kernel. On
this VM fresh memory is slow: when the allocator has returned the pages to the system (glibc
trims the top of its heap once enough is free), each page of a new array faults on its first
write. covariance at MEDIUM allocates 1.4 MB of temporaries; raced against NumPy, its
`blas(S5)` build ran 0.88 ms a call with fresh temporaries and 0.38 ms with kept ones.

A temporary is written before it is read in every call (the model allocates it uninitialized),
so a kept one's old contents are as good as `np.empty`'s. Each calling thread has its own set,
so concurrent calls never share one. The results a kernel returns are never kept: the caller
owns them. The cost is memory: a kernel keeps its largest call's temporaries while it lives.
"""

from __future__ import annotations

import threading

import numpy as np


class KeptTemporaries:
    """`array(name, extents, dtype)`: this thread's buffer for the temporary, reallocated when its shape changes."""

    def __init__(self) -> None:
        self._threads = threading.local()

    def array(self, name: str, extents: tuple[int, ...], dtype: np.dtype | str) -> np.ndarray:
        kept = self._threads.__dict__
        array = kept.get(name)
        if array is None or array.shape != extents or array.dtype != dtype:
            array = kept[name] = np.empty(extents, dtype=dtype)
        return array

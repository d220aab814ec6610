"""The measuring process keeps the heap memory it frees, so that no contender's time depends on where
the heap stood when it was called.

glibc returns freed memory at the top of its heap to the system once more than `M_TRIM_THRESHOLD`
is free there (128 KiB, raised with the dynamic mmap threshold up to 64 MiB), and a call that needs it
again faults every page back in. A NumPy program that makes fresh temporaries on each call pays for
that or not depending on what the previous call left at the top of the heap: NumPy's attention at
MEDIUM ran 2.9 ms a call in a process of its own and 1.9 ms with trimming off, and in races it measured
anywhere between 2.1 ms and 6.9 ms depending on the contender called before it, while the engine's
build (whose temporaries are kept between calls) held at 1.8 ms. With trimming off, and the mmap
threshold fixed at its ceiling so that arrays up to 32 MiB come from the reused heap, every
contender runs at its steady state: the NumPy original at its fastest, never handicapped by the race.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024  # glibc's ceiling on 64-bit systems
NEVER_TRIM = 2**31 - 1  # mallopt takes an int: 2 GiB free at the top before any is given back


def keep_freed_heap() -> bool:
    """Turn off heap trimming and fix the mmap threshold in this process (glibc's `mallopt`). False
    where the C library has no `mallopt` (not glibc): the process then runs with its defaults."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    mallopt = getattr(ctypes.CDLL(name), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    trimmed = mallopt(M_TRIM_THRESHOLD, NEVER_TRIM)
    mapped = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)
    return bool(trimmed and mapped)

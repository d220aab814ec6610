"""The measurement lock: two timed runs never overlap, across threads and processes."""

from __future__ import annotations

import fcntl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from repoos_agent.backends.cc import cache_dir

_THREADS = threading.Lock()


def _lock_path() -> Path:
    return cache_dir() / ".measurement.lock"


@contextmanager
def measurement_lock() -> Iterator[None]:
    """Held around every timed execution: a thread lock in this process, a file lock between processes."""
    with _THREADS, open(_lock_path(), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)

"""The measurement lock: two timed runs never overlap, nor a timed run and a build, across threads and processes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from repoos_agent.backends.cc import cores_alone

_THREADS = threading.Lock()


@contextmanager
def measurement_lock() -> Iterator[None]:
    """Held around every timed execution: a thread lock in this process, a file lock between processes,
    taken alone, so no other timed run and no compiler (`backends.cc.engine_work`) runs beside it."""
    with _THREADS, cores_alone():
        yield

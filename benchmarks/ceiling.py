"""What the two ceiling benchmarks share (`attention_ceiling.py`, `product_ceiling.py`): a process set up as the
race's measuring worker, the schedule's build checked against NumPy before any time counts, and the table rows
of contenders against the NumPy original."""

from __future__ import annotations

import copy
import os
import sys

import numpy as np

from repoos_agent.backends.library import WAIT_POLICY, NativeKernel, prefer_sleeping_threads
from repoos_agent.evaluate import proved_build
from repoos_agent.measure import Timing, measurement_lock
from repoos_agent.measure.cores import probe_machine
from repoos_agent.measure.heap import keep_freed_heap
from repoos_agent.model.kernel import named_results
from repoos_agent.model.signature import Signature
from repoos_agent.target import Target

NUMPY = "NumPy original"


def as_measuring_worker() -> None:
    """Run as the race's worker does: idle threads of both OpenBLAS pools, NumPy's and the one `blas` links, sleep
    (`backends.library.WAIT_POLICY`), and freed heap memory is kept (`measure.heap`), so NumPy runs at its steady
    state. The wait policy must be in the environment before NumPy's OpenBLAS loads, which it does on the engine's
    import: the script starts again with it unless it was there from the start."""
    if any(name not in os.environ for name in WAIT_POLICY):
        prefer_sleeping_threads()
        os.execv(sys.executable, [sys.executable, *sys.argv])
    keep_freed_heap()


def checked_build(target: Target, values: dict, schedule: str) -> NativeKernel:
    """The schedule's build, its team the cores a race would find free, once every output matches the original's.

    The team is probed before NumPy's first call here: right after a product, NumPy's pool still holds a core."""
    ours = proved_build(target, Signature.of_values(target.kernel, values), schedule)
    with measurement_lock():  # the cores free beside no timed run of ours: the team a race would size
        ours.set_team(probe_machine().team)
    want, got = copy.deepcopy(values), copy.deepcopy(values)
    want.update(named_results(target.kernel.returns, target.kernel.returns_tuple, target.function(**want)))
    ours(got)
    for name in target.kernel.outputs:
        scale = float(np.max(np.abs(want[name]))) or 1.0
        error = float(np.max(np.abs(np.asarray(got[name]) - want[name]))) / scale
        if error > 1e-9:
            raise SystemExit(f"{target.label}: `{name}` differs from NumPy's (max relative error {error:.2e})")
    return ours


def rows_against_numpy(label: str, timings: dict[str, Timing]) -> list[str]:
    """One table row per contender: its median, half its interquartile spread, and NumPy's median over its own."""
    numpy_s = timings[NUMPY].median_s
    return [
        f"| {label} | {name} | {t.median_s * 1e3:.2f} ms ±{t.spread / 2:.1%} | {numpy_s / t.median_s:.3f}x |"
        for name, t in timings.items()
    ]

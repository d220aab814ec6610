"""How much of the machine is free: the load, and a short calibrated probe of what our threads get.

A parallel kernel whose team has more threads than there are free cores does not merely
lose its speedup: every barrier waits for a thread the scheduler has parked behind another
process, for a whole quantum. On two cores with one taken, jacobi-2d's wavefront ran 4x
slower than its serial schedule. So every race sizes the thread team to the cores it can
actually have, and a swapped kernel does the same at each call.

Two signals, each for where it is cheap enough:
- the probe (before and after a race): one spinning thread per usable core for a few
  milliseconds, each reporting the share of its wall time it was on a CPU (its thread CPU
  time over the wall time: self-calibrating, and true inside a container whose /proc shows
  the host);
- the run queue (at each call of a swapped kernel, a few microseconds): the runnable tasks
  of /proc/loadavg other than the caller's own threads.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
from dataclasses import dataclass
from functools import cache

from repoos_agent.backends.cc import build_shared_library
from repoos_agent.codegen import CSource
from repoos_agent.errors import CompileError

PROBE_S = 0.012
"""Long enough to span a few scheduler slices on a shared core (a 2-core Linux slices at 3-6 ms)."""

PROBE_TRIES = 3
"""Probes before a short reading counts: another process on a core holds it through every one of them,
while the host's own hiccup passes. In a NumPy eval on a 2-core VM, 133 of 594 timed evaluations ran on one
thread, 107 of them with no other task runnable (1.00 to 1.33 of 2 cores free), and for most of them the probe
at their end read 2.00 free again; the NumPy original they raced ran on both cores all along."""

TEAM_MARGIN = 0.35
"""A core counts as free when the probe got at least 65% of it: one other CPU-bound process
leaves a shared core at about 50%, background noise (an editor, a daemon) takes a few percent."""

_PROBE_C = r"""
#include <pthread.h>
#include <time.h>

typedef struct { double seconds; double share; } rp_probe;

static double rp_clock(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *rp_spin(void *argument)
{
    rp_probe *probe = argument;
    double start = rp_clock(CLOCK_MONOTONIC), cpu = rp_clock(CLOCK_THREAD_CPUTIME_ID), wall;
    volatile unsigned long work = 0;
    do {
        for (int i = 0; i < 4096; i++)
            work += i;
        wall = rp_clock(CLOCK_MONOTONIC) - start;
    } while (wall < probe->seconds);
    probe->share = (rp_clock(CLOCK_THREAD_CPUTIME_ID) - cpu) / wall;
    return 0;
}

double repoos_free_cores(int threads, double seconds)
{
    pthread_t ids[256];
    rp_probe probes[256];
    if (threads < 1) threads = 1;
    if (threads > 256) threads = 256;
    int started = 1;
    for (int t = 0; t < threads; t++)
        probes[t] = (rp_probe){seconds, 0.0};
    for (int t = 1; t < threads; t++, started++)
        if (pthread_create(&ids[t], 0, rp_spin, &probes[t]) != 0)
            break;
    rp_spin(&probes[0]);
    double free = 0.0;
    for (int t = 0; t < started; t++) {
        if (t > 0)
            pthread_join(ids[t], 0);
        free += probes[t].share > 1.0 ? 1.0 : probes[t].share;
    }
    return free;
}
"""


@dataclass(frozen=True)
class MachineState:
    """What a timed run could have of the machine at one moment.

    `free_cores` is the probe's sum of CPU shares (2.0 on an idle two-core machine, about 1.5
    with one CPU-bound process beside it); `others` the runnable tasks that were not ours."""

    cores: int
    free_cores: float
    others: int
    load1: float

    @property
    def team(self) -> int:
        """Threads a parallel kernel should use now: one per core the probe found free, at least one."""
        return max(1, min(self.cores, math.floor(self.free_cores + TEAM_MARGIN)))

    @property
    def busy(self) -> bool:
        """Another process holds at least one of our cores."""
        return self.team < self.cores

    def describe(self) -> str:
        return f"{self.free_cores:.2f} of {self.cores} cores free, {self.others} other runnable, load {self.load1:.2f}"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, which a container or `taskset` narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@cache
def _loadavg() -> int | None:
    """/proc/loadavg, opened once: a `pread` of an open file costs 2 µs, opening it again 30."""
    try:
        return os.open("/proc/loadavg", os.O_RDONLY)
    except OSError:
        return None


def runnable_others() -> int | None:
    """Runnable tasks on the machine other than the caller's own process, from /proc/loadavg (None where
    there is none).

    The smaller of two reads: a kernel thread that woke for a microsecond is not a busy core. Our own
    threads do not count: a kernel's OpenMP team spins for a while after its call returns, and read as
    another task it marked 60 of 62 timed runs of gemm at MEDIUM as crowded on a quiet machine (every
    parallel race then "unsettled"), and sized 175 of 200 back-to-back calls of a swapped parallel gemm to
    one thread (26 since: the host's own tasks)."""
    handle = _loadavg()
    if handle is None:
        return None
    counts = []
    for _ in range(2):
        try:
            field = os.pread(handle, 128, 0).split()[3]
        except (OSError, IndexError):
            return None
        counts.append(int(field.split(b"/")[0]) - 1)
    others = min(counts)
    # Our own threads are looked at only when the load shows someone: the quiet case stays two preads.
    return max(0, others - _own_runnable_threads()) if others > 0 else 0


def _own_runnable_threads() -> int:
    """This process's runnable threads besides the caller's, from /proc/self/task (0 where there is none)."""
    caller = str(threading.get_native_id())
    running = 0
    try:
        tasks = [task for task in os.scandir("/proc/self/task") if task.name != caller]
    except OSError:
        return 0
    for task in tasks:
        try:
            with open(os.path.join(task.path, "stat"), "rb") as stat:
                text = stat.read()
        except OSError:
            continue  # the thread ended since the listing
        if text[text.rindex(b")") + 2 : text.rindex(b")") + 3] == b"R":
            running += 1
    return running


def call_team(cores: int) -> int:
    """The team for one call of a swapped kernel: a thread per core no other runnable task wants."""
    others = runnable_others()
    if others is None:
        return cores
    return max(1, cores - others)


@cache
def _probe_function():
    """The probe, built once per machine and compiler like any kernel (cached on disk); None without a compiler."""
    source = CSource(_PROBE_C, (), (), (), (), "the machine probe")
    try:
        library = ctypes.CDLL(str(build_shared_library(source)))
    except (CompileError, OSError):
        return None
    probe = library.repoos_free_cores
    probe.restype = ctypes.c_double
    probe.argtypes = [ctypes.c_int, ctypes.c_double]
    return probe


def prepare_probe() -> None:
    """Build the probe now, outside any measurement lock (a build waits for timed runs to end)."""
    _probe_function()


def probe_machine(seconds: float = PROBE_S) -> MachineState:
    """The machine's state now. Call it under the measurement lock, as a timed run: then none of our
    own builds or timed runs is beside it, and what it finds taken is taken by someone else. A reading
    short of a core is taken again, up to `PROBE_TRIES` probes, and the freest counts."""
    cores = usable_cores()
    others = runnable_others()
    probe = _probe_function()
    free = float(cores) if probe is None else float(probe(cores, seconds))
    for _ in range(PROBE_TRIES - 1):
        if probe is None or free >= cores - TEAM_MARGIN:
            break
        free = max(free, float(probe(cores, seconds)))
    try:
        load1 = os.getloadavg()[0]
    except OSError:
        load1 = 0.0
    return MachineState(cores, free, others or 0, round(load1, 2))

"""Calling a built kernel on the caller's NumPy buffers, through ctypes, without copies."""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from pathlib import Path

import numpy as np

from repoos_agent.backends.temporaries import KeptTemporaries
from repoos_agent.codegen import CSource
from repoos_agent.codegen.c import COUNTER, ENTRY
from repoos_agent.codegen.mlir import MLIR_ENTRY
from repoos_agent.errors import ArgumentSpecError, KernelRuntimeError
from repoos_agent.model.signature import Signature
from repoos_agent.openblas_core import openblas_core

_LOADED: dict[Path, ctypes.CDLL] = {}
_LOAD_LOCK = threading.Lock()

_CTYPES = {"int64_t": ctypes.c_int64, "double": ctypes.c_double}

WAIT_POLICY = {"OMP_WAIT_POLICY": "passive", "GOMP_SPINCOUNT": "200000", "OPENBLAS_THREAD_TIMEOUT": "4"}
"""How idle threads wait, unless the user set it: OpenMP's (libgomp for C builds, libomp for MLIR
builds) and OpenBLAS's pthreads pools (Debian's, which `blas` schedules link, and NumPy's own in the
measurement worker). Every one of these runtimes reads it once, when it loads.

Passive OpenMP threads sleep at a barrier instead of spinning, so a thread that waits for a
descheduled teammate costs its core nothing; libgomp's threads first spin for a bounded count
(`GOMP_SPINCOUNT`, about 0.1 ms here), then sleep. Measured in `benchmarks/wait_policy.py`, two
threads against the kernel's serial schedule:
- On the 2026-12-01 host (jacobi-2d, gemm and gramschmidt at LARGE, one core taken by another
  process): libgomp passive kept 1.07x (geomean), its default spin 0.62x, a short spin 0.68x, libomp
  0.80x (default) and 0.98x (passive); quiet, passive cost nothing against the default (1.61x
  against 1.58x).
- On the 2026-12-03 host (a VM whose futex wake-ups are slow), on jacobi-2d at MEDIUM (200 parallel
  regions of about 30 us a call) and gramschmidt at LARGE: quiet, passive with no spin fell to 0.25x,
  passive after a 200,000 spin ran 1.58x and the default 1.62x; with a core taken and the team kept
  at two, 0.66x, 0.45x and 0.24x (`wait_policy_spin.md`). Races and swapped calls size their team to
  the free cores, so a team of two on a taken core is only a call that a competitor interrupts; the
  quiet machine is the common case, and the bounded spin keeps both.

An idle OpenBLAS thread spins (yielding) for 2^timeout cycles before it sleeps: 2^28 by default,
about 0.1 s. Two pools called in turn, NumPy's and a kernel's (or a peer's), then spin against each
other's work: NumPy's 2mm at MEDIUM timed 10.45 ms when raced against Numba (whose `@` runs SciPy's
OpenBLAS) and 1.46 ms with the timeout at its minimum, 2^4 cycles; gemm's `blas(S1)` against NumPy
swung between 0.81x and 1.25x across races, and held at 1.10-1.18x. NumPy alone ran as fast with it
as without (gemm, 2mm, 3mm, mlp and attention at MEDIUM: within the run-to-run noise)."""


def prefer_sleeping_threads() -> None:
    """Put `WAIT_POLICY` in the environment (where the user has not set it) before a runtime that
    reads it loads: a kernel library here, or a measurement worker's NumPy."""
    for name, value in WAIT_POLICY.items():
        os.environ.setdefault(name, value)


def load_library(path: Path, calls_blas: bool = False) -> ctypes.CDLL:
    """Each library is loaded once per process, after the OpenMP wait policy (and, for one that calls
    OpenBLAS, its kernel choice) is in the environment."""
    with _LOAD_LOCK:
        if path not in _LOADED:
            prefer_sleeping_threads()
            core = openblas_core() if calls_blas else None
            if core is not None:
                os.environ.setdefault("OPENBLAS_CORETYPE", core)
            _LOADED[path] = ctypes.CDLL(str(path))
        return _LOADED[path]


class NativeKernel:
    """A built kernel: call it with the same arguments as the Python function."""

    def __init__(self, signature: Signature, source: CSource, library: Path) -> None:
        self.signature = signature
        self.source = source
        self.library = library
        handle = load_library(library, calls_blas=bool(source.libraries) or "cblas_" in source.text)
        self._entry = getattr(handle, ENTRY)
        self._entry.restype = ctypes.c_int
        self._entry.argtypes = [ctypes.c_void_p if a.role == "array" else _CTYPES[a.c_type] for a in source.arguments]
        self._counter = getattr(handle, COUNTER)
        self._counter.restype = ctypes.c_int64
        self._counter.argtypes = [ctypes.c_int64] * (len(source.sizes) + len(source.shape_sizes))
        self._messages = {check.code: check for check in source.checks}
        self._dtypes = dict(signature.arrays)
        self._dtype_objects = {name: np.dtype(dtype) for name, dtype in self._dtypes.items()}
        self.temporaries = KeptTemporaries()
        # Every C build links libgomp, parallel loops or not; only a build with a parallel region (or an MLIR
        # build, which links libomp only when it has one, or a BLAS call, which takes OpenMP's team size)
        # has a team worth sizing at each call.
        regions = any(mark in source.text for mark in ("#pragma omp parallel", MLIR_ENTRY, "openblas_set_num_threads"))
        self._team_setter = openmp_team_setter(handle) if regions else None

    @property
    def parallel(self) -> bool:
        """Whether the library runs OpenMP regions (its team size can be set)."""
        return self._team_setter is not None

    def set_team(self, threads: int) -> None:
        """Run the calling thread's next parallel regions on `threads` threads (OpenMP's nthreads-var,
        per calling thread); a library without OpenMP ignores it."""
        if self._team_setter is not None:
            self._team_setter(max(1, int(threads)))

    def __call__(self, values: MutableMapping[str, object]) -> None:
        """Run in place on `values` (the Python function's arguments by name). The arrays the kernel
        allocates (its results and temporaries) are added to `values` under their names."""
        self.allocate(values)
        args: list[object] = []
        for argument in self.source.arguments:
            value = values[argument.name]
            if argument.role == "array":
                args.append(self._buffer(argument.name, value))
            elif argument.role == "dim":
                args.append(value.shape[argument.dim])
            else:
                args.append(value)
        code = self._entry(*args)
        if code != 0:
            raise KernelRuntimeError(f"`{self.source.name}` refused the call: {self.refusal(code, values)}")

    def allocate(self, values: MutableMapping[str, object]) -> None:
        """Add the kernel's allocations to `values`, sized by the call's sizes, unless they are there."""
        if not self.source.allocations:
            return
        sizes = self.source.parameter_values(values)
        for allocation in self.source.allocations:
            if allocation.name not in values:
                values[allocation.name] = self.allocation(allocation.name, allocation.role, allocation.extents(sizes))

    def allocation(self, name: str, role: str, extents: tuple[int, ...]) -> np.ndarray:
        """A new array for a result (the caller keeps it), this thread's kept one for a temporary."""
        dtype = self._dtype_objects[name]
        if role == "temporary":
            return self.temporaries.array(name, extents, dtype)
        return np.empty(extents, dtype=dtype)

    def run_prepared(self, args: Sequence[object]) -> int:
        """Call with C arguments already in order (pointers as integers); returns the kernel's code.

        The runtime's fast path: it has checked the buffers itself, so nothing is checked twice."""
        return self._entry(*args)

    def refusal(self, code: int, values: Mapping[str, object]) -> str:
        """Why the kernel returned `code`: its shape checks run before any write."""
        check = self._messages.get(code)
        if check is None:
            return f"error code {code}"
        if check.dim < 0:
            return check.message
        if check.index_array:
            data = np.asarray(values[check.index_array])
            worst = data.min() if check.smallest else data.max()
            shape = values[check.array].shape  # type: ignore[attr-defined]
            return f"{check.message}: index array `{check.index_array}` holds {worst}, and `{check.array}` has shape {shape}"
        return f"{check.message}, but its shape is {values[check.array].shape}"

    def _buffer(self, name: str, value: object) -> int:
        """The array's address, once it is what the build takes. Timed races call kernels through here, so
        it costs what a swapped call's guards do: `dtype.name` (4 µs) and `ctypes.data` (2 µs) per array
        added 30 µs to a call of bicg at MEDIUM (75 µs in C), against the NumPy original's none."""
        if not isinstance(value, np.ndarray):
            raise ArgumentSpecError(f"argument `{name}` must be a NumPy array")
        if value.dtype != self._dtype_objects[name]:
            raise ArgumentSpecError(f"argument `{name}` is {value.dtype.name}; this build takes {self._dtypes[name]}")
        flags = value.flags
        if not flags.c_contiguous:
            raise ArgumentSpecError(f"argument `{name}` is not C-contiguous")
        if flags.writeable and value.nbytes:
            return ctypes.addressof(ctypes.c_char.from_buffer(value))
        return value.ctypes.data

    def instances(self, values: Mapping[str, object]) -> int:
        """How many statement instances a call with these sizes executes (no arrays touched)."""
        args = [int(values[p]) for p in self.source.sizes]
        args += [int(values[array].shape[dim]) for array, dim in self.source.shape_sizes]
        return int(self._counter(*args))


def openmp_team_setter(handle: ctypes.CDLL) -> Callable[[int], None] | None:
    """`omp_set_num_threads` of the OpenMP runtime this library links (libgomp for C builds, libomp for
    MLIR builds, or a NumPy peer's extension): looked up through the library's own handle, so each build sets
    the runtime it links; None when it links none."""
    try:
        setter = handle.omp_set_num_threads
    except AttributeError:
        return None
    setter.restype = None
    setter.argtypes = [ctypes.c_int]
    return setter

"""The C backend: generated C to a cached shared library with the system compiler."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from repoos_agent.errors import CompileError

if TYPE_CHECKING:
    from repoos_agent.codegen import CSource

DEFAULT_FLAGS = ("-O3", "-march=native", "-ffp-contract=off", "-fopenmp", "-fPIC", "-shared")
"""`-ffp-contract=off` keeps a*b+c as two roundings, as Python computes it, so
native results match the original exactly rather than within FMA rounding."""


@dataclass(frozen=True)
class Toolchain:
    """A C compiler, its exact version, and the flags every build uses."""

    command: str
    version: str
    flags: tuple[str, ...] = DEFAULT_FLAGS
    timeout_s: float | None = None  # a compile that runs longer is a CompileError (e.g. Polly on a large nest)
    links: tuple[str, ...] = ()  # libraries every build links, after the source


VECTOR_MATH_FLAGS = ("-fno-math-errno", "-DRP_VECTOR_MATH")
"""Loops that call `exp`, `tanh`, `sin`, ... vectorize through glibc's libmvec (the generated
code declares the vector variants under `RP_VECTOR_MATH`, see `codegen.c`). `-fno-math-errno`
lets gcc treat the calls as pure, which vectorizing needs; nothing we generate reads `errno`.
libmvec's variants are within 4 ulp, far inside the comparison's tolerances. Measured on a
float32 `exp(x - m)` over 4M elements: 22.8 ms scalar, 5.0 ms vectorized (NumPy: 10.8 ms)."""

_VECTOR_MATH_PROBE = """\
#include <math.h>
#pragma omp declare simd notinbranch
double exp(double);
void rp_probe(long n, double *restrict x) { for (long i = 0; i < n; i++) x[i] = exp(x[i]); }
"""


@cache
def default_toolchain() -> Toolchain:
    """`$CC` if set, else `cc`; missing compilers are a `CompileError`, not a traceback."""
    command = os.environ.get("CC", "cc")
    path = shutil.which(command)
    if path is None:
        raise CompileError(f"C compiler `{command}` not found on PATH (install gcc, or set CC)")
    probe = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    version = probe.stdout.splitlines()[0] if probe.stdout else "unknown"
    if vector_math_links(path):
        return Toolchain(command=path, version=version, flags=DEFAULT_FLAGS + VECTOR_MATH_FLAGS, links=("-lmvec",))
    return Toolchain(command=path, version=version)


def vector_math_links(compiler: str) -> bool:
    """Whether `compiler` builds and links a loop of `exp` against libmvec here (glibc on x86-64 has it;
    elsewhere the calls stay scalar)."""
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / "probe.c"
        source.write_text(_VECTOR_MATH_PROBE)
        library = Path(directory) / "probe.so"
        try:
            result = subprocess.run(
                [compiler, *DEFAULT_FLAGS, *VECTOR_MATH_FLAGS, "-o", str(library), str(source), "-lmvec", "-lm"],
                capture_output=True,
                check=False,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        return result.returncode == 0


def cache_dir() -> Path:
    """Where built kernels live: `$REPOOS_CACHE_DIR`, else `~/.cache/repoos/kernels`."""
    root = os.environ.get("REPOOS_CACHE_DIR")
    path = Path(root) if root else Path.home() / ".cache" / "repoos" / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def cores_lock_path() -> Path:
    """The file whose lock shares the cores: a timed run holds it alone (`measure.lock.measurement_lock`),
    the engine's own work (compilers, proofs) holds it together (`engine_work`)."""
    return cache_dir() / ".measurement.lock"


_HOLDER = threading.local()
"""Whether this thread holds the cores alone (`cores_alone`)."""


@contextmanager
def cores_alone() -> Iterator[None]:
    """The cores' lock taken alone, as a timed run takes it (`measure.lock.measurement_lock`, which
    also keeps this process's threads in turn)."""
    with open(cores_lock_path(), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _HOLDER.alone = True
        try:
            yield
        finally:
            _HOLDER.alone = False
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def engine_work() -> Iterator[None]:
    """Held, shared, around the engine's own CPU work: compilers, and the proofs and Z3 checks of the
    next candidates. It runs side by side, but never while a run is timed. On two cores a compile next
    to a parallel candidate's timed run slowed it several times over (a triangular update measured 0.2x
    in one search and 1.7x in the next).

    A thread that holds the cores alone already has what this lock protects: its own work runs under
    that hold. A second lock on the file, through another handle, would wait for the thread itself
    (the machine probe, built on its first use under a timed run's lock, hung a benchmark for hours)."""
    if getattr(_HOLDER, "alone", False):
        yield
        return
    with open(cores_lock_path(), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_key(source: CSource, toolchain: Toolchain) -> str:
    """Names a build by everything that decides its bytes: code (model, schedule, types), compiler, flags."""
    digest = hashlib.sha256()
    linked = [flag for library in source.libraries for flag in link_flags(library)]
    for part in (source.text, toolchain.command, toolchain.version, *toolchain.flags, *toolchain.links, *linked):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


OPENMP_OPENBLAS = Path("/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0")
"""Debian's OpenBLAS built on OpenMP (`libopenblas0-openmp`), beside the pthreads build that
`libopenblas.so.0` names by default. A kernel whose `blas` calls sit between parallel loops runs both
on libgomp's one team; with the pthreads build, two pools took turns on two cores, and each one's
idle threads spun against the other's work: gemm's `blas(S1); parallelize(S2.i)` at MEDIUM took
0.74 ms, 0.44 ms with libgomp's spin turned off, against 0.48 ms for `blas(S1)` alone."""


def link_flags(library: str) -> tuple[str, ...]:
    """How a build links `library`: OpenBLAS's OpenMP build by its path (and found there at run time)
    where it is installed, otherwise the linker's `-l`."""
    if library == "openblas" and OPENMP_OPENBLAS.exists():
        return (str(OPENMP_OPENBLAS), f"-Wl,-rpath,{OPENMP_OPENBLAS.parent}")
    return (f"-l{library}",)


def build_shared_library(source: CSource, toolchain: Toolchain | None = None) -> Path:
    """Compile `source` once; later calls with the same code, compiler and flags reuse the library."""
    toolchain = toolchain or default_toolchain()
    directory = cache_dir()
    key = build_key(source, toolchain)
    library = directory / f"{key}.so"
    if library.exists():
        return library
    c_file = directory / f"{key}.c"
    write_atomically(c_file, source.text.encode())
    fd, temporary = tempfile.mkstemp(prefix=f".{key}.", suffix=".so", dir=directory)
    os.close(fd)
    links = [*toolchain.links, "-lm", *(flag for library in source.libraries for flag in link_flags(library))]
    try:
        try:
            with engine_work():
                result = subprocess.run(
                    [toolchain.command, *toolchain.flags, "-o", temporary, str(c_file), *links],
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=toolchain.timeout_s,
                )
        except subprocess.TimeoutExpired:
            raise CompileError(f"{Path(toolchain.command).name} did not finish {c_file} within {toolchain.timeout_s:g} s") from None
        if result.returncode != 0:
            first = "\n".join(result.stderr.strip().splitlines()[:6])
            raise CompileError(f"{Path(toolchain.command).name} failed on {c_file}:\n{first}")
        os.replace(temporary, library)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return library


def write_atomically(path: Path, data: bytes) -> None:
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)

"""Building a kernel for a signature and schedule, with a cache in front of code generation.

isl's AST generation takes tens of milliseconds on kernels with many statements,
so a cached build must not regenerate code: the cache is keyed on what decides the
code (the function's source, the engine's own code, the types, the schedule) plus
the toolchain, and stores the call metadata beside the library.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from functools import cache
from pathlib import Path

from repoos_agent.backend_names import BACKENDS
from repoos_agent.backends.cc import Toolchain, build_shared_library, cache_dir, default_toolchain, write_atomically
from repoos_agent.backends.library import NativeKernel
from repoos_agent.backends.mlir import build_mlir_library
from repoos_agent.codegen import BoundsCheck, CArgument, CSource, generate_c
from repoos_agent.codegen import c as c_printer
from repoos_agent.codegen import mlir as mlir_printer
from repoos_agent.codegen.loopnest import LoopNest
from repoos_agent.codegen.mlir import generate_mlir
from repoos_agent.codegen.passes import transformed_nest
from repoos_agent.codegen.support import unsupported
from repoos_agent.errors import CompileError
from repoos_agent.model.kernel import Allocation, DerivedSize, Kernel, isl_lock
from repoos_agent.model.signature import Signature
from repoos_agent.schedule import LoweredSchedule, ScheduleState

ENGINE_PARTS = ("ingest", "model", "codegen", "schedule", "backends")


@cache
def cpu_model() -> str:
    """The CPU the library is built for (`-march=native` makes builds CPU-specific)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


@cache
def engine_digest(parts: tuple[str, ...] = ENGINE_PARTS) -> str:
    """A hash of the engine's code in the folders `parts` (by default those that turn source into C): a new
    engine never reuses an old build."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for part in parts:
        for path in sorted((root / part).rglob("*.py")):  # `ingest/numpy/` too
            digest.update(path.read_bytes())
    return digest.hexdigest()


def model_parts(kernel: Kernel, signature: Signature, schedule: LoweredSchedule | None) -> tuple[str, ...]:
    """What decides a kernel's code besides the engine: the model, types and schedule. The model whole, not its
    function's source: the module constants it was built with and the module's helpers it inlines are in the model
    and not in the source (a changed `SCALE = 3.0` must not load the build made with 2.0), and so are the ranks
    (one NumPy function called with a vector and with a matrix is two kernels of one source) and the axes taken
    as extent 1 (a column `(n, 1)` and a matrix `(n, 3)` broadcast differently). Its text has no addresses: the
    isl context is left out of it."""
    return repr(kernel), repr(signature), _schedule_text(schedule)


def digest_of(parts: tuple[str, ...]) -> str:
    """A short hash naming `parts` as one key (each part ended, so no two splits of one text collide)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def model_key(kernel: Kernel, signature: Signature, schedule: LoweredSchedule | None, toolchain: Toolchain, backend: str) -> str:
    """Everything that decides a build's bytes: engine, model, types, schedule, backend, compiler, flags, CPU."""
    build = (backend, toolchain.command, toolchain.version, *toolchain.flags, cpu_model())
    return digest_of((engine_digest(), *model_parts(kernel, signature, schedule), *build))


PRINTED_KINDS = dict(zip(BACKENDS, (c_printer.SUPPORTED, mlir_printer.SUPPORTED), strict=True))
"""Each backend's table of the node kinds its printer prints (`codegen.support`)."""


def backend_problem(kernel: Kernel, nest: LoopNest, backend: str) -> str | None:
    """Why `backend` cannot build `nest` (a node kind its printer lacks, and the backend to use instead), or None."""
    return unsupported(kernel, nest, backend.upper(), PRINTED_KINDS[backend])


def build_native(
    kernel: Kernel,
    signature: Signature,
    schedule: LoweredSchedule | None = None,
    toolchain: Toolchain | None = None,
    backend: str = "c",
) -> NativeKernel:
    """The kernel compiled for `signature` in `schedule`'s order (the source order by default), loaded."""
    if backend not in BACKENDS:
        raise CompileError(f"unknown compiler backend `{backend}`; choose {' or '.join(BACKENDS)}")
    toolchain = toolchain or default_toolchain()
    with isl_lock(kernel):
        entry = cache_dir() / f"model-{model_key(kernel, signature, schedule, toolchain, backend)}.json"
    if entry.exists():
        recorded = _read_entry(entry)
        if recorded is not None:
            source, library = recorded
            return NativeKernel(signature, source, library)
    # Code generation reads the kernel's isl objects (one thread at a time); compilers run in parallel.
    with isl_lock(kernel):
        if backend == "mlir":
            lowered = schedule if schedule is not None else ScheduleState(kernel).lower()
            source = generate_c(kernel, signature, lowered, mlir_call=True)
            module = generate_mlir(kernel, signature, transformed_nest(kernel, lowered, signature))
        else:
            source = generate_c(kernel, signature, schedule)
    library = build_mlir_library(module, source, toolchain) if backend == "mlir" else build_shared_library(source, toolchain)
    metadata = {
        "library": library.name,
        "library_sha256": file_digest(library),
        "c_file": library.with_suffix(".c").name,
        "arguments": [asdict(a) for a in source.arguments],
        "checks": [asdict(c) for c in source.checks],
        "sizes": list(source.sizes),
        "shape_sizes": [list(pair) for pair in source.shape_sizes],
        "name": source.name,
        "allocations": [a.as_json() for a in source.allocations],
        "shape_names": list(source.shape_names),
        "derived": [size.as_json() for size in source.derived],
    }
    write_atomically(entry, json.dumps(metadata).encode())
    return NativeKernel(signature, source, library)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _schedule_text(schedule: LoweredSchedule | None) -> str:
    if schedule is None:
        return "original"
    marks = (sorted(schedule.parallel), sorted(schedule.vector.items()), sorted(schedule.unroll.items()), sorted(schedule.promote))
    marks += (sorted((loop, sorted(scalars)) for loop, scalars in schedule.private.items()),)
    marks += (sorted(call.update for call in schedule.blas), sorted(schedule.atomic), sorted(schedule.privatized))
    return f"{schedule.schedule}|{schedule.loop_ids}|{marks}"


def build_baseline(kernel: Kernel, signature: Signature) -> NativeKernel:
    """The kernel in its original order, compiled and loaded."""
    return build_native(kernel, signature)


def _read_entry(entry: Path) -> tuple[CSource, Path] | None:
    """A cache entry, or None when it is unreadable or its library is gone (then it is rebuilt)."""
    try:
        metadata = json.loads(entry.read_text())
        library = entry.parent / metadata["library"]
        text = (entry.parent / metadata["c_file"]).read_text()
        source = CSource(
            text=text,
            arguments=tuple(CArgument(**a) for a in metadata["arguments"]),
            checks=tuple(BoundsCheck(**c) for c in metadata["checks"]),
            sizes=tuple(metadata["sizes"]),
            shape_sizes=tuple((array, dim) for array, dim in metadata["shape_sizes"]),
            name=metadata["name"],
            allocations=tuple(Allocation.from_json(a) for a in metadata.get("allocations", [])),
            shape_names=tuple(metadata.get("shape_names", [])),
            derived=tuple(DerivedSize.from_json(size) for size in metadata.get("derived", [])),
        )
        intact = library.exists() and file_digest(library) == metadata["library_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not intact:
        # A truncated or altered library is never loaded: drop it so the build below replaces it.
        library.unlink(missing_ok=True)
        return None
    return source, library

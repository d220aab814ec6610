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

from repoos_agent.backends.cc import Toolchain, build_shared_library, cache_dir, default_toolchain, write_atomically
from repoos_agent.backends.library import NativeKernel
from repoos_agent.codegen import BoundsCheck, CArgument, CSource, generate_c
from repoos_agent.model.kernel import Kernel
from repoos_agent.model.signature import Signature
from repoos_agent.schedule import LoweredSchedule

ENGINE_PARTS = ("ingest", "model", "codegen")


@cache
def engine_digest() -> str:
    """A hash of the code that turns source into C: a new engine never reuses an old build."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for part in ENGINE_PARTS:
        for path in sorted((root / part).glob("*.py")):
            digest.update(path.read_bytes())
    return digest.hexdigest()


def model_key(kernel: Kernel, signature: Signature, schedule: LoweredSchedule | None, toolchain: Toolchain) -> str:
    digest = hashlib.sha256()
    parts = (
        engine_digest(), kernel.source, repr(signature), _schedule_text(schedule),
        toolchain.command, toolchain.version, *toolchain.flags,
    )  # fmt: skip
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def build_native(
    kernel: Kernel, signature: Signature, schedule: LoweredSchedule | None = None, toolchain: Toolchain | None = None
) -> NativeKernel:
    """The kernel compiled for `signature` in `schedule`'s order (the source order by default), loaded."""
    toolchain = toolchain or default_toolchain()
    entry = cache_dir() / f"model-{model_key(kernel, signature, schedule, toolchain)}.json"
    if entry.exists():
        recorded = _read_entry(entry)
        if recorded is not None:
            source, library = recorded
            return NativeKernel(signature, source, library)
    source = generate_c(kernel, signature, schedule)
    library = build_shared_library(source, toolchain)
    metadata = {
        "library": library.name,
        "c_file": library.with_suffix(".c").name,
        "arguments": [asdict(a) for a in source.arguments],
        "checks": [asdict(c) for c in source.checks],
        "sizes": list(source.sizes),
        "shape_sizes": [list(pair) for pair in source.shape_sizes],
        "name": source.name,
    }
    write_atomically(entry, json.dumps(metadata).encode())
    return NativeKernel(signature, source, library)


def _schedule_text(schedule: LoweredSchedule | None) -> str:
    if schedule is None:
        return "original"
    marks = (sorted(schedule.parallel), sorted(schedule.vector.items()), sorted(schedule.unroll.items()))
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
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (source, library) if library.exists() else None

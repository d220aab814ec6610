"""What a user would pick instead of us, measured on the same inputs against the same baseline.

- `numba`: `@njit(parallel=True, fastmath=False)` on the kernel's own Python source.
- `graphite`: gcc's Graphite polyhedral optimizer on the baseline C the engine generates,
  with automatic parallelization (`-floop-parallelize-all -ftree-parallelize-loops=CORES`;
  gcc's manual: Graphite only marks loops, the parallelizer needs the thread count).
- `polly`: clang-19 with LLVM's Polly on the same C, parallel code through libgomp.
- `dace`, `pythran` (and `numba` on a NumPy kernel): built from the kernel's Python source by
  `numpy_peers`; a NumPy kernel's tools race the NumPy original instead of our baseline.

Each tool's build runs in the measurement worker against our -O3 baseline exactly as a
candidate schedule does: outputs compared first (a mismatch is reported, never timed as a
win), then interleaved timed runs under the measurement lock. A compiler that is not
installed is reported as missing.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import shutil
import subprocess
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from repoos_agent.backends import build_baseline, build_native
from repoos_agent.backends.cc import DEFAULT_FLAGS, Toolchain
from repoos_agent.errors import CompileError, RepoosError
from repoos_agent.measure.isolated import RaceRules, peer_worker
from repoos_agent.model.signature import Signature
from repoos_agent.target import Target

TOOLS = ("numba", "graphite", "polly", "dace", "pythran")
C_TOOLS = ("graphite", "polly")
DEFAULT_COMPILERS = {"graphite": "gcc", "polly": "clang-19"}
BUILD_TIMEOUT_S = 600.0
"""Polly takes over a minute on some matrix kernels here (its matmul packing); a build past ten minutes is a compile_error."""
_COMMON_FLAGS = tuple(flag for flag in DEFAULT_FLAGS if flag != "-fopenmp")
"""Our baseline's flags (-O3 -march=native -ffp-contract=off, shared, PIC) without OpenMP: the tools parallelize on their own."""


def tool_flags(tool: str) -> tuple[str, ...]:
    """The flags a tool's compiler gets on top of the baseline's."""
    if tool == "graphite":
        return (*_COMMON_FLAGS, "-floop-parallelize-all", f"-ftree-parallelize-loops={os.cpu_count() or 1}")
    if tool == "polly":
        polly = ("-mllvm", "-polly", "-mllvm", "-polly-parallel", "-mllvm", "-polly-vectorizer=stripmine")
        return (*_COMMON_FLAGS, *polly, "-lgomp")
    raise RepoosError(f"`{tool}` is not compiled from C; the C tools are graphite and polly")


@dataclass(frozen=True)
class ToolSpec:
    """A tool to compare against and, for the C tools, the compiler to run (a name on PATH or a path)."""

    name: str
    compiler: str | None = None


@dataclass(frozen=True)
class ToolMeasurement:
    """One tool on one instance. `status`: ok, missing, compile_error, unsupported (the tool refused the
    program), incorrect, runtime_error or timeout. `baseline_s` is the reference's median in the same
    race: our -O3 baseline for a PolyBench kernel, the NumPy original for a NumPy kernel."""

    tool: str
    status: str
    message: str = ""
    speedup: float | None = None
    tool_s: float | None = None
    baseline_s: float | None = None
    spread: float | None = None
    max_rel_error: float | None = None
    build_s: float = 0.0


def parse_tools(text: str) -> tuple[ToolSpec, ...]:
    """`numba,graphite,polly`, each C tool optionally with its compiler: `polly=/usr/bin/clang-19`."""
    specs = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, _, compiler = part.partition("=")
        name = name.strip().lower()
        if name not in TOOLS:
            raise RepoosError(f"--compare: unknown tool `{name}`; tools are {', '.join(TOOLS)}")
        if compiler and name not in C_TOOLS:
            raise RepoosError(f"--compare: {name} takes no compiler (`{name}`, not `{name}=…`)")
        specs.append(ToolSpec(name, compiler.strip() or DEFAULT_COMPILERS.get(name)))
    return tuple(specs)


@dataclass(frozen=True)
class NumbaContender:
    """The kernel's Python source under Numba, loaded (and JIT-compiled on its first call) in the measurement worker."""

    path: str
    function: str

    def load(self) -> Callable[[Mapping[str, object]], object]:
        import numba
        from numba.core.errors import NumbaPerformanceWarning

        spec = importlib.util.spec_from_file_location(f"repoos_numba_{Path(self.path).stem}", self.path)
        if spec is None or spec.loader is None:
            raise RepoosError(f"{self.path}: cannot be imported for Numba")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        original = getattr(module, self.function)
        order = list(inspect.signature(original).parameters)
        compiled = numba.njit(parallel=True, fastmath=False)(original)
        # parallel=True on loops Numba cannot parallelize only warns; the kernel still runs (serially).
        warnings.simplefilter("ignore", NumbaPerformanceWarning)

        def call(values: Mapping[str, object]) -> object:
            return compiled(*(values[name] for name in order))

        return call


def measure_tool(
    spec: ToolSpec, target: Target, size: str | None, seed: int, timeout_s: float, repeats: int = 5
) -> ToolMeasurement:
    """Build `spec`'s version of `target`, check it against our baseline on the same inputs, and race the two."""
    if spec.name == "numba" and importlib.util.find_spec("numba") is None:
        return ToolMeasurement(spec.name, "missing", "numba is not installed (pip install 'repoos-agent[eval]')")
    toolchain = None if spec.name == "numba" else _toolchain(spec)
    if spec.name != "numba" and toolchain is None:
        return ToolMeasurement(spec.name, "missing", f"compiler `{spec.compiler}` not found")
    values = target.inputs(size, seed)
    signature = Signature.of_values(target.kernel, values)
    baseline = build_baseline(target.kernel, signature)
    start = time.perf_counter()
    if toolchain is None:
        contender = NumbaContender(target.kernel.path, target.kernel.name)
    else:
        try:
            contender = build_native(target.kernel, signature, None, toolchain)
        except CompileError as error:
            return ToolMeasurement(spec.name, "compile_error", _first_lines(str(error), 2))
    build_s = time.perf_counter() - start
    outputs = tuple(a.name for a in target.kernel.arrays if a.is_argument and a.written and a.rank > 0)
    result = peer_worker(spec.name).race(baseline, contender, values, RaceRules(outputs, min_repeats=repeats), timeout_s)
    comparison = result.comparison
    error = comparison.max_rel_error if comparison else None
    if result.outcome != "ok":
        return ToolMeasurement(spec.name, result.outcome, _first_lines(result.message, 1), max_rel_error=error, build_s=build_s)
    return ToolMeasurement(
        spec.name,
        "ok",
        speedup=result.speedup,
        tool_s=result.candidate.median_s,
        baseline_s=result.baseline.median_s,
        spread=result.candidate.spread,
        max_rel_error=error,
        build_s=build_s,
    )


def _toolchain(spec: ToolSpec) -> Toolchain | None:
    path = shutil.which(spec.compiler or "")
    if path is None:
        return None
    probe = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    version = probe.stdout.splitlines()[0] if probe.stdout else "unknown"
    return Toolchain(command=path, version=version, flags=tool_flags(spec.name), timeout_s=BUILD_TIMEOUT_S)


def _first_lines(text: str, count: int) -> str:
    """The message on one line: a compiler's `failed on FILE:` needs the next line (the error, or a crash notice) too."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines[:count]) if lines else text

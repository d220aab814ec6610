"""What a NumPy user would reach for instead of us, built from the kernel's own NumPy source.

- `numba`: `numba.njit(parallel=True)` on the function, and on every function of its module so
  that calls between them resolve in nopython mode.
- `dace`: `dace.program` on the function, its types (concrete shapes) taken from the inputs,
  `auto_optimize` for the CPU, compiled.
- `pythran`: the function and the module functions it calls, with a `# pythran export` line
  derived from the inputs (dtype and rank of each array, int or float scalars), compiled
  ahead of time into an extension module.

A peer is built in this process (a failure to compile is `unsupported`, with the reason),
then loaded again in the measurement worker, where it runs on fresh copies of the same
inputs as the reference: its returned values and every array argument are compared first
(`incorrect` beyond tolerance, never timed as a win), then the two are timed interleaved
under the measurement lock. A peer whose package is not installed is `missing`.

Each loaded side is a `TeamSizedCall`: the race sizes its threads to the cores it found free, as it
does the engine's OpenMP team (`NativeKernel.set_team`): Numba through `numba.set_num_threads`, DaCe
and Pythran through `omp_set_num_threads` of the OpenMP runtime their library links (and DaCe's
OpenBLAS through `openblas_set_num_threads`, where it calls BLAS for `@`; Pythran's links
none: it parallelizes only code annotated with `omp` comments, so its threads are scipy-openblas's,
sized through that library's own setter), the NumPy original's BLAS through threadpoolctl.

The tolerance is the engine's own for reassociated reductions (`REASSOCIATION_TOLERANCE_SCALE`
on `measure.compare.TOLERANCES`: normwise 1e-7 for float64, 1e-2 for float32): a peer sums in
another order (BLAS, parallel reductions) as a reassociating schedule does.
"""

from __future__ import annotations

import ast
import ctypes
import hashlib
import importlib.machinery
import importlib.util
import inspect
import re
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from repoos_agent.backends.cc import cache_dir, engine_work
from repoos_agent.backends.library import NativeKernel, openmp_team_setter
from repoos_agent.errors import RepoosError
from repoos_agent.evaluate import REASSOCIATION_TOLERANCE_SCALE
from repoos_agent.measure.isolated import RaceRules, peer_worker
from repoos_agent.measure.layout import fresh_copy
from repoos_agent.measure.original import RETURNED, NumpyOriginal, TeamSizedCall, by_name, module_at, parameters_of, returned_values
from repoos_agent.study.competitors import ToolMeasurement

NUMPY_PEERS = ("numba", "dace", "pythran")
PYTHRAN_FLAGS = ("-O3", "-march=native", "-DUSE_XSIMD", "-fopenmp")
"""Pythran's documented flags for speed: vectorized NumPy expressions, OpenMP."""
DACE_DROPPED_FLAGS = ("-ffast-math",)
"""DaCe compiles with -ffast-math by default; its library, loaded into the measurement worker, would
set flush-to-zero for every kernel timed there after it (the NumPy original and the other peers)."""


class PeerUnsupported(RepoosError):
    """A peer's compiler refused the program: the reason is the peer's own, on one line."""


def _library_team(path: str) -> tuple[Callable[[int], None], ...]:
    """The thread setters of the runtimes the shared library at `path` links (already loaded: the same
    handle): OpenMP's `omp_set_num_threads`, and OpenBLAS's (DaCe's BLAS calls run on its pthreads)."""
    handle = ctypes.CDLL(path)
    setters = [openmp_team_setter(handle)]
    blas = getattr(handle, "openblas_set_num_threads", None)
    if blas is not None:
        blas.restype = None
        blas.argtypes = [ctypes.c_int]
        setters.append(blas)
    return tuple(setter for setter in setters if setter is not None)


def _scipy_openblas_team() -> tuple[Callable[[int], None], ...]:
    """scipy-openblas's own thread setter (its pthreads pool runs a Pythran peer's `@`), when it is installed."""
    if not peer_installed("scipy_openblas64"):
        return ()
    import scipy_openblas64

    setter = getattr(scipy_openblas64.dll, "scipy_openblas_set_num_threads64_", None)
    if setter is None:
        return ()
    setter.restype = None
    setter.argtypes = [ctypes.c_int]
    return (setter,)


@dataclass(frozen=True)
class NumbaPeer:
    """The module under `numba.njit(parallel=True)`; Numba compiles at the first call."""

    path: str
    function: str

    def load(self) -> TeamSizedCall:
        import numba
        from numba.core.errors import NumbaPerformanceWarning

        module = module_at(self.path, "numba")
        for name, value in list(vars(module).items()):
            if inspect.isfunction(value) and value.__module__ == module.__name__:
                setattr(module, name, numba.njit(parallel=True)(value))
        # parallel=True on code Numba cannot parallelize only warns; it runs serially.
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        call = by_name(getattr(module, self.function), parameters_of(self.path, self.function))
        # Numba's pool has NUMBA_NUM_THREADS threads (a core each unless set); a team cannot outgrow it.
        team = (lambda threads: numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS)),)
        return TeamSizedCall(call, team, compiled_at_first_call=True)


@dataclass(frozen=True)
class DacePeer:
    """A compiled SDFG in its build folder."""

    folder: str

    def load(self) -> TeamSizedCall:
        import dace
        from dace.sdfg.utils import load_precompiled_sdfg

        # Timed inputs are page-aligned views into larger buffers (`measure.layout`), C-contiguous all the same.
        dace.Config.set("compiler", "allow_view_arguments", value=True)
        compiled = load_precompiled_sdfg(self.folder)

        def call(values: dict[str, object]) -> object:
            # A CompiledSDFG hands back the same return arrays at every call with the same sizes, overwriting the last
            # call's result: every other contender allocates its results afresh (NumPy, and a swapped kernel, return
            # a new array), and DaCe must too. Reused, go-fast's 512 MB result at LARGE skipped its page faults.
            compiled.clear_return_values()
            result = compiled(**values)
            values.update(returned_values(result))
            return result

        return TeamSizedCall(call, _library_team(compiled.filename))


@dataclass(frozen=True)
class PythranPeer:
    """A Pythran extension module exporting the kernel's function."""

    library: str
    module: str
    function: str
    order: tuple[str, ...]

    def load(self) -> TeamSizedCall:
        loader = importlib.machinery.ExtensionFileLoader(self.module, self.library)
        spec = importlib.util.spec_from_file_location(self.module, self.library, loader=loader)
        if spec is None:
            raise RepoosError(f"{self.library}: cannot be loaded")
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        call = by_name(getattr(module, self.function), list(self.order))
        return TeamSizedCall(call, _library_team(self.library) + _scipy_openblas_team())


Peer = NumbaPeer | DacePeer | PythranPeer


def peer_installed(tool: str) -> bool:
    """Whether `tool`'s package can be imported here (the name is its import name)."""
    try:
        return importlib.util.find_spec(tool) is not None
    except (ImportError, ValueError):
        return False


def build_peer(tool: str, path: str, function: str, values: Mapping[str, object]) -> Peer:
    """Build `tool`'s version of `function` in `path` for inputs like `values`; PeerUnsupported when it refuses."""
    builders = {"numba": _build_numba, "dace": _build_dace, "pythran": _build_pythran}
    if tool not in builders:
        raise RepoosError(f"`{tool}` is not a NumPy peer; peers are {', '.join(NUMPY_PEERS)}")
    return builders[tool](path, function, values)


def measure_peer(
    tool: str,
    path: str,
    function: str,
    values: Mapping[str, object],
    timeout_s: float,
    reference: NativeKernel | NumpyOriginal | None = None,
    outputs: tuple[str, ...] | None = None,
    repeats: int = 5,
) -> ToolMeasurement:
    """Build `tool`'s peer, check it against `reference` (the NumPy original by default) and race the two.

    `outputs` are the names compared: by default every array argument and whatever the original returns."""
    if not peer_installed(tool):
        return ToolMeasurement(tool, "missing", f"{tool} is not installed (scripts/setup-peers, then run from .venv-peers)")
    reference = reference or NumpyOriginal(path, function)
    outputs = outputs if outputs is not None else compared_outputs(path, function, values)
    start = time.perf_counter()
    try:
        peer = build_peer(tool, path, function, values)
    except PeerUnsupported as error:
        return ToolMeasurement(tool, "unsupported", str(error), build_s=time.perf_counter() - start)
    build_s = time.perf_counter() - start
    rules = RaceRules(outputs, REASSOCIATION_TOLERANCE_SCALE, min_repeats=repeats)
    result = peer_worker(tool).race(reference, peer, values, rules, timeout_s)
    error = result.comparison.max_rel_error if result.comparison else None
    if result.outcome != "ok":
        return ToolMeasurement(tool, result.outcome, _one_line(result.message), max_rel_error=error, build_s=build_s)
    return ToolMeasurement(
        tool,
        "ok",
        speedup=result.speedup,
        tool_s=result.candidate.median_s,
        baseline_s=result.baseline.median_s,
        spread=result.candidate.spread,
        max_rel_error=error,
        build_s=build_s,
    )


def compared_outputs(path: str, function: str, values: Mapping[str, object]) -> tuple[str, ...]:
    """Every array argument (a peer must not write where the original does not) and the original's returns,
    found by running the original once here on a copy."""
    arrays = [name for name, value in values.items() if isinstance(value, np.ndarray)]
    copies = fresh_copy(values)
    NumpyOriginal(path, function).load()(copies)
    return (*arrays, *(name for name in copies if name.startswith(RETURNED)))


def _build_numba(path: str, function: str, values: Mapping[str, object]) -> NumbaPeer:
    """Compile by calling once, here, so that a typing error is `unsupported` rather than a failed run."""
    from numba.core.errors import NumbaError

    peer = NumbaPeer(path, function)
    call = peer.load()
    try:
        with engine_work():
            call(fresh_copy(values))
    except (NumbaError, ImportError) as error:  # ImportError: `@` and np.linalg without SciPy
        raise PeerUnsupported(_numba_reason(str(error))) from None
    except Exception as error:  # Numba's own run-time failures (a parfor's size assertion on broadcasting)
        raise PeerUnsupported(f"{type(error).__name__}: {_numba_reason(str(error))}") from None
    return peer


def _numba_reason(message: str) -> str:
    """The line of a Numba error that names the problem (its first says only which pipeline stage failed)."""
    lines = [re.sub(r"\x1b\[[0-9;]*m| at 0x[0-9a-f]+", "", line).strip() for line in message.splitlines()]
    lines = [line for line in lines if line and not line.startswith("Failed in ")]
    if not lines:
        return "Numba cannot compile it"
    call = next((line.removeprefix(">>>").strip() for line in lines if line.startswith(">>>")), "")
    return f"{lines[0]} {call}" if call and lines[0].endswith("signature:") else lines[0]


def _build_dace(path: str, function: str, values: Mapping[str, object]) -> DacePeer:
    import dace
    from dace.transformation.auto.auto_optimize import auto_optimize, find_fast_library

    original = getattr(module_at(path, "dace"), function)
    # The libraries DaCe found (OpenBLAS, MKL or neither) decide how it builds `@`: part of the build's name.
    libraries = ",".join(find_fast_library(dace.DeviceType.CPU))
    folder = _peer_folder("dace", path, function, values, dace.__version__, libraries)
    if (folder / "build").is_dir() and any((folder / "build").glob("lib*.so")):
        return DacePeer(str(folder))
    flags = dace.Config.get("compiler", "cpu", "args")
    dace.Config.set("compiler", "cpu", "args", value=" ".join(f for f in flags.split() if f not in DACE_DROPPED_FLAGS))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sdfg = dace.program(original).to_sdfg(**fresh_copy(values))
            sdfg.name = f"peer_{Path(path).stem}_{folder.name[-8:]}"
            sdfg.build_folder = str(folder)
            with engine_work():
                auto_optimize(sdfg, dace.DeviceType.CPU)
                sdfg.compile()
    except Exception as error:  # DaCe's frontend and code generator raise anything; each is a refusal
        raise PeerUnsupported(f"{type(error).__name__}: {_one_line(str(error))}") from None
    finally:
        dace.Config.set("compiler", "cpu", "args", value=flags)
    return DacePeer(str(folder))


def pythran_type(value: object) -> str:
    """The Pythran type of an input: `float64[:,:]` for a 2-D float64 array, `float` or `int` for a scalar."""
    if isinstance(value, np.ndarray):
        return f"{value.dtype.name}[{','.join(':' * value.ndim)}]"
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, int | np.integer):
        return "int" if isinstance(value, int) else np.dtype(type(value)).name
    if isinstance(value, float | np.floating):
        return "float" if isinstance(value, float) else np.dtype(type(value)).name
    raise PeerUnsupported(f"no Pythran type for an argument of type {type(value).__name__}")


def pythran_source(source: str, function: str, values: Mapping[str, object]) -> str:
    """The module's imports, `function` and the module functions it calls, and its export line.

    The rest (sizes, `init`) is left out: Pythran compiles every function it is given."""
    tree = ast.parse(source)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    if function not in functions:
        raise PeerUnsupported(f"no function `{function}` at the module's top level")
    needed, pending = [], [function]
    while pending:
        name = pending.pop()
        if name in needed:
            continue
        needed.append(name)
        called = {n.func.id for n in ast.walk(functions[name]) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        pending.extend(sorted(called & functions.keys()))
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    kept = [*imports, *(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in needed)]
    parameters = [a.arg for a in functions[function].args.args]
    missing = [name for name in parameters if name not in values]
    if missing:
        raise PeerUnsupported(f"no input for {', '.join(missing)}")
    export = f"#pythran export {function}({', '.join(pythran_type(values[name]) for name in parameters)})"
    return ast.unparse(ast.Module(body=kept, type_ignores=[])) + "\n\n" + export + "\n"


def _build_pythran(path: str, function: str, values: Mapping[str, object]) -> PythranPeer:
    import pythran
    from pythran.toolchain import compile_pythranfile

    source = pythran_source(Path(path).read_text(encoding="utf-8"), function, values)
    folder = _peer_folder("pythran", path, function, values, pythran.__version__, source)
    module = f"repoos_pythran_{folder.name.replace('-', '_')}"
    library = folder / f"{module}.so"
    order = tuple(parameters_of(path, function))
    if library.exists():
        return PythranPeer(str(library), module, function, order)
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / f"{module}.py"
    file.write_text(source, encoding="utf-8")
    blas = "scipy-openblas" if peer_installed("scipy_openblas64") else "none"
    try:
        with engine_work(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile_pythranfile(
                str(file),
                output_file=str(library),
                module_name=module,
                extra_compile_args=list(PYTHRAN_FLAGS),
                extra_link_args=["-fopenmp"],
                config=[f"compiler.blas={blas}"],
            )
    except (Exception, SystemExit) as error:  # Pythran's syntax checks and gcc's failure both end here
        library.unlink(missing_ok=True)
        raise PeerUnsupported(f"{type(error).__name__}: {_one_line(str(error))}") from None
    return PythranPeer(str(library), module, function, order)


def _peer_folder(tool: str, path: str, function: str, values: Mapping[str, object], version: str, extra: str = "") -> Path:
    """A build's folder in the kernel cache, named by what decides it: source, types and shapes, tool version."""
    digest = hashlib.sha256()
    types = [(n, str(v.dtype), v.shape) if isinstance(v, np.ndarray) else (n, type(v).__name__) for n, v in values.items()]
    for part in (tool, version, Path(path).read_text(encoding="utf-8"), function, repr(types), extra):
        digest.update(part.encode())
        digest.update(b"\0")
    return cache_dir() / "peers" / f"{tool}-{Path(path).stem}-{digest.hexdigest()[:16]}"


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else text

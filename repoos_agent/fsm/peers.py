"""What a user of branchy byte-level Python would reach for instead of the fsm track, each run on the kernel's own,
unchanged source and checked against the CPython original before any of its time counts.

- `numba`: `numba.njit` on every function of a fresh copy of the kernel's module (so the kernel's calls to its
  helpers resolve in nopython mode), called on the arguments as they are; where Numba refuses those types, on
  `bytes`/`bytearray` as NumPy uint8 arrays and lists of ints as int64 arrays, converted before the call (off the
  clock) and converted back for the check (an array back into the `bytes`, `bytearray` or list it stood for).
- `cython`: the module's source compiled by `cythonize` (pure-Python mode, no annotations added) in a temporary
  build directory, and the extension imported from there.
- `mypyc`: the module compiled by mypyc in a temporary build directory, with the kernels' package on its path so
  mypy follows the module's imports.
- `pypy`: Debian's `pypy3` runs the module in a subprocess (`pypy_driver`): the arguments go over a pipe once,
  each timed call is timed inside PyPy, and each checked call's outputs come back for the check.

A peer that refuses the program raises `PeerUnsupported` with its own reason on one line. A peer's package or
interpreter that is not installed is `PeerMissing`.
"""

from __future__ import annotations

import inspect
import os
import pickle
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from importlib import machinery, util
from pathlib import Path
from types import ModuleType
from typing import Protocol

import numpy as np

from repoos_agent.catalog import BundledKernel
from repoos_agent.errors import RepoosError
from repoos_agent.fsm import pypy_driver
from repoos_agent.fsm.compare import Outcome
from repoos_agent.measure.original import module_at

PEERS = ("numba", "cython", "mypyc", "pypy")
BUILD_TIMEOUT_S = 600.0
PYPY = "pypy3"


class PeerUnsupported(RepoosError):
    """The peer refused the program: its own reason, on one line."""


class PeerMissing(RepoosError):
    """The peer's package or interpreter is not installed here."""


class Contender(Protocol):
    """One way of running a kernel on fixed arguments: checked once, then timed call by call.

    `prepare` makes a call's fresh arguments (never on the clock, never under the measurement lock); `timed` makes
    the call and returns its seconds; `check` makes one call and returns its outcome in the original's types."""

    def prepare(self) -> object: ...

    def timed(self, prepared: object) -> float: ...

    def check(self) -> Outcome: ...

    def close(self) -> None: ...


@dataclass
class InProcess:
    """A callable run in this process. `convert` turns the original's arguments into the ones the callable takes
    (identity when None); `restore` turns them back, after a checked call, into the original's types."""

    function: Callable[..., object]
    arguments: tuple[object, ...]
    convert: Callable[[tuple[object, ...]], tuple[object, ...]] | None = None
    restore: Callable[[tuple[object, ...]], tuple[object, ...]] | None = None

    def prepare(self) -> object:
        copies = tuple(_copy(value) for value in self.arguments)
        return self.convert(copies) if self.convert else copies

    def timed(self, prepared: object) -> float:
        start = time.perf_counter()
        with suppress(Exception):  # the kernel's own exception is its outcome, which `check` compared already
            self.function(*prepared)  # type: ignore[misc]
        return time.perf_counter() - start

    def check(self) -> Outcome:
        prepared = self.prepare()
        try:
            returned = self.function(*prepared)  # type: ignore[misc]
        except Exception as exc:  # what the kernel raises is compared with the original's, type and message
            return Outcome(None, self._restored(prepared), (type(exc).__name__, str(exc)))
        return Outcome(returned, self._restored(prepared), None)

    def _restored(self, prepared: object) -> tuple[object, ...]:
        return self.restore(prepared) if self.restore else prepared  # type: ignore[return-value]

    def close(self) -> None:
        return None


@dataclass(frozen=True)
class Built:
    """A peer ready to race: its contender, what it did to the inputs (empty when nothing), its build time."""

    contender: Contender
    conversion: str = ""
    build_s: float = 0.0


def build_peer(name: str, kernel: BundledKernel, arguments: Sequence[object], build_dir: Path) -> Built:
    """Peer `name`'s version of `kernel` on `arguments` (the original's, in its parameters' order), built under
    `build_dir`. `PeerUnsupported` when the peer refuses it, `PeerMissing` when it is not installed."""
    builders = {"numba": numba_peer, "cython": cython_peer, "mypyc": mypyc_peer, "pypy": pypy_peer}
    if name not in builders:
        raise RepoosError(f"--compare: unknown peer `{name}`; the fsm kernels' peers are {', '.join(PEERS)}")
    start = time.perf_counter()
    built = builders[name](kernel, tuple(arguments), build_dir)
    return Built(built.contender, built.conversion, time.perf_counter() - start)


def numba_peer(kernel: BundledKernel, arguments: tuple[object, ...], _build_dir: Path) -> Built:
    """`numba.njit` on the module's functions, called first on the arguments as they are, then converted."""
    if util.find_spec("numba") is None:
        raise PeerMissing("numba is not installed (pip install 'repoos-agent[eval]')")
    from numba.core.errors import NumbaDeprecationWarning, NumbaPendingDeprecationWarning

    # A list argument is a "reflected list", which Numba deprecates but still compiles: the warning is not a refusal.
    warnings.simplefilter("ignore", NumbaDeprecationWarning)
    warnings.simplefilter("ignore", NumbaPendingDeprecationWarning)
    as_given = InProcess(_njitted(kernel, "as_given"), arguments)
    refusal = _numba_refusal(as_given)
    if refusal is None:
        return Built(as_given)
    conversion = _numba_conversion(kernel, arguments)
    if not conversion:
        raise PeerUnsupported(refusal)
    converted = InProcess(_njitted(kernel, "converted"), arguments, _to_arrays, _from_arrays(arguments))  # a fresh dispatcher
    refusal = _numba_refusal(converted)
    if refusal is not None:
        raise PeerUnsupported(f"{refusal} (with {conversion})")
    return Built(converted, conversion)


def _numba_refusal(contender: InProcess) -> str | None:
    """Numba's reason for refusing the contender's call (its first call compiles, off the clock), or None."""
    try:
        contender.function(*contender.prepare())  # type: ignore[misc]
    except Exception as error:  # Numba's own error classes refuse; the kernel's exception is its outcome
        return _one_line(f"{type(error).__name__}: {error}") if type(error).__module__.startswith("numba") else None
    return None


def _njitted(kernel: BundledKernel, tag: str) -> Callable[..., object]:
    """The kernel under Numba, in a fresh copy of its module (named by `tag`) whose every function is replaced by its
    njit version."""
    import numba

    module = module_at(str(kernel.path), f"fsm_numba_{tag}")
    for name, value in list(vars(module).items()):
        if inspect.isfunction(value) and value.__module__ == module.__name__:
            setattr(module, name, numba.njit(value))
    return getattr(module, kernel.function)


def _numba_conversion(kernel: BundledKernel, arguments: tuple[object, ...]) -> str:
    """What `_to_arrays` does to these arguments, named for the report ("" when it changes none)."""
    names = list(inspect.signature(kernel.python_function()).parameters)[: len(arguments)]
    parts = []
    for name, value in zip(names, arguments, strict=True):
        if isinstance(value, bytes | bytearray):
            parts.append(f"`{name}` {type(value).__name__} as a uint8 array")
        elif _int_list(value):
            parts.append(f"`{name}` list of ints as an int64 array")
    return ", ".join(parts)


def _int_list(value: object) -> bool:
    return type(value) is list and all(type(item) is int for item in value)


def _to_arrays(arguments: tuple[object, ...]) -> tuple[object, ...]:
    converted: list[object] = []
    for value in arguments:
        if isinstance(value, bytes | bytearray):
            converted.append(np.frombuffer(value, dtype=np.uint8).copy())
        elif _int_list(value):
            converted.append(np.array(value, dtype=np.int64))
        else:
            converted.append(value)
    return tuple(converted)


def _from_arrays(originals: tuple[object, ...]) -> Callable[[tuple[object, ...]], tuple[object, ...]]:
    """Each converted argument back in the type it stood for, so the check compares it with the original's."""

    def restore(converted: tuple[object, ...]) -> tuple[object, ...]:
        back: list[object] = []
        for original, value in zip(originals, converted, strict=True):
            if isinstance(value, np.ndarray) and isinstance(original, bytes | bytearray):
                back.append(type(original)(value.tobytes()))
            elif isinstance(value, np.ndarray) and type(original) is list:
                back.append([int(item) for item in value])
            else:
                back.append(value)
        return tuple(back)

    return restore


def cython_peer(kernel: BundledKernel, arguments: tuple[object, ...], build_dir: Path) -> Built:
    """The module's source compiled by `cythonize -i -3` as it is (pure-Python mode) and imported."""
    if util.find_spec("Cython") is None:
        raise PeerMissing("Cython is not installed (pip install 'repoos-agent[fsm-peers]')")
    source = _copied_source(kernel, build_dir / "cython")
    command = [sys.executable, "-m", "Cython.Build.Cythonize", "-i", "-3", source.name]
    _run_build("cython", command, source.parent, os.environ.copy())
    module = _extension(source)
    return Built(InProcess(getattr(module, kernel.function), arguments))


def mypyc_peer(kernel: BundledKernel, arguments: tuple[object, ...], build_dir: Path) -> Built:
    """The module compiled by mypyc and imported. mypy reads the kernels' package from `MYPYPATH` to follow the
    module's imports; a type error is mypyc's refusal."""
    if util.find_spec("mypyc") is None:
        raise PeerMissing("mypyc is not installed (pip install 'repoos-agent[fsm-peers]')")
    source = _copied_source(kernel, build_dir / "mypyc")
    environment = os.environ | {"MYPYPATH": str(_kernels_root(kernel))}
    _run_build("mypyc", [sys.executable, "-m", "mypyc", source.name], source.parent, environment)
    module = _extension(source)
    return Built(InProcess(getattr(module, kernel.function), arguments))


def _copied_source(kernel: BundledKernel, directory: Path) -> Path:
    """The kernel's file, unchanged, alone in a build directory of its own (its extension takes its stem's name)."""
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / kernel.path.name
    shutil.copyfile(kernel.path, source)
    return source


def _run_build(peer: str, command: list[str], directory: Path, environment: dict[str, str]) -> None:
    try:
        done = subprocess.run(
            command, cwd=directory, env=environment, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise PeerUnsupported(f"{peer}'s build took over {BUILD_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        raise PeerUnsupported(f"{peer} refused it: {_first_error(done.stdout + done.stderr)}")


def _extension(source: Path) -> ModuleType:
    """The extension module a build left beside `source`, imported under the source's stem (its init's name)."""
    suffixes = tuple(machinery.EXTENSION_SUFFIXES)
    found = [path for path in source.parent.iterdir() if path.name.startswith(source.stem + ".") and path.name.endswith(suffixes)]
    if not found:
        raise PeerUnsupported(f"the build left no extension module for {source.name}")
    spec = util.spec_from_file_location(source.stem, found[0])
    if spec is None or spec.loader is None:
        raise PeerUnsupported(f"{found[0].name} cannot be imported")
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernels_root(kernel: BundledKernel) -> Path:
    """The folder that holds the `kernels` package: the kernel's module imports its siblings from there."""
    return kernel.path.parents[len(kernel.module.__name__.split(".")) - 1]


def pypy_peer(kernel: BundledKernel, arguments: tuple[object, ...], _build_dir: Path) -> Built:
    """The kernel's module in a `pypy3` subprocess, holding the same arguments, timed inside PyPy."""
    command = shutil.which(PYPY)
    if command is None:
        raise PeerMissing(f"`{PYPY}` is not installed (scripts/install-system-packages installs Debian's)")
    if any(isinstance(value, np.ndarray) for value in arguments):
        raise PeerUnsupported("PyPy runs here without NumPy: a NumPy array argument is not sent to it")
    contender = PypyContender(command)
    try:
        contender.request(("load", str(_kernels_root(kernel)), kernel.module.__name__, kernel.function, arguments))
    except PeerUnsupported:
        contender.close()
        raise
    return Built(contender)


PYPY_TIMEOUT_S = 600.0
"""A request PyPy has not answered by then (an endless loop) ends the subprocess."""


class PypyContender:
    """The `pypy_driver` in a `pypy3` subprocess: each request pickled to it, its reply read back."""

    def __init__(self, command: str) -> None:
        self._process = subprocess.Popen(
            [command, pypy_driver.__file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

    def request(self, message: tuple[object, ...]) -> tuple[object, ...]:
        """Send one request and return its reply; `PeerUnsupported` when PyPy failed, died or took too long."""
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        payload = pickle.dumps(message, protocol=pypy_driver.PROTOCOL)
        try:
            process.stdin.write(struct.pack(">I", len(payload)) + payload)
            process.stdin.flush()
        except BrokenPipeError:
            raise PeerUnsupported(f"pypy3 ended: {self._stderr()}") from None
        ready, _, _ = select.select([process.stdout], [], [], PYPY_TIMEOUT_S)
        if not ready:
            self.close()
            raise PeerUnsupported(f"pypy3 did not answer within {PYPY_TIMEOUT_S:.0f} s")
        header = process.stdout.read(4)
        if len(header) < 4:
            raise PeerUnsupported(f"pypy3 ended: {self._stderr()}")
        reply = pickle.loads(process.stdout.read(struct.unpack(">I", header)[0]))
        if reply[0] == "error":
            raise PeerUnsupported(f"pypy3: {reply[1]}")
        return reply

    def prepare(self) -> object:
        return None  # PyPy copies the arguments itself, before its clock starts

    def timed(self, prepared: object) -> float:
        return float(self.request(("time",))[1])  # type: ignore[arg-type]

    def check(self) -> Outcome:
        _, returned, arguments, raised = self.request(("check",))
        return Outcome(returned, tuple(arguments), raised)  # type: ignore[arg-type]

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
            if stream is not None:
                stream.close()

    def _stderr(self) -> str:
        """Why the subprocess ended: its error output's telling line (it has ended, so reading it returns)."""
        assert self._process.stderr is not None
        return _first_error(self._process.stderr.read().decode(errors="replace")) or f"exit code {self._process.wait()}"


def temporary_build_dir() -> tempfile.TemporaryDirectory[str]:
    """Where the peers of one run build; removed with everything in it when the run ends."""
    return tempfile.TemporaryDirectory(prefix="repoos-fsm-peers-")


def _copy(value: object) -> object:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, bytearray | list):
        return type(value)(value)
    return value


def _first_error(text: str) -> str:
    """The line of a compiler's output that says what went wrong, else its last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in lines:
        if ": error:" in line or line.startswith(("Error", "error:")) or "Error:" in line:
            return line
    return lines[-1] if lines else "no output"


def _one_line(text: str) -> str:
    """A Numba error's first meaningful line (its messages run over many, with ANSI highlighting)."""
    lines = [line.strip() for line in text.replace("\x1b[1m", "").replace("\x1b[0m", "").splitlines() if line.strip()]
    return " ".join(lines[:2]) if lines else text

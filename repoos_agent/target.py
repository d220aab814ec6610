"""What a command is pointed at: a bundled kernel name or `path/to/file.py:function`."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType

from repoos_agent.catalog import SIZE_CLASSES, BundledKernel, bundled_ranks, find_bundled
from repoos_agent.errors import ArgumentSpecError, SourceError, UnknownTargetError
from repoos_agent.ingest import FunctionReport, ingest_file, load_kernel
from repoos_agent.inputs import ArgSpec, InputError, make_inputs, ranks_of
from repoos_agent.model.kernel import Kernel

ORIGINAL = "__repoos_original__"
"""The attribute under which the runtime's wrappers (`swap`, `@accelerate`) keep the Python function they
stand for: the oracle is that function, and resolving a target need not know the runtime to find it."""


@dataclass(frozen=True)
class Target:
    """A kernel's model, its Python original, and how to make its inputs."""

    label: str
    kernel: Kernel
    function: Callable[..., object]
    bundled: BundledKernel | None = None
    arg_specs: tuple[ArgSpec, ...] = field(default=())

    def inputs(self, size: str | None, seed: int = 0) -> dict[str, object]:
        """Bundled kernels use PolyBench's init at `size`; user kernels their `--arg` specs."""
        if self.bundled is not None:
            return self.bundled.inputs(self.size_class(size))
        self.size_class(size)
        return make_inputs(self.kernel, list(self.arg_specs), seed)

    def size_class(self, size: str | None) -> str | None:
        """The size class `size` names (SMALL by default), checked; user kernels take none."""
        if self.bundled is None:
            if size is not None:
                raise InputError(
                    lambda fields: f"{fields.size} applies to bundled kernels; give user kernels their sizes with {fields.args}"
                )
            return None
        wanted = (size or "SMALL").upper()
        if wanted not in SIZE_CLASSES:
            raise ArgumentSpecError(f"unknown size `{size}`; sizes are {', '.join(SIZE_CLASSES)}")
        return wanted

    def python_function(self) -> Callable[..., object]:
        """The Python original itself, as the user's program calls it (a user's module is imported now)."""
        return self.function.imported() if isinstance(self.function, ModuleFunction) else self.function

    def python_source(self) -> tuple[Path, str] | None:
        """The file and function name of the Python original, for a race that imports it afresh."""
        if self.bundled is not None:
            return self.bundled.path, self.bundled.function
        if isinstance(self.function, ModuleFunction):
            return self.function.path, self.function.name
        return None

    @property
    def sizes(self) -> tuple[str, ...]:
        return SIZE_CLASSES if self.bundled is not None else ()


def resolve_target(text: str, arg_specs: list[ArgSpec] | None = None) -> Target:
    """Find the kernel a user named; every failure says what was expected."""
    arg_specs = arg_specs or []
    path = target_file(text)
    if path is not None and ":" in text:
        function = text.rsplit(":", 1)[1]
        own = (bundled_ranks(path) or {}).get(function, {})  # a bundled kernel's file named by its path
        kernel = load_kernel(path, function, ranks_of(arg_specs).over(own))
        return Target(text, kernel, ModuleFunction(path, function), None, tuple(arg_specs))
    if text.endswith(".py"):
        raise UnknownTargetError(f"`{text}`: name the function too, as `{text}:FUNCTION`")
    bundled = find_bundled(text)
    if arg_specs:
        raise InputError(lambda fields: f"{fields.args} applies to `path.py:function` targets; bundled kernels take {fields.size}")
    kernel = load_kernel(bundled.path, bundled.function, bundled.ranks())
    return Target(bundled.name, kernel, bundled.python_function(), bundled)


def ingest_path(path: str | Path, arg_specs: Sequence[ArgSpec] = ()) -> list[FunctionReport]:
    """Every function of a file, modelled with the ranks its inputs give as `resolve_target` models one (a
    bundled kernel's from its own inputs): `ingest` and `check` agree on what they can model."""
    return ingest_file(path, bundled_ranks(path), ranks_of(arg_specs))


def target_file(text: str) -> Path | None:
    """The file a `path.py:function` target names (or a bare `path.py`), None for a bundled kernel's name."""
    if ":" in text and (text.rsplit(":", 1)[0].endswith(".py") or "/" in text):
        return Path(text.rsplit(":", 1)[0])
    if text.endswith(".py"):
        return Path(text)
    return None


@dataclass(frozen=True)
class ModuleFunction:
    """A user's function, imported at its first call: only `check` runs the Python original, so
    resolving a target (for analysis, legality, a build, the MCP server) never executes the user's module."""

    path: Path
    name: str

    def imported(self) -> Callable[..., object]:
        """The Python function itself (its module is imported now, once)."""
        return _import_function(self.path, self.name)

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self.imported()(*args, **kwargs)


def _import_function(path: Path, function: str) -> Callable[..., object]:
    """The user's function, to run as the oracle; its module runs once per version of the file."""
    resolved = path.resolve()
    module = _import_module(resolved, resolved.stat().st_mtime_ns if resolved.exists() else 0)
    found = getattr(module, function)
    # Under `@accelerate` (or a swap) the oracle is still the Python function itself.
    return getattr(found, ORIGINAL, found)


@cache
def _import_module(path: Path, modified_ns: int) -> ModuleType:
    """Import the user's file as a module (`modified_ns` keys the cache: an edited file is imported afresh)."""
    module_name = f"repoos_user_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise SourceError(str(path), "cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's module failing to import is a report, not a crash
        raise SourceError(str(path), f"importing it raised {type(exc).__name__}: {exc}") from None
    return module

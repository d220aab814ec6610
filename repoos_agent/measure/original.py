"""The Python original as a race contender: loaded in the measurement worker, called with the
arguments by name, what it returns kept beside them so that outputs compare.

The NumPy kernels' peers race it in `repoos eval`, and the search's racing finish races it
against a NumPy program's winner, so that no kernel is ever slower than the user's own code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

from threadpoolctl import ThreadpoolController

from repoos_agent.backends.cc import engine_work
from repoos_agent.errors import RepoosError
from repoos_agent.measure.layout import fresh_copy
from repoos_agent.model.kernel import ReturnValue, named_results

RETURNED = "returned"
"""Returned values join the compared outputs under this name (`returned[0]`, `returned[1]` for a tuple)."""


def returned_values(result: object) -> dict[str, object]:
    """A call's return as named outputs: none, `returned`, or `returned[i]` for each item of a tuple."""
    if result is None:
        return {}
    if isinstance(result, tuple):
        return {f"{RETURNED}[{index}]": item for index, item in enumerate(result)}
    return {RETURNED: result}


def compiles_at_first_call(function: object) -> bool:
    """Whether `function` is compiled for its arguments' types at its first call (Numba's `@njit`, `@jit`): that
    call is mostly the compiler's, which a user's program pays once, so no timing of the original may include it."""
    dispatcher = sys.modules.get("numba.core.dispatcher")  # a process that never imported Numba holds no dispatcher
    return dispatcher is not None and isinstance(function, dispatcher.Dispatcher)


def warm_up(function: Callable[..., object], arguments: Mapping[str, object]) -> None:
    """Call `function` once on a copy of `arguments` (by name) when it compiles at its first call, before any
    timing of it: the original is timed warm, as the user's program runs it after its first call."""
    if compiles_at_first_call(function):
        with engine_work():  # Numba's compiler is a compiler: never beside another process's timed run
            function(**fresh_copy(arguments))


def by_name(function: Callable[..., object], order: list[str]) -> Callable[[dict[str, object]], object]:
    """`function` as the worker calls a contender: arguments by name; returns stored beside them for comparison."""

    def call(values: dict[str, object]) -> object:
        result = function(*(values[name] for name in order))
        values.update(returned_values(result))
        return result

    return call


@cache
def module_at(path: str, tag: str) -> ModuleType:
    """The kernel's module imported afresh under a name of its own (a peer rewrites its functions in place)."""
    name = f"repoos_{tag}_{Path(path).stem}_{hashlib.sha256(path.encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RepoosError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def parameters_of(path: str, function: str) -> list[str]:
    return list(inspect.signature(getattr(module_at(path, "numpy"), function)).parameters)


@dataclass(frozen=True)
class TeamSizedCall:
    """A loaded contender as the worker races it: called with the arguments by name; `set_team(threads)`
    runs its next calls on that many threads where its runtime lets one say so (a no-op where not)."""

    call: Callable[[dict[str, object]], object]
    team_setters: tuple[Callable[[int], None], ...] = ()
    compiled_at_first_call: bool = False  # a JIT (Numba): the race calls it once, untimed, before its checked run

    def __call__(self, values: dict[str, object]) -> object:
        return self.call(values)

    def set_team(self, threads: int) -> None:
        for setter in self.team_setters:
            setter(max(1, int(threads)))


def _blas_team() -> tuple[Callable[[int], None], ...]:
    """threadpoolctl's limit on the BLAS libraries loaded in this process (NumPy's bundled OpenBLAS). Unsized,
    it kept a thread per core while a race found one free and ran the engine's candidates on one thread: the
    NumPy original raced on both cores against candidates on one."""
    controller = ThreadpoolController()
    return (lambda threads: controller.limit(limits=threads, user_api="blas"),)


@dataclass(frozen=True)
class NumpyOriginal:
    """The NumPy kernel itself, the reference its peers race (loaded in the measurement worker)."""

    path: str
    function: str
    results: tuple[tuple[str, bool], ...] = ()  # racing the engine: its names for what the function returns
    returns_tuple: bool = False

    def load(self) -> TeamSizedCall:
        function = getattr(module_at(self.path, "numpy"), self.function)
        call, jit = by_name(function, parameters_of(self.path, self.function)), compiles_at_first_call(function)
        if not self.results:
            return TeamSizedCall(call, _blas_team(), jit)
        returns = tuple(ReturnValue(name, scalar) for name, scalar in self.results)

        def named(values: dict[str, object]) -> object:
            result = call(values)
            for key in [key for key in values if key.startswith(RETURNED)]:
                del values[key]
            values.update(named_results(returns, self.returns_tuple, result))
            return result

        return TeamSizedCall(named, _blas_team(), jit)

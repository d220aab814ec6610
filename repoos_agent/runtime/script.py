"""`repoos run script.py ARGS…`: run a program with every function that has a VerifiedKernel swapped in.

The swap happens at import: each module whose file has VerifiedKernels (the script
itself, or anything it imports) is compiled from a syntax tree in which every
top-level `def` of such a function is followed by `name = swap(name)`. The rest of
the program, and every other module, runs untouched, and calls made while the
module is still executing already reach the native kernel.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable
from pathlib import Path

from repoos_agent.errors import SourceError
from repoos_agent.ingest.parse import read_source
from repoos_agent.runtime.swap import swap
from repoos_agent.store import GraphStore, VerifiedKernel

SWAP_NAME = "__repoos_swap__"

Contracts = dict[str, dict[str, VerifiedKernel]]  # resolved file path -> function name -> contract


def contracts_by_file(store: GraphStore) -> Contracts:
    found: Contracts = {}
    for contract in store.all(VerifiedKernel):
        path, name = contract.function.rsplit(":", 1)
        found.setdefault(path, {})[name] = contract
    return found


def swapping_code(source: str, path: str, names: set[str]) -> types.CodeType:
    """`source` compiled with `name = __repoos_swap__(name, "name")` after each top-level `def name` in `names`."""
    tree = ast.parse(source, path)
    body: list[ast.stmt] = []
    for statement in tree.body:
        body.append(statement)
        if isinstance(statement, ast.FunctionDef) and statement.name in names:
            call = ast.Call(
                ast.Name(SWAP_NAME, ast.Load()), [ast.Name(statement.name, ast.Load()), ast.Constant(statement.name)], []
            )
            assign = ast.Assign([ast.Name(statement.name, ast.Store())], call)
            body.append(ast.copy_location(assign, statement))
    tree.body = body
    return compile(ast.fix_missing_locations(tree), path, "exec", dont_inherit=True)


def _swapper(contracts: dict[str, VerifiedKernel], graph: str) -> Callable[[Callable[..., object], str], object]:
    """The `__repoos_swap__` of one module: its functions' contracts, from the store `graph` (named in warnings)."""
    return lambda function, name: swap(function, contract=contracts[name], graph=graph)


class _SwappingLoader(importlib.machinery.SourceFileLoader):
    """Loads a module from source through `swapping_code` (never from a cached .pyc)."""

    def __init__(self, fullname: str, path: str, contracts: dict[str, VerifiedKernel], graph: str) -> None:
        super().__init__(fullname, path)
        self._contracts = contracts
        self._graph = graph

    def get_code(self, fullname: str) -> types.CodeType:
        source = self.get_data(self.path).decode("utf-8")
        return swapping_code(source, self.path, set(self._contracts))

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__[SWAP_NAME] = _swapper(self._contracts, self._graph)
        super().exec_module(module)


class _SwappingFinder(importlib.abc.MetaPathFinder):
    """Hands modules whose file has VerifiedKernels to `_SwappingLoader`; all others to the usual finders."""

    def __init__(self, contracts: Contracts, graph: str) -> None:
        self._contracts = contracts
        self._graph = graph

    def find_spec(self, fullname, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return None
        mine = self._contracts.get(str(Path(spec.origin).resolve()))
        if not mine:
            return None
        spec.loader = _SwappingLoader(fullname, spec.origin, mine, self._graph)
        return spec


def run_script(path: str, argv: list[str], store: GraphStore | None) -> None:
    """Run `path` as `__main__` with `argv`, swapped as the module docstring says (nothing is swapped without a
    store). The script's exceptions propagate."""
    source = read_source(path)
    resolved = str(Path(path).resolve())
    contracts = contracts_by_file(store) if store is not None else {}
    graph = store.location if store is not None else ""
    try:
        code = swapping_code(source, path, set(contracts.get(resolved, {})))
    except SyntaxError as error:
        raise SourceError(f"{path}:{error.lineno}:{error.offset}", f"syntax error: {error.msg}") from None
    _swap_loaded_modules(contracts, graph)
    finder = _SwappingFinder(contracts, graph)
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": path, "__builtins__": __builtins__, SWAP_NAME: _swapper(contracts.get(resolved, {}), graph)})
    saved = sys.argv, list(sys.path), sys.modules.get("__main__")
    sys.argv = [path, *argv]
    sys.path.insert(0, str(Path(resolved).parent))  # as `python script.py` would, keeping the engine importable
    sys.modules["__main__"] = main
    sys.meta_path.insert(0, finder)
    try:
        exec(code, main.__dict__)
    finally:
        sys.meta_path.remove(finder)
        sys.argv, sys.path[:] = saved[0], saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]


def _swap_loaded_modules(contracts: Contracts, graph: str) -> None:
    """Modules imported before the script started (rare) get their functions swapped in place."""
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        mine = contracts.get(str(Path(origin).resolve())) if origin else None
        for name, contract in (mine or {}).items():
            function = getattr(module, name, None)
            if callable(function):
                setattr(module, name, swap(function, contract=contract, graph=graph))

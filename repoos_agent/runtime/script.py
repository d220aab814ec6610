"""`repoos run script.py ARGS…`: run a program with every function that has a contract swapped in.

The swap happens at import: each module whose file has contracts (the script itself, or
anything it imports) is compiled from a syntax tree in which every top-level `def` of a
function with a VerifiedKernel (or another track's contract: an fsm function's FsmKernel) is
followed by `name = swap(name)`. A function with a
TabularKernel (an ORM endpoint) gets the swap as its innermost decorator instead: a route
decorator such as `@app.get(...)` registers the function when the `def` runs, so only a swap
applied before it puts the route on the guarded fast path. Each swapped endpoint is named in
one line on stderr. The rest of the program, and every other module, runs untouched, and calls
made while the module is still executing already reach the swapped function.
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
from repoos_agent.store import FsmKernel, GraphStore, TabularKernel, VerifiedKernel
from repoos_agent.tracks import Track, registered_tracks, swapping_track

SWAP_NAME = "__repoos_swap__"

Contract = VerifiedKernel | TabularKernel | FsmKernel  # a VerifiedKernel, or a track's contract (`Track.contract`)
Contracts = dict[str, dict[str, Contract]]  # resolved file path -> function name -> contract


def contracts_by_file(store: GraphStore) -> Contracts:
    found: Contracts = {}
    kinds = [VerifiedKernel, *(track.contract for track in registered_tracks() if track.contract is not None)]
    for contract in [record for kind in dict.fromkeys(kinds) for record in store.all(kind)]:
        path, name = contract.function.rsplit(":", 1)
        found.setdefault(path, {})[name] = contract
    return found


def swapping_code(source: str, path: str, contracts: dict[str, Contract]) -> types.CodeType:
    """`source` compiled with `name = __repoos_swap__(name, "name")` after each top-level `def name` with a
    VerifiedKernel, and `@__repoos_swap__.endpoint("name")` as the innermost decorator of each with a TabularKernel."""
    tree = ast.parse(source, path)
    body: list[ast.stmt] = []
    for statement in tree.body:
        body.append(statement)
        if not isinstance(statement, ast.FunctionDef) or statement.name not in contracts:
            continue
        name = statement.name
        if isinstance(contracts[name], TabularKernel):
            endpoint = ast.Attribute(ast.Name(SWAP_NAME, ast.Load()), "endpoint", ast.Load())
            statement.decorator_list.append(ast.copy_location(ast.Call(endpoint, [ast.Constant(name)], []), statement))
        else:
            call = ast.Call(ast.Name(SWAP_NAME, ast.Load()), [ast.Name(name, ast.Load()), ast.Constant(name)], [])
            body.append(ast.copy_location(ast.Assign([ast.Name(name, ast.Store())], call), statement))
    tree.body = body
    return compile(ast.fix_missing_locations(tree), path, "exec", dont_inherit=True)


class _ModuleSwapper:
    """The `__repoos_swap__` of one module: its functions' contracts, from the store `graph` (named in warnings)."""

    def __init__(self, contracts: dict[str, Contract], graph: str) -> None:
        self._contracts = contracts
        self._graph = graph
        self._endpoints: list[tuple[Callable[..., object], Track]] = []

    def __call__(self, function: Callable[..., object], name: str) -> object:
        return swap(function, contract=self._contracts[name], graph=self._graph)  # type: ignore[arg-type]

    def endpoint(self, name: str) -> Callable[[Callable[..., object]], Callable[..., object]]:
        """The decorator that guards endpoint `name` by its TabularKernel, and says so on stderr."""

        def decorate(function: Callable[..., object]) -> Callable[..., object]:
            record = self._contracts[name]
            swapped = swapped_endpoint(function, record)  # type: ignore[arg-type]
            if swapped is not function:
                self._endpoints.append((swapped, swapping_track(record)))
            return swapped

        return decorate

    def recheck_routes(self) -> None:
        """Once the module has run: its swapped endpoints' routes checked as `install` checks them."""
        for endpoint, track in self._endpoints:
            if track.recheck is not None:
                track.recheck(endpoint)


def swapped_endpoint(function: Callable[..., object], record: TabularKernel) -> Callable[..., object]:
    """`function` on its verified fast path, named in one line on stderr (the fallback warning says why not)."""
    track = swapping_track(record)
    swapped = track.swap(function, record) if track.swap is not None else function
    if swapped is not function:
        print(f"repoos: swapped {record.function}: its verified fast path, guarded (TabularKernel)", file=sys.stderr)
    return swapped


class _SwappingLoader(importlib.machinery.SourceFileLoader):
    """Loads a module from source through `swapping_code` (never from a cached .pyc)."""

    def __init__(self, fullname: str, path: str, contracts: dict[str, Contract], graph: str) -> None:
        super().__init__(fullname, path)
        self._contracts = contracts
        self._graph = graph

    def get_code(self, fullname: str) -> types.CodeType:
        source = self.get_data(self.path).decode("utf-8")
        return swapping_code(source, self.path, self._contracts)

    def exec_module(self, module: types.ModuleType) -> None:
        swapper = module.__dict__[SWAP_NAME] = _ModuleSwapper(self._contracts, self._graph)
        super().exec_module(module)
        swapper.recheck_routes()


class _SwappingFinder(importlib.abc.MetaPathFinder):
    """Hands modules whose file has contracts to `_SwappingLoader`; all others to the usual finders."""

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
        code = swapping_code(source, path, contracts.get(resolved, {}))
    except SyntaxError as error:
        raise SourceError(f"{path}:{error.lineno}:{error.offset}", f"syntax error: {error.msg}") from None
    _swap_loaded_modules(contracts, graph)
    finder = _SwappingFinder(contracts, graph)
    main = types.ModuleType("__main__")
    swapper = _ModuleSwapper(contracts.get(resolved, {}), graph)
    main.__dict__.update({"__file__": path, "__builtins__": __builtins__, SWAP_NAME: swapper})
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
    """Modules imported before the script started (rare) get their functions swapped in place (a route registered
    by then keeps its original endpoint: `repoos_agent.tabular.swap.install(app)` moves it)."""
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        mine = contracts.get(str(Path(origin).resolve())) if origin else None
        swapper = _ModuleSwapper(mine or {}, graph)
        for name, contract in (mine or {}).items():
            function = getattr(module, name, None)
            if callable(function):
                swapped = swapper.endpoint(name)(function) if isinstance(contract, TabularKernel) else swapper(function, name)
                setattr(module, name, swapped)

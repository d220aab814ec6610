"""`swap` and `@accelerate`: the user's function, called through its verified native kernel.

A swapped function keeps the original's signature and behaviour: every call is
guarded (dtype, dimensions, contiguity, writeability, aliasing, and the kernel's own
shape checks, which run before any write) and a call the native kernel must not
take runs the Python original instead, with one warning per reason. The caller's
NumPy buffers are passed as pointers: nothing is copied.
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from repoos_agent.backends.build import build_baseline
from repoos_agent.errors import NotAnalyzableError, RepoosError
from repoos_agent.ingest import load_kernel
from repoos_agent.ingest.ranks import CallShapes
from repoos_agent.model.signature import Signature
from repoos_agent.runtime.contract import load_contract
from repoos_agent.runtime.plan import CallPlan, KernelInterface
from repoos_agent.store import GraphStore, VerifiedKernel, live_identity, missing_store, open_store, store_location
from repoos_agent.store.graph import StoreError
from repoos_agent.target import ORIGINAL
from repoos_agent.tracks import named_track, registered_tracks, swapping_track


class SwapFallbackWarning(RuntimeWarning):
    """A swapped function ran as Python; the message says why."""


_STORES: dict[str, GraphStore] = {}
_STORES_LOCK = threading.Lock()


def _store(location: str) -> GraphStore:
    """The store at `location`, opened once per process (its callers make sure there is one to read)."""
    with _STORES_LOCK:
        if location not in _STORES:
            _STORES[location] = open_store(location)
        return _STORES[location]


@dataclass(frozen=True)
class ContractLookup:
    """What a graph store holds for a function: its VerifiedKernel, or why there is none to use."""

    contract: VerifiedKernel | None  # one that holds for the function's current source
    reason: str  # why there is no contract ("" when there is), naming the store that was read
    store: str = ""  # the store's path or URL ("" when no store was read)


def find_contract(func: Callable[..., object], graph: str | None = None) -> ContractLookup:
    """`func`'s VerifiedKernel if it holds for the function's current source, else why not.

    Without `graph`, the store is the one `store_location` finds from the function's own file (then the
    working directory): a program started from another directory still reaches its project's store."""
    identity = live_identity(func)
    name = getattr(func, "__qualname__", repr(func))
    if identity is None:
        return ContractLookup(None, f"the source of `{name}` cannot be found, so it cannot be matched with a VerifiedKernel")
    key, _ = identity
    source_file = key.rsplit(":", 1)[0]
    missing = missing_store(graph, source_file)
    if missing:
        return ContractLookup(
            None, f"{missing} (run `repoos optimize` on `{name}` first, or name the store with graph= or $REPOOS_GRAPH)"
        )
    location = store_location(graph, source_file)
    try:
        contract = _store(location).get(VerifiedKernel, key)
    except StoreError as error:
        return ContractLookup(None, str(error), location)
    if contract is None:
        return ContractLookup(
            None, f"the graph store {location} has no VerifiedKernel for {key} (run `repoos optimize` on it)", location
        )
    return _checked(func, contract, location)


def _checked(func: Callable[..., object], contract: VerifiedKernel, store: str) -> ContractLookup:
    """`contract`, from `store` (path or URL, "" when unknown), unless it no longer holds for `func`."""
    stale = _stale(func, contract)
    return ContractLookup(None if stale else contract, _in_store(stale, store), store)


def _stale(func: Callable[..., object], contract: VerifiedKernel) -> str:
    """Why `contract` no longer holds for `func` as its source reads now ("" when it holds).

    Checked on every swap, however the contract was found: a kernel built from an older
    body would compute the old function."""
    identity = live_identity(func)
    name = getattr(func, "__qualname__", repr(func))
    if identity is None:
        return f"the source of `{name}` cannot be found, so it cannot be matched with its VerifiedKernel"
    if identity[1] != contract.source_hash:
        return f"the source of `{name}` changed since its VerifiedKernel was recorded ({contract.recorded_at})"
    return ""


class SwappedFunction:
    """Callable like the original; runs native code when a plan is bound and the call passes the guards."""

    def __init__(self, python: Callable[..., object], plan: CallPlan | None = None, route: str = "Python") -> None:
        functools.update_wrapper(self, python)
        self.python = python
        setattr(self, ORIGINAL, python)
        self.route = route  # what calls run on, for reports: "VerifiedKernel (...)", "baseline build" or "Python"
        self._plan = plan
        self._warned: set[str] = set()
        self._warn_lock = threading.Lock()

    @property
    def native(self) -> bool:
        """Whether calls that pass the guards run native code."""
        return self._plan is not None

    @property
    def plan(self) -> CallPlan | None:
        """The native kernel and its guards (None: every call runs the Python original)."""
        return self._plan

    def __call__(self, *args: object, **kwargs: object) -> object:
        plan = self._plan
        if plan is not None:
            values = plan.bind(args, kwargs)
            if values is not None:
                plan.check_entry(values)
                prepared = plan.prepare(values)
                if type(prepared) is not str:
                    done, result = plan.run(prepared, values)  # type: ignore[arg-type]
                    if done:
                        return result
                    prepared = f"the native kernel refused the call: {result}"
                self.fall_back(prepared)  # type: ignore[arg-type]
        return self.python(*args, **kwargs)

    def fall_back(self, reason: str) -> None:
        """Warn once per distinct reason that this function is running as Python."""
        with self._warn_lock:
            if reason in self._warned:
                return
            self._warned.add(reason)
        warnings.warn(f"`{self.__qualname__}` runs as Python: {reason}", SwapFallbackWarning, stacklevel=3)


def _python_of(func: Callable[..., object]) -> Callable[..., object]:
    return func.python if isinstance(func, (SwappedFunction, Accelerated)) else func


def swap(func: Callable[..., object], *, graph: str | None = None, contract: object | None = None) -> SwappedFunction:
    """`func` with calls routed to its VerifiedKernel: `contract` if given (from the store `graph`, if it names
    one), else the one the graph store holds (`graph`, else the store `store_location` finds from `func`'s file).
    A function another track holds a contract for (an fsm function's FsmKernel) is swapped by that track.

    Without a usable contract, or when the library cannot be loaded, the result runs
    the Python original and warns once, saying why and naming the store."""
    python = _python_of(func)
    if contract is not None and not isinstance(contract, VerifiedKernel):
        return track_swap(python, contract)
    lookup = find_contract(python, graph) if contract is None else _checked(python, contract, graph or "")
    if lookup.contract is None and contract is None:
        record = track_record(python, lookup.store)
        if record is not None:
            return track_swap(python, record)
    reason = lookup.reason
    if lookup.contract is not None:
        try:
            native = load_contract(lookup.contract)
            plan = CallPlan(python, KernelInterface.of_contract(lookup.contract), native)
            route = f"VerifiedKernel `{lookup.contract.schedule or '(source order)'}` ({lookup.contract.backend})"
            return SwappedFunction(python, plan, route)
        except RepoosError as error:
            reason = _in_store(f"its VerifiedKernel cannot be used: {error}", lookup.store)
    swapped = SwappedFunction(python)
    swapped.fall_back(reason)
    return swapped


def track_record(python: Callable[..., object], store: str) -> object | None:
    """Another track's contract for `python` in the graph store `store` ("" for none): the record of the first
    registered track that swaps functions in and whose contract the store holds for it (the fsm track's FsmKernel)."""
    identity = live_identity(python)
    if not store or identity is None:
        return None
    for track in registered_tracks():
        if track.contract is None or track.swap is None or track.contract is VerifiedKernel:
            continue
        try:
            record = _store(store).get(track.contract, identity[0])
        except StoreError:
            return None
        if record is not None:
            return record
    return None


def track_swap(python: Callable[..., object], record: object) -> SwappedFunction:
    """`python` swapped by the track whose contract `record` is (it checks that the record still holds)."""
    track = swapping_track(record)
    return track.swap(python, record)  # type: ignore[misc, return-value]


def _in_store(reason: str, store: str) -> str:
    """`reason`, saying which graph store the contract came from when that is known."""
    return f"{reason}, in the graph store {store}" if reason and store else reason


class Accelerated:
    """`@accelerate`: the VerifiedKernel (or another track's record) when there is one, else the baseline built for
    the first call's types: the loop track's, or that of the track ingest sends the function to instead."""

    def __init__(self, python: Callable[..., object], graph: str | None = None) -> None:
        functools.update_wrapper(self, python)
        self.python = python
        setattr(self, ORIGINAL, python)
        self._graph = graph
        self._swapped: SwappedFunction | None = None
        self._lock = threading.Lock()

    @property
    def route(self) -> str:
        return self._swapped.route if self._swapped else "not called yet"

    def __call__(self, *args: object, **kwargs: object) -> object:
        swapped = self._swapped
        if swapped is None:
            try:
                bound = inspect.signature(self.python).bind(*args, **kwargs)
            except TypeError:
                return self.python(*args, **kwargs)  # a call that does not fit: Python raises the usual TypeError
            bound.apply_defaults()
            with self._lock:
                if self._swapped is None:
                    self._swapped = self._resolve(bound.arguments)
                swapped = self._swapped
        return swapped(*args, **kwargs)

    def _resolve(self, values: dict[str, object]) -> SwappedFunction:
        lookup = find_contract(self.python, self._graph)
        if lookup.contract is not None:
            swapped = swap(self.python, contract=lookup.contract, graph=lookup.store)
            if swapped.native:
                return swapped
        else:
            record = track_record(self.python, lookup.store)
            if record is not None:
                swapped = track_swap(self.python, record)
                if swapped.native:
                    return swapped
        try:
            return self._baseline(values)
        except RepoosError as error:
            swapped = SwappedFunction(self.python)
            swapped.fall_back(f"no native build: {error}" + (f" (and {lookup.reason})" if lookup.reason else ""))
            return swapped

    def _baseline(self, values: dict[str, object]) -> SwappedFunction:
        identity = live_identity(self.python)
        if identity is None:
            raise RepoosError(f"the source of `{self.__qualname__}` cannot be found")
        path, name = identity[0].rsplit(":", 1)
        try:
            kernel = load_kernel(path, name, CallShapes.of_values(values))
        except NotAnalyzableError as refused:
            track = named_track(refused.track)
            if track is None or track.baseline is None:
                raise
            return track.baseline(self.python, values)  # type: ignore[return-value]
        signature = Signature.of_values(kernel, values)
        native = build_baseline(kernel, signature)
        plan = CallPlan(self.python, KernelInterface.of_kernel(kernel, signature), native)
        return SwappedFunction(self.python, plan, "baseline build (source order)")


def accelerate(func: Callable[..., object] | None = None, *, graph: str | None = None):
    """Decorator: `@accelerate` or `@accelerate(graph="path/or/bolt-url")`."""
    if func is None:
        return lambda inner: Accelerated(inner, graph)
    return Accelerated(func, graph)

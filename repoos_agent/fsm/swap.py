"""An fsm function's stored winner swapped in for it (`swap`, `@accelerate`, `repoos run`).

The store keeps the winner's rewrites, not its C: the engine lowers the function's source again for the types it
was raced with, applies the steps and compiles, so what runs is what the engine builds from what the user reads
now. A record whose source hash no longer matches the function, or whose steps no longer apply, is not used: the
function runs as Python, with one warning that says why. A call the build cannot take (other argument types, an
index out of range, an int past 64 bits) runs the original, as `FsmNative` does for every call.

Without a record, `@accelerate` builds the baseline: the function lowered for its first call's types, in source
order. A function the track refuses for those types runs as Python, with one warning naming the line and why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from tree_sitter import Node

from repoos_agent.errors import RepoosError, SourceError
from repoos_agent.fsm import ir
from repoos_agent.fsm.lower import FsmRefusal, lower_function
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.proposals import parse_proposal
from repoos_agent.fsm.rewrites.registry import apply_steps
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from repoos_agent.runtime.swap import SwappedFunction
from repoos_agent.store import FsmKernel, live_identity


class FsmSwapped(SwappedFunction):
    """Callable like the original: every call goes to the rebuilt winner, which runs the original where it must."""

    def __init__(self, python: Callable[..., object], native: FsmNative, route: str) -> None:
        super().__init__(python, None, route)
        self._native = native

    @property
    def native(self) -> bool:
        return True

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self._native(*args, **kwargs)


def parameter_spelling(function: ir.Function) -> tuple[str, ...]:
    """The types `function` was lowered for, as the store keeps them: "name:int", "name:bytes", "name:array:uint8"."""
    spelled = []
    for parameter in function.parameters:
        if isinstance(parameter, str):
            spelled.append(f"{parameter}:{ir.INT}")
        elif parameter.kind == ir.ARRAY:
            spelled.append(f"{parameter.name}:{parameter.kind}:{parameter.dtype}")
        else:
            spelled.append(f"{parameter.name}:{parameter.kind}")
    return tuple(spelled)


def parameter_types(spelled: tuple[str, ...]) -> dict[str, ir.Sequence | str]:
    """`parameter_spelling` read back into the types `lower_function` takes."""
    types: dict[str, ir.Sequence | str] = {}
    for item in spelled:
        name, kind, *dtype = item.split(":")
        types[name] = ir.INT if kind == ir.INT else ir.Sequence(name, kind, *dtype)
    return types


def function_node(path: str | Path, name: str) -> Node:
    """The syntax tree of top-level function `name` in the file at `path`."""
    tree = parse_source(read_source(path), str(path))
    for node in functions(tree):
        if text(node.child_by_field_name("name")) == name:
            return node
    raise SourceError(str(path), f"no top-level function named `{name}`")


def rebuild(python: Callable[..., object], record: FsmKernel) -> FsmNative:
    """The stored winner built again from `python`'s source and the record's steps (or why not, as a `RepoosError`)."""
    identity = live_identity(python)
    if identity is None or identity[1] != record.source_hash:
        raise RepoosError(f"the source of `{record.function}` changed since its FsmKernel was recorded ({record.recorded_at})")
    path, name = record.function.rsplit(":", 1)
    lowered = lower_function(function_node(path, name), parameter_types(record.parameters))
    steps = parse_proposal(record.steps) if record.steps else ()
    return FsmNative(apply_steps(lowered, steps).function, python)


def swap(python: Callable[..., object], record: FsmKernel) -> SwappedFunction:
    """`python` with its calls on the stored winner; without a usable one, `python` itself and one warning."""
    try:
        native = rebuild(python, record)
    except RepoosError as error:
        unswapped = SwappedFunction(python)
        unswapped.fall_back(f"its FsmKernel cannot be used: {error}")
        return unswapped
    return FsmSwapped(python, native, f"FsmKernel `{record.steps or 'baseline'}`")


def baseline(python: Callable[..., object], values: Mapping[str, object]) -> SwappedFunction:
    """`python` built in source order for arguments typed as `values` (a call's, by parameter name), or the
    track's refusal at its file and line."""
    identity = live_identity(python)
    if identity is None:
        raise RepoosError(f"the source of `{getattr(python, '__qualname__', python)}` cannot be found")
    path, name = identity[0].rsplit(":", 1)
    try:
        native = FsmNative(lower_for(function_node(path, name), values), python)
    except FsmRefusal as refusal:
        raise FsmRefusal(refusal.line, f"`{name}` is not modelled by the fsm track: {refusal.reason}", Path(path)) from None
    return FsmSwapped(python, native, "fsm baseline build (source order)")

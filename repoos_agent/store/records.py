"""What the semantic graph holds: one frozen dataclass per node kind, and the relations between them.

Every record has a `key` unique within its kind, built from the function's identity
(`/abs/path/file.py:name`), so writing the same fact twice merges instead of duplicating.
Fields are plain values (str, int, float, bool, None, tuples of str) so both backends
store them as native properties.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Module:
    """A Python source file that was ingested."""

    KIND: ClassVar[str] = "Module"
    key: str  # the file's absolute path
    path: str
    name: str


@dataclass(frozen=True)
class Function:
    """A top-level function, with the native baseline (C and MLIR text) built from its model."""

    KIND: ClassVar[str] = "Function"
    key: str  # "/abs/path.py:name": the identity the runtime looks kernels up by
    module: str
    name: str
    line: int
    source_hash: str
    track: str
    reason: str
    analyzable: bool
    arguments: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()
    baseline_signature: tuple[str, ...] = ()  # "name:type" pairs the baseline text was generated for
    baseline_c: str | None = None
    baseline_mlir: str | None = None


@dataclass(frozen=True)
class Statement:
    KIND: ClassVar[str] = "Statement"
    key: str
    function: str
    label: str
    line: int
    text: str
    loops: tuple[str, ...]
    reduction: bool


@dataclass(frozen=True)
class Loop:
    KIND: ClassVar[str] = "Loop"
    key: str
    function: str
    name: str
    depth: int
    parallelizable: bool
    vectorizable: bool
    carries: tuple[str, ...]


@dataclass(frozen=True)
class Array:
    KIND: ClassVar[str] = "Array"
    key: str
    function: str
    name: str
    rank: int
    written: bool
    argument: bool


@dataclass(frozen=True)
class Dependence:
    KIND: ClassVar[str] = "Dependence"
    key: str
    function: str
    kind: str  # flow, anti, output
    source: str
    sink: str
    array: str
    loops: tuple[str, ...]
    distance: tuple[str, ...]
    description: str


@dataclass(frozen=True)
class Schedule:
    """A schedule tried on a function, with the legality (isl) and Z3 verdicts."""

    KIND: ClassVar[str] = "Schedule"
    key: str
    function: str
    text: str
    verdict: str
    verified: str  # Z3 on the generated loop nest: "true", "false", "unknown"
    feedback: str


@dataclass(frozen=True)
class Measurement:
    """One timed comparison with the native baseline (or, for `check`, the baseline against Python)."""

    KIND: ClassVar[str] = "Measurement"
    key: str
    function: str
    schedule: str
    size: str | None
    compiler: str
    correct: bool | None
    max_rel_error: float | None
    speedup: float | None  # over the native baseline; for a baseline check, over the Python original
    seconds: float | None
    spread: float | None
    reference_seconds: float | None
    cpu: str
    recorded_at: str


@dataclass(frozen=True)
class VerifiedKernel:
    """The contract the runtime trusts: this library computes this function, for these types, this fast."""

    KIND: ClassVar[str] = "VerifiedKernel"
    key: str  # the function's key: one contract per function
    function: str
    source_hash: str
    signature: tuple[str, ...]  # "name:type" per argument, in the function's order
    schedule: str
    backend: str
    isl_verdict: str
    z3_verdict: str
    speedup: float
    spread: float
    size: str | None
    compiler: str
    flags: tuple[str, ...]
    cpu: str
    library: str
    library_sha256: str
    interface: str  # JSON: how to call the library (CSource's arguments, checks, sizes)
    c_text: str
    recorded_at: str


@dataclass(frozen=True)
class TabularKernel:
    """The contract of a compiled ORM endpoint: this SQL returns what the endpoint returns, on this schema.

    No URL, user or password: the SQL binds the endpoint's values, and the runtime runs it on the
    caller's own session."""

    KIND: ClassVar[str] = "TabularKernel"
    key: str  # the function's key: one contract per function
    function: str
    source_digest: str
    sql: str
    parameters: tuple[str, ...]
    keys: tuple[str, ...]
    entity: str
    ordered: bool
    tables: tuple[str, ...]
    dialect: str
    positional: bool
    schema_digest: str
    rows_compared: int
    speedup: float
    recorded_at: str


@dataclass(frozen=True)
class FsmKernel:
    """The contract of an fsm function's crowned variant: the rewrites that make it, not its C, as the engine
    rebuilds it from the function's source and these steps; with every contender of its race.

    `parameters` are the types it was lowered for ("name:kind" or "name:array:dtype"); a call of other types runs
    the original. `raced` is JSON: each contender's label, verdict, reason and times, the losers included."""

    KIND: ClassVar[str] = "FsmKernel"
    key: str  # the function's key: one contract per function
    function: str
    source_hash: str
    parameters: tuple[str, ...]
    steps: str  # the winner as a proposal spells it ("" for the baseline itself)
    speedup: float  # over the baseline
    python_speedup: float  # over the Python original
    spread: float
    raced: str
    cpu: str
    recorded_at: str


RECORD_TYPES: tuple[type, ...] = (
    Module, Function, Statement, Loop, Array, Dependence, Schedule, Measurement, VerifiedKernel, TabularKernel, FsmKernel,
)  # fmt: skip
KINDS = {cls.KIND: cls for cls in RECORD_TYPES}

RELATIONS = ("DEFINES", "HAS_STATEMENT", "HAS_LOOP", "HAS_ARRAY", "HAS_DEPENDENCE", "IN_LOOP", "ACCESSES", "FROM", "TO")
RELATIONS += ("TRIED", "MEASURED", "VERIFIED_AS", "RUNS")
MODEL_RELATIONS = ("HAS_STATEMENT", "HAS_LOOP", "HAS_ARRAY", "HAS_DEPENDENCE")
"""A function's model hangs off it by these; re-ingesting replaces what they reach."""


@dataclass(frozen=True)
class Edge:
    """A relation `source -[relation]-> target` between two records, named by kind and key."""

    source_kind: str
    source: str
    relation: str
    target_kind: str
    target: str

    @staticmethod
    def between(source: object, relation: str, target: object) -> Edge:
        return Edge(source.KIND, source.key, relation, target.KIND, target.key)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Batch:
    """One write: applied in a single transaction, all of it or nothing.

    `replace` names (kind, key) nodes whose model (the nodes `MODEL_RELATIONS` reach) is
    deleted first, so a re-ingested function does not keep statements its new source lost."""

    nodes: tuple[object, ...] = ()
    edges: tuple[Edge, ...] = ()
    replace: tuple[tuple[str, str], ...] = ()


def to_properties(record: object) -> dict[str, object]:
    """A record as flat properties (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(record).items()}  # type: ignore[arg-type]


def from_properties(cls: type, properties: dict[str, object]):
    """A record back from stored properties; lists become tuples, absent (null) properties None or empty."""
    values = {}
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        value = properties.get(field.name)
        if _is_tuple(hints[field.name]):
            value = tuple(value) if value is not None else ()
        values[field.name] = value
    return cls(**values)


def _is_tuple(hint: object) -> bool:
    if typing.get_origin(hint) is tuple:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_is_tuple(arg) for arg in typing.get_args(hint))
    return False

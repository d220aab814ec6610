"""What each command writes to the graph: the model at ingest, verdicts and times at check and
optimize, and the winning schedule as the `VerifiedKernel` contract the runtime trusts.

The store lies below the target's resolution and the evaluation of a schedule: what it reads of a target
and of an evaluation is stated here (`RecordedTarget`, `RecordedEvaluation`), and `Target` and `Evaluation`
fit it without the store importing them."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Protocol

import numpy as np

from repoos_agent.backends.build import build_native, cpu_model, file_digest
from repoos_agent.backends.cc import default_toolchain
from repoos_agent.codegen.c import generate_c
from repoos_agent.codegen.mlir import generate_mlir
from repoos_agent.codegen.passes import transformed_nest
from repoos_agent.errors import RepoosError
from repoos_agent.ingest import FunctionReport, ingest_source
from repoos_agent.ingest.parse import read_source
from repoos_agent.legality import analyze, prove_legal
from repoos_agent.legality.dependences import dependences
from repoos_agent.model.kernel import Kernel, isl_lock
from repoos_agent.model.signature import Signature
from repoos_agent.schedule import ScheduleError, ScheduleState
from repoos_agent.store import missing_store, open_store
from repoos_agent.store.graph import GraphStore
from repoos_agent.store.identity import function_key, function_texts, source_hash
from repoos_agent.store.records import (
    Array,
    Batch,
    Dependence,
    Edge,
    Function,
    Loop,
    Measurement,
    Module,
    Schedule,
    Statement,
    VerifiedKernel,
)
from repoos_agent.verify.translation import DEFERRED


class RecordedTarget(Protocol):
    """What recording reads of a resolved target (`repoos_agent.target.Target`)."""

    @property
    def label(self) -> str: ...

    @property
    def kernel(self) -> Kernel: ...

    def inputs(self, size: str | None, seed: int = 0) -> dict[str, object]: ...

    def size_class(self, size: str | None) -> str | None: ...


class RecordedEvaluation(Protocol):
    """What recording reads of a schedule's evaluation (`repoos_agent.evaluate.Evaluation`)."""

    @property
    def schedule(self) -> str: ...

    @property
    def size(self) -> str | None: ...

    @property
    def verdict(self) -> str: ...

    @property
    def verified(self) -> str: ...

    @property
    def feedback(self) -> str: ...

    @property
    def correct(self) -> bool | None: ...

    @property
    def max_rel_error(self) -> float | None: ...

    @property
    def speedup(self) -> float | None: ...

    @property
    def spread(self) -> float | None: ...

    @property
    def baseline_s(self) -> float | None: ...

    @property
    def candidate_s(self) -> float | None: ...


def record_ingest(store: GraphStore, path: str | Path, reports: list[FunctionReport] | None = None) -> list[Function]:
    """Write `path`'s module, functions and models (with baseline C and MLIR text); one transaction per function."""
    source = read_source(path)
    reports = reports if reports is not None else ingest_source(source, str(path))
    texts = function_texts(source, str(path))
    resolved = Path(path).resolve()
    module = Module(str(resolved), str(resolved), resolved.stem)
    written = []
    for report in reports:
        batch, function = _function_batch(module, report, texts[report.name])
        store.write(batch)
        written.append(function)
    if not reports:
        store.write(Batch(nodes=(module,)))
    return written


def _function_batch(module: Module, report: FunctionReport, function_text: str) -> tuple[Batch, Function]:
    key = function_key(module.path, report.name)
    kernel = report.kernel
    baseline = _baseline_texts(kernel) if kernel is not None else None
    function = Function(
        key=key,
        module=module.key,
        name=report.name,
        line=report.line,
        source_hash=source_hash(function_text),
        track=report.track,
        reason=report.reason,
        analyzable=kernel is not None,
        arguments=kernel.arguments if kernel else (),
        parameters=kernel.parameters if kernel else (),
        baseline_signature=baseline[0] if baseline else (),
        baseline_c=baseline[1] if baseline else None,
        baseline_mlir=baseline[2] if baseline else None,
    )
    nodes: list[object] = [module, function]
    edges = [Edge.between(module, "DEFINES", function)]
    if kernel is not None:
        model_nodes, model_edges = _model(function, kernel)
        nodes += model_nodes
        edges += model_edges
    return Batch(tuple(nodes), tuple(edges), replace=((Function.KIND, key),)), function


def _model(function: Function, kernel: Kernel) -> tuple[list[object], list[Edge]]:
    analysis = analyze(kernel)
    with isl_lock(kernel):
        found = dependences(kernel)
    nodes: list[object] = []
    edges: list[Edge] = []
    statements = {}
    for report in analysis.statements:
        statement = Statement(f"{function.key}#{report.label}", function.key, report.label, report.line, report.text,
                              report.loops, report.reduction)  # fmt: skip
        statements[report.label] = statement
        nodes.append(statement)
        edges.append(Edge.between(function, "HAS_STATEMENT", statement))
    for report in analysis.loops:
        loop = Loop(f"{function.key}#loop:{report.name}", function.key, report.name, report.depth, report.parallelizable,
                    report.vectorizable, report.carries)  # fmt: skip
        nodes.append(loop)
        edges.append(Edge.between(function, "HAS_LOOP", loop))
        edges += [Edge.between(statements[label], "IN_LOOP", loop) for label in report.statements if label in statements]
    for array in kernel.arrays:
        record = Array(f"{function.key}#array:{array.name}", function.key, array.name, array.rank, array.written, array.is_argument)
        nodes.append(record)
        edges.append(Edge.between(function, "HAS_ARRAY", record))
        for statement in kernel.statements:
            if any(access.array == array.name for access in (*statement.reads, *statement.writes)):
                edges.append(Edge.between(statements[statement.name], "ACCESSES", record))
    for number, dependence in enumerate(found):
        record = Dependence(
            f"{function.key}#dep:{number}", function.key, dependence.kind, dependence.source.name, dependence.sink.name,
            dependence.array, dependence.loops, dependence.distance, dependence.describe(),
        )  # fmt: skip
        nodes.append(record)
        edges += [
            Edge.between(function, "HAS_DEPENDENCE", record),
            Edge.between(record, "FROM", statements[dependence.source.name]),
            Edge.between(record, "TO", statements[dependence.sink.name]),
        ]
    return nodes, edges


def default_signature(kernel: Kernel) -> Signature:
    """float64 arrays (int64 index arrays), integer sizes, float scalars: PolyBench's types, and what a
    baseline is shown in."""
    values: dict[str, object] = {name: 1 if name in kernel.parameters else 1.0 for name in kernel.arguments}
    index_arrays = set(kernel.index_arrays)
    for array in kernel.arrays:
        if array.is_argument and array.rank > 0:
            values[array.name] = np.zeros((1,) * array.rank, dtype=np.int64 if array.name in index_arrays else np.float64)
    return Signature.of_values(kernel, values)


def _baseline_texts(kernel: Kernel) -> tuple[tuple[str, ...], str, str | None]:
    signature = default_signature(kernel)
    with isl_lock(kernel):
        c_text = generate_c(kernel, signature).text
        try:
            mlir_text: str | None = generate_mlir(
                kernel, signature, transformed_nest(kernel, ScheduleState(kernel).lower(), signature)
            ).text
        except (RepoosError, NotImplementedError, TypeError):
            mlir_text = None  # the MLIR backend does not express every construct; C is the reference
    return _signature_fields(kernel, signature), c_text, mlir_text


def _signature_fields(kernel: Kernel, signature: Signature) -> tuple[str, ...]:
    types = dict(signature.arrays) | dict(signature.scalars)
    return tuple(f"{name}:{types[name]}" for name in kernel.c_arguments)


def _ensure_function(store: GraphStore, target: RecordedTarget) -> Function:
    key = function_key(target.kernel.path, target.kernel.name)
    function = store.get(Function, key)
    if function is None:
        record_ingest(store, target.kernel.path)
        function = store.get(Function, key)
    assert function is not None  # record_ingest wrote every function of the file
    return function


def record_evaluation(store: GraphStore, target: RecordedTarget, evaluation: RecordedEvaluation, compiler: str = "c") -> Schedule:
    """A schedule's verdicts, and its measurement when it was timed."""
    function = _ensure_function(store, target)
    schedule = Schedule(f"{function.key}|{evaluation.schedule}", function.key, evaluation.schedule, evaluation.verdict,
                        evaluation.verified, evaluation.feedback)  # fmt: skip
    nodes: list[object] = [schedule]
    edges = [Edge.between(function, "TRIED", schedule)]
    if evaluation.speedup is not None:
        measurement = _measurement(function, evaluation.schedule, evaluation.size, compiler, evaluation.correct,
                                   evaluation.max_rel_error, evaluation.speedup, evaluation.candidate_s,
                                   evaluation.spread, evaluation.baseline_s)  # fmt: skip
        nodes.append(measurement)
        edges.append(Edge.between(schedule, "MEASURED", measurement))
    store.write(Batch(tuple(nodes), tuple(edges)))
    return schedule


def record_baseline_check(store: GraphStore, target: RecordedTarget, report, compiler: str = "c") -> Measurement:
    """`repoos check TARGET`: the baseline against the Python original (speedup over Python)."""
    function = _ensure_function(store, target)
    schedule = Schedule(f"{function.key}|", function.key, "", "legal", "n/a", "the source order")
    measurement = _measurement(function, "", report.compare_size, compiler, report.correct, report.max_rel_error,
                               report.speedup, report.native_compare_s, report.native_spread, report.python_s)  # fmt: skip
    store.write(
        Batch(
            (schedule, measurement),
            (Edge.between(function, "TRIED", schedule), Edge.between(schedule, "MEASURED", measurement)),
        )
    )
    return measurement


def _measurement(function: Function, schedule: str, size, compiler, correct, error, speedup, seconds, spread, reference):
    now = time.time_ns()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now // 1_000_000_000)) + f".{now % 1_000_000_000:09d}Z"
    return Measurement(f"{function.key}|{schedule}|{stamp}", function.key, schedule, size, compiler, correct, error, speedup,
                       seconds, spread, reference, cpu_model(), stamp)  # fmt: skip


def record_winner(
    store: GraphStore,
    target: RecordedTarget,
    evaluation: RecordedEvaluation | None,
    *,
    size: str | None = None,
    speedup: float | None = None,
    spread: float | None = None,
    compiler: str = "c",
    seed: int = 0,
    allow_reassociation: bool = False,
) -> VerifiedKernel:
    """Make `evaluation`'s schedule (None: the source order) the function's VerifiedKernel.

    The schedule is proved again and its build taken from the kernel cache, so the
    contract names the exact library that was measured. `speedup`/`spread` override
    the evaluation's figures (a racing finish re-measures the winner). Raises
    `RepoosError` when the schedule is not legal or was not verified by Z3."""
    function = _ensure_function(store, target)
    kernel = target.kernel
    schedule = evaluation.schedule if evaluation else ""
    size = evaluation.size if evaluation else target.size_class(size)
    if evaluation is not None and (evaluation.verdict != "legal" or evaluation.verified in ("false", DEFERRED)):
        raise RepoosError(
            f"`{schedule}` on {target.label} is {evaluation.verdict} (z3: {evaluation.verified}); only a legal schedule "
            "whose loops Z3 checked is saved"
        )
    values = target.inputs(size, seed)
    signature = Signature.of_values(kernel, values)
    lowered = None
    if schedule:
        proof = prove_legal(kernel, schedule, allow_reassociation)
        if not proof.legal:
            raise ScheduleError(proof.feedback.splitlines()[0])
        lowered = proof.lowered
    native = build_native(kernel, signature, lowered, backend=compiler)
    toolchain = default_toolchain()
    source = native.source
    interface = {
        "arguments": [asdict(a) for a in source.arguments],
        "checks": [asdict(c) for c in source.checks],
        "sizes": list(source.sizes),
        "shape_sizes": [list(pair) for pair in source.shape_sizes],
        "name": source.name,
        "arrays": [[a.name, a.rank, a.written] for a in kernel.arrays if a.is_argument and a.rank > 0],
        "returns": kernel.returns[0].name if len(kernel.returns) == 1 and not kernel.returns_tuple else None,
        "results": [[r.name, r.scalar] for r in kernel.returns],
        "returns_tuple": kernel.returns_tuple,
        "allocations": [a.as_json() for a in kernel.allocations],
        "shape_names": list(source.shape_names),
        "derived": [size.as_json() for size in source.derived],
        "entry_code": kernel.entry_code,
        "constants": [list(pair) for pair in kernel.constants],
        "unit_axes": [list(pair) for pair in kernel.unit_axes],
    }
    measured = evaluation.speedup if evaluation and evaluation.speedup is not None else 1.0
    contract = VerifiedKernel(
        key=function.key,
        function=function.key,
        source_hash=source_hash(kernel.source),
        signature=_signature_fields(kernel, signature),
        schedule=schedule,
        backend=compiler,
        isl_verdict="legal",
        z3_verdict=evaluation.verified if evaluation else "n/a (the source order)",
        speedup=speedup if speedup is not None else measured,
        spread=spread if spread is not None else (evaluation.spread or 0.0 if evaluation else 0.0),
        size=size,
        compiler=f"{toolchain.command} ({toolchain.version})",
        flags=toolchain.flags,
        cpu=cpu_model(),
        library=str(native.library),
        library_sha256=file_digest(native.library),
        interface=json.dumps(interface),
        c_text=source.text,
        recorded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    tried = Schedule(f"{function.key}|{schedule}", function.key, schedule, "legal", contract.z3_verdict,
                     evaluation.feedback if evaluation else "the source order")  # fmt: skip
    store.write(
        Batch(
            (tried, contract),
            (
                Edge.between(function, "TRIED", tried),
                Edge.between(function, "VERIFIED_AS", contract),
                Edge.between(contract, "RUNS", tried),
            ),
        )
    )
    return contract


def stored_winner(store: GraphStore, target: RecordedTarget, compiler: str = "c") -> VerifiedKernel | None:
    """The function's VerifiedKernel when it was built from this very source by this backend, else None."""
    contract = store.get(VerifiedKernel, function_key(target.kernel.path, target.kernel.name))
    if contract is None or contract.source_hash != source_hash(target.kernel.source) or contract.backend != compiler:
        return None
    return contract


def stored_schedule(store: GraphStore, target: RecordedTarget, compiler: str = "c") -> str | None:
    """The schedule of `stored_winner`: the incumbent a new search races in its finish and keeps on a tie, so
    that a rerun (fewer turns, a noisy moment) replaces the stored kernel only with one that beats it there by
    more than the spread. None when there is none."""
    contract = stored_winner(store, target, compiler)
    return contract.schedule or None if contract is not None else None


def load_winner(target: RecordedTarget, compiler: str = "c", graph: str | None = None) -> VerifiedKernel | None:
    """`stored_winner` from the store `save_winner` would write to; None when there is no store yet (reading
    never creates one)."""
    if missing_store(graph, target.kernel.path):
        return None
    store = open_store(graph, target.kernel.path)
    try:
        return stored_winner(store, target, compiler)
    finally:
        store.close()


def save_winner(
    target: RecordedTarget, evaluation: RecordedEvaluation | None, graph: str | None = None, **options
) -> VerifiedKernel:
    """`record_winner` on the store at `graph` (else the one `store_location` finds from the kernel's file),
    opened and closed here.

    For front ends (the TUI's "save best" key): `options` are `record_winner`'s keywords."""
    store = open_store(graph, target.kernel.path)
    try:
        return record_winner(store, target, evaluation, **options)
    finally:
        store.close()

"""The study protocol: every instance (kernel × size) searched R times, each run holding K dialogues.

Definitions (the reference paper's, made exact):
- A *dialogue* is one whole search: `optimize` with one dialogue of T turns and N
  candidates per turn, ending in its own racing finish. Its speedup is the racing
  finish's winner over our -O3 baseline (1.0 when the identity wins).
- A *run* holds K dialogues with different seeds, run concurrently (builds overlap,
  timed runs never do).
- *Single run* (ComPilot@T) of a run: the speedup of its first dialogue.
  *Best-of-K* of a run: the best speedup among its K dialogues.
- Per instance, each is the median over the R runs; the study's figures are the
  geometric means of those medians over instances.
The comparison tools are measured once per instance, after the search, on the same
inputs and against the same baseline (see `competitors`).

A NumPy kernel (`numpy:NAME`) is measured against the NumPy original instead: its tools
(`numpy_peers`) race the original, and so does the search's winner, in the same run. A NumPy
kernel the engine cannot ingest is `refused` (with the reason); its tools are measured all the same.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from repoos_agent.agent.events import Event, EventStream, JsonlLog
from repoos_agent.agent.search import SearchConfig, SearchResult, optimize
from repoos_agent.backends import build_baseline
from repoos_agent.backends.build import cpu_model
from repoos_agent.catalog import SIZE_CLASSES, SUITES, BundledKernel, bundled_kernels, find_bundled
from repoos_agent.errors import CompileError, RepoosError
from repoos_agent.evaluate import REASSOCIATION_TOLERANCE_SCALE
from repoos_agent.measure.isolated import RaceRules, shared_worker
from repoos_agent.model.signature import Signature
from repoos_agent.study.competitors import C_TOOLS, ToolMeasurement, ToolSpec, measure_tool
from repoos_agent.study.head_to_head import NUMPY_ORIGINAL, compared_names, winner_contender
from repoos_agent.study.numpy_peers import NUMPY_PEERS, measure_peer
from repoos_agent.study.statistics import format_speedup, median
from repoos_agent.target import Target, resolve_target

SEED_STRIDE = 1000
"""Dialogue d of run r searches with seed `seed + SEED_STRIDE * (r * K + d)`: distinct for every dialogue of the study."""


@dataclass(frozen=True)
class StudyConfig:
    """What `repoos eval` runs: which instances, how each dialogue searches, R runs of K dialogues, which tools."""

    kernels: tuple[str, ...]  # bundled kernel names
    sizes: tuple[str, ...] = ("MEDIUM",)
    size_overrides: tuple[tuple[str, str], ...] = ()  # (kernel, size): this kernel at this size only
    iters: int = 10
    k: int = 1
    runs: int = 1
    candidates: int = 4
    backend: str = "heuristic"
    base_url: str | None = None
    moa: tuple[str, ...] = ()  # Mixture-of-Agents references; with them, `backend` is not used
    tools: tuple[ToolSpec, ...] = ()
    seed: int = 0
    timeout_s: float = 120.0
    log_dir: str | None = None  # each search's events as JSON lines, `<kernel>-<size>-seed<seed>.jsonl` (`repoos tui` replays them)
    constrain: bool = True  # models decode under the kernel's schedule grammar where their server can
    prompt: str = ""  # what models' prompts carry (`PromptOptions.parse`)


@dataclass(frozen=True)
class DialogueRecord:
    """One dialogue's search: its winner and where its time went (seconds)."""

    run: int
    dialogue: int
    seed: int
    speedup: float
    spread: float
    schedule: str
    evaluations: int
    verdicts: dict[str, int]
    wall_s: float
    propose_s: float  # inside the proposer: the model's answer, or the heuristic's reasoning
    legality_s: float  # legality proofs and Z3 verification of every proposal
    build_s: float  # compiling candidates (and the baseline when not cached)
    measure_s: float  # timed kernel runs, the racing finish's included
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    invalid_kinds: dict[str, int] = field(default_factory=dict)  # invalid proposals by why (`Evaluation.invalid_kind`)
    llm_s: float = 0.0  # waiting for models' replies (within `propose_s`)
    constraint: str = ""  # the form models' replies were decoded under, "" for none
    candidate_s: float | None = None  # a NumPy kernel's winner: its median in the reported race against the original
    numpy_s: float | None = None  # ... and the original's fastest median over those races, a reference for every peer


@dataclass(frozen=True)
class InstanceResult:
    """One kernel at one size: R runs of K dialogues, and the comparison tools.

    `engine` is `ok`, or `refused` when the engine cannot ingest the kernel (no dialogue ran; `engine_message`
    says why), or the outcome of the winner's race against a NumPy kernel's original when that failed."""

    kernel: str
    size: str
    dialogues: tuple[DialogueRecord, ...]
    run_walls: tuple[float, ...]  # wall time of each run (its K dialogues concurrently)
    tools: tuple[ToolMeasurement, ...] = field(default=())
    engine: str = "ok"
    engine_message: str = ""
    cpu: str = ""  # the CPU model it was measured on: speedups compare only among instances on the same kind
    worker: str = ""  # the cluster worker that ran it, "" on the study's own machine

    def runs(self) -> list[list[DialogueRecord]]:
        by_run: dict[int, list[DialogueRecord]] = {}
        for record in self.dialogues:
            by_run.setdefault(record.run, []).append(record)
        return [sorted(records, key=lambda r: r.dialogue) for _, records in sorted(by_run.items())]

    @property
    def single(self) -> float:
        """ComPilot@T: the median over runs of the run's first dialogue."""
        return median([records[0].speedup for records in self.runs()])

    @property
    def spread(self) -> float:
        """The median over runs of the first dialogue's spread (relative interquartile range of its racing finish)."""
        return median([records[0].spread for records in self.runs()])

    @property
    def best_of_k(self) -> float:
        """The median over runs of the best of the run's K dialogues."""
        return median([max(r.speedup for r in records) for records in self.runs()])

    @property
    def best_schedule(self) -> str:
        if not self.dialogues:
            return ""
        best = max(self.dialogues, key=lambda r: r.speedup)
        return best.schedule

    @property
    def wall_s(self) -> float:
        """Median wall time of one run."""
        return median(list(self.run_walls))

    def median_of(self, name: str) -> float:
        """The median over runs of a time component summed over the run's dialogues."""
        return median([sum(getattr(r, name) for r in records) for records in self.runs()])

    @property
    def verdicts(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for record in self.dialogues:
            for verdict, count in record.verdicts.items():
                totals[verdict] = totals.get(verdict, 0) + count
        return totals

    @property
    def invalid_kinds(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for record in self.dialogues:
            for kind, count in record.invalid_kinds.items():
                totals[kind] = totals.get(kind, 0) + count
        return totals

    def tool(self, name: str) -> ToolMeasurement | None:
        return next((t for t in self.tools if t.tool == name), None)


def chosen_kernels(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The kernels of `--kernels` and their own sizes: `all` or names, each optionally `NAME@SIZE`.

    `all,lu@MEDIUM` is every kernel at `--sizes` except lu, which runs at MEDIUM only. Names are checked
    (near names suggested) and sizes too."""
    names: list[str] = []
    overrides: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, _, size = part.partition("@")
        chosen = [k.name for k in _suite_named(name)] if name.strip().lower().endswith("all") else [find_bundled(name).name]
        names.extend(n for n in chosen if n not in names)
        if size:
            if size.strip().upper() not in SIZE_CLASSES:
                raise RepoosError(f"--kernels {part}: unknown size `{size}`; sizes are {', '.join(SIZE_CLASSES)}")
            for kernel in chosen:
                overrides[kernel] = size.strip().upper()
    if not names:
        raise RepoosError("--kernels: no kernel named; give `all` or names such as gemm,2mm")
    return tuple(names), tuple(overrides.items())


def _suite_named(text: str) -> tuple[BundledKernel, ...]:
    """`all` is PolyBench, `numpy:all` the NumPy programs."""
    suite, _, word = text.strip().lower().rpartition(":")
    if word != "all" or suite not in ("", *SUITES):
        return (find_bundled(text),)
    return bundled_kernels(suite or SUITES[0])


def study_plan(config: StudyConfig) -> list[tuple[str, str]]:
    """The study's instances in the order its files list them: every kernel at `--sizes`, or at its own size."""
    own_sizes = dict(config.size_overrides)
    return [(name, size.upper()) for name in config.kernels for size in ((own_sizes[name],) if name in own_sizes else config.sizes)]


def run_study(
    config: StudyConfig,
    report: Callable[[str], None] | None = None,
    finished: Callable[[list[InstanceResult]], None] | None = None,
    done: tuple[InstanceResult, ...] = (),
) -> list[InstanceResult]:
    """Every instance of the plan in order, on this machine; `report` hears one line per finished step, and
    `finished` gets the instances so far after each one (a long study keeps its results if interrupted).
    Instances in `done` (a resumed study's) are kept as they are, not run again."""
    report = report or (lambda _line: None)
    prepare_logs(config, resumed=bool(done))
    kept = {(instance.kernel, instance.size): instance for instance in done}
    results = []
    for name, size in study_plan(config):
        instance = kept.get((name, size)) or run_instance(name, size, config, report)
        results.append(instance)
        if finished:
            finished(list(results))
    return results


def prepare_logs(config: StudyConfig, resumed: bool) -> None:
    """The study's log folder, emptied of an earlier study's logs, which would be taken for this one's; a resumed
    study keeps them, being the same study."""
    if not config.log_dir:
        return
    logs = Path(config.log_dir)
    logs.mkdir(parents=True, exist_ok=True)
    if not resumed:
        for stale in logs.glob("*.jsonl"):
            stale.unlink()


def run_instance(name: str, size: str, config: StudyConfig, report: Callable[[str], None]) -> InstanceResult:
    """One kernel at one size, searched and compared on this machine, whose CPU the result names. A NumPy
    kernel the engine refuses is `refused` with the reason, its tools measured all the same."""
    bundled = find_bundled(name)
    try:
        target = resolve_target(name)
    except RepoosError as error:
        if bundled.suite != "numpy":
            raise
        return replace(refused_instance(bundled, size, str(error), config, report), cpu=cpu_model())
    return replace(study_instance(target, target.size_class(size), config, report), cpu=cpu_model())


def refused_instance(
    bundled: BundledKernel, size: str, reason: str, config: StudyConfig, report: Callable[[str], None]
) -> InstanceResult:
    """A NumPy kernel the engine cannot ingest: no search, the engine's entry `refused`, the tools measured."""
    report(f"{bundled.name} {size}: refused: {reason}")
    tools = _measure_tools(bundled, None, size, config, report)
    return InstanceResult(bundled.name, size, (), (), tools, engine="refused", engine_message=reason)


def study_instance(target: Target, size: str, config: StudyConfig, report: Callable[[str], None]) -> InstanceResult:
    """R runs of K concurrent dialogues on one instance, then the comparison tools.

    On a NumPy kernel each dialogue's winner is raced against the NumPy original: its speedup is over that."""
    records: list[DialogueRecord] = []
    walls: list[float] = []
    engine, engine_message = "ok", ""
    numpy_suite = target.bundled is not None and target.bundled.suite == "numpy"
    for run in range(config.runs):
        seeds = [config.seed + SEED_STRIDE * (run * config.k + d) for d in range(config.k)]
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=config.k) as pool:
            searches = list(pool.map(lambda seed: _search(target, size, config, seed), seeds))
        walls.append(time.perf_counter() - start)
        for dialogue, (seed, (result, events)) in enumerate(zip(seeds, searches, strict=True)):
            record = _record(run, dialogue, seed, result, events)
            if numpy_suite and result.original_won:
                # The finish kept the NumPy original: what runs is the user's own code, at 1.00x of itself.
                record = replace(record, speedup=1.0, spread=0.0, schedule=NUMPY_ORIGINAL)
            elif numpy_suite:
                record, failure = _over_numpy(target, size, record, config)
                engine, engine_message = (failure[0], failure[1]) if failure else (engine, engine_message)
            records.append(record)
        best = max(records[-config.k :], key=lambda r: r.speedup)
        schedule = best.schedule or "(identity)"
        report(
            f"{target.label} {size} run {run + 1}/{config.runs}: {format_speedup(best.speedup)} in {walls[-1]:.1f} s  {schedule}"
        )
    tools = _measure_tools(target.bundled, target, size, config, report)
    return InstanceResult(target.label, size, tuple(records), tuple(walls), tools, engine, engine_message)


def _measure_tools(
    bundled: BundledKernel | None, target: Target | None, size: str, config: StudyConfig, report: Callable[[str], None]
) -> tuple[ToolMeasurement, ...]:
    """Every `--compare` tool on one instance: a NumPy kernel's race its NumPy original, the others our baseline."""
    label = target.label if target is not None else bundled.name if bundled is not None else "?"
    numpy_suite = bundled is not None and bundled.suite == "numpy"
    tools = []
    for spec in config.tools:
        if numpy_suite and spec.name in C_TOOLS:
            reason = f"{spec.name} compiles the engine's C of a loop kernel; a NumPy kernel is measured against NumPy"
            measurement = ToolMeasurement(spec.name, "unsupported", reason)
        elif numpy_suite:
            measurement = measure_peer(spec.name, str(bundled.path), bundled.function, bundled.inputs(size), config.timeout_s)
        elif spec.name in NUMPY_PEERS and spec.name != "numba" and target is not None:
            values = target.inputs(size, config.seed)
            baseline = build_baseline(target.kernel, Signature.of_values(target.kernel, values))
            outputs = tuple(a.name for a in target.kernel.arrays if a.is_argument and a.written and a.rank > 0)
            path, function = str(target.kernel.path), target.kernel.name
            measurement = measure_peer(spec.name, path, function, values, config.timeout_s, baseline, outputs)
        else:
            measurement = measure_tool(spec, target, size, config.seed, config.timeout_s)
        tools.append(measurement)
        outcome = (
            format_speedup(measurement.speedup) if measurement.status == "ok" else f"{measurement.status}: {measurement.message}"
        )
        report(f"{label} {size} {spec.name}: {outcome}")
    return tuple(tools)


OVER_NUMPY_RACES = 3
"""Races of a winner against the NumPy original; the median one is reported. One race on a host
whose speed drifts put covariance's winner at 0.74x of NumPy after its search's finish had
raced it at 1.17x."""


def _over_numpy(
    target: Target, size: str, record: DialogueRecord, config: StudyConfig
) -> tuple[DialogueRecord, tuple[str, str] | None]:
    """The dialogue's winner (our baseline for the identity) raced against the NumPy original on the same inputs,
    `OVER_NUMPY_RACES` times: the median race's speedup becomes the record's. A failed race leaves the record
    unmeasured (NaN) with the outcome."""
    values = target.inputs(size, config.seed)
    signature = Signature.of_values(target.kernel, values)
    try:
        ours = winner_contender(target, signature, record.schedule)
        original = winner_contender(target, signature, NUMPY_ORIGINAL)
    except CompileError as error:
        return replace(record, speedup=math.nan, spread=math.nan), ("compile_error", str(error))
    outputs = compared_names(target, values)
    races = []
    for _ in range(OVER_NUMPY_RACES):
        result = shared_worker().race(original, ours, values, RaceRules(outputs, REASSOCIATION_TOLERANCE_SCALE), config.timeout_s)
        if result.outcome != "ok" or result.speedup is None:
            return replace(record, speedup=math.nan, spread=math.nan), (result.outcome, result.message)
        races.append(result)
    middle = sorted(races, key=lambda race: race.speedup)[len(races) // 2]
    numpy_s = min(race.baseline.median_s for race in races)
    return replace(
        record, speedup=middle.speedup, spread=middle.candidate.spread, candidate_s=middle.candidate.median_s, numpy_s=numpy_s
    ), None


def _search(target: Target, size: str, config: StudyConfig, seed: int) -> tuple[SearchResult, list[Event]]:
    search = SearchConfig(
        backend=config.backend,
        base_url=config.base_url,
        moa=config.moa,
        iters=config.iters,
        k=1,
        candidates=config.candidates,
        size=size,
        seed=seed,
        timeout_s=config.timeout_s,
        constrain=config.constrain,
        prompt=config.prompt,
    )
    events = EventStream()
    log = None
    if config.log_dir:
        Path(config.log_dir).mkdir(parents=True, exist_ok=True)
        log = JsonlLog(Path(config.log_dir) / f"{target.label}-{size}-seed{seed}.jsonl")
        events.subscribe(log)
    try:
        result = optimize(target, search, events)
    finally:
        if log is not None:
            log.close()
    return result, list(events.events)


def _record(run: int, dialogue: int, seed: int, result: SearchResult, events: list[Event]) -> DialogueRecord:
    evaluations = [entry.evaluation for entry in result.leaderboard]
    return DialogueRecord(
        run=run,
        dialogue=dialogue,
        seed=seed,
        speedup=result.best_speedup,
        spread=result.best_spread,
        schedule=result.schedule,
        evaluations=result.evaluations,
        verdicts=dict(result.verdicts),
        wall_s=result.wall_s,
        propose_s=_propose_seconds(events),
        legality_s=sum(e.legality_ms + e.verify_ms for e in evaluations) / 1000,
        build_s=sum(e.build_ms for e in evaluations) / 1000,
        measure_s=sum(end - begin for event in events if event.kind == "evaluation" for begin, end in event.timed),
        tokens_in=result.tokens.get("input", 0),
        tokens_out=result.tokens.get("output", 0),
        cost_usd=result.cost_usd,
        invalid_kinds=dict(result.invalid_kinds),
        llm_s=sum(use.llm_s for use in result.models),
        constraint=", ".join(sorted({use.constraint for use in result.models if use.constraint})),
    )


def _propose_seconds(events: list[Event]) -> float:
    """Time inside the proposer: from the previous turn's last evaluation (or the start) to the next turn's start.

    A dialogue's turn begins once its proposer has answered, so these gaps are the proposing time of every turn
    whose proposals were evaluated."""
    total, mark = 0.0, None
    for event in events:
        if event.kind == "run_started":
            mark = event.time
        elif event.kind == "turn_started" and mark is not None:
            total += event.time - mark
            mark = None
        elif event.kind == "evaluation" and not event.detail.get("race"):
            mark = event.time
    return total

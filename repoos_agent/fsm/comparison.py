"""`repoos eval --kernels fsm:all --compare numba,cython,pypy,mypyc`: each fsm kernel under CPython, our compiled
code and each peer, in the same run, on the same inputs.

Every contender is checked first, on its own copies of the inputs, against the CPython original: its returned
value, its arguments after the call and its exception (type and message) must be exactly the original's, or it
is `wrong` and never timed. Then all contenders that passed are timed interleaved, round by round (the first of a
round rotates), one timed call at a time under the measurement lock: `WARMUPS` untimed calls each (PyPy's JIT
traces during them), then `REPEATS` timed calls each, reported as the median and its relative interquartile
spread. The machine is probed before and after, and each timed call notes whether more tasks wanted the cores
than at the start, so a kernel measured on a busy machine says so.

"Ours" is one callable, `ours_for(kernel)`; a kernel the fsm track refuses is `refused`, with its reason, and its
peers are measured all the same.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from tree_sitter import Node

from repoos_agent.backends.cc import engine_work
from repoos_agent.catalog import SIZE_CLASSES, BundledKernel, find_bundled
from repoos_agent.errors import RepoosError
from repoos_agent.fsm.compare import Outcome, difference, outcome
from repoos_agent.fsm.lower import FsmRefusal
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.peers import PEERS, Contender, InProcess, PeerMissing, PeerUnsupported, build_peer, temporary_build_dir
from repoos_agent.fsm.rewrites import apply_steps
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from repoos_agent.measure.cores import MachineState, prepare_probe, probe_machine, runnable_others
from repoos_agent.measure.lock import measurement_lock
from repoos_agent.measure.provenance import Provenance, provenance
from repoos_agent.measure.timing import Timing

DEFAULT_SIZE = "LARGE"
"""The size class at which CPython takes about 0.1 to 1.5 s a call on every bundled fsm kernel."""
WARMUPS = 2
REPEATS = 5
PYTHON, OURS = "CPython", "ours"
RACE_SIZE = "MEDIUM"
"""The inputs the arena races on to crown ours: smaller than the study's, so the race costs seconds."""
RESULTS_NAME = "fsm-peers"


def ours_for(kernel: BundledKernel) -> tuple[Callable[..., object], str]:
    """Our compiled version of `kernel`, called as the Python function, and its variant's label: the one the arena
    crowns when the heuristic's proposals race on the kernel's `RACE_SIZE` inputs (the baseline when none beats it
    beyond the noise), lowered for the types of its inputs (the same at every size). `FsmRefusal` when the track
    does not take it."""
    from repoos_agent.agent.events import EventStream  # the arena loads only when ours is built
    from repoos_agent.fsm.arena import run_arena
    from repoos_agent.fsm.optimize import heuristic_variants, qualifier_for

    node, original = _function_node(kernel), kernel.python_function()
    values = kernel.inputs(RACE_SIZE)
    arguments = [values[name] for name in inspect.signature(original).parameters if name in values]
    baseline = lower_for(node, values)
    samples = [arguments]
    result = run_arena(
        kernel.name,
        baseline,
        original,
        samples,
        heuristic_variants(baseline),
        qualifier_for(original, baseline, samples),
        EventStream(),
    )
    return FsmNative(apply_steps(baseline, result.winner.steps).function, original), result.winner.label


def _function_node(kernel: BundledKernel) -> Node:
    tree = parse_source(read_source(kernel.path), str(kernel.path))
    return next(node for node in functions(tree) if text(node.child_by_field_name("name")) == kernel.function)


@dataclass(frozen=True)
class Cell:
    """One contender on one kernel. `status`: ok, refused (the fsm track does not take it), unsupported (the peer
    refused it), missing (the peer is not installed) or wrong (its outcome differs from CPython's); `message` says
    why, `conversion` what a peer did to the inputs."""

    status: str
    message: str = ""
    timing: Timing | None = None
    conversion: str = ""
    build_s: float = 0.0


@dataclass(frozen=True)
class KernelRow:
    """One kernel at one size: CPython's timing and each contender's cell, in the table's order."""

    kernel: str
    size: str
    python: Timing
    cells: dict[str, Cell]
    machine: str = ""  # why the timings may not be the machine's quiet ones, "" when nothing was seen

    def speedup(self, name: str) -> float | None:
        timing = self.cells[name].timing
        return self.python.median_s / timing.median_s if timing and timing.median_s > 0 else None


@dataclass(frozen=True)
class PeerStudy:
    """What one `repoos eval` over fsm kernels measured, and where."""

    size_by_kernel: dict[str, str]
    peers: tuple[str, ...]
    rows: list[KernelRow] = field(default_factory=list)
    warmups: int = WARMUPS
    repeats: int = REPEATS


def parse_peers(text_value: str) -> tuple[str, ...]:
    """`numba,cython,pypy,mypyc`: the peers of `--compare`, checked, in the order given."""
    names = tuple(dict.fromkeys(part.strip().lower() for part in text_value.split(",") if part.strip()))
    unknown = [name for name in names if name not in PEERS]
    if unknown:
        raise RepoosError(f"--compare: unknown peer `{unknown[0]}` for fsm kernels; their peers are {', '.join(PEERS)}")
    return names


def compare_kernel(
    kernel: BundledKernel,
    size: str,
    peers: tuple[str, ...],
    build_dir: Path,
    ours: Callable[[BundledKernel], tuple[Callable[..., object], str]] = ours_for,
    report: Callable[[str], None] | None = None,
) -> KernelRow:
    """CPython, `ours(kernel)` and each peer on `kernel`'s inputs at `size`: built, checked, then raced."""
    report = report or (lambda _line: None)
    values = kernel.inputs(size)
    arguments = tuple(values[name] for name in inspect.signature(kernel.python_function()).parameters)
    original = kernel.python_function()
    want = outcome(original, arguments)
    contenders: dict[str, Contender] = {PYTHON: InProcess(original, arguments)}
    cells: dict[str, Cell] = {}
    with ExitStack() as stack:
        try:
            native, crowned = ours(kernel)  # the arena takes the cores for its own races: not under engine_work
            contenders[OURS] = InProcess(native, arguments)
            cells[OURS] = Cell("ok", crowned)
        except FsmRefusal as refusal:
            cells[OURS] = Cell("refused", str(refusal))
        for name in peers:
            try:
                with engine_work():  # compilers run beside others' work, never beside a timed run
                    built = build_peer(name, kernel, arguments, build_dir)
            except PeerUnsupported as error:
                cells[name] = Cell("unsupported", str(error))
            except PeerMissing as error:
                cells[name] = Cell("missing", str(error))
            else:
                stack.callback(built.contender.close)
                contenders[name] = built.contender
                cells[name] = Cell("ok", conversion=built.conversion, build_s=built.build_s)
        for name, contender in list(contenders.items())[1:]:
            verdict = _checked(want, contender, name)
            if verdict is not None:
                cells[name] = Cell(*verdict, conversion=cells[name].conversion, build_s=cells[name].build_s)
                del contenders[name]
        timings, machine = race(contenders)
    for name, timing in timings.items():
        if name != PYTHON:
            cells[name] = replace(cells[name], timing=timing)
    row = KernelRow(kernel.name, size, timings[PYTHON], {name: cells[name] for name in (OURS, *peers)}, machine)
    report(f"{kernel.name} {size}: " + ", ".join(f"{name} {_cell_text(row, name)}" for name in row.cells))
    return row


def _checked(want: Outcome, contender: Contender, name: str) -> tuple[str, str] | None:
    """None when the contender's checked call gives exactly the original's outcome, else its status and why: `wrong`
    and what differs, or `unsupported` when the peer failed outside the kernel (PyPy could not send a result back)."""
    try:
        got = contender.check()
    except PeerUnsupported as error:
        return "unsupported", str(error)
    problem = difference(want, got, name)
    return None if problem is None else ("wrong", problem)


def race(contenders: dict[str, Contender], warmups: int = WARMUPS, repeats: int = REPEATS) -> tuple[dict[str, Timing], str]:
    """Each contender's timing, interleaved round by round, one timed call at a time under the measurement lock;
    and what the machine was doing, when another process competed for the cores ("" when none did)."""
    prepare_probe()
    with measurement_lock():
        before = probe_machine()
    names = list(contenders)
    for _ in range(warmups):
        for name in names:
            prepared = contenders[name].prepare()
            with measurement_lock():
                contenders[name].timed(prepared)
    quiet_others = before.cores - before.team
    samples: dict[str, list[float]] = {name: [] for name in names}
    crowded = 0
    for round_number in range(repeats):
        for name in names[round_number % len(names) :] + names[: round_number % len(names)]:
            prepared = contenders[name].prepare()
            others = runnable_others()
            with measurement_lock():
                samples[name].append(contenders[name].timed(prepared))
            crowded += others is not None and others > quiet_others
    with measurement_lock():
        after = probe_machine()
    return {name: Timing.of(times) for name, times in samples.items()}, _machine_note(before, after, crowded, repeats * len(names))


def _machine_note(before: MachineState, after: MachineState, crowded: int, timed: int) -> str:
    notes = [f"{when}: {state.describe()}" for when, state in (("before", before), ("after", after)) if state.busy]
    if crowded * 4 > timed:
        notes.append(f"{crowded} of {timed} timed calls had another task competing for the cores")
    return "; ".join(notes)


def run_peer_study(
    kernels: tuple[tuple[BundledKernel, str], ...],
    peers: tuple[str, ...],
    ours: Callable[[BundledKernel], tuple[Callable[..., object], str]] = ours_for,
    report: Callable[[str], None] | None = None,
) -> PeerStudy:
    """Every (kernel, size) compared in turn, the peers built in one temporary directory removed at the end."""
    study = PeerStudy({kernel.name: size for kernel, size in kernels}, peers)
    with temporary_build_dir() as build_dir:
        for kernel, size in kernels:
            study.rows.append(compare_kernel(kernel, size, peers, Path(build_dir), ours, report))
    return study


def table(study: PeerStudy) -> str:
    """The study as a Markdown table (times in seconds, the median ±spread; x is CPython's median over the
    contender's), with its notes (reasons, conversions, busy machine) numbered under it."""
    header = ["kernel", "size", "CPython s", "ours s", "ours x", "ours: crowned variant"]
    for peer in study.peers:
        header += [f"{peer} s", f"{peer} x"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    notes: list[str] = []
    for row in study.rows:
        cells = [row.kernel, row.size, _seconds(row.python)]
        for name in (OURS, *study.peers):
            cell = row.cells[name]
            if cell.status != "ok":
                notes.append(f"{row.kernel}, {name}: {cell.status}: {cell.message}")
                cells += [f"{cell.status} [{len(notes)}]", ""] + ([""] if name == OURS else [])
                continue
            if cell.conversion:
                notes.append(f"{row.kernel}, {name}: inputs converted, off the clock: {cell.conversion}")
            speedup = row.speedup(name)
            mark = f" [{len(notes)}]" if cell.conversion else ""
            cells += [_seconds(cell.timing), f"{speedup:.1f}x{mark}" if speedup is not None else "-"]
            if name == OURS:
                cells.append(cell.message)
        if row.machine:
            notes.append(f"{row.kernel}: busy machine: {row.machine}")
            cells[0] += f" [{len(notes)}]"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join([*lines, "", *(f"[{number}] {note}" for number, note in enumerate(notes, 1))])


def _seconds(timing: Timing | None) -> str:
    if timing is None:
        return "-"
    return f"{timing.median_s:.3g} ±{timing.spread:.0%}"


def _cell_text(row: KernelRow, name: str) -> str:
    cell = row.cells[name]
    if cell.status != "ok":
        return cell.status
    speedup = row.speedup(name)
    return f"{speedup:.1f}x" if speedup is not None else "-"


def write_results(directory: Path, study: PeerStudy, origin: Provenance) -> tuple[Path, Path]:
    """`fsm-peers.md` (the table under its provenance) and `fsm-peers.json` (every sample) in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    markdown, payload_path = directory / f"{RESULTS_NAME}.md", directory / f"{RESULTS_NAME}.json"
    sizes = ", ".join(sorted(set(study.size_by_kernel.values())))
    title = f"# fsm kernels against their peers ({sizes})"
    method = (
        f"Each contender checked against the CPython original first (returned value, arguments after, exception), "
        f"then timed interleaved: {study.warmups} warm-up calls each, {study.repeats} timed calls each, one at a time "
        f"under the measurement lock; the median ±relative interquartile spread, x = CPython's median over the "
        f"contender's. \"ours\" is the variant the fsm arena crowned on the kernel's {RACE_SIZE} inputs (the "
        f"heuristic's proposals, each proved and checked before it raced)."
    )
    markdown.write_text(f"{title}\n\n{origin.line()}\n\n{method}\n\n{table(study)}\n", encoding="utf-8")
    payload = {"provenance": origin.as_json(), "study": _finite(asdict(study))}
    payload_path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return markdown, payload_path


def _finite(value: object) -> object:
    """JSON has no NaN or infinity: an undefined figure is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def evaluate(args: argparse.Namespace, kernels: tuple[str, ...], sizes: dict[str, str]) -> int:
    """`repoos eval` on fsm kernels: `kernels` by name, each at `sizes[name]`, else `--sizes` (else `DEFAULT_SIZE`);
    `--compare` names the peers. Prints the table and writes it with its provenance under `--out`."""
    origin = provenance()
    chosen = [size.strip().upper() for size in (args.sizes or DEFAULT_SIZE).split(",") if size.strip()]
    unknown = [size for size in chosen if size not in SIZE_CLASSES]
    if unknown or not chosen:
        raise RepoosError(f"--sizes: unknown size `{','.join(unknown)}`; sizes are {', '.join(SIZE_CLASSES)}")
    peers = parse_peers(args.compare or "")
    pairs = tuple((find_bundled(name), size) for name in kernels for size in ((sizes[name],) if name in sizes else tuple(chosen)))
    study = run_peer_study(pairs, peers, report=lambda line: print(f"  {line}", file=sys.stderr, flush=True))
    print(table(study))
    written = write_results(Path(args.out), study, origin)
    print(f"written: {', '.join(str(path) for path in written)}")
    return 0

"""How often the independent oracle disagrees with isl's legality verdicts on random schedules.

Usage: python benchmarks/oracle.py --schedules N --seed S [--only K1,K2] [--save PART.json] [--merge PART.json ...]

Draws N random schedules (the soundness suite's drawer, `tests/test_soundness.py::schedules`, with
`allow_reassociation` drawn too) spread evenly over PolyBench, the NumPy kernels and the CSR kernels
(sparse, graphs); proves each with isl (`prove_legal`) and judges each that lowers with the oracle
(`verify.oracle`), which runs the source order and the generated loop nest at small sizes and
compares every conflicting pair of accesses. Two counts matter: schedules isl called legal that the
oracle refutes (a soundness bug; must be 0) and schedules isl refused that the oracle accepts (what
the proof's conservatism costs). `--save` writes one chunk's tallies as JSON, `--merge` adds chunks
up into the table at benchmarks/results/oracle.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from repoos_agent.catalog import BundledKernel, bundled_kernels  # noqa: E402
from repoos_agent.legality.prove import prove_legal  # noqa: E402
from repoos_agent.measure.provenance import provenance  # noqa: E402
from repoos_agent.model.kernel import Kernel  # noqa: E402
from repoos_agent.target import resolve_target  # noqa: E402
from repoos_agent.verify.oracle import KernelRun, check_schedule, small_sizes  # noqa: E402
from tests.test_soundness import schedules  # noqa: E402

SUITES = ("polybench", "numpy", "sparse", "graphs")
INSTANCES = 3000
"""Statement instances per kernel run at most: every conflicting pair is still met, and a schedule is judged quickly."""
RESULTS = ROOT / "benchmarks" / "results" / "oracle.md"


@dataclass
class Tally:
    """What the oracle said of isl's verdicts, for one suite (or kernel)."""

    drawn: int = 0
    invalid: int = 0
    legal_confirmed: int = 0
    legal_refuted: int = 0  # a soundness bug
    refused_confirmed: int = 0
    refused_accepted: int = 0  # conservatism
    seconds: float = 0.0
    refuted: list[str] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


def small_run(bundled: BundledKernel, kernel: Kernel) -> KernelRun:
    """The kernel at the largest shrink of its MINI sizes with at most `INSTANCES` instances that its inputs and
    the model's assumptions accept."""

    def fits(sizes: dict[str, int]) -> bool:
        try:
            run = KernelRun(kernel, bundled.module.init(**sizes))
            held = all(a.value(run.parameters) == b.value(run.parameters) for a, b in kernel.assumptions)
            return held and 0 < run.instance_count(INSTANCES) <= INSTANCES
        except (ValueError, IndexError, KeyError, ZeroDivisionError):
            return False

    return KernelRun(kernel, bundled.module.init(**small_sizes(bundled.sizes["MINI"], fits)))


def draws(kernel: Kernel, count: int, seed_value: int) -> list[tuple[str, bool]]:
    """`count` schedules (fewer when the drawer runs out of new ones; a schedule may come twice) and whether each
    allows reassociation."""
    drawn: list[tuple[str, bool]] = []

    @seed(seed_value)
    @settings(max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(schedules(kernel), st.booleans())
    def keep(text: str, allow: bool) -> None:
        drawn.append((text, allow))

    keep()
    return drawn


def judge(name: str, count: int, seed_value: int) -> Tally:
    """Draw `count` schedules for kernel `name` and tally isl's verdicts against the oracle's."""
    start = time.perf_counter()
    target = resolve_target(name)
    assert target.bundled is not None
    run = small_run(target.bundled, target.kernel)
    tally = Tally()
    for text, allow in draws(target.kernel, count, seed_value):
        tally.drawn += 1
        verdict = prove_legal(target.kernel, text, allow, explain=False)
        if verdict.lowered is None:
            tally.invalid += 1
            continue
        oracle = check_schedule(run, verdict.lowered, allow)
        case = f"{name}: `{text}`{' (reassociation allowed)' if allow else ''}"
        if verdict.legal and not oracle.legal:
            tally.legal_refuted += 1
            tally.refuted.append(f"{case}: {oracle.conflicts[0]}")
        elif verdict.legal:
            tally.legal_confirmed += 1
        elif oracle.legal:
            tally.refused_accepted += 1
            tally.accepted.append(f"{case}: isl said {verdict.feedback.splitlines()[0]}")
        else:
            tally.refused_confirmed += 1
    tally.seconds = time.perf_counter() - start
    return tally


def suite_kernels(suites: tuple[str, ...] = SUITES) -> list[str]:
    return [kernel.name for suite in suites for kernel in bundled_kernels(suite)]


def table(tallies: dict[str, Tally]) -> list[str]:
    lines = [
        "| suite | drawn | invalid | isl legal | of which oracle refutes | isl refused | of which oracle accepts | seconds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    total = Tally()
    for suite in SUITES:
        t = tallies.get(suite)
        if t is None:
            continue
        total.add(t)
        lines.append(_row(suite, t))
    lines.append(_row("**all**", total))
    if total.refuted:
        lines += ["", "Legal schedules the oracle refutes (soundness bugs):", ""] + [f"- {case}" for case in total.refuted]
    if total.accepted:
        lines += [
            "",
            f"Refused schedules the oracle accepts (first 20 of {len(total.accepted)}). The oracle judges the small sizes "
            "alone: where isl's example needs a loop longer than the tile, the tile covers the whole loop there.",
            "",
        ]
        lines += [f"- {case}" for case in total.accepted[:20]]
    return lines


def _row(label: str, t: Tally) -> str:
    legal, refused = t.legal_confirmed + t.legal_refuted, t.refused_confirmed + t.refused_accepted
    return (
        f"| {label} | {t.drawn} | {t.invalid} | {legal} | {t.legal_refuted} | {refused} | {t.refused_accepted} | {t.seconds:.0f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=1000, help="schedules drawn in all, spread over the kernels")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="comma-separated kernel names (a chunk); the count per kernel stays the same")
    parser.add_argument("--save", type=Path, help="write this chunk's tallies as JSON instead of the table")
    parser.add_argument("--merge", type=Path, nargs="*", default=[], help="chunks' JSON to add up into the table")
    args = parser.parse_args(argv)
    command = "python benchmarks/oracle.py " + " ".join(argv if argv is not None else sys.argv[1:])
    tallies: dict[str, Tally] = {}
    if args.merge:
        chunks = [json.loads(path.read_text()) for path in args.merge]
        command = "; ".join(chunk["command"] for chunk in chunks)  # the runs that drew the schedules
        for chunk in chunks:
            for suite, data in chunk["suites"].items():
                tallies.setdefault(suite, Tally()).add(Tally(**data))
    else:
        names = suite_kernels()
        per_kernel = math.ceil(args.schedules / len(names))
        chosen = [n for n in names if n in args.only.split(",")] if args.only else names
        for name in chosen:
            tally = judge(name, per_kernel, args.seed)
            suite = name.split(":")[0] if ":" in name else "polybench"
            tallies.setdefault(suite, Tally()).add(tally)
            print(f"{name}: {tally.drawn} drawn, {tally.legal_refuted} legal refuted, {tally.refused_accepted} refused accepted, "
                  f"{tally.seconds:.1f} s", flush=True)  # fmt: skip
    if args.save:
        chunk = {"command": command, "suites": {suite: asdict(t) for suite, t in tallies.items()}}
        args.save.write_text(json.dumps(chunk, indent=1))
        return 0
    lines = table(tallies)
    print("\n".join(lines))
    RESULTS.write_text("# Legality oracle\n\n" + provenance(command.strip()).line() + "\n\n" + "\n".join(lines) + "\n")
    print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

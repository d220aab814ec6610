"""Reach: how much numeric Python goes in, comes out correct, and comes out faster.

A function counts as *modelled* when `repoos check` takes it with the `--arg` specs a user
would pass (the bundled NumPy kernels: their own initial values), *correct* when its native
baseline equals the Python original on those inputs, and, with `--optimize`, *faster* when the
search's winner beats the original: raced head to head for NumPy programs (the finish races the
original), otherwise the baseline's measured speedup over one run of the Python loops times the
winner's speedup over the baseline. The first refusal of each function that is not modelled is
listed, so the table says what to build next.

The corpus is the bundled NumPy kernels (`--corpus as-written`: the 25 written in the styles real
code takes) and `benchmarks/reach_sample.py`, functions written the way people write them. Prints a
table and writes it, with its commit, CPU and command, to benchmarks/results/reach-CORPUS.md. Run:

    .venv/bin/python benchmarks/reach.py                                  # modelled and correct: a minute
    .venv/bin/python benchmarks/reach.py --corpus as-written --optimize   # and faster: a search each
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import reach_sample

from repoos_agent.agent.search import SearchConfig, optimize
from repoos_agent.catalog import bundled_kernels
from repoos_agent.check import check_baseline
from repoos_agent.errors import RepoosError
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.measure.provenance import provenance
from repoos_agent.target import Target, resolve_target

RESULTS = Path(__file__).parent / "results"
SAMPLE = Path(reach_sample.__file__)


@dataclass(frozen=True)
class Reached:
    """One function's outcome: modelled, correct, and (with `--optimize`) its speedup over the original."""

    corpus: str
    name: str
    modelled: bool
    correct: bool
    reason: str  # the first refusal, or what went wrong after modelling
    over_original: float | None = None


def corpus(which: str) -> list[tuple[str, str, list[str]]]:
    """(corpus, target, specs) for every function of the chosen corpora."""
    found = []
    if which in ("all", "bundled"):
        found += [("bundled", kernel.name, []) for kernel in bundled_kernels("numpy")]
    if which == "as-written":
        found += [("as-written", k.name, []) for k in bundled_kernels("numpy") if k.category == "as-written"]
    if which in ("all", "sample"):
        found += [("sample", f"{SAMPLE}:{name}", specs) for name, specs in reach_sample.ARGS.items()]
    return found


def reach_of(corpus_name: str, label: str, specs: list[str], optimize_too: bool, iters: int, size: str) -> Reached:
    short = label.rsplit(":", 1)[1] if corpus_name == "sample" else label
    try:
        target = resolve_target(label, [parse_arg_spec(spec) for spec in specs])
    except RepoosError as error:
        return Reached(corpus_name, short, False, False, _first_reason(str(error)))
    try:
        report = check_baseline(target, "MINI" if target.bundled else None)
    except RepoosError as error:
        return Reached(corpus_name, short, True, False, f"check: {error}")
    if not report.correct:
        return Reached(corpus_name, short, True, False, f"wrong: {', '.join(report.mismatched)}")
    if not optimize_too:
        return Reached(corpus_name, short, True, True, "")
    return Reached(corpus_name, short, True, True, "", _over_original(target, report.speedup, iters, size))


def _over_original(target: Target, check_speedup: float, iters: int, size: str) -> float:
    """The search's winner over the Python original: head to head where the finish raced the original."""
    result = optimize(target, SearchConfig(size=size if target.bundled else None, iters=iters))
    if result.original_won:
        return 1.0
    if result.original_speedup:
        return result.best_speedup / result.original_speedup
    return check_speedup * result.best_speedup


def _first_reason(message: str) -> str:
    return message.split("cannot be modelled: ", 1)[-1].splitlines()[0][:110]


def table(rows: list[Reached], optimize_too: bool) -> list[str]:
    lines = [
        "| corpus | functions | modelled | correct | faster after optimize | geomean over the original |",
        "|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(row.corpus for row in rows):
        mine = [row for row in rows if row.corpus == name]
        modelled = sum(row.modelled for row in mine)
        correct = sum(row.correct for row in mine)
        wrong = sum(row.modelled and not row.correct for row in mine)
        speedups = [row.over_original for row in mine if row.over_original is not None]
        faster = f"{sum(s > 1.0 for s in speedups)} of {len(speedups)}" if optimize_too else "not run"
        geomean = f"{math.exp(sum(math.log(s) for s in speedups) / len(speedups)):.2f}x" if speedups else "n/a"
        lines.append(
            f"| {name} | {len(mine)} | {modelled} ({modelled / len(mine):.0%}) | {correct} ({wrong} wrong) | {faster} | {geomean} |"
        )
    lines += ["", "| corpus | function | modelled | correct | over the original | first refusal |", "|---|---|---|---|---|---|"]
    for row in rows:
        speed = f"{row.over_original:.2f}x" if row.over_original is not None else ""
        reason = row.reason.replace("|", "\\|")
        modelled, correct = ("yes" if flag else "no" for flag in (row.modelled, row.correct))
        lines.append(f"| {row.corpus} | {row.name} | {modelled} | {correct} | {speed} | {reason} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("all", "bundled", "as-written", "sample"), default="all")
    parser.add_argument("--optimize", action="store_true", help="also search each modelled function and race it")
    parser.add_argument("--iters", type=int, default=2, help="search turns per function with --optimize")
    parser.add_argument("--size", default="SMALL", help="the bundled kernels' size class for the searches")
    parser.add_argument("--only", default="", help="comma-separated function names")
    args = parser.parse_args(argv)
    os.environ.setdefault("REPOOS_CACHE_DIR", tempfile.mkdtemp(prefix="repoos-reach-cache-"))
    wanted = {name for name in args.only.split(",") if name}
    rows = []
    for corpus_name, label, specs in corpus(args.corpus):
        if wanted and label.rsplit(":", 1)[-1] not in wanted:
            continue
        row = reach_of(corpus_name, label, specs, args.optimize, args.iters, args.size)
        print(f"{row.corpus:8} {row.name:28} {'modelled' if row.modelled else 'refused':9} {row.reason[:90]}", flush=True)
        rows.append(row)
    lines = table(rows, args.optimize)
    print("\n".join(lines))
    if not wanted:
        command = "python benchmarks/reach.py " + " ".join(argv if argv is not None else sys.argv[1:])
        RESULTS.mkdir(parents=True, exist_ok=True)
        searched = f"-optimize-{args.size.lower()}" if args.optimize else ""
        path = RESULTS / f"reach-{args.corpus}{searched}.md"
        path.write_text("# Reach\n\n" + provenance(command.strip()).line() + "\n\n" + "\n".join(lines) + "\n")
        print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

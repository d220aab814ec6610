"""The attention block against the time its matrix products take in NumPy: how far a schedule can go.

NumPy's attention (kernels/numpy/attention.py) runs six products through OpenBLAS: three
projections, the scores `q @ k.T`, the weighted values and the output projection. A schedule
that keeps them on the same library wins only the rest: the bias adds, the scaling, the mask
loop and the softmax's passes. This script times, in turns, on the same inputs:

- the NumPy original;
- its six products alone, on the operands the original computes (same shapes, same library);
- five of them, the scores left out: a bound on skipping the masked half of `q @ k.T`, which
  a causal schedule could do (the masked scores are overwritten, so they are dead);
- the RepoOS build of a schedule (the eval's winner by default), its output checked against
  the original's before any time counts.

The process is set up as the race's measuring worker is (`ceiling.as_measuring_worker`), and
each timed call holds the engine's measurement lock (no other timed run or compiler beside it).

The ceiling is the original's median over the products' median: no schedule that runs the
same products through the same BLAS gets past it. Prints a table and writes it to
benchmarks/results/attention_ceiling.md. Run:

    .venv/bin/python benchmarks/attention_ceiling.py --sizes MEDIUM,LARGE
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from ceiling import NUMPY, as_measuring_worker, checked_build, rows_against_numpy
from report import timed_in_turns, write_results

from repoos_agent.measure import measurement_lock
from repoos_agent.target import resolve_target

WINNERS = Path(__file__).parent / "results" / "numpy-eval" / "eval.csv"
KERNEL = "numpy:attention"


def eval_winner(path: Path) -> str:
    """The schedule an eval's search kept for the attention block."""
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["kernel"] == KERNEL:
                return row["schedule"]
    raise SystemExit(f"{path}: no row for {KERNEL}")


def products(values: dict[str, np.ndarray], module) -> tuple[list, list]:
    """The original's six products as calls on its own operands: all six, and the five without the scores."""
    x, T, C = values["x"], *values["x"].shape
    q, k, v = (x @ values[f"W{n}"] + values[f"b{n}"] for n in "qkv")
    scores = q @ k.T / np.sqrt(C)
    for i in range(T):
        scores[i, i + 1 :] = -np.inf
    weights = module.softmax(scores)
    mixed = weights @ v
    projections = [lambda n=n: x @ values[f"W{n}"] for n in "qkv"]
    rest = [lambda: weights @ v, lambda: mixed @ values["Wo"]]
    return [*projections, lambda: q @ k.T, *rest], [*projections, *rest]


def measured(size: str, schedule: str, repeats: int) -> tuple[list[str], float]:
    """One size's rows of the table, and its ceiling."""
    target = resolve_target(KERNEL)
    values = target.inputs(size)
    ours = checked_build(target, values, schedule)
    scratch = dict(values)
    six, five = products(values, target.bundled.module)
    timings = timed_in_turns(
        {
            NUMPY: lambda: target.function(**values),
            "its six products alone": lambda: [call() for call in six],
            "five products (no q @ k.T)": lambda: [call() for call in five],
            "RepoOS": lambda: ours(scratch),
        },
        repeats,
        held=measurement_lock,
    )
    numpy_s = timings[NUMPY].median_s
    rows = rows_against_numpy(size, timings)
    return rows, numpy_s / timings["five products (no q @ k.T)"].median_s


def main() -> int:
    as_measuring_worker()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="MEDIUM,LARGE")
    parser.add_argument("--schedule", help="the RepoOS schedule to race (default: the winner in --winners)")
    parser.add_argument("--winners", type=Path, default=WINNERS, help="an eval.csv whose attention row names the schedule")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    schedule = args.schedule or eval_winner(args.winners)
    lines = ["| size | contender | median ±half the IQR | NumPy / it |", "|---|---|---|---|"]
    ceilings = []
    for size in args.sizes.split(","):
        rows, ceiling = measured(size.strip().upper(), schedule, args.repeats)
        lines += rows
        ceilings.append(f"- {size}: a schedule that keeps five of the products on BLAS is at most {ceiling:.2f}x NumPy")
    summary = "\n".join([f"RepoOS schedule: `{schedule}`", "", *ceilings])
    print("\n".join(lines) + "\n\n" + summary)
    write_results("attention_ceiling.md", "attention: NumPy against its own matrix products", lines, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

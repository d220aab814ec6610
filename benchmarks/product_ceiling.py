"""The five NumPy kernels that kept NumPy at LARGE, against the time their matrix products take alone.

In the LARGE eval (benchmarks/results/numpy-eval-large/summary.md) mlp, 2mm, 3mm, doitgen and
covariance kept the NumPy original: each finish's winner ran every product through OpenBLAS and
raced NumPy, which runs the same products through the same kernels, to a tie. A schedule that
keeps the products on BLAS wins only the rest (bias adds, scalings, the ReLU, the mean and the
centering, copies), so the original's time over its products' time alone bounds what any such
schedule can reach. This script times, in turns, on the same inputs:

- the NumPy original;
- its products alone, on the operands the original computes (same shapes, same library; for
  covariance NumPy's own `X.T @ X`, which it runs as a `syrk`);
- the RepoOS build of the schedule the kernel's LARGE finish crowned before it raced NumPy,
  its output checked against the original's before any time counts.

The process is set up as the race's measuring worker is (`ceiling.as_measuring_worker`). Prints
a table and writes it to benchmarks/results/product_ceiling.md. Run:

    .venv/bin/python benchmarks/product_ceiling.py --size LARGE
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from ceiling import NUMPY, as_measuring_worker, checked_build, rows_against_numpy
from report import timed_in_turns, write_results

from repoos_agent.measure import measurement_lock
from repoos_agent.target import resolve_target

Products = Callable[[dict], list[Callable[[], object]]]


def _mm2(v: dict) -> list[Callable[[], object]]:
    scaled = v["alpha"] * v["A"]
    first = scaled @ v["B"]
    return [lambda: scaled @ v["B"], lambda: first @ v["C"]]


def _mm3(v: dict) -> list[Callable[[], object]]:
    e, f = v["A"] @ v["B"], v["C"] @ v["D"]
    return [lambda: v["A"] @ v["B"], lambda: v["C"] @ v["D"], lambda: e @ f]


def _mlp(v: dict) -> list[Callable[[], object]]:
    h1 = np.maximum(v["x"] @ v["W1"] + v["b1"], 0.0)
    h2 = np.maximum(h1 @ v["W2"] + v["b2"], 0.0)
    return [lambda: v["x"] @ v["W1"], lambda: h1 @ v["W2"], lambda: h2 @ v["W3"]]


def _doitgen(v: dict) -> list[Callable[[], object]]:
    a, c4 = v["A"].copy(), v["C4"]
    return [lambda: [a[r] @ c4 for r in range(a.shape[0])]]


def _covariance(v: dict) -> list[Callable[[], object]]:
    centered = v["data"] - np.mean(v["data"], axis=0)
    return [lambda: centered.T @ centered]


KERNELS: dict[str, tuple[str, Products]] = {
    "numpy:mlp": ("blas(S1); blas(S4); blas(S7)", _mlp),
    "numpy:2mm": ("blas(S1); blas(S3)", _mm2),
    "numpy:3mm": ("blas(S1); blas(S3); blas(S5)", _mm3),
    "numpy:doitgen": ("blas(S1)", _doitgen),
    "numpy:covariance": ("blas(S5)", _covariance),
}
"""Each kernel's LARGE finish winner (benchmarks/results/numpy-eval-large/{dl,la,fa}/logs, kept for this), and its products."""


def measured(label: str, size: str, repeats: int) -> tuple[list[str], float, float]:
    """One kernel's rows of the table, its ceiling and the schedule's speedup over NumPy."""
    schedule, products = KERNELS[label]
    target = resolve_target(label)
    values = target.inputs(size)
    ours = checked_build(target, values, schedule)
    calls = products(values)
    originals, scratch = copy.deepcopy(values), copy.deepcopy(values)
    timings = timed_in_turns(
        {
            NUMPY: lambda: target.function(**originals),
            "its products alone": lambda: [call() for call in calls],
            f"RepoOS `{schedule}`": lambda: ours(scratch),
        },
        repeats,
        held=measurement_lock,
    )
    numpy_s = timings[NUMPY].median_s
    rows = rows_against_numpy(label, timings)
    ceiling = numpy_s / timings["its products alone"].median_s
    return rows, ceiling, numpy_s / timings[f"RepoOS `{schedule}`"].median_s


def main() -> int:
    as_measuring_worker()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="LARGE")
    parser.add_argument("--kernels", default=",".join(KERNELS), help="comma-separated, from: " + ", ".join(KERNELS))
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    size = args.size.strip().upper()
    unknown = [k for k in args.kernels.split(",") if k not in KERNELS]
    if unknown:
        parser.error(f"--kernels: unknown {', '.join(unknown)}; choose from {', '.join(KERNELS)}")
    lines = ["| kernel | contender | median ±half the IQR | NumPy / it |", "|---|---|---|---|"]
    bounds = []
    for label in args.kernels.split(","):
        rows, ceiling, ours = measured(label, size, args.repeats)
        lines += rows
        bounds.append(f"- {label}: its products alone bound a BLAS schedule at {ceiling:.3f}x NumPy; the winner ran {ours:.3f}x")
    summary = "\n".join([f"At {size}, each kernel's contenders timed in turns under the measurement lock.", "", *bounds])
    print("\n".join(lines) + "\n\n" + summary)
    write_results("product_ceiling.md", "Product-bound NumPy kernels against their own matrix products", lines, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

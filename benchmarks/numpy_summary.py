"""The NumPy-suite eval's headline figures, from its own eval.csv (what `repoos eval` measured in one run).

    .venv/bin/python benchmarks/numpy_summary.py benchmarks/results/numpy-eval/eval.csv
    .venv/bin/python benchmarks/numpy_summary.py RUN1/eval.csv RUN2/eval.csv --out SUMMARY.md
    .venv/bin/python benchmarks/numpy_summary.py benchmarks/results/numpy-eval-large

Several runs (an eval at a large size, run a few kernels at a time) merge into one table; each
kernel's contenders still come from one run. Given a study's folder, it merges the chunks its
manifest lists (`repoos eval --chunk`, `repoos_agent/study/chunks.py`) and writes the study's summary.md.

Prints a Markdown table, one row per kernel (speedups over the NumPy original), then the
issue's targets: the share of kernels the engine optimized, its geomean, the geomean of the
per-kernel best of Numba, DaCe and Pythran (NumPy itself included, as 1.00x), their ratio,
the kernels below 1.00x, and the attention block; from eval.json beside it, the same best peer
against one NumPy reference per kernel (`one_reference`). Writes the same text next to the
CSV as summary.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

from repoos_agent.errors import RepoosError
from repoos_agent.measure.provenance import provenance
from repoos_agent.study.chunks import MANIFEST_NAME, study_chunks
from repoos_agent.study.head_to_head import NUMPY_ORIGINAL
from repoos_agent.study.report import CSV_NAME

PEERS = ("numba", "dace", "pythran")


def _number(text: str) -> float | None:
    return float(text) if text not in ("", "nan") else None


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def one_reference(instances: list[dict]) -> dict[str, tuple[float | None, float]]:
    """Per kernel, RepoOS and the best peer (NumPy included, 1.00x) against one NumPy time: the fastest median
    of the original in any of the kernel's races, ours and the peers'.

    Each contender races the NumPy original on its own, and another runtime in the measurement worker can slow
    the original in a race: 2mm's original took 6.93 ms in Numba's race and 0.58 ms in DaCe's, mvt's 3.42 ms
    in Numba's and 0.08 ms in Pythran's (worker threads of the previous call's runtime still spinning or
    waking). Against the fastest, no contender gains from a slowed reference. RepoOS is None where its race
    times are missing (a run before they were recorded), 1.00 where the finish kept the original."""
    figures = {}
    for instance in instances:
        ran = [t for t in instance["tools"] if t["status"] == "ok" and t.get("baseline_s") and t.get("tool_s")]
        record = max(instance["dialogues"], key=lambda d: d["speedup"], default=None)
        ours_s = record.get("candidate_s") if record else None
        references = [t["baseline_s"] for t in ran] + ([record["numpy_s"]] if record and record.get("numpy_s") else [])
        reference = min(references, default=None)
        best_peer = max([1.0, *(reference / t["tool_s"] for t in ran)]) if reference else 1.0
        if record and record["schedule"] == NUMPY_ORIGINAL:
            ours = 1.0
        else:
            ours = reference / ours_s if reference and ours_s else None
        figures[instance["kernel"]] = (ours, best_peer)
    return figures


def summary(rows: list[dict[str, str]], instances: list[dict] | None = None) -> str:
    lines = ["| kernel | RepoOS | numba | dace | pythran | best peer (NumPy incl.) | schedule |", "|---|---|---|---|---|---|---|"]
    ours, best_peers, below, optimized = [], [], [], 0
    for row in rows:
        engine = _number(row["single"]) if row["engine_status"] == "ok" else None
        peers = {}
        for peer in PEERS:
            # An eval run without `--compare` has no column for the peer: it was not measured.
            status, value = row.get(f"{peer}_status", "not run"), _number(row.get(f"{peer}_speedup", ""))
            peers[peer] = (f"{value:.2f}x" if value is not None and status == "ok" else status, value if status == "ok" else None)
        best = max([1.0, *(v for _, v in peers.values() if v is not None)])
        best_peers.append(best)
        if engine is not None:
            ours.append(engine)
            optimized += engine > 1.0
            if engine < 1.0:
                below.append(f"{row['kernel']} {engine:.2f}x")
        shown = f"{engine:.2f}x" if engine is not None else row["engine_status"]
        schedule = (row["schedule"] or "(identity)")[:60]
        cells = [row["kernel"], shown, *(peers[peer][0] for peer in PEERS), f"{best:.2f}x", f"`{schedule}`"]
        lines.append("| " + " | ".join(cells) + " |")
    ours_geomean, peers_geomean = _geomean(ours), _geomean(best_peers)
    compared = any(f"{peer}_status" in row for row in rows for peer in PEERS)
    attention = next((r for r in rows if r["kernel"] == "numpy:attention"), None)
    lines += [
        "",
        f"- kernels: {len(rows)}; modelled and searched: {len(ours)}; faster than NumPy: {optimized} ({optimized / len(rows):.0%})",
        f"- RepoOS geomean over NumPy: {ours_geomean:.2f}x",
        *(
            [
                f"- per-kernel best of Numba, DaCe, Pythran (NumPy included): geomean {peers_geomean:.2f}x",
                f"- RepoOS / best peer: {ours_geomean / peers_geomean:.2f}x",
            ]
            if compared
            else ["- peers: not run (`repoos eval` without `--compare`)"]
        ),
        f"- below 1.00x: {', '.join(below) or 'none'}",
        f"- attention: {float(attention['single']):.2f}x over NumPy"
        if attention and attention["single"]
        else "- attention: not run",
    ]
    if instances and compared:
        figures = one_reference(instances)
        peers_one = _geomean([peer for _, peer in figures.values()])
        lines.append(
            f"- per-kernel best peer against the fastest NumPy time of the kernel's races: geomean {peers_one:.2f}x; "
            f"RepoOS / that: {ours_geomean / peers_one:.2f}x"
        )
        ours_one = [ours for ours, _ in figures.values() if ours is not None]
        if len(ours_one) == len(figures):
            faster = sum(ours > 1.0 for ours in ours_one)
            lines.append(
                f"- against that one NumPy time for every contender, RepoOS included: RepoOS geomean {_geomean(ours_one):.2f}x, "
                f"faster than NumPy on {faster} ({faster / len(ours_one):.0%}), "
                f"{_geomean(ours_one) / peers_one:.2f}x the best peer"
            )
    return "\n".join(lines) + "\n"


def merged(paths: list[Path]) -> tuple[list[dict[str, str]], list[dict] | None]:
    """The rows of several eval runs, and their eval.json instances where every run has one. A kernel measured
    in more than one run keeps its last: each row's contenders still come from one run, on the same inputs."""
    rows: dict[str, dict[str, str]] = {}
    instances: dict[str, dict] | None = {}
    for path in paths:
        with path.open(newline="") as handle:
            rows.update({row["kernel"]: row for row in csv.DictReader(handle)})
        measured = path.parent / "eval.json"
        if instances is not None and measured.exists():
            instances.update({i["kernel"]: i for i in json.loads(measured.read_text())["instances"]})
        else:
            instances = None
    return list(rows.values()), None if instances is None else [instances[kernel] for kernel in rows]


def sources(paths: list[Path]) -> tuple[list[Path], str]:
    """The eval.csv files to merge, and a line saying what they are: the chunks of a study's manifest, in its order,
    when `paths` is the study's folder; else the files given."""
    if len(paths) == 1 and paths[0].is_dir():
        chunks = study_chunks(paths[0])
        names = ", ".join(chunk.name for chunk in chunks)
        return [paths[0] / chunk.name / CSV_NAME for chunk in chunks], (
            f"Merged from the {len(chunks)} chunks of [{MANIFEST_NAME}]({MANIFEST_NAME}), in its order ({names}); "
            "each chunk's kernels, commit, CPU, cores, date and command are there."
        )
    runs = ", ".join(str(path) for path in paths)
    if len(paths) > 1:
        return paths, f"Merged from {len(paths)} eval runs: {runs}"
    return paths, f"From {runs} (its run's provenance: eval.json beside it)."


def main() -> int:
    parser = argparse.ArgumentParser(description="The NumPy-suite eval's headline figures, from one or more eval.csv files.")
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        default=[Path("benchmarks/results/numpy-eval/eval.csv")],
        help="eval.csv files, or the folder of a study run in chunks (`repoos eval --chunk`)",
    )
    parser.add_argument("--out", type=Path, help="where to write the summary (default: summary.md in the study or beside the CSV)")
    args = parser.parse_args()
    try:
        paths, origin = sources(args.paths)
    except RepoosError as error:
        parser.error(str(error))
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        parser.error(f"no eval.csv at {', '.join(missing)}")
    rows, instances = merged(paths)
    text = f"{provenance().line()}\n\n{origin}\n\n" + summary(rows, instances)
    print(text, end="")
    default = args.paths[0] if args.paths[0].is_dir() else paths[0].parent
    (args.out or default / "summary.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

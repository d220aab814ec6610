"""The NumPy eval's summary over several runs: an eval at a large size runs a few kernels at a time."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import numpy_summary
from numpy_summary import merged, summary

from repoos_agent.measure.provenance import provenance
from repoos_agent.study.chunks import record_chunk, study_chunks

COLUMNS = ("kernel", "size", "single", "schedule", "engine_status", "numba_speedup", "numba_status")


def eval_run(directory: Path, rows: list[tuple[str, str, str]], with_json: bool = True) -> Path:
    """An eval.csv of (kernel, RepoOS speedup, Numba speedup) rows, and its eval.json when asked."""
    directory.mkdir()
    path = directory / "eval.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        for kernel, ours, numba in rows:
            writer.writerow(dict(zip(COLUMNS, (kernel, "LARGE", ours, "parallelize(i)", "ok", numba, "ok"), strict=True)))
    if with_json:
        instances = [{"kernel": kernel, "tools": [], "dialogues": []} for kernel, _, _ in rows]
        (directory / "eval.json").write_text(json.dumps({"instances": instances}))
    return path


def test_runs_merge_into_one_table_and_a_kernel_measured_twice_keeps_its_last_run(tmp_path):
    first = eval_run(tmp_path / "first", [("numpy:gemm", "1.10", "0.90"), ("numpy:atax", "1.50", "0.80")])
    second = eval_run(tmp_path / "second", [("numpy:gemm", "1.30", "0.95"), ("numpy:mlp", "1.20", "1.05")])
    rows, instances = merged([first, second])
    assert [(r["kernel"], r["single"]) for r in rows] == [("numpy:gemm", "1.30"), ("numpy:atax", "1.50"), ("numpy:mlp", "1.20")]
    assert [i["kernel"] for i in instances] == ["numpy:gemm", "numpy:atax", "numpy:mlp"]
    text = summary(rows, instances)
    assert "kernels: 3; modelled and searched: 3; faster than NumPy: 3 (100%)" in text
    assert "| numpy:gemm | 1.30x | 0.95x |" in text


def test_a_run_without_its_eval_json_drops_the_one_reference_figures_rather_than_mixing_runs(tmp_path):
    first = eval_run(tmp_path / "first", [("numpy:gemm", "1.10", "0.90")])
    second = eval_run(tmp_path / "second", [("numpy:mlp", "1.20", "1.05")], with_json=False)
    rows, instances = merged([first, second])
    assert len(rows) == 2 and instances is None


def test_a_missing_run_is_named_and_nothing_is_written(tmp_path):
    present = eval_run(tmp_path / "present", [("numpy:gemm", "1.10", "0.90")])
    out = tmp_path / "summary.md"
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "numpy_summary.py"
    result = subprocess.run(
        [sys.executable, str(script), str(present), str(tmp_path / "absent" / "eval.csv"), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "no eval.csv at" in result.stderr and "absent" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def summarize_study(study: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """`benchmarks/numpy_summary.py STUDY`, in this process."""
    monkeypatch.setattr(sys, "argv", ["numpy_summary.py", str(study)])
    try:
        return numpy_summary.main()
    except SystemExit as exit:
        return int(exit.code)


def test_a_chunked_study_merges_its_chunks_in_its_manifests_order_and_a_chunk_run_again_counts_last(tmp_path, monkeypatch):
    study = tmp_path / "numpy-eval-large"
    first = record_chunk(study, "la", ("numpy:gemm", "numpy:atax"), ("LARGE",), provenance("repoos eval --chunk la"))
    eval_run(first, [("numpy:gemm", "1.10", "0.90"), ("numpy:atax", "1.50", "0.80")])
    second = record_chunk(study, "rerun", ("numpy:gemm",), ("LARGE",), provenance("repoos eval --chunk rerun"))
    eval_run(second, [("numpy:gemm", "1.30", "0.95")])
    assert (first, second) == (study / "la", study / "rerun")
    assert summarize_study(study, monkeypatch) == 0
    text = (study / "summary.md").read_text()
    assert text.startswith("Commit ")
    assert "Merged from the 2 chunks of [manifest.json](manifest.json), in its order (la, rerun)" in text
    assert "| numpy:gemm | 1.30x | 0.95x |" in text and "| numpy:atax | 1.50x | 0.80x |" in text
    manifest = json.loads((study / "manifest.json").read_text())
    assert [(c["name"], c["kernels"], c["provenance"]["command"]) for c in manifest["chunks"]] == [
        ("la", ["numpy:gemm", "numpy:atax"], "repoos eval --chunk la"),
        ("rerun", ["numpy:gemm"], "repoos eval --chunk rerun"),
    ]
    record_chunk(study, "la", ("numpy:gemm", "numpy:atax"), ("LARGE",), provenance("repoos eval --chunk la"))
    assert [chunk.name for chunk in study_chunks(study)] == ["rerun", "la"]
    assert summarize_study(study, monkeypatch) == 0
    assert "| numpy:gemm | 1.10x | 0.90x |" in (study / "summary.md").read_text()


def test_a_folder_without_a_manifest_is_named_not_guessed_at(tmp_path, monkeypatch, capsys):
    assert summarize_study(tmp_path, monkeypatch) == 2
    message = f"{tmp_path}: no manifest.json here; a chunked study is written by `repoos eval --chunk`"
    assert message in capsys.readouterr().err
    assert not (tmp_path / "summary.md").exists()


def test_a_chunk_is_one_folder_name(repoos_command, tmp_path):
    command = [*repoos_command, "eval", "--kernels", "gemm", "--sizes", "MINI", "--out", str(tmp_path), "--chunk", "../up"]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--chunk '../up': a chunk is a folder name (letters, digits, `_`, `.`, `-`), not `logs`" in result.stderr
    assert not (tmp_path / "manifest.json").exists()

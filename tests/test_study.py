"""`repoos eval`: the study's statistics, a real run against Numba, Graphite and Polly, and its outputs."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess

import pytest

from repoos_agent.study import (
    DialogueRecord,
    InstanceResult,
    StudyConfig,
    ToolSpec,
    chosen_kernels,
    csv_columns,
    measure_tool,
    run_study,
    summarize,
)
from repoos_agent.study.head_to_head import NUMPY_ORIGINAL, Duel, race_winners
from repoos_agent.study.statistics import bootstrap_geometric_mean, format_speedup, geometric_mean, median
from repoos_agent.target import resolve_target

from .conftest import ROOT
from .fake_llm_servers import FakeLLMServer, openai_answer

SPEEDUPS = [1.0, 1.4, 2.0, 3.5, 9.6, 1.1, 0.98]


def test_geometric_mean_of_ratios():
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert geometric_mean([2.0, 0.5]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="positive"):
        geometric_mean([1.0, 0.0])


def test_bootstrap_interval_brackets_the_estimate_and_is_reproducible():
    estimate = bootstrap_geometric_mean(SPEEDUPS, seed=7)
    assert estimate.value == pytest.approx(geometric_mean(SPEEDUPS))
    assert estimate.low < estimate.value < estimate.high and estimate.count == len(SPEEDUPS)
    assert bootstrap_geometric_mean(SPEEDUPS, seed=7) == estimate
    assert bootstrap_geometric_mean(SPEEDUPS, seed=8) != estimate  # another seed resamples differently
    assert format_speedup(2.345) == "2.35x" and format_speedup(0.0012) == "0.0012x"
    single = bootstrap_geometric_mean([2.5], seed=0)
    assert single.low == single.value == single.high == pytest.approx(2.5)


def _record(run: int, dialogue: int, speedup: float) -> DialogueRecord:
    return DialogueRecord(run, dialogue, 0, speedup, 0.0, "", 1, {"legal": 1}, 1.0, 0.1, 0.1, 0.1, 0.1, 0, 0, 0.0)


def test_best_of_k_is_never_below_the_single_run():
    # Three runs of two dialogues: single run = median of each run's first dialogue, best-of-2 = median of each run's best.
    runs = [(1.0, 2.0), (1.5, 1.2), (3.0, 1.1)]
    instance = InstanceResult(
        "gemm", "MINI", tuple(_record(r, d, s) for r, pair in enumerate(runs) for d, s in enumerate(pair)), (1.0,) * 3
    )
    assert instance.single == median([1.0, 1.5, 3.0]) == 1.5
    assert instance.best_of_k == median([2.0, 1.5, 3.0]) == 2.0
    assert instance.best_of_k >= instance.single


@pytest.mark.slow  # end to end: a search and three tools (the suite's time); the peers' parts run by default
def test_eval_measures_our_search_and_the_three_tools_on_the_same_inputs(repoos_command, tmp_path):
    out = tmp_path / "study"
    command = [*repoos_command, "eval", "--kernels", "jacobi-1d,mvt", "--sizes", "MINI", "--iters", "1", "--candidates", "2"]
    result = subprocess.run(
        [*command, "--compare", "numba,graphite,polly", "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert "RepoOS" in result.stdout and "polly" in result.stdout and "95% CI" in result.stdout
    tools = ("numba", "graphite", "polly")
    with (out / "eval.csv").open() as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    assert reader.fieldnames == csv_columns(tools)
    assert [(row["kernel"], row["size"]) for row in rows] == [("jacobi-1d", "MINI"), ("mvt", "MINI")]
    polly_here = shutil.which("clang-19") is not None
    for row in rows:
        assert float(row["single"]) >= 1.0  # the identity is always in the pool
        assert row["numba_status"] == "ok" and row["graphite_status"] == "ok"
        assert row["polly_status"] == ("ok" if polly_here else "missing")
    report = json.loads((out / "eval.json").read_text())
    assert report["summary"]["instances"] == 2 and report["summary"]["verdicts"]["legal"] >= 1
    for instance in report["instances"]:
        for tool in instance["tools"]:
            if tool["status"] == "ok":  # timed only after its outputs matched ours
                assert tool["max_rel_error"] <= 1e-9 and tool["speedup"] > 0
    assert (out / "eval.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Every search's events are kept: which schedule measured what, for an audit or `repoos tui --replay`.
    for row in rows:
        log = out / "logs" / f"{row['kernel']}-MINI-seed0.jsonl"
        kinds = [json.loads(line)["kind"] for line in log.read_text().splitlines()]
        assert kinds[0] == "run_started" and kinds[-1] == "run_finished" and "evaluation" in kinds


def test_kernels_may_carry_their_own_size():
    names, own_sizes = chosen_kernels("all,lu@MEDIUM,seidel_2d@medium")
    assert len(names) == 30 and names.count("lu") == 1
    assert dict(own_sizes) == {"lu": "MEDIUM", "seidel-2d": "MEDIUM"}


def test_a_missing_compiler_is_reported_not_faked():
    measurement = measure_tool(ToolSpec("polly", "/nonexistent/clang-19"), resolve_target("jacobi-1d"), "MINI", 0, 60)
    assert measurement.status == "missing" and measurement.speedup is None
    assert "/nonexistent/clang-19" in measurement.message


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--compare", "icc"], "--compare: unknown tool `icc`"),
        (["--kernels", "gemmm"], "unknown kernel `gemmm`; did you mean gemm"),
        (["--sizes", "HUGE"], "--sizes: unknown size `HUGE`"),
        (["--kernels", "gemm@HUGE"], "--kernels gemm@HUGE: unknown size `HUGE`"),
        (["--out", "/proc/version/study"], "--out /proc/version/study: Not a directory"),
    ],
)
def test_eval_bad_input_is_one_line_and_exit_2(repoos, tmp_path, arguments, message):
    result = repoos("eval", "--out", str(tmp_path), *arguments)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_eval_counts_a_model_backends_tokens_and_cost(monkeypatch):
    """A model backend through the real OpenAI client against a local server: the study sums its tokens and prices them."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    replies = [
        openai_answer("i is free.\n<schedule>parallelize(i)</schedule>", prompt_tokens=2_000_000, completion_tokens=100_000),
        openai_answer("Nothing else to try.", prompt_tokens=500_000, completion_tokens=10_000),
    ]
    with FakeLLMServer(replies) as server:
        config = StudyConfig(
            kernels=("gemm",), sizes=("MINI",), iters=2, candidates=1, backend="openai:gpt-4o-mini", base_url=f"{server.url}/v1"
        )
        instances = run_study(config)
    summary = summarize(instances, (), seed=0)
    assert (summary.tokens_in, summary.tokens_out) == (2_500_000, 110_000)
    assert summary.cost_usd == pytest.approx(2.5 * 0.15 + 0.11 * 0.60)  # gpt-4o-mini: $0.15 / $0.60 per million
    assert summary.proposals >= 2 and summary.single.value >= 1.0
    record = instances[0].dialogues[0]
    assert record.propose_s > 0 and record.legality_s > 0


def test_a_numpy_kernels_record_keeps_its_race_times_for_one_reference_across_contenders():
    """eval.json keeps the winner's time and the original's fastest over the races against it, so that a summary can
    put every contender against one NumPy time instead of the one its own race measured."""
    [instance] = run_study(StudyConfig(kernels=("numpy:gelu",), sizes=("SMALL",), iters=1, candidates=2))
    [record] = instance.dialogues
    if record.schedule == NUMPY_ORIGINAL:
        assert record.candidate_s is None and record.speedup == 1.0
        return
    assert record.candidate_s > 0 and record.numpy_s > 0
    # the fastest of the races against the original, so never slower than the one the speedup is from
    assert record.numpy_s <= record.speedup * record.candidate_s * (1 + 1e-9)


def test_two_winners_raced_head_to_head_say_which_is_faster_and_by_how_much():
    """The mixture-against-heuristic question of the LLM study: the same run, the same inputs, three races."""
    target = resolve_target("numpy:softmax")
    fused = "fuse(S0, S1, 1); fuse(S1, S2, 1); fuse(S2, S3, 1); fuse(S3, S4, 1); fuse(S4, S5, 1)"
    duel = race_winners(target, "SMALL", NUMPY_ORIGINAL, fused)
    assert duel.outcome == "ok", duel.message
    assert duel.ratio > 0 and 0 <= duel.spread < 1
    assert duel.second_lost == (duel.ratio < 1 - duel.spread)
    assert race_winners(target, "SMALL", fused, fused) == Duel(fused, fused, 1.0, outcome="same")


def test_a_winner_that_no_longer_proves_legal_is_an_outcome_of_the_duel_not_a_crash():
    duel = race_winners(resolve_target("jacobi-1d"), "MINI", "", "parallelize(t)")
    assert duel.outcome == "compile_error" and "no longer proves legal" in duel.message
    assert not duel.second_lost

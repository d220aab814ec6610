"""`repoos eval --cluster` and `repoos optimize --cluster` on a real Dask cluster of two worker processes on
127.0.0.1, and `--resume`."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest

from repoos_agent.agent.remote_looks import first_look_on_worker, ship
from repoos_agent.agent.search import SearchConfig, optimize
from repoos_agent.backends.build import cpu_model
from repoos_agent.cluster import cluster_client, workers_like_this_machine
from repoos_agent.errors import RepoosError
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.measure.provenance import provenance
from repoos_agent.study import DialogueRecord, InstanceResult, StudyConfig, run_study, summarize, write_outputs
from repoos_agent.study.cluster import run_study_on_cluster
from repoos_agent.study.report import finished_instances, summary_lines
from repoos_agent.target import resolve_target

pytest.importorskip("distributed")

STUDY = StudyConfig(kernels=("atax", "mvt"), sizes=("MINI",), iters=1, candidates=2)


@pytest.fixture(scope="module")
def client():
    with cluster_client("local:2") as client:
        client.wait_for_workers(2)
        yield client


def _timed_intervals(logs: Path) -> list[tuple[float, float]]:
    """Every timed run the searches' event logs recorded, as wall-clock intervals."""
    intervals = []
    for path in logs.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            intervals.extend((begin, end) for begin, end in event.get("timed") or ())
    return sorted(intervals)


def test_a_study_over_two_workers_writes_the_rows_a_local_study_writes_and_never_times_two_runs_at_once(client, tmp_path):
    local = run_study(replace(STUDY, log_dir=str(tmp_path / "local")))
    snapshots: list[list[str]] = []
    lines: list[str] = []
    config = replace(STUDY, log_dir=str(tmp_path / "cluster" / "logs"))
    spread = run_study_on_cluster(config, client, lines.append, lambda rows: snapshots.append([r.kernel for r in rows]))

    assert [(i.kernel, i.size, i.engine) for i in spread] == [(i.kernel, i.size, i.engine) for i in local]
    workers = set(client.scheduler_info()["workers"])
    for instance in spread:
        assert instance.worker in workers and instance.cpu == cpu_model()
        assert instance.single > 0 and instance.dialogues[0].evaluations > 0
    # Rows are written as they arrive, always in the plan's order, the last write holding all of them.
    assert len(snapshots) == 2 and snapshots[-1] == ["atax", "mvt"]
    assert all(rows == [k for k in STUDY.kernels if k in rows] for rows in snapshots)
    # The workers' progress lines reach the study's terminal, named by worker.
    assert any(line.startswith("[tcp://127.0.0.1:") and "run 1/1" in line for line in lines)
    # Each search's event log comes back from its worker, and the two workers' timed runs never overlapped.
    logs = Path(config.log_dir)
    assert sorted(p.name for p in logs.glob("*.jsonl")) == ["atax-MINI-seed0.jsonl", "mvt-MINI-seed0.jsonl"]
    intervals = _timed_intervals(logs)
    assert len(intervals) > 30
    assert all(end <= next_begin for (_, end), (next_begin, _) in pairwise(intervals))
    # The CSV names each row's worker and CPU.
    out = tmp_path / "cluster"
    write_outputs(out, config, spread, summarize(spread, (), 0), provenance("test"))
    header, *rows = (out / "eval.csv").read_text().splitlines()
    assert "cpu" in header.split(",") and "worker" in header.split(",") and all("tcp://127.0.0.1:" in row for row in rows)


def test_a_worker_killed_mid_instance_has_its_instance_run_again_and_no_row_is_lost_or_doubled(client, tmp_path):
    config = replace(STUDY, log_dir=str(tmp_path / "logs"))
    outcome: dict[str, object] = {}
    study = threading.Thread(target=lambda: outcome.update(rows=run_study_on_cluster(config, client, print, lambda _rows: None)))
    study.start()
    deadline = time.monotonic() + 60
    while not (busy := [w for w, keys in client.processing().items() if keys]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert busy, "no instance started"
    time.sleep(1.0)  # inside the search by now
    victim = busy[0]
    [killed] = client.processing()[victim]
    os.kill(client.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)
    study.join(timeout=180)
    rows = outcome["rows"]
    assert [(r.kernel, r.engine) for r in rows] == [("atax", "ok"), ("mvt", "ok")]
    rerun = next(r for r in rows if killed.endswith(f"-{r.kernel}-{r.size}"))
    assert rerun.worker != victim  # finished by another worker, or by the killed one's restart at a new address
    assert sorted(p.name for p in Path(config.log_dir).glob("*.jsonl")) == ["atax-MINI-seed0.jsonl", "mvt-MINI-seed0.jsonl"]
    client.wait_for_workers(2)  # the nanny restarted it


def test_resume_keeps_the_finished_rows_and_runs_only_the_others(tmp_path):
    first = replace(STUDY, kernels=("atax",), log_dir=str(tmp_path / "logs"))
    [atax] = run_study(first)
    write_outputs(tmp_path, first, [atax], summarize([atax], (), 0), provenance("test"))

    resumed = replace(first, kernels=("atax", "mvt"))
    done = finished_instances(tmp_path, resumed)
    lines: list[str] = []
    rows = run_study(resumed, lines.append, done=done)
    assert [r.kernel for r in rows] == ["atax", "mvt"]
    assert rows[0].run_walls == atax.run_walls and rows[0].dialogues == atax.dialogues  # kept, not searched again
    assert not any(line.startswith("atax") for line in lines) and any(line.startswith("mvt") for line in lines)
    assert (tmp_path / "logs" / "atax-MINI-seed0.jsonl").exists()  # the resumed study's logs are its own

    with pytest.raises(RepoosError, match=r"--resume: .*eval.json is a study searched otherwise \(iters 1 there, 3 here\)"):
        finished_instances(tmp_path, replace(resumed, iters=3))
    (tmp_path / "eval.json").write_text("{not json")
    with pytest.raises(RepoosError, match=r"--resume: .*eval.json is not a study's eval.json"):
        finished_instances(tmp_path, resumed)


@pytest.mark.parametrize("address", ["local:0", "local:two"])
def test_a_local_cluster_needs_a_count_of_workers(address):
    with pytest.raises(RepoosError, match=rf"--cluster {address}: a local cluster is `local:N`"), cluster_client(address):
        pass


def test_a_study_measured_on_two_kinds_of_cpu_states_its_figure_per_kind():
    record = DialogueRecord(0, 0, 0, 1.5, 0.01, "parallelize(S0.i)", 4, {"legal": 4}, 1.0, 0.1, 0.1, 0.1, 0.1, 0, 0, 0.0)
    atax = InstanceResult("atax", "MINI", (record,), (1.0,), cpu="Intel Xeon")
    rows = [atax, replace(atax, kernel="mvt", cpu="AMD EPYC")]
    summary = summarize(rows, (), 0)
    assert set(summary.by_cpu) == {"Intel Xeon", "AMD EPYC"} and all(e.count == 1 for e in summary.by_cpu.values())
    [line] = [line for line in summary_lines(STUDY, summary) if "kinds of CPU" in line]
    assert line.startswith("measured on 2 kinds of CPU, compare within one: AMD EPYC: ")
    assert summarize([atax], (), 0).by_cpu == {}  # one machine: nothing to say


@pytest.mark.parametrize("option", [["--cluster", "local:2"], ["--resume"]])
def test_a_track_that_races_its_own_peers_refuses_cluster_and_resume(repoos, option):
    ran = repoos("eval", "--kernels", "fsm:crc32", *option)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert f"{option[0]}: fsm: kernels race their own peers in one run here" in ran.stderr


def test_a_search_with_a_cluster_takes_its_first_looks_on_the_workers_and_finishes_here(client):
    from distributed import get_task_stream

    with get_task_stream(client) as stream:
        result = optimize(
            resolve_target("atax"), SearchConfig(iters=1, candidates=2, size="MINI", cluster=client.scheduler.address)
        )
    looks = [task for task in stream.data if task["key"].startswith("first_look_on_worker")]
    assert len(looks) == result.evaluations > 0  # every candidate's first look ran on a worker
    assert {task["worker"] for task in looks} <= set(client.scheduler_info()["workers"])
    assert result.finish and all(e.evaluation.target == "atax" for e in result.leaderboard)
    if result.best is not None:  # raced and checked by Z3 here, in the finish
        assert result.best.evaluation.verified == "true" and result.best.race is not None


def test_a_users_file_is_shipped_to_the_workers_that_rebuild_it(client, tmp_path):
    source = tmp_path / "smooth.py"
    source.write_text("def smooth(n, x, y):\n    for i in range(1, n - 1):\n        y[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0\n")
    target = resolve_target(f"{source}:smooth", [parse_arg_spec(s) for s in ("n=4000", "x=f64[n]", "y=f64[n]")])
    [evaluation] = client.gather([client.submit(first_look_on_worker, ship(target), "parallelize(i)", SearchConfig(), 0.0)])
    assert evaluation.target == target.label and evaluation.verdict == "legal" and evaluation.correct


def test_a_cluster_without_a_worker_of_this_cpu_is_refused_naming_the_kinds(client, monkeypatch):
    monkeypatch.setattr("repoos_agent.cluster.cpu_model", lambda: "Some Other CPU")
    with pytest.raises(RepoosError, match=r"--cluster: no worker has this machine's CPU \(Some Other CPU\); the workers have: "):
        workers_like_this_machine(client)

"""Z3's verdicts kept by nest: a schedule proposed again is not proved again, and nothing else reads its verdict."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from repoos_agent import verified_nests
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.target import resolve_target

KEPT = "(the verdict kept from an earlier proof of this nest)"


@pytest.fixture
def gemm(tmp_path, monkeypatch):
    monkeypatch.setenv("REPOOS_CACHE_DIR", str(tmp_path))
    return resolve_target("gemm")


def test_a_schedule_evaluated_again_reads_its_verdict_without_running_z3(gemm, monkeypatch):
    first = evaluate_schedule(gemm, "tile(S1.k, S1.j, 8, 8); parallelize(i)", "MINI", measure=False)
    assert first.verified == "true" and KEPT not in first.verification

    def no_proof(*_args, **_kwargs):
        raise AssertionError("Z3 ran on a nest proved before")

    monkeypatch.setattr(verified_nests, "verify_loop_nest", no_proof)
    again = evaluate_schedule(gemm, "tile(S1.k, S1.j, 8, 8); parallelize(i)", "MINI", measure=False)
    assert again.verified == "true" and again.verification.endswith(KEPT)


@pytest.mark.parametrize("other", ["tile(S1.k, S1.j, 8, 4); parallelize(i)", "tile(S1.k, S1.j, 8, 8)"])
def test_another_nest_is_proved_for_itself(gemm, other):
    evaluate_schedule(gemm, "tile(S1.k, S1.j, 8, 8); parallelize(i)", "MINI", measure=False)
    fresh = evaluate_schedule(gemm, other, "MINI", measure=False)
    assert fresh.verified == "true" and KEPT not in fresh.verification


def test_a_damaged_verdict_is_proved_again_not_read(gemm, tmp_path):
    evaluate_schedule(gemm, "interchange(S1.k, S1.j)", "MINI", measure=False)
    for entry in tmp_path.glob("proof-*.json"):
        entry.write_text('{"verified": "yes"')
    again = evaluate_schedule(gemm, "interchange(S1.k, S1.j)", "MINI", measure=False)
    assert again.verified == "true" and KEPT not in again.verification


def test_a_second_process_reads_the_verdict_the_first_one_proved(tmp_path):
    """As a second session on the same function would: each process salts its string hashes differently."""
    script = (
        "from repoos_agent.evaluate import evaluate_schedule; from repoos_agent.target import resolve_target; "
        "print(evaluate_schedule(resolve_target('gemm'), 'parallelize(i)', 'MINI', measure=False).verification)"
    )
    said = []
    for seed in ("1", "2"):
        environment = {**os.environ, "REPOOS_CACHE_DIR": str(tmp_path), "PYTHONHASHSEED": seed}
        ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment, check=True)
        said.append(ran.stdout.strip())
    assert KEPT not in said[0] and said[1].endswith(KEPT)

"""The track registry: each track a registration the front ends dispatch through, none known to ingest or the runtime."""

from __future__ import annotations

import pytest

import repoos_agent.tracks as tracks
from repoos_agent.ingest import ingest_source
from repoos_agent.ingest.parse import text
from repoos_agent.tracks import Track, bench_track, registered_tracks
from tests.conftest import ROOT

APP = ROOT / "kernels/apps/revenue_app/main.py"
LOOPS = ROOT / "kernels/examples/user_kernels.py"


def test_one_registration_per_track_asked_in_order():
    assert [track.name for track in registered_tracks()] == ["tabular", "graphs", "affine"]
    assert all(isinstance(track, Track) for track in registered_tracks())


def test_a_registered_claim_is_what_ingest_reports_before_the_loop_model(monkeypatch: pytest.MonkeyPatch):
    def claim(function, path: str) -> str | None:
        name = text(function.child_by_field_name("name"))
        return f"`{name}` of {path} steps a machine" if name.startswith("step") else None

    monkeypatch.setattr(tracks, "registered_tracks", lambda: (Track("fsm", claim=claim), *registered_tracks()))
    source = (
        "def step(x):\n    for i in range(3):\n        x[i] = 1.0\n\n\ndef fill(x):\n    for i in range(3):\n        x[i] = 1.0\n"
    )
    reports = {report.name: report for report in ingest_source(source, "machine.py", {"step": {"x": 1}, "fill": {"x": 1}})}
    assert (reports["step"].track, reports["step"].reason, reports["step"].kernel) == (
        "fsm",
        "`step` of machine.py steps a machine",
        None,
    )
    assert reports["fill"].track == "affine" and reports["fill"].kernel is not None


def test_an_orm_endpoint_is_benched_by_the_tabular_track_and_a_loop_by_the_loop_track():
    endpoint = bench_track(str(APP), "get_revenue", None)
    assert (endpoint.name, endpoint.bench_leg, endpoint.bench_output) == ("tabular", "repoos_agent.tabular.bench_leg", "json")
    loop = bench_track(str(LOOPS), "strided_scale", None)
    assert (loop.name, loop.bench_leg, loop.bench_output) == ("affine", "repoos_agent.runtime.bench_leg", "npz")

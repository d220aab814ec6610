"""All 30 PolyBench kernels: ingested as affine, native baseline equal to the Python original."""

from __future__ import annotations

import pytest

from repoos_agent.catalog import SIZE_CLASSES, bundled_kernels, find_bundled
from repoos_agent.check import check_baseline
from repoos_agent.ingest import ingest_file
from repoos_agent.target import resolve_target

POLYBENCH = [
    "correlation", "covariance", "gemm", "gemver", "gesummv", "symm", "syr2k", "syrk", "trmm", "2mm", "3mm",
    "atax", "bicg", "doitgen", "mvt", "cholesky", "durbin", "gramschmidt", "lu", "ludcmp", "trisolv", "deriche",
    "floyd-warshall", "nussinov", "adi", "fdtd-2d", "heat-3d", "jacobi-1d", "jacobi-2d", "seidel-2d",
]  # fmt: skip


def test_all_thirty_polybench_kernels_are_bundled_with_five_sizes():
    by_name = {k.name: k for k in bundled_kernels()}
    assert sorted(by_name) == sorted(POLYBENCH)
    for kernel in by_name.values():
        assert tuple(kernel.sizes) == SIZE_CLASSES, kernel.name


@pytest.mark.parametrize("name", POLYBENCH)
def test_kernel_ingests_as_affine(name):
    bundled = find_bundled(name)
    reports = {r.name: r for r in ingest_file(bundled.path)}
    report = reports[bundled.function]
    assert report.track == "affine", report.diagnostics
    assert report.analyzable
    assert report.kernel.statements


@pytest.mark.parametrize("name", POLYBENCH)
def test_native_baseline_matches_python_at_mini(name):
    report = check_baseline(resolve_target(name), "MINI")
    assert report.correct, (report.mismatched, report.max_rel_error)
    assert report.max_rel_error <= report.tolerance
    assert report.outputs, "a kernel that writes nothing compares nothing"
    assert report.native_s > 0


def test_underscore_spelling_names_the_same_kernel():
    assert find_bundled("jacobi_2d").name == "jacobi-2d"
    assert find_bundled("floyd_warshall").name == "floyd-warshall"

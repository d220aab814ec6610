"""The on-disk kernel cache: a hit skips code generation; a damaged entry is rebuilt, never loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from repoos_agent.backends import build as build_module
from repoos_agent.backends import build_baseline
from repoos_agent.check import fresh_copy
from repoos_agent.ingest import load_kernel
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target


@pytest.fixture
def gemm(tmp_path, monkeypatch):
    monkeypatch.setenv("REPOOS_CACHE_DIR", str(tmp_path))
    target = resolve_target("gemm")
    values = target.inputs("MINI")
    return target, values, Signature.of_values(target.kernel, values)


def run(native, values):
    copy = fresh_copy(values)
    native(copy)
    return copy["C"]


def test_cached_build_skips_code_generation(gemm, monkeypatch):
    target, values, signature = gemm
    first = run(build_baseline(target.kernel, signature), values)

    def no_codegen(*_args, **_kwargs):
        raise AssertionError("code generation ran on a cache hit")

    monkeypatch.setattr(build_module, "generate_c", no_codegen)
    second = run(build_baseline(target.kernel, signature), values)
    np.testing.assert_array_equal(first, second)


def test_one_build_serves_every_size(gemm, tmp_path):
    target, _, signature = gemm
    build_baseline(target.kernel, signature)
    libraries = set(tmp_path.glob("*.so"))
    small = target.inputs("SMALL")
    native = build_baseline(target.kernel, Signature.of_values(target.kernel, small))
    assert set(tmp_path.glob("*.so")) == libraries
    want = fresh_copy(small)
    target.function(**want)
    np.testing.assert_array_equal(run(native, small), want["C"])


@pytest.mark.parametrize("damage", ["garbage metadata", "missing library"])
def test_damaged_cache_entry_is_rebuilt(gemm, tmp_path, damage):
    target, values, signature = gemm
    expected = run(build_baseline(target.kernel, signature), values)
    (entry,) = tmp_path.glob("model-*.json")
    if damage == "garbage metadata":
        entry.write_text('{"library": ')
    else:
        for library in tmp_path.glob("*.so"):
            library.unlink()
    np.testing.assert_array_equal(run(build_baseline(target.kernel, signature), values), expected)


def repoos(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REPOOS_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "repoos_agent", *args], capture_output=True, text=True, env=env, timeout=300)


def test_truncated_library_is_detected_and_rebuilt(tmp_path):
    """A later process finds the damaged library (a crash mid-copy, a full disk) and rebuilds it."""
    assert repoos("check", "gemm", "--size", "MINI", cache=tmp_path).returncode == 0
    (library,) = tmp_path.glob("*.so")
    size = library.stat().st_size
    library.write_bytes(library.read_bytes()[:100])
    result = repoos("check", "gemm", "--size", "MINI", "--json", cache=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["correct"] is True
    assert library.stat().st_size == size


def test_cache_info_and_clear_from_the_command_line(gemm, tmp_path):
    target, _, signature = gemm
    build_baseline(target.kernel, signature)
    env = {**os.environ, "REPOOS_CACHE_DIR": str(tmp_path)}
    info = subprocess.run(
        [sys.executable, "-m", "repoos_agent", "cache", "info", "--json"], capture_output=True, text=True, env=env
    )
    report = json.loads(info.stdout)
    assert report["directory"] == str(tmp_path) and report["builds"] == 1 and report["libraries"] == 1
    cleared = repoos("cache", "clear", cache=tmp_path)
    assert cleared.returncode == 0 and "removed" in cleared.stdout
    assert not list(tmp_path.glob("*.so")) and not list(tmp_path.glob("model-*.json"))


def test_a_changed_module_constant_is_built_again_and_computes_with_its_new_value(tmp_path, monkeypatch):
    """The function's text is the same; the model it was built from is not."""
    monkeypatch.setenv("REPOOS_CACHE_DIR", str(tmp_path / "cache"))
    module = tmp_path / "scaled.py"
    results = []
    for scale in (2.0, 3.0):
        module.write_text(f"SCALE = {scale}\n\n\ndef scaled(n, x, y):\n    for i in range(n):\n        y[i] = x[i] * SCALE\n")
        kernel = load_kernel(module, "scaled")
        values = {"n": 4, "x": np.arange(1.0, 5.0), "y": np.zeros(4)}
        build_baseline(kernel, Signature.of_values(kernel, values))(values)
        results.append(values["y"].tolist())
    assert results == [[2.0, 4.0, 6.0, 8.0], [3.0, 6.0, 9.0, 12.0]]

"""The on-disk kernel cache: a hit skips code generation; a damaged entry is rebuilt, never loaded."""

from __future__ import annotations

import numpy as np
import pytest

from repoos_agent.backends import build as build_module
from repoos_agent.backends import build_baseline
from repoos_agent.check import fresh_copy
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

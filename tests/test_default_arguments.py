"""Default parameter values: an argument the caller leaves out takes its default, in `check`, the runtime and
every tool that makes inputs, as it does when the user's program calls the function."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import repoos_agent
from repoos_agent.check import check_baseline
from repoos_agent.errors import NotAnalyzableError
from repoos_agent.ingest import load_kernel
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.runtime.swap import SwapFallbackWarning
from repoos_agent.target import resolve_target

from .conftest import ROOT
from .fixtures import default_arguments

PROGRAMS = ROOT / "tests" / "fixtures" / "default_arguments.py"


def _target(name: str, *specs: str):
    return resolve_target(f"{PROGRAMS}:{name}", [parse_arg_spec(spec) for spec in specs])


def test_check_gives_an_argument_left_out_its_default():
    target = _target("softened", "x=f64[64]")
    assert target.kernel.defaults == (("eps", 1.0),)
    assert target.inputs(None)["eps"] == 1.0
    assert check_baseline(target).correct


def test_negative_integer_and_bool_defaults_are_used_and_a_given_value_wins():
    target = _target("damped", "x=f64[n]", "y=f64[n]", "n=16", "steps=2")
    assert dict(target.kernel.defaults) == {"alpha": -0.5, "steps": 3, "centred": True}
    values = target.inputs(None)
    assert (values["alpha"], values["steps"], values["centred"]) == (-0.5, 2, True)
    assert check_baseline(target).correct


def test_a_defaulted_size_sizes_the_arrays_that_name_it():
    values = _target("ramp", "y=f64[n]").inputs(None)
    assert values["n"] == 8 and values["y"].shape == (8,)


def test_an_inlined_helper_takes_the_default_its_call_leaves_out():
    assert check_baseline(_target("softened_twice", "x=f64[40]")).correct


@pytest.fixture
def native():
    """`accelerate` on the baseline build (no store), with no fallback to Python allowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield repoos_agent.accelerate(graph=str(ROOT / "tests" / "no-such-store.sqlite"))


def test_the_accelerated_function_passes_the_defaults_the_caller_left_out(native):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(50)
    softened = native(default_arguments.softened)
    np.testing.assert_allclose(softened(x), default_arguments.softened(x), rtol=1e-12)
    assert softened.route == "baseline build (source order)"
    y = rng.standard_normal(50)
    want, got = y.copy(), y.copy()
    damped = native(default_arguments.damped)
    default_arguments.damped(x, want, 50)
    damped(x, got, 50)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    want, got = y.copy(), y.copy()
    default_arguments.damped(x, want, 50, steps=1)
    damped(x, got, 50, steps=1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert damped.route == "baseline build (source order)"


def test_a_tuple_default_is_refused_naming_the_parameter_and_what_to_write():
    message = (
        "parameter `size` defaults to the tuple `(3, 3)`: a tuple argument is not modelled; "
        "pass its items as separate integer parameters (`size_0=3, size_1=3`)"
    )
    with pytest.raises(NotAnalyzableError, match=re.escape(message)):
        load_kernel(PROGRAMS, "box_blur", {"image": 2})

"""The fsm arena: proposals parsed or refused at their token, the heuristic's proposals all applicable, a wrong
variant never raced, the winner stored and swapped in (`swap`, `@accelerate`, `repoos optimize`), equal to the
Python original on real inputs, and a call the native build cannot take run by the original.

The CRC rewrites are not on this branch, so a tiny rewrite is registered for these tests only: `xor-return(k=0|1)`
xors every returned int with `k`, so k=0 is a variant equal to the original and k=1 one that is wrong on every
input."""

from __future__ import annotations

import dataclasses
import json
import warnings
from functools import cache

import numpy as np
import pytest

from repoos_agent import cli
from repoos_agent.fsm import ir
from repoos_agent.fsm.arena import QUALIFIED, run_arena
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.heuristic import heuristic_proposals
from repoos_agent.fsm.lower import parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.optimize import write_winner
from repoos_agent.fsm.proposals import Proposal, ProposalError, choices, gbnf, menu_text, parse_proposal, read_proposals
from repoos_agent.fsm.rewrites.registry import REWRITES, NotApplicable, Step, Variant, rewrite
from repoos_agent.fsm.swap import FsmSwapped, function_node
from repoos_agent.measure.isolated import RaceRules
from repoos_agent.runtime.swap import accelerate, swap
from repoos_agent.store import FsmKernel, SQLiteStore
from tests.conftest import ROOT
from tests.fixtures import fsm_functions

FIXTURE = ROOT / "tests/fixtures/fsm_functions.py"
QUICK = RaceRules(outputs=(), min_repeats=3, max_repeats=4, min_total_s=0.0)


def _returns(body: tuple[ir.Stmt, ...], k: int) -> tuple[ir.Stmt, ...]:
    """`body` with every `return value` of an int returning `value ^ k`."""
    rewritten: list[ir.Stmt] = []
    for statement in body:
        if isinstance(statement, ir.Return) and statement.value is not None:
            statement = ir.Return(ir.Binary("^", statement.value, ir.Const(k, statement.line), statement.line), statement.line)
        elif isinstance(statement, ir.If):
            statement = dataclasses.replace(statement, then=_returns(statement.then, k), orelse=_returns(statement.orelse, k))
        elif isinstance(statement, (ir.While, ir.ForRange, ir.ForEach)):
            statement = dataclasses.replace(statement, body=_returns(statement.body, k))
        rewritten.append(statement)
    return tuple(rewritten)


def xor_return(function: ir.Function, k: int = 0) -> ir.Function:
    if function.returns != ir.INT:
        raise NotApplicable("xor-return", "the function returns no int")
    return dataclasses.replace(function, body=_returns(function.body, k))


@pytest.fixture
def tiny_rewrite():
    """`xor-return` registered alone for one test (the menu's own rewrites set aside), and the menu restored after."""
    kept = dict(REWRITES)
    REWRITES.clear()
    rewrite("xor-return", "xor each returned int with k (k=1 is wrong on purpose)", k=(0, 1))(xor_return)
    yield REWRITES["xor-return"]
    REWRITES.clear()
    REWRITES.update(kept)


@cache
def _lowered(name: str) -> ir.Function:
    node = function_node(FIXTURE, name)
    return lower_for(node, dict(zip(parameter_names(node), [b"x"], strict=False)))


def random_bytes(seed: int, size: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


INPUTS = (b"", b"\x00", b"\xff", b"\xff" * 300, *(random_bytes(seed, seed * 7 % 500) for seed in range(300)))


def differential(original):
    """A qualifier for tests: the variant compiled and compared with the original on random and edge inputs."""

    def qualify(variant: Variant) -> tuple[str, str]:
        native = FsmNative(variant.function, original)
        for data in INPUTS:
            problem = difference(outcome(original, (data,)), outcome(native, (data,)))
            if problem is not None:
                return "wrong", f"on {data[:8]!r}...: {problem}"
        return QUALIFIED, f"equal to the original on {len(INPUTS)} inputs"

    return qualify


def test_a_proposal_parses_into_steps_with_the_defaults_written_out(tiny_rewrite):
    assert parse_proposal("xor-return(k=1)") == (Step("xor-return", {"k": 1}),)
    assert parse_proposal("xor-return then xor-return(k=0)") == (Step("xor-return", {"k": 0}), Step("xor-return", {"k": 0}))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("slicing(k=8)", "column 1: `slicing`: no such rewrite; the rewrites are xor-return"),
        ("xor-return(k=8)", "column 12: `k=8`: `xor-return`'s `k` is one of 0, 1"),
        ("xor-return(n=1)", "column 12: `n`: `xor-return` takes k"),
        ("xor-return then 3x", "column 17: `3x`: not a rewrite; write `name` or `name(key=value, ...)`"),
        ("xor-return(k=0, k=1)", "column 17: `k`: `xor-return` is given `k` twice"),
        ("xor-return(k)", "column 12: `k`: not a parameter; `xor-return` is written xor-return(k=0|1)"),
    ],
)
def test_a_malformed_proposal_is_refused_at_its_token(tiny_rewrite, text, message):
    with pytest.raises(ProposalError) as refused:
        parse_proposal(text)
    assert str(refused.value) == message


def test_a_refused_or_inapplicable_line_becomes_feedback_not_a_crash(tiny_rewrite):
    proposals = read_proposals("xor-return(k=0)\nxor-return(k=9)\n\nxor-return(k=0)\n", _lowered("adler32"))
    assert [(p.label, p.feedback) for p in proposals] == [
        ("xor-return(k=0)", None),
        ("xor-return(k=9)", "`xor-return(k=9)`: column 12: `k=9`: `xor-return`'s `k` is one of 0, 1"),
    ]
    [void] = read_proposals("xor-return", _lowered("hex_encode"))
    assert void.feedback == "`xor-return`: xor-return: the function returns no int"


def test_the_menu_offers_what_applies_and_says_why_the_rest_does_not(tiny_rewrite):
    assert choices(_lowered("adler32")) == ["xor-return(k=0)", "xor-return(k=1)"]
    assert "Applies here:\n- xor-return(k=0|1): xor each returned int" in menu_text(_lowered("adler32"))
    assert "Does not apply here:\n- xor-return: the function returns no int" in menu_text(_lowered("hex_encode"))
    assert choices(_lowered("hex_encode")) == []
    assert 'step ::= "xor-return(k=0)" | "xor-return(k=1)"' in gbnf(_lowered("adler32"))


def test_the_heuristic_proposes_only_applicable_rewrites(tiny_rewrite):
    assert heuristic_proposals(_lowered("adler32")) == [(Step("xor-return", {"k": 0}),), (Step("xor-return", {"k": 1}),)]
    assert heuristic_proposals(_lowered("hex_encode")) == []


def _arena(tiny_rewrite, name: str = "adler32"):
    original = getattr(fsm_functions, name)
    proposals = [Proposal(str(steps[0]), steps) for steps in heuristic_proposals(_lowered(name))]
    samples = [(random_bytes(1, 3000),), (b"",)]
    return run_arena(f"{FIXTURE}:{name}", _lowered(name), original, samples, proposals, differential(original), rules=QUICK)


def test_a_wrong_variant_is_reported_and_never_raced(tiny_rewrite):
    result = _arena(tiny_rewrite)
    verdicts = {e.label: (e.verdict, e.timing is not None) for e in result.entrants}
    assert verdicts == {"baseline": ("baseline", True), "xor-return(k=0)": (QUALIFIED, True), "xor-return(k=1)": ("wrong", False)}
    wrong = next(e for e in result.entrants if e.verdict == "wrong")
    assert wrong.reason == "on b''...: the original returned 1, the native code returned 0"
    assert set(result.field.timings) == {"baseline", "xor-return(k=0)"}
    assert result.winner.label in ("baseline", "xor-return(k=0)")


def test_a_variant_wrong_only_on_the_samples_never_races_whatever_the_qualifier_says(tiny_rewrite):
    original = fsm_functions.adler32
    proposals = [Proposal("xor-return(k=1)", (Step("xor-return", {"k": 1}),))]
    result = run_arena(
        "adler32", _lowered("adler32"), original, [(b"abc",)], proposals, lambda _: (QUALIFIED, "trusted"), rules=QUICK
    )
    [_, wrong] = result.entrants
    assert (wrong.verdict, wrong.timing) == ("wrong", None)
    assert wrong.reason == "on sample 0: the original returned 38600999, the native code returned 38600998"


def test_the_stored_winner_is_swapped_in_and_equals_the_original(tiny_rewrite, tmp_path):
    result = _arena(tiny_rewrite)
    store = SQLiteStore(tmp_path / "graph.sqlite")
    record = write_winner(store, result, FIXTURE, function_node(FIXTURE, "adler32"), _lowered("adler32"))
    assert store.get(FsmKernel, record.key) == record
    raced = {entry["variant"]: entry["verdict"] for entry in json.loads(record.raced)}
    assert raced == {"baseline": "baseline", "xor-return(k=0)": QUALIFIED, "xor-return(k=1)": "wrong"}
    store.close()
    swapped = swap(fsm_functions.adler32, graph=str(tmp_path / "graph.sqlite"))
    assert isinstance(swapped, FsmSwapped) and swapped.native
    accelerated = accelerate(fsm_functions.adler32, graph=str(tmp_path / "graph.sqlite"))
    for data in INPUTS[:60]:
        assert swapped(data) == accelerated(data) == fsm_functions.adler32(data)
    assert isinstance(accelerated._swapped, FsmSwapped)


def test_stored_steps_are_rebuilt_and_a_call_the_build_cannot_take_runs_the_original(tiny_rewrite, tmp_path):
    result = _arena(tiny_rewrite)
    store = SQLiteStore(tmp_path / "graph.sqlite")
    record = write_winner(store, result, FIXTURE, function_node(FIXTURE, "adler32"), _lowered("adler32"))
    swapped = swap(fsm_functions.adler32, contract=dataclasses.replace(record, steps="xor-return(k=0)"))
    assert swapped.route == "FsmKernel `xor-return(k=0)`"
    for data in INPUTS[:60]:
        assert swapped(data) == fsm_functions.adler32(data)
    # built for bytes: a list of ints and a bytearray run the original, which takes them
    assert swapped([1, 2, 300]) == fsm_functions.adler32([1, 2, 300])
    assert swapped(bytearray(b"abc")) == fsm_functions.adler32(bytearray(b"abc"))
    with pytest.raises(TypeError, match="'int' object is not iterable"):
        swapped(5)
    store.close()


def test_a_record_of_an_older_source_runs_as_python_with_a_warning(tiny_rewrite, tmp_path):
    result = _arena(tiny_rewrite)
    store = SQLiteStore(tmp_path / "graph.sqlite")
    record = write_winner(store, result, FIXTURE, function_node(FIXTURE, "adler32"), _lowered("adler32"))
    store.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        swapped = swap(fsm_functions.adler32, contract=dataclasses.replace(record, source_hash="0" * 64))
    assert not swapped.native
    assert "its FsmKernel cannot be used: the source of" in str(caught[0].message)
    assert swapped(b"abc") == fsm_functions.adler32(b"abc")


def test_repoos_optimize_races_a_files_function_and_stores_the_winner(tiny_rewrite, tmp_path, capsys, monkeypatch):
    from repoos_agent.fsm import optimize

    monkeypatch.setattr(optimize, "qualifier_for", lambda original, baseline, samples: differential(original))
    graph = str(tmp_path / "graph.sqlite")
    assert cli.main(["optimize", f"{FIXTURE}:adler32", "--arg", "data=bytes[2000]", "--graph", graph, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    verdicts = {entry["variant"]: entry["verdict"] for entry in payload["entrants"]}
    assert verdicts == {"baseline": "baseline", "xor-return(k=0)": QUALIFIED, "xor-return(k=1)": "wrong"}
    assert payload["crowned"] in ("baseline", "xor-return(k=0)")
    store = SQLiteStore(graph)
    [record] = store.all(FsmKernel)
    assert (record.function, record.steps) == (f"{FIXTURE}:adler32", "" if payload["crowned"] == "baseline" else payload["crowned"])
    store.close()
    assert swap(fsm_functions.adler32, graph=graph)(b"hello") == fsm_functions.adler32(b"hello")


@pytest.mark.slow  # every heuristic variant of crc32 qualified: the slow set runs it
def test_repoos_optimize_prints_the_race_table(capsys, tmp_path):
    assert cli.main(["optimize", "fsm:crc32", "--size", "SMALL", "--graph", str(tmp_path / "graph.sqlite")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("fsm:crc32: fsm arena, Python original ")
    assert out[1].split() == ["variant", "verdict", "median", "spread", "x", "base", "x", "CPython"]
    assert out[2].lstrip("* ").split()[:2] == ["baseline", "baseline"]
    assert any(line.startswith("crowned: ") for line in out)

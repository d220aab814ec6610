"""The registry of schedule primitives is the one place a primitive is declared: every catalog a model or a reader
sees lists exactly its primitives, the doc table is the one it generates, and every primitive it declares parses,
applies, is offered by the grammars and has a typed builder that writes what the parser reads."""

from __future__ import annotations

import asyncio
import inspect
import re
from pathlib import Path

import pytest

from repoos_agent.agent.dialogue import SYSTEM_PROMPT
from repoos_agent.agent.heuristic import HeuristicProposer, Outcome
from repoos_agent.agent.operations import ScheduleText
from repoos_agent.agent.tools_mode import TOOLS_SYSTEM_PROMPT
from repoos_agent.mcp.roots import AllowedRoots
from repoos_agent.mcp.server import build_server
from repoos_agent.schedule import ScheduleError, ScheduleState, parse_schedule
from repoos_agent.schedule import primitives as registry
from repoos_agent.schedule.grammar import EXPLORATION, kernel_grammar
from repoos_agent.schedule.primitives import (
    LOOP,
    NUMBER,
    PRIMITIVES,
    SPECS,
    STATEMENT,
    Offer,
    PrimitiveSpec,
    doc_table,
    schedule_of,
    with_doc_table,
)
from repoos_agent.schedule.terms import Argument, LoopRef, StatementRef
from repoos_agent.target import resolve_target
from tests.conftest import ROOT

NAMES = set(PRIMITIVES)
CALL = re.compile(r"\b([a-z]+)\(")


def _catalogs() -> dict[str, str]:
    """Every text that lists the primitives for a model: the prompts and the MCP tools' schedule parameters."""
    served = asyncio.run(build_server(AllowedRoots([ROOT])).list_tools())
    schedules = {
        f"MCP {tool.name}": tool.input_schema["properties"]["schedule"]["description"]
        for tool in served
        if "schedule" in tool.input_schema["properties"]
    }
    return {
        "dialogue prompt": SYSTEM_PROMPT,
        "tools prompt": TOOLS_SYSTEM_PROMPT,
        "ScheduleText": ScheduleText.__metadata__[0].description,
        **schedules,
    }


def test_every_catalog_a_model_reads_names_every_primitive_and_no_other():
    catalogs = _catalogs()
    assert {"MCP check_legality", "MCP evaluate", "MCP show_code", "MCP swap"} <= set(catalogs)
    for where, text in catalogs.items():
        for spec in SPECS:
            assert spec.example in text and spec.doc in " ".join(text.split()), (where, spec.name)
        assert set(CALL.findall(text)) <= NAMES, where  # every call-shaped word: a primitive


def test_the_doc_table_is_the_one_the_registry_generates():
    page = (ROOT / "docs" / "schedule-language.md").read_text(encoding="utf-8")
    assert with_doc_table(page) == page, "regenerate it: .venv/bin/python scripts/primitives-doc.py"
    table = page.split(registry.DOC_BEGIN + "\n")[1].split(registry.DOC_END)[0]
    assert table == doc_table()
    assert [re.match(r"\| `(\w+)\(", row).group(1) for row in table.splitlines()[2:]] == list(PRIMITIVES)


def test_a_page_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="lacks the markers"):
        with_doc_table("| primitive | effect |\n")


def test_every_application_method_of_the_engine_has_a_spec_and_every_spec_one_method():
    """A method `_name(self, primitive) -> None` of ScheduleState applies a primitive: one without a spec could never
    be reached from a schedule, and a spec naming no method could never apply."""
    methods = {
        name
        for name, method in inspect.getmembers(ScheduleState, inspect.isfunction)
        if name != "apply"
        and list(inspect.signature(method).parameters) == ["self", "primitive"]
        and inspect.signature(method).return_annotation in (None, "None")
    }
    assert methods == {spec.apply for spec in SPECS}
    assert len({spec.apply for spec in SPECS}) == len(SPECS)


def _arguments(spec: PrimitiveSpec, number: int) -> list[Argument]:
    """Arguments of `spec`'s signature, every loop and statement a different one and every number `number`."""
    return [
        LoopRef(f"i{k}") if kind == LOOP else StatementRef(f"S{k}") if kind == STATEMENT else number
        for k, kind in enumerate(spec.signature())
    ]


def test_every_spec_is_offered_by_the_grammars_with_numbers_its_checks_accept():
    assert {spec.offer for spec in SPECS} <= set(EXPLORATION)
    chosen = {spec.name for spec in SPECS if NUMBER in spec.signature() and spec.offer is not Offer.FUSIONS}
    assert {spec.name for spec in SPECS if spec.choices} == chosen  # a fusion's depth comes with its use
    for spec in SPECS:
        for number in (*spec.choices, spec.probe) if spec.choices else ():
            registry.built(spec.name, *_arguments(spec, number))


def test_the_registrys_order_is_the_order_an_unknown_primitive_lists():
    with pytest.raises(ScheduleError, match="unknown primitive `split`; known: " + ", ".join(PRIMITIVES) + r"$"):
        parse_schedule("split(i, 4)")


def test_the_builders_write_what_the_parser_reads():
    built = schedule_of(
        registry.interchange("i", "S1.j"),
        registry.tile("S1.i", "k", sizes=(6, 128)),
        registry.skew("i", "j", -1),
        registry.reverse("i"),
        registry.shift("S1.i", 2),
        registry.fuse("S0", "S1", 2),
        registry.distribute("S0", "S1"),
        registry.parallelize("i_t"),
        registry.vectorize("S1.j", 8),
        registry.unroll("k", 4),
        registry.promote("k"),
        registry.blas("S1"),
        registry.privatize("S3"),
    )
    assert [p.name for p in built.primitives] == list(PRIMITIVES)
    assert parse_schedule(str(built)) == built


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: registry.tile("i", "j", sizes=(32, 0)), "tile sizes must be positive integers, got 32, 0"),
        (lambda: registry.interchange("i", "i"), "interchange of a loop with itself changes nothing"),
        (lambda: registry.vectorize("j", 1), "width must be between 2 and 64, got 1"),
        (lambda: registry.fuse("S0", "S0", 1), "fuse needs two different statements"),
        (lambda: registry.tile("i", "j", sizes=(32,)), "tile takes 1 to 3 loops and as many sizes, got 3 arguments"),
        (lambda: registry.built("parallelize", 4), "arguments must be a loop name like `i` or `S1.j`"),
    ],
)
def test_a_builder_refuses_what_the_parser_refuses_with_its_message(build, message):
    with pytest.raises(ScheduleError, match=re.escape(message)):
        build()


def test_the_grammars_offer_privatize_for_a_sum_into_an_array():
    kernel = resolve_target("numpy:atax").kernel
    grammar = kernel_grammar(kernel)
    assert any(use.primitive == "privatize" for use in grammar.uses())
    assert "privatize(" in grammar.gbnf(1) and re.fullmatch(grammar.pattern(), "privatize(S3)")


def test_the_table_is_rewritten_between_the_markers_and_the_rest_of_the_page_kept(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text(f"# title\n\n{registry.DOC_BEGIN}\nold\n{registry.DOC_END}\n\nafter\n", encoding="utf-8")
    assert with_doc_table(page.read_text()) == f"# title\n\n{registry.DOC_BEGIN}\n{doc_table()}{registry.DOC_END}\n\nafter\n"


@pytest.mark.parametrize(
    ("best", "resized"), [("tile(i, 64)", ["tile(i, 32)", "tile(i, 128)"]), ("tile(i, 1048576)", ["tile(i, 524288)"])]
)
def test_the_heuristic_resizes_the_best_tiles_with_the_builders_and_never_past_what_a_tile_takes(best, resized):
    proposer = HeuristicProposer(resolve_target("gemm").kernel)
    proposed = [idea.schedule for idea in proposer.propose([Outcome(best, "legal", 1.5)], 3)]
    assert proposed[: len(resized)] == resized
    assert "tile(i, 2097152)" not in proposed


def test_the_primitives_declared_marks_are_the_ones_the_engine_records_as_marks():
    kernel = resolve_target("gemm").kernel
    for spec in SPECS:
        if spec.signature() not in ("L", "LN"):
            continue
        state = ScheduleState(kernel)
        state.apply(registry.built(spec.name, LoopRef("k"), *([spec.probe] if spec.signature() == "LN" else [])))
        assert bool(state.marked_by) == spec.mark, spec.name
    assert {spec.name for spec in SPECS if spec.concurrent} <= {spec.name for spec in SPECS if spec.mark}

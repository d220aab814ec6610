"""Verdicts and event kinds are one vocabulary each (`Verdict`, `EventKind`): every string the sources build one from
or compare one with is a member, so a misspelt kind cannot silently never match."""

from __future__ import annotations

import ast
from typing import get_args

from repoos_agent.agent.events import EVENT_KINDS
from repoos_agent.legality import VERDICTS
from repoos_agent.measure.isolated import RaceOutcome
from tests.conftest import ROOT


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [text for element in node.elts for text in _strings(element)]
    return []


def _is_verdict(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "verdict") or (isinstance(node, ast.Name) and node.id == "verdict")


def _is_event_kind(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "kind" and isinstance(node.value, ast.Name) and node.value.id == "event"


def _named(node: ast.AST, *names: str) -> bool:
    return (isinstance(node, ast.Name) and node.id in names) or (isinstance(node, ast.Attribute) and node.attr in names)


def used_words(tree: ast.AST) -> tuple[list[str], list[str]]:
    """The verdicts and the event kinds a module spells out: compared with `.verdict` or `event.kind`, passed as a
    `verdict=` argument or a `LegalityVerdict`'s first, an `Event`'s or a tabular `_emit`'s kind, a `verdicts.get` key."""
    verdicts: list[str] = []
    kinds: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for found, test in ((verdicts, _is_verdict), (kinds, _is_event_kind)):
                if any(test(side) for side in sides):
                    found += [text for side in sides for text in _strings(side)]
        if isinstance(node, ast.Call):
            verdicts += [text for keyword in node.keywords if keyword.arg == "verdict" for text in _strings(keyword.value)]
            first = _strings(node.args[0]) if node.args else []
            if _named(node.func, "LegalityVerdict"):
                verdicts += first
            if _named(node.func, "Event", "_emit"):
                kinds += first
            if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and _named(node.func.value, "verdicts"):
                verdicts += first
    return verdicts, kinds


def test_the_check_reads_comparisons_and_constructions():
    source = 'if event.kind == "evaluaton" and e.verdict in ("legal", "ilegal"): Event("run_strated", run, verdict="lega")'
    assert used_words(ast.parse(source)) == (["legal", "ilegal", "lega"], ["evaluaton", "run_strated"])


def test_every_verdict_and_event_kind_the_sources_spell_out_is_a_member():
    verdicts: dict[str, list[str]] = {}
    kinds: dict[str, list[str]] = {}
    for package in ("repoos_agent", "tui"):
        for path in sorted((ROOT / package).rglob("*.py")):
            found_verdicts, found_kinds = used_words(ast.parse(path.read_text(encoding="utf-8"), str(path)))
            where = str(path.relative_to(ROOT))
            for found, words in ((verdicts, found_verdicts), (kinds, found_kinds)):
                for word in words:
                    found.setdefault(word, []).append(where)
    assert {word: places for word, places in verdicts.items() if word not in VERDICTS} == {}
    assert {word: places for word, places in kinds.items() if word not in EVENT_KINDS} == {}
    assert {"legal", "invalid", "illegal", "reassociation"} <= set(verdicts)  # the check saw the sources' words
    assert {"run_started", "evaluation", "run_finished", "chain_read", "race_sample"} <= set(kinds)


def test_every_failed_race_is_a_verdict():
    assert set(get_args(RaceOutcome)) - {"ok"} <= set(VERDICTS)  # `evaluate_schedule` reports the outcome as its verdict

"""Legality: exact dependences and the proof that a schedule preserves them."""

from repoos_agent.legality.analysis import Analysis, LoopReport, analyze
from repoos_agent.legality.dependences import Dependence, dependences
from repoos_agent.legality.prove import LegalityVerdict, prove_legal
from repoos_agent.legality.verdict import VERDICTS, Verdict, Violation

__all__ = [
    "VERDICTS", "Analysis", "Dependence", "LegalityVerdict", "LoopReport", "Verdict", "Violation", "analyze", "dependences",
    "prove_legal",
]  # fmt: skip

"""Legality: exact dependences and the proof that a schedule preserves them."""

from repoos_agent.legality.dependences import Dependence, dependences
from repoos_agent.legality.prove import LegalityVerdict, prove_legal
from repoos_agent.legality.verdict import VERDICTS, Violation

__all__ = ["VERDICTS", "Dependence", "LegalityVerdict", "Violation", "dependences", "prove_legal"]

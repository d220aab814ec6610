"""Choosing a proposer from a backend spec: `heuristic`, `openai:MODEL` or `gemini:MODEL`."""

from __future__ import annotations

from typing import Protocol

from repoos_agent.agent.dialogue import LLMProposer
from repoos_agent.agent.heuristic import HeuristicProposer, Idea, Outcome
from repoos_agent.errors import RepoosError
from repoos_agent.model.kernel import Kernel


class Proposer(Protocol):
    name: str

    def propose(self, history: list[Outcome], count: int) -> list[Idea]: ...


def make_proposer(
    spec: str, kernel: Kernel, seed: int, allow_reassociation: bool, base_url: str | None = None, baseline_s: float | None = None
) -> Proposer:
    """A fresh proposer for one dialogue."""
    backend, _, model = spec.partition(":")
    if backend == "heuristic":
        return HeuristicProposer(kernel, seed=seed, allow_reassociation=allow_reassociation)
    if not model:
        raise RepoosError(f"backend `{spec}` needs a model: `{backend}:MODEL` (or --model)")
    if backend == "openai":
        from repoos_agent.agent.llm.openai_backend import OpenAIBackend

        return LLMProposer(kernel, OpenAIBackend(model, base_url=base_url), baseline_s)
    if backend == "gemini":
        from repoos_agent.agent.llm.gemini_backend import GeminiBackend

        return LLMProposer(kernel, GeminiBackend(model, base_url=base_url), baseline_s)
    raise RepoosError(f"unknown backend `{backend}`; choose heuristic, openai:MODEL or gemini:MODEL")

"""Choosing a proposer from a backend spec: `heuristic`, `openai:MODEL`, `gemini:MODEL` or `local[:MODEL]`."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from repoos_agent.agent.dialogue import LLMProposer, PromptOptions
from repoos_agent.agent.heuristic import HeuristicProposer, Idea, Outcome
from repoos_agent.agent.llm.base import ChatBackend
from repoos_agent.agent.llm.local_model import DEFAULT_LOCAL_MODEL
from repoos_agent.errors import RepoosError
from repoos_agent.model.kernel import Kernel

BACKEND_CHOICES = f"heuristic, openai:MODEL, gemini:MODEL or local[:MODEL] (default {DEFAULT_LOCAL_MODEL})"


class Proposer(Protocol):
    name: str

    def propose(self, history: list[Outcome], count: int) -> list[Idea]: ...


class MixtureOfAgents:
    """Reference agents propose in parallel; the aggregator proposes its own, informed by theirs.

    Every proposal is kept (deduplicated by the search): the measurements pick the winner."""

    def __init__(self, references: list[Proposer], aggregator: Proposer | None) -> None:
        self.references = references
        self.aggregator = aggregator
        self.name = "moa"

    @property
    def tokens(self) -> dict[str, int]:
        totals = {"input": 0, "output": 0}
        for proposer in [*self.references, *([self.aggregator] if self.aggregator else [])]:
            for kind, count in getattr(proposer, "tokens", {}).items():
                totals[kind] += count
        return totals

    def propose(self, history: list[Outcome], count: int) -> list[Idea]:
        """Each reference proposes; the heuristic from its own outcomes only, so that it proposes exactly what it
        would alone and the mixture's pool holds the heuristic's: measured together, the mixture cannot lose to
        it but by noise. Models hear every outcome (the heuristic's legal schedules teach them)."""

        def heard(reference: Proposer) -> list[Outcome]:
            if isinstance(reference, HeuristicProposer):
                return [outcome for outcome in history if outcome.agent in ("", reference.name)]
            return history

        remote = [reference for reference in self.references if not _computes_here(reference)]
        with ThreadPoolExecutor(max_workers=max(1, len(remote))) as pool:
            asked = {id(reference): pool.submit(reference.propose, heard(reference), count) for reference in remote}
            here = {id(r): r.propose(heard(r), count) for r in self.references if _computes_here(r)}  # one at a time
            pooled = [idea for r in self.references for idea in (here[id(r)] if id(r) in here else asked[id(r)].result())]
        if self.aggregator is None:
            return pooled
        if isinstance(self.aggregator, LLMProposer):
            own = self.aggregator.propose(history, count, others=pooled)
        else:
            own = self.aggregator.propose(history, count)
        return pooled + own


def _computes_here(proposer: Proposer) -> bool:
    """Whether `proposer` computes on this machine's cores: the heuristic's proofs, a model served here. Such
    references propose one after another, while remote models answer beside them. Side by side, the heuristic's
    proofs took the core and the memory bandwidth a local model evaluates its prompt with: SmolLM2 waited 25 s an
    instance in a mixture on atax at MEDIUM, against 14 s alone."""
    return isinstance(proposer, HeuristicProposer) or bool(getattr(getattr(proposer, "backend", None), "on_this_machine", False))


def make_mixture(
    references: list[str],
    aggregator: str | None,
    kernel: Kernel,
    seed: int,
    allow_reassociation: bool,
    base_url: str | None,
    baseline_s: float | None = None,
    extents: Mapping[str, int] | None = None,
    constrain: bool = True,
    prompt: str = "",
) -> MixtureOfAgents:
    def build(spec: str, offset: int) -> Proposer:
        return make_proposer(
            spec.strip(), kernel, seed + offset, allow_reassociation, base_url, baseline_s, extents, constrain, prompt
        )

    return MixtureOfAgents([build(spec, n) for n, spec in enumerate(references)], build(aggregator, 100) if aggregator else None)


def make_proposer(
    spec: str,
    kernel: Kernel,
    seed: int,
    allow_reassociation: bool,
    base_url: str | None = None,
    baseline_s: float | None = None,
    extents: Mapping[str, int] | None = None,
    constrain: bool = True,
    prompt: str = "",
    tools: bool = False,
) -> Proposer:
    """A fresh proposer for one dialogue; `extents`, the parameter values of the size being measured,
    let the heuristic fit its blocks to the arrays and tell a model the sizes. `constrain` and `prompt`
    shape a model's replies and prompts (`LLMProposer`). `tools`: the dialogue calls the engine's tools
    (`--mode tools`), which a local server must be started for."""
    backend, _, model = spec.partition(":")
    if backend not in ("heuristic", "openai", "gemini", "local"):
        raise RepoosError(f"unknown backend `{backend}`; choose {BACKEND_CHOICES}")
    if backend == "heuristic":
        if model:
            raise RepoosError(f"the heuristic backend takes no model (got `{spec}`)")
        return HeuristicProposer(kernel, seed=seed, allow_reassociation=allow_reassociation, extents=dict(extents or {}))
    return LLMProposer(
        kernel,
        chat_backend(spec, base_url, tools),
        baseline_s,
        extents=dict(extents or {}),
        constrain=constrain,
        prompt=PromptOptions.parse(prompt),
        allow_reassociation=allow_reassociation,
    )


def chat_backend(spec: str, base_url: str | None, tools: bool) -> ChatBackend:
    """The model behind `local[:MODEL]`, `openai:MODEL` or `gemini:MODEL` (the spec's backend already checked)."""
    backend, _, model = spec.partition(":")
    if backend == "local":
        from repoos_agent.agent.llm.local_backend import local_backend

        return local_backend(model or DEFAULT_LOCAL_MODEL, base_url=base_url, tools=tools)
    if not model:
        raise RepoosError(f"backend `{spec}` needs a model: `{backend}:MODEL` (or --model)")
    if backend == "openai":
        from repoos_agent.agent.llm.openai_backend import OpenAIBackend

        return OpenAIBackend(model, base_url=base_url)
    from repoos_agent.agent.llm.gemini_backend import GeminiBackend

    return GeminiBackend(model, base_url=base_url)

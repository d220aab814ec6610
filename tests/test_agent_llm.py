"""The dialogue with a real SDK client against a local server that plays the provider's wire format."""

from __future__ import annotations

import json
import re
import threading
from types import SimpleNamespace

import pytest

from repoos_agent.agent.dialogue import first_reason
from repoos_agent.agent.heuristic import HeuristicProposer, Idea
from repoos_agent.agent.proposers import MixtureOfAgents
from repoos_agent.agent.search import SearchConfig, optimize
from repoos_agent.errors import RepoosError
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.target import resolve_target

from .fake_llm_servers import FakeLLMServer, gemini_answer, openai_answer, openai_error


def user_messages(request) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "user"]


def test_openai_dialogue_feeds_verdicts_back_and_survives_a_malformed_reply(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    replies = [
        openai_answer(
            "k carries the reduction; i is free.\n<schedule>parallelize(k)</schedule>\n<schedule>parallelize(i)</schedule>",
            prompt_tokens=900,
            completion_tokens=40,
        ),
        openai_error(429, "slow down"),
        openai_answer("I am not sure what to do now.", prompt_tokens=1000, completion_tokens=9),
        openai_answer("<schedule>tile(i, j, 0)</schedule>", prompt_tokens=1100, completion_tokens=12),
    ]
    with FakeLLMServer(replies) as server:
        config = SearchConfig(backend="openai:test-model", base_url=f"{server.url}/v1", iters=3, candidates=2, size="MINI")
        result = optimize(resolve_target("gemm"), config)
    verdicts = {e.schedule: e.evaluation.verdict for e in result.leaderboard}
    assert verdicts["parallelize(k)"] == "illegal" and verdicts["parallelize(i)"] == "legal"
    assert any(v == "invalid" and s.startswith("reply without a <schedule> block") for s, v in verdicts.items())
    assert verdicts["tile(i, j, 0)"] == "invalid"
    second_turn = user_messages(server.requests[2])[-1]  # request 1 was the 429, retried
    assert "`parallelize(k)`: illegal" in second_turn and "loop `k` cannot run parallel" in second_turn
    # a legal line keeps what the schedule opened up, not the words that repeat its verdict and speedup
    assert re.search(r"`parallelize\(i\)`: legal, \d+\.\d\dx\. Loops that could run in parallel: ", second_turn)
    assert "Measured:" not in second_turn and "every dependence is preserved" not in second_turn
    first_prompt = user_messages(server.requests[0])[0]
    assert "def gemm(" in first_prompt and "S1 (line 43" in first_prompt and "Dependences:" in first_prompt
    assert "Baseline time: " in first_prompt and " ms." in first_prompt
    # MINI's sizes, and why they matter: tiles that divide them have no ragged edge
    assert "Sizes measured: ni = 20, nj = 25, nk = 30 (tile and register-block sizes that divide" in first_prompt
    assert server.requests[0].headers["authorization"] == "Bearer sk-test-not-a-real-key"
    assert result.tokens == {"input": 3000, "output": 61}


def test_gemini_dialogue_through_the_real_client(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-test-key")
    replies = [gemini_answer("<schedule>parallelize(S0.i); parallelize(S1.i)</schedule>", prompt_tokens=700, candidates_tokens=20),
               gemini_answer("<done/>", prompt_tokens=800, candidates_tokens=3)]  # fmt: skip
    with FakeLLMServer(replies) as server:
        config = SearchConfig(backend="gemini:test-model", base_url=server.url, iters=3, candidates=2, size="MINI")
        result = optimize(resolve_target("jacobi-2d"), config)
    assert [e.evaluation.verdict for e in result.leaderboard] == ["legal"]
    assert len(server.requests) == 2 and server.requests[0].headers["x-goog-api-key"] == "gemini-test-key"
    assert "Results of your last schedules" in str(server.requests[1].body)
    assert result.tokens == {"input": 1500, "output": 23}


@pytest.mark.parametrize("spec", ["openai", "mystery:model"])
def test_bad_backend_specs_are_clear_errors(spec):
    with pytest.raises(RepoosError, match=r"needs a model|unknown backend"):
        optimize(resolve_target("gemm"), SearchConfig(backend=spec, iters=1, size="MINI"))


def test_a_candidate_stopped_early_is_fed_back_without_repeating_its_speedup():
    # The race stops a candidate that runs far behind the best so far; the dialogue line already gives its speedup.
    stopped = evaluate_schedule(resolve_target("gemm"), "parallelize(i)", "MINI", stop_below_speedup=1e9)
    assert stopped.verdict == "legal" and "stopped after two runs" in stopped.feedback
    reason = first_reason(stopped.feedback)
    assert "Measured:" not in reason and "stopped after" not in reason and "every dependence is preserved" not in reason
    assert reason.startswith("Loops that could run in parallel:")


def test_mixture_of_agents_pools_mixed_backends_and_dedupes(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    target = resolve_target("gemm")
    shared = HeuristicProposer(target.kernel).propose([], 3)[0].schedule  # what the heuristic proposes first
    replies = [openai_answer(f"<schedule>{shared}</schedule><schedule>interchange(j, k)</schedule>", prompt_tokens=10)]
    with FakeLLMServer(replies) as server:
        config = SearchConfig(
            moa=("heuristic",), aggregator="openai:aggregator", base_url=f"{server.url}/v1", iters=1, candidates=3, size="MINI"
        )
        result = optimize(target, config)
    agents = {e.schedule: e.agent for e in result.leaderboard}
    assert agents[shared] == "heuristic"  # proposed by both; the first proposer keeps it, measured once
    assert agents["interchange(j, k)"] == "openai:aggregator"
    assert len(result.leaderboard) == len(agents)
    aggregator_prompt = user_messages(server.requests[0])[-1]
    assert "Other agents propose" in aggregator_prompt and f"heuristic: `{shared}`" in aggregator_prompt


def openai_tool_calls(*calls: tuple[str, dict], prompt_tokens: int = 5):
    """A chat.completions answer whose message calls tools, as OpenAI's wire format has it."""
    reply = openai_answer(None, prompt_tokens=prompt_tokens, completion_tokens=3)
    message = reply.body["choices"][0]["message"]
    message["tool_calls"] = [
        {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        for n, (name, arguments) in enumerate(calls)
    ]
    reply.body["choices"][0]["finish_reason"] = "tool_calls"
    return reply


def gemini_function_call(name: str, arguments: dict):
    reply = gemini_answer("", prompt_tokens=5, candidates_tokens=3)
    reply.body["candidates"][0]["content"]["parts"] = [{"functionCall": {"name": name, "args": arguments}}]
    return reply


TOOL_SCRIPT = [("analyze", {}), ("check_legality", {"schedule": "parallelize(k)"}), ("evaluate", {"schedule": "parallelize(i)"})]


def test_tools_mode_openai_calls_analyze_check_and_evaluate(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    replies = [openai_tool_calls(call) for call in TOOL_SCRIPT] + [openai_answer("parallelize(i) wins.")]
    with FakeLLMServer(replies) as server:
        config = SearchConfig(
            backend="openai:test-model", base_url=f"{server.url}/v1", mode="tools", iters=2, candidates=3, size="MINI"
        )
        result = optimize(resolve_target("gemm"), config)
    assert [e.schedule for e in result.leaderboard] == ["parallelize(i)"]
    assert result.leaderboard[0].evaluation.verdict == "legal"
    sent = [request.body for request in server.requests]
    assert [t["function"]["name"] for t in sent[0]["tools"]] == ["analyze", "check_legality", "evaluate", "show_code"]
    tool_results = [m for m in sent[2]["messages"] if m["role"] == "tool"]
    assert tool_results[-1]["tool_call_id"] == "call_0" and "cannot run parallel" in tool_results[-1]["content"]
    assert "illegal" in tool_results[-1]["content"]
    assert json.loads([m for m in sent[3]["messages"] if m["role"] == "tool"][-1]["content"])["verdict"] == "legal"


def test_tools_mode_gemini_calls_analyze_check_and_evaluate(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-test-key")
    replies = [gemini_function_call(*call) for call in TOOL_SCRIPT] + [gemini_answer("done")]
    with FakeLLMServer(replies) as server:
        config = SearchConfig(backend="gemini:test-model", base_url=server.url, mode="tools", iters=2, candidates=3, size="MINI")
        result = optimize(resolve_target("gemm"), config)
    assert [e.schedule for e in result.leaderboard] == ["parallelize(i)"]
    declared = server.requests[0].body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declared] == ["analyze", "check_legality", "evaluate", "show_code"]
    last = server.requests[3].body["contents"]
    responses = [p["functionResponse"] for c in last for p in c["parts"] if "functionResponse" in p]
    assert responses[-1]["name"] == "evaluate" and '"verdict": "legal"' in responses[-1]["response"]["result"]


def test_tools_mode_needs_a_model():
    with pytest.raises(RepoosError, match=r"--mode tools needs a model backend"):
        optimize(resolve_target("gemm"), SearchConfig(mode="tools", iters=1, size="MINI"))


def test_a_mixtures_model_hears_its_own_schedules_with_reasons_and_the_heuristics_fastest(monkeypatch):
    """The model's own outcomes carry the engine's reasons, and of an illegal one the first broken dependence and
    the suggestion; the other agents' come down to their count and the fastest legal schedule: the rest would
    double each turn's prompt, which a local model pays for in seconds."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    replies = [openai_answer("<schedule>parallelize(k)</schedule>", prompt_tokens=10), openai_answer("<done/>")]
    with FakeLLMServer(replies) as server:
        config = SearchConfig(
            moa=("heuristic", "openai:reference"), base_url=f"{server.url}/v1", iters=2, candidates=2, size="MINI"
        )
        optimize(resolve_target("gemm"), config)
    second_turn = user_messages(server.requests[1])[-1]
    assert "`parallelize(k)`: illegal" in second_turn and second_turn.count("loop `k` cannot run parallel") == 1
    assert "(2 more dependence(s) broken too)" in second_turn and "suggestion: parallelize `i` instead" in second_turn
    others = [line for line in second_turn.splitlines() if line.startswith("Other agents' schedules: 2 measured")]
    assert len(others) == 1 and re.search(r"the fastest: `[^`]+` \(by heuristic\), \d+\.\d\dx\.$", others[0])
    assert "every dependence" not in second_turn


class _Reference:
    """A reference agent that notes who proposes beside it: a model served here, or one across the network."""

    def __init__(self, name: str, here: bool, crowd: list[str], started: threading.Event) -> None:
        self.name, self.crowd, self.started = name, crowd, started
        self.backend = SimpleNamespace(on_this_machine=here)
        self.beside: list[str] = []

    def propose(self, history, count):
        if self.backend.on_this_machine:
            self.beside = list(self.crowd)
            self.crowd.append(self.name)
            self.started.set()
            threading.Event().wait(0.05)  # room for a neighbour to start, were one allowed to
            self.crowd.remove(self.name)
        else:
            self.beside = ["a reference here"] if self.started.wait(10) else []
        return [Idea(f"parallelize(i) # {self.name}", 0.0, "model", self.name)]


def test_a_mixtures_references_on_this_machine_propose_one_at_a_time_and_remote_ones_beside_them():
    """Side by side, the heuristic's proofs took the core a local model evaluates its prompt with."""
    crowd, started = [], threading.Event()
    remote = _Reference("openai:remote", False, crowd, started)
    first, second = _Reference("local:one", True, crowd, started), _Reference("local:two", True, crowd, started)
    ideas = MixtureOfAgents([remote, first, second], None).propose([], 1)
    assert [idea.agent for idea in ideas] == ["openai:remote", "local:one", "local:two"]
    assert first.beside == [] and second.beside == []
    assert remote.beside == ["a reference here"]

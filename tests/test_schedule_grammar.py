"""The kernel grammars a constrained model decodes under: every schedule they allow parses and names only the
kernel's loops, in every form (GBNF, JSON schema, regex), and constrained replies reach the engine."""

from __future__ import annotations

import importlib.util
import json
import random
import re

import pytest

from repoos_agent.agent.dialogue import LLMProposer, PromptOptions, _schedules
from repoos_agent.agent.llm.base import Message, RetryPolicy
from repoos_agent.agent.llm.constrained import JSON_OBJECT, JSON_SCHEMA, RESPONSE_SCHEMA, server_forms
from repoos_agent.agent.llm.gemini_backend import GeminiBackend, gemini_schema
from repoos_agent.agent.llm.openai_backend import OpenAIBackend
from repoos_agent.agent.prompt_examples import EXAMPLES, closest_example
from repoos_agent.errors import RepoosError
from repoos_agent.legality import prove_legal
from repoos_agent.schedule import ScheduleError, ScheduleState, parse_schedule
from repoos_agent.schedule.grammar import KernelGrammar, kernel_grammar, schedules_from_json
from repoos_agent.schedule.primitives import PRIMITIVES
from repoos_agent.target import resolve_target
from tests.fake_llm_servers import FakeLLMServer, gemini_answer, openai_answer, openai_error

KERNELS = ["gemm", "2mm", "jacobi-2d", "atax", "seidel-2d", "numpy:softmax"]
FAST = RetryPolicy(attempts=2, base_delay_s=0.01, max_delay_s=0.02, timeout_s=5.0)


@pytest.fixture(scope="module")
def grammars() -> dict[str, KernelGrammar]:
    """Each kernel's grammar, built once for the module (a kernel object is its cache key)."""
    return {name: kernel_grammar(resolve_target(name, []).kernel) for name in KERNELS}


def sample(grammar: KernelGrammar, rng: random.Random) -> str:
    """A random schedule the grammar allows, walked the way its GBNF reads: steps stay, moves change scope."""
    scope, texts = 0, []
    for _ in range(rng.randint(1, grammar.max_primitives)):
        options = [(use, scope) for use in grammar.scopes[scope].steps] + list(grammar.scopes[scope].moves)
        use, scope = rng.choice(options)
        texts.append(use.text(tuple(rng.choice(PRIMITIVES[use.primitive].choices) for _ in range(use.free_numbers))))
    return "; ".join(texts)


@pytest.mark.parametrize("name", KERNELS)
def test_every_schedule_the_grammar_allows_parses_and_names_only_the_kernels_loops(name: str, grammars) -> None:
    kernel = resolve_target(name, []).kernel
    grammar = grammars[name]
    rng = random.Random(7)
    for _ in range(150):
        text = sample(grammar, rng)
        schedule = parse_schedule(text)
        try:
            ScheduleState(kernel).apply_all(schedule)
        except ScheduleError as error:
            assert not error.reason.startswith(("unknown loop", "unknown statement")), text
        assert re.fullmatch(grammar.pattern(), text), text


def test_tile_loops_are_offered_only_after_the_tile_that_makes_them() -> None:
    grammar = kernel_grammar(resolve_target("gemm", []).kernel)
    first = grammar.scopes[0]
    assert "i_t" not in first.loops and not any("_t" in name for use in first.steps for name in use.names)
    tiled = [grammar.scopes[j] for use, j in first.moves if use.text((32,)) == "tile(i, 32)"]
    assert tiled and "i_t" in tiled[0].loops
    assert "parallelize(i_t)" in [use.text() for use in tiled[0].steps]


def test_one_primitive_grammar_continues_the_schedule_so_far() -> None:
    kernel = resolve_target("gemm", []).kernel
    grammar = kernel_grammar(kernel, ("distribute(S0, S1); tile(S1.i, S1.k, S1.j, 6, 64, 32)",), 1)
    assert grammar.max_primitives == 1
    assert "S1.i_t" in grammar.scopes[0].loops or "i_t" in grammar.scopes[0].loops
    with pytest.raises(ScheduleError, match="does not apply"):
        kernel_grammar(kernel, ("tile(q, 8)",), 1)


def test_gbnf_is_accepted_by_llama_cpp(grammars) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("the local extra is not installed: pip install 'repoos-agent[local]'")
    from llama_cpp import LlamaGrammar

    for name in KERNELS:
        text = grammars[name].gbnf(4)
        assert LlamaGrammar.from_string(text, verbose=False) is not None


def random_reply(schema: dict, rng: random.Random) -> object:
    """A random JSON value of `schema`, as a server decoding under it could write."""
    if "anyOf" in schema:
        return random_reply(rng.choice(schema["anyOf"]), rng)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if schema["type"] == "object":
        return {key: random_reply(value, rng) for key, value in schema["properties"].items()}
    count = rng.randint(schema["minItems"], schema["maxItems"])
    return [random_reply(schema["items"], rng) for _ in range(count)]


@pytest.mark.parametrize("name", ["gemm", "jacobi-2d", "numpy:softmax"])
def test_every_json_reply_the_schema_allows_becomes_schedules_that_parse(name: str, grammars) -> None:
    grammar = grammars[name]
    rng = random.Random(3)
    for _ in range(100):
        reply = json.dumps(random_reply(grammar.json_schema(3), rng))
        texts = schedules_from_json(reply)
        assert 1 <= len(texts) <= 3
        for text in texts:
            parse_schedule(text)


def test_gemini_schema_has_only_string_enums_and_no_additional_properties() -> None:
    schema = gemini_schema(kernel_grammar(resolve_target("gemm", []).kernel).json_schema(2))
    text = json.dumps(schema)
    assert "additionalProperties" not in text
    tile = next(v for v in schema["properties"]["schedules"]["items"]["items"]["anyOf"] if "numbers" in v["properties"])
    assert all(isinstance(n, str) for n in tile["properties"]["numbers"]["items"]["enum"])
    rng = random.Random(1)
    for text in schedules_from_json(json.dumps(random_reply(schema, rng))):
        parse_schedule(text)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("{not json", "unparsable JSON reply: the reply is not JSON"),
        ('{"plans": []}', 'no "schedules" list'),
        ('{"schedules": [[{"names": "i"}]]}', '"primitive" name'),
        ("I think tiling helps.", "reply without a <schedule> block: I think tiling helps."),
    ],
)
def test_a_reply_that_is_not_a_schedule_becomes_a_reason(reply: str, reason: str) -> None:
    result = _schedules(reply)
    assert isinstance(result, str) and reason in result


def test_prompt_words_are_parsed_and_a_bad_one_is_named() -> None:
    options = PromptOptions.parse("no-dependences, examples,one-primitive")
    assert (options.dependences, options.examples, options.one_primitive, options.feedback) == (False, True, True, "full")
    with pytest.raises(RepoosError, match="unknown word `fewshot`"):
        PromptOptions.parse("fewshot")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.kernel)
def test_few_shot_examples_are_legal_on_their_kernels(example) -> None:
    kernel = resolve_target(example.kernel, []).kernel
    assert prove_legal(kernel, example.schedule, explain=False).legal
    assert closest_example(kernel) is example


def conversation() -> list[Message]:
    return [Message("system", "You write loop schedules."), Message("user", "Schedule gemm.")]


def test_a_server_that_refuses_json_schema_is_asked_with_json_object_and_remembered() -> None:
    grammar = kernel_grammar(resolve_target("gemm", []).kernel)
    from repoos_agent.agent.llm.base import ReplyConstraint

    constraint = ReplyConstraint(grammar.gbnf(2), grammar.json_schema(2))
    good = json.dumps({"schedules": [[{"primitive": "parallelize", "names": "i"}]]})
    replies = [openai_error(500, "json_schema is not supported"), openai_answer(good), openai_answer(good)]
    with FakeLLMServer(replies) as server:
        backend = OpenAIBackend("m", base_url=f"{server.url}/v1", retry=FAST)
        first = backend.complete(conversation(), constraint)
        second = backend.complete(conversation(), constraint)
    assert (first.constraint, second.constraint) == (JSON_OBJECT, JSON_OBJECT)
    formats = [request.body.get("response_format", {}).get("type") for request in server.requests]
    assert formats == ["json_schema", "json_object", "json_object"]  # the refusal is learned once, not retried
    assert server.requests[1].body["response_format"]["schema"] == grammar.json_schema(2)
    assert server_forms(f"{server.url}/v1/").refused == {JSON_SCHEMA: "HTTP 500"}
    assert _schedules(second.text) == ["parallelize(i)"]


def test_a_server_that_ignores_every_form_is_used_unconstrained() -> None:
    grammar = kernel_grammar(resolve_target("gemm", []).kernel)
    from repoos_agent.agent.llm.base import ReplyConstraint

    constraint = ReplyConstraint(grammar.gbnf(2), grammar.json_schema(2))
    text = "<schedule>parallelize(i)</schedule>"
    with FakeLLMServer([openai_answer(text)] * 3) as server:
        backend = OpenAIBackend("m", base_url=f"{server.url}/v1", retry=FAST)
        completions = [backend.complete(conversation(), constraint) for _ in range(3)]
    assert [c.constraint for c in completions] == ["", "", ""]
    assert [c.text for c in completions] == [text] * 3  # every reply is used: ignoring the form costs no turn
    assert "response_format" not in server.requests[2].body


def test_a_model_dialogue_sends_the_kernels_grammar_and_reads_its_json(tmp_path) -> None:
    kernel = resolve_target("gemm", []).kernel
    plans = [[{"primitive": "parallelize", "names": "i"}], [{"primitive": "tile", "names": "k", "numbers": [32]}]]
    good = json.dumps({"schedules": plans})
    with FakeLLMServer([openai_answer(good)]) as server:
        proposer = LLMProposer(kernel, OpenAIBackend("m", base_url=f"{server.url}/v1", retry=FAST))
        ideas = proposer.propose([], 2)
    assert [idea.schedule for idea in ideas] == ["parallelize(i)", "tile(k, 32)"]
    schema = server.requests[0].body["response_format"]["json_schema"]["schema"]
    variants = schema["properties"]["schedules"]["items"]["items"]["anyOf"]
    parallel = next(v for v in variants if v["properties"]["primitive"]["enum"] == ["parallelize"])
    names = set(parallel["properties"]["names"]["enum"])
    assert {"i", "S0.j", "S1.j", "k"} <= names
    assert {re.sub(r"^S\d\.|_t$", "", name) for name in names} == {"i", "j", "k"}  # gemm's loops and their tiles only
    assert proposer.constraint == JSON_SCHEMA and proposer.replies == 1 and proposer.llm_s > 0


def test_a_one_primitive_turn_offers_only_what_the_engine_proves_legal() -> None:
    target = resolve_target("gemm", [])
    proposer = LLMProposer(
        target.kernel, OpenAIBackend("m", base_url="http://127.0.0.1:9/v1"), prompt=PromptOptions(one_primitive=True)
    )
    constraint = proposer._constraint(3, "")
    offered = [use.probe() for use in proposer._legal_grammars[""].uses()]
    assert constraint is not None and offered
    assert "parallelize(i)" in offered and "parallelize(k)" not in offered  # k carries the sum
    for text in offered:  # as proved, with the probe's numbers (tile 32, skew 1); other choices the engine still judges
        assert prove_legal(target.kernel, text, explain=False).legal, text


def test_gemini_is_asked_for_json_under_the_kernels_response_schema() -> None:
    grammar = kernel_grammar(resolve_target("gemm", []).kernel)
    from repoos_agent.agent.llm.base import ReplyConstraint

    reply = json.dumps({"schedules": [[{"primitive": "parallelize", "names": "i"}]]})
    with FakeLLMServer([gemini_answer(reply)]) as server:
        backend = GeminiBackend("gemini-test", api_key="test-key", base_url=server.url, retry=FAST)
        completion = backend.complete(conversation(), ReplyConstraint(grammar.gbnf(1), grammar.json_schema(1)))
    generation = server.requests[0].body["generationConfig"]
    assert generation["responseMimeType"] == "application/json"
    assert "additionalProperties" not in json.dumps(generation["responseSchema"])
    assert completion.constraint == RESPONSE_SCHEMA and _schedules(completion.text) == ["parallelize(i)"]


def test_a_rate_limit_on_the_first_constrained_request_is_waited_out_not_taken_for_a_refusal() -> None:
    grammar = kernel_grammar(resolve_target("gemm", []).kernel)
    from repoos_agent.agent.llm.base import ReplyConstraint

    good = json.dumps({"schedules": [[{"primitive": "parallelize", "names": "i"}]]})
    with FakeLLMServer([openai_error(429, "slow down"), openai_answer(good)]) as server:
        backend = OpenAIBackend("m", base_url=f"{server.url}/v1", retry=FAST)
        completion = backend.complete(conversation(), ReplyConstraint(grammar.gbnf(1), grammar.json_schema(1)))
    assert completion.constraint == JSON_SCHEMA
    assert [r.body["response_format"]["type"] for r in server.requests] == ["json_schema", "json_schema"]
    assert server_forms(f"{server.url}/v1/").refused == {}

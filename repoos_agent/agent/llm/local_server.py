"""llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`) run for a local model, one process per model.

A server costs about 300 MB and a core while it answers, so the process keeps one per
model file (and chat format): every dialogue of a search (`--k 3`) and every
Mixture-of-Agents reference naming the same model talk to the same server. A search
holds its servers inside `local_servers()`; when the last search using a server ends,
the server stops. A server acquired outside any search stays up until `stop_all_servers`,
which also runs when the interpreter exits.
"""

from __future__ import annotations

import atexit
import contextvars
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from repoos_agent.agent.llm.local_model import INSTALL_LOCAL, LocalModel
from repoos_agent.errors import RepoosError

HOST = "127.0.0.1"
CONTEXT_TOKENS = 8192  # SmolLM2's trained context: the search's prompts and its turns' feedback fit
STARTUP_TIMEOUT_S = 60.0
POLL_INTERVAL_S = 0.1
STOP_GRACE_S = 5.0
TOOL_CALLING_FORMAT = "chatml-function-calling"  # `--mode tools`: without it the server ignores `tools`
LOG_TAIL_LINES = 3


def require_llama_cpp() -> None:
    """`RepoosError` with the install command when llama-cpp-python is not installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise RepoosError(f"the local backend needs llama-cpp-python: {INSTALL_LOCAL}")


class LlamaServer:
    """One `llama_cpp.server` process serving `model` on a free port of 127.0.0.1, ready once constructed.

    Its output goes to a log file (`log_path`), never to the terminal; if it dies or is not
    ready within `startup_timeout_s`, the constructor stops it and raises `RepoosError` with
    the log's last lines."""

    def __init__(self, model: LocalModel, tools: bool = False, startup_timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        require_llama_cpp()
        self.model = model
        self.tools = tools
        self.port = _free_port()
        self.base_url = f"http://{HOST}:{self.port}/v1"
        with tempfile.NamedTemporaryFile(prefix=f"repoos-llama-{self.port}-", suffix=".log", delete=False) as log:
            self.log_path = Path(log.name)
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model.path), "--model_alias", model.name]
        command += ["--host", HOST, "--port", str(self.port), "--n_ctx", str(CONTEXT_TOKENS)]
        if tools:
            command += ["--chat_format", TOOL_CALLING_FORMAT]
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=_server_environment()
            )
        try:
            self._wait_until_ready(startup_timeout_s)
        except BaseException:
            self.stop(keep_log=True)
            raise

    def __repr__(self) -> str:
        return f"LlamaServer(model={self.model.name!r}, base_url={self.base_url!r}, running={self.running})"

    @property
    def running(self) -> bool:
        return self._process.poll() is None

    def stop(self, keep_log: bool = False) -> None:
        """Terminates the server, kills it if it does not exit within `STOP_GRACE_S`; a stopped server stays stopped."""
        if self.running:
            self._process.terminate()
            try:
                self._process.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if not keep_log:
            self.log_path.unlink(missing_ok=True)

    def _wait_until_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise RepoosError(f"the llama.cpp server for {self.model.name} exited with code {code}: {self._log_tail()}")
            if self._answers():
                return
            time.sleep(POLL_INTERVAL_S)
        raise RepoosError(f"the llama.cpp server for {self.model.name} was not ready after {timeout_s:g}s: {self._log_tail()}")

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=1.0) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def _log_tail(self) -> str:
        """The log's last lines on one line, and where the whole log is."""
        try:
            lines = [line.strip() for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            lines = []
        tail = " | ".join(lines[-LOG_TAIL_LINES:]) or "no output"
        return f"{tail} (log: {self.log_path})"


def _server_environment() -> dict[str, str]:
    """The server's environment: ours, with llama.cpp's OpenMP threads sleeping between replies instead of
    spinning, because the engine times candidates on the same cores while the server waits for the next turn."""
    return {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}


def _free_port() -> int:
    """A port nothing listens on now; the server binds it a moment later (if another process wins the race, it says so)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


_lock = threading.Lock()
_servers: dict[tuple[Path, bool], LlamaServer] = {}
_leases: Counter[tuple[Path, bool]] = Counter()  # how many open `local_servers()` scopes use each server
_unscoped: set[tuple[Path, bool]] = set()  # acquired outside any scope: kept until `stop_all_servers`
_scope: contextvars.ContextVar[set[tuple[Path, bool]] | None] = contextvars.ContextVar("local_server_scope", default=None)


def acquire_server(model: LocalModel, tools: bool = False) -> LlamaServer:
    """The running server for `model` (with tool calling if `tools`), started if there is none.

    Inside `local_servers()` the scope holds the server until it ends; outside, it runs until `stop_all_servers`."""
    key = (model.path, tools)
    with _lock:
        server = _servers.get(key)
        if server is None or not server.running:
            server = _servers[key] = LlamaServer(model, tools)
        scope = _scope.get()
        if scope is None:
            _unscoped.add(key)
        elif key not in scope:
            scope.add(key)
            _leases[key] += 1
        return server


def running_servers() -> tuple[LlamaServer, ...]:
    """The servers this process started that are still running."""
    with _lock:
        return tuple(server for server in _servers.values() if server.running)


@contextmanager
def local_servers() -> Iterator[None]:
    """A search's hold on the servers it acquires: when it ends, each server no other search (nor code outside
    any search) holds is stopped. Scopes nest and may run in several threads at once."""
    held: set[tuple[Path, bool]] = set()
    token = _scope.set(held)
    try:
        yield
    finally:
        _scope.reset(token)
        with _lock:
            for key in held:
                _leases[key] -= 1
                if _leases[key] > 0:
                    continue
                del _leases[key]
                server = None if key in _unscoped else _servers.pop(key, None)
                if server is not None:
                    server.stop()


def stop_all_servers() -> None:
    """Stops every server this process started, held or not."""
    with _lock:
        for server in _servers.values():
            server.stop()
        _servers.clear()
        _leases.clear()
        _unscoped.clear()


atexit.register(stop_all_servers)

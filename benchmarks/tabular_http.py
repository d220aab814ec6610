"""The HTTP leg of benchmarks/tabular.py: the revenue app under uvicorn, as written and with its fast paths.

What a client of the app sees includes FastAPI's validation and JSON encoding of every row, the
ASGI server and the socket: the share of the time the fast path removes is smaller there than
in process. Three servers run side by side (benchmarks/serve_revenue.py, one worker each, on
127.0.0.1): the ORM as written on PyMySQL (the seed's baseline), and the app with the contracts
`repoos optimize` stored installed, once on PyMySQL and once on mysqlclient (each with contracts
verified on its own driver). All answer every case once and their JSON is compared equal before
any is timed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from functools import partial
from pathlib import Path

import httpx
from report import timed_in_turns

ROOT = Path(__file__).parent.parent
READY_TIMEOUT_S = 60.0


def store_contracts(url: str, graph: Path, values: Mapping[str, Mapping[str, object]]) -> None:
    """`repoos optimize APP:endpoint --db URL` for each endpoint with its values, into `graph`: as a user stores them."""
    for name, arguments in values.items():
        command = [sys.executable, "-m", "repoos_agent", "optimize", f"kernels/apps/revenue_app/main.py:{name}"]
        command += ["--db", url, "--graph", str(graph)]
        command += [part for key, value in arguments.items() for part in ("--arg", f"{key}={value}")]
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=_environment(), timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"repoos optimize {name} failed: {done.stderr.strip()}")


class RevenueServer:
    """`with RevenueServer(graph) as server: server.client.get(...)`: the app under uvicorn in a subprocess."""

    def __init__(self, graph: Path | None = None, url: str | None = None) -> None:
        self.graph = graph
        self.url = url  # the app's database, when not the REVENUE_DB_URL of this process
        self.port = _free_port()
        self.process: subprocess.Popen | None = None
        self.installed: list[str] = []  # the routes the server runs a fast path on
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=600)

    def __enter__(self) -> RevenueServer:
        command = [sys.executable, str(ROOT / "benchmarks" / "serve_revenue.py"), "--port", str(self.port)]
        if self.graph is not None:
            command += ["--graph", str(self.graph)]
        environment = _environment() | ({"REVENUE_DB_URL": self.url} if self.url else {})
        self.process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, text=True)
        self.installed = self.process.stdout.readline().split()[1:]
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                self.client.get("/openapi.json").raise_for_status()
                return self
            except httpx.TransportError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise SystemExit(f"the revenue app did not start on port {self.port}") from None
                time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.process = None

    def get(self, path: str, params: Mapping[str, object]) -> httpx.Response:
        response = self.client.get(path, params={key: str(value) for key, value in params.items()})
        response.raise_for_status()  # the fast server fails a request its fast path did not serve
        return response


def measure_http(
    orm: RevenueServer, ours: Mapping[str, RevenueServer], path: str, params: Mapping[str, object], repeats: int
) -> dict:
    """The ORM's server and each of ours on one route and its values, every JSON checked equal to the ORM's first:
    {"http orm": Timing, "http ours DRIVER": Timing}, timed in turns."""
    expected = orm.get(path, params).json()
    for driver, server in ours.items():
        if server.get(path, params).json() != expected:
            raise SystemExit(f"{path} {dict(params)}: the fast path's JSON on {driver} differs from the ORM's")
    calls = {"http orm": partial(orm.get, path, params)}
    calls |= {f"http ours {driver}": partial(server.get, path, params) for driver, server in ours.items()}
    return timed_in_turns(calls, repeats)


def _environment() -> dict[str, str]:
    """This checkout first on the subprocess's path, so it imports this repoos_agent and this app."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environment.get("PYTHONPATH")]))
    return environment


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]

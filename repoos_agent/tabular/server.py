"""A throwaway MariaDB server: its own data directory, on 127.0.0.1, stopped and deleted on exit.

Tests and benchmarks need a real server and must not touch one the user runs. This starts
Debian's `mariadbd` (installed by `scripts/install-system-packages`) as the current
user in a temporary directory, with a database and an account whose password is random, and
removes everything when it stops."""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from repoos_agent.errors import RepoosError

MARIADBD = "/usr/sbin/mariadbd"
INSTALL_DB = "/usr/bin/mariadb-install-db"
CLIENT = "/usr/bin/mariadb"
START_TIMEOUT_S = 30.0


class ServerError(RepoosError):
    """The server could not be installed or started; the message says what to install or what its log says."""


class MariaDBServer:
    """`with MariaDBServer() as server: server.url("pymysql")`: a fresh server, database `app`, user `app`."""

    def __init__(self, database: str = "app", user: str = "app") -> None:
        for binary in (MARIADBD, INSTALL_DB, CLIENT):
            if not Path(binary).exists():
                raise ServerError(f"{binary} is missing: run scripts/install-system-packages (mariadb-server)")
        self.database, self.user, self.password = database, user, secrets.token_urlsafe(12)
        self.directory = Path(tempfile.mkdtemp(prefix="repoos-mariadb-"))
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    @property
    def socket_path(self) -> Path:
        return self.directory / "mysqld.sock"

    def url(self, driver: str = "pymysql") -> str:
        """A SQLAlchemy URL for the account over TCP (`pymysql` or `mysqldb`, mysqlclient's module)."""
        return f"mysql+{driver}://{self.user}:{self.password}@127.0.0.1:{self.port}/{self.database}?charset=utf8mb4"

    def start(self) -> MariaDBServer:
        data = self.directory / "data"
        options = ["--no-defaults", f"--datadir={data}", "--user=" + _user()]
        _run([INSTALL_DB, *options, "--auth-root-authentication-method=socket", "--skip-test-db"], self.directory / "install.log")
        log = (self.directory / "server.log").open("w")
        self.process = subprocess.Popen(
            [
                MARIADBD,
                *options,
                f"--socket={self.socket_path}",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=128M",
                f"--pid-file={self.directory / 'mysqld.pid'}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.socket_path.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = (self.directory / "server.log").read_text(errors="replace")[-800:]
                self.stop()
                raise ServerError(f"mariadbd did not start: {tail}")
            time.sleep(0.05)
        self.sql(
            f"CREATE DATABASE {self.database} CHARACTER SET utf8mb4; "
            f"CREATE USER '{self.user}'@'127.0.0.1' IDENTIFIED BY '{self.password}'; "
            f"GRANT ALL ON {self.database}.* TO '{self.user}'@'127.0.0.1';"
        )
        return self

    def sql(self, statements: str) -> str:
        """Run statements as the server's root over its socket (set-up and schema changes in tests)."""
        done = subprocess.run(
            [CLIENT, "--no-defaults", "-S", str(self.socket_path), "-u", "root", "-N", "-e", statements],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode != 0:
            raise ServerError(f"mariadb: {done.stderr.strip()}")
        return done.stdout

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> MariaDBServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _run(command: list[str], log: Path) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise ServerError(f"{Path(command[0]).name} failed: {(done.stdout + done.stderr).strip()[-800:]}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _user() -> str:
    import getpass

    return getpass.getuser()

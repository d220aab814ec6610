"""The database a tabular tool call runs on: named by an environment variable of the server, never given in the call.

A URL passed as a tool argument would land in the client's transcript, and in the model's
context, with its password; so a call names a variable the operator set when starting the
server, and a URL given in its place is refused without being repeated. Only names of the
form `REPOOS_…DB_URL` are read: setting one is the operator's consent to let calls import
endpoint modules under the roots and run them against that database, and a call cannot make
the server read an API key or `REPOOS_GRAPH_PASSWORD` by naming it. Every message that could
carry the URL passes through `NamedDatabase.without_credentials` before it leaves the server.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from repoos_agent.errors import RepoosError
from repoos_agent.tabular.credentials import safe_url, without_password

DEFAULT_DATABASE_ENV = "REPOOS_DB_URL"
READABLE_NAME = re.compile(r"REPOOS_[A-Z0-9_]*DB_URL")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class DatabaseEnvError(RepoosError):
    """`database_env` names no variable this server reads, or one that is not set."""


@dataclass(frozen=True)
class NamedDatabase:
    """The URL in the server's environment variable `variable`; its repr, like every message made from it, hides it."""

    variable: str
    url: str = field(repr=False)

    @property
    def masked(self) -> str:
        """The URL with its password masked: what a result or a message may show."""
        return safe_url(self.url)

    def without_credentials(self, message: str) -> str:
        """`message` with the URL shown masked and its password, however encoded, replaced by `***`."""
        return without_password(self.url, message)


def database_from_env(variable: str, environ: Mapping[str, str] = os.environ) -> NamedDatabase:
    """The database `variable` names in the server's environment, or a `DatabaseEnvError` naming the field."""
    if "://" in variable or "@" in variable:
        raise DatabaseEnvError(
            "database_env: give the name of an environment variable of the server (such as "
            f"{DEFAULT_DATABASE_ENV}), not a URL: a URL in a tool call lands in the client's transcript with its "
            "password. Set the URL in the server's environment where it is started."
        )
    if not _IDENTIFIER.fullmatch(variable):
        raise DatabaseEnvError(f"database_env: not the name of an environment variable (such as {DEFAULT_DATABASE_ENV})")
    if not READABLE_NAME.fullmatch(variable):
        raise DatabaseEnvError(
            f"database_env: `{variable}` is not a variable this server reads: only names of the form REPOOS_…DB_URL "
            f"(such as {DEFAULT_DATABASE_ENV}) name a database"
        )
    url = environ.get(variable, "")
    if not url:
        raise DatabaseEnvError(
            f"database_env: {variable} is not set in the server's environment; set it to the database's SQLAlchemy "
            "URL (mysql+pymysql://user:password@host/db) where the server is started"
        )
    return NamedDatabase(variable, url)

"""Keeping a database URL's password out of every message, event and record.

A driver may repeat the password in an error, as the URL spells it (percent-encoded) or decoded,
so every form is removed. `safe_url` is what a message may show of the URL itself.
"""

from __future__ import annotations

import re
from urllib.parse import quote, quote_plus, unquote

_PASSWORD = re.compile(r"://[^/?#@:]*:([^/?#@]*)@")  # user:password@ in the URL's authority


def safe_url(url: str) -> str:
    """The URL with its password masked: what messages may show."""
    from sqlalchemy.engine import make_url  # here, so the MCP server starts without the tabular extra

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL at all: say nothing of what it holds
        return "<the --db URL>"


def without_password(url: str, message: str) -> str:
    """`message` with the URL shown masked and its password, however encoded, replaced by `***`."""
    message = message.replace(url, safe_url(url))
    for secret in _password_forms(url):
        message = message.replace(secret, "***")
    return message


def _password_forms(url: str) -> list[str]:
    """The password as the URL spells it, decoded and re-encoded, longest first (one may contain another)."""
    match = _PASSWORD.search(url)
    if match is None or not match.group(1):
        return []
    raw = match.group(1)
    forms = {raw, unquote(raw), quote(unquote(raw), safe=""), quote_plus(unquote(raw))}
    return sorted(forms, key=len, reverse=True)

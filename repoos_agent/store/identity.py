"""Who a function is, across processes: its file's absolute path, its name, and a hash of its source.

Ingest and the runtime must agree on both, so both come from here: the key from
the resolved path, the hash from the function's text exactly as tree-sitter
delimits it (`def` to the end of its body, without decorators).
"""

from __future__ import annotations

import hashlib
import inspect
import textwrap
from collections.abc import Callable
from pathlib import Path

from repoos_agent.ingest.parse import functions, parse_source, text


def function_key(path: str | Path, name: str) -> str:
    return f"{Path(path).resolve()}:{name}"


def source_hash(function_text: str) -> str:
    return hashlib.sha256(function_text.encode("utf-8")).hexdigest()


def function_texts(source: str, path: str) -> dict[str, str]:
    """Each top-level function's text in `source`, by name."""
    return {text(node.child_by_field_name("name")): text(node) for node in functions(parse_source(source, path))}


def live_identity(func: Callable[..., object]) -> tuple[str, str] | None:
    """(key, source hash) of a live Python function, or None when its source cannot be found.

    A Numba-compiled function (`@njit`) is the Python function it holds as `py_func`, whose source it runs."""
    func = getattr(func, "py_func", func)
    try:
        path = inspect.getsourcefile(func)
        lines = inspect.getsource(func)
    except (OSError, TypeError):
        return None
    if path is None:
        return None
    texts = function_texts(textwrap.dedent(lines), path)
    if func.__name__ not in texts:
        return None
    return function_key(path, func.__name__), source_hash(texts[func.__name__])

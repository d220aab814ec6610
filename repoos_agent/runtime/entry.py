"""The original's checks at entry, run in Python before the native kernel.

A function that validates its arguments (`if len(x) != len(y): raise ValueError(...)`,
`assert a.shape == b.shape`) must raise as it always did when it is swapped. The model leaves
those statements out; the swapped call runs them first, as the original's own source, in the
original's module, and only a call they let through reaches native code.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

ENTRY = "__repoos_entry_checks__"


def entry_checks(python: Callable[..., object], arguments: Sequence[str], code: str) -> Callable[..., None] | None:
    """A function of `arguments` (in order) that runs `code`, the original's entry, in the original's module;
    None when there is no check to run."""
    if not code.strip():
        return None
    source = f"def {ENTRY}({', '.join(arguments)}):\n{textwrap.indent(code, '    ')}    return None\n"
    where = getattr(getattr(python, "__code__", None), "co_filename", "<entry checks>")
    namespace: dict[str, object] = {}
    exec(compile(source, where, "exec"), getattr(python, "__globals__", {}), namespace)  # the user's own statements
    return namespace[ENTRY]  # type: ignore[return-value]

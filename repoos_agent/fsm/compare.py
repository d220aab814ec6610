"""The fsm track's baseline check: the compiled function against the Python original, call by call.

Both run on their own copies of the same arguments. They agree when they return equal values of the same type
and leave every argument equal, or when both raise the same exception type with the same message. Integers are
compared exactly: there is no tolerance for a checksum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

SHOWN = 80
"""The characters of a returned value a report shows (a decoded buffer can be long)."""


@dataclass(frozen=True)
class Outcome:
    """What one call gave: its result and its arguments after it, or the exception it raised (type and message)."""

    returned: object
    arguments: tuple[object, ...]
    raised: tuple[str, str] | None

    def describe(self) -> str:
        if self.raised is not None:
            return f"raised {self.raised[0]}: {self.raised[1]}"
        shown = repr(self.returned)
        return f"returned {shown if len(shown) <= SHOWN else shown[: SHOWN - 3] + '...'}"


def outcome(function: Callable[..., object], arguments: Sequence[object]) -> Outcome:
    """Call `function` on copies of `arguments`; an exception it raises is part of the outcome."""
    copies = tuple(_copy(value) for value in arguments)
    try:
        returned = function(*copies)
    except Exception as exc:  # what the function raises is what is compared, not an engine failure
        return Outcome(None, copies, (type(exc).__name__, str(exc)))
    return Outcome(returned, copies, None)


def difference(want: Outcome, got: Outcome, name: str = "the native code") -> str | None:
    """What differs between the original's outcome and the one `got` by `name` (a peer's, in a comparison), or None
    when they agree."""
    if want.raised != got.raised or (want.raised is None and not _equal(want.returned, got.returned)):
        return f"the original {want.describe()}, {name} {got.describe()}"
    for position, (mine, theirs) in enumerate(zip(want.arguments, got.arguments, strict=True)):
        if not _equal(mine, theirs):
            return f"argument {position} differs after the call"
    return None


def _equal(first: object, second: object) -> bool:
    if type(first) is not type(second):
        return False
    if isinstance(first, np.ndarray):
        return first.dtype == second.dtype and np.array_equal(first, second)  # type: ignore[union-attr]
    if isinstance(first, tuple | list):  # element by element: a bytearray inside is not equal to bytes
        return len(first) == len(second) and all(map(_equal, first, second))  # type: ignore[arg-type]
    return first == second


def _copy(value: object) -> object:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, bytearray):
        return bytearray(value)
    return value

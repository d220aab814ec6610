"""Shape and layout: functions that only change which element an index reads (`np.transpose`, `x.transpose()`),
so they compose into the element expression and store nothing."""

from __future__ import annotations

from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Value, transposed
from repoos_agent.ingest.scop import Refusal


@lowers("transpose", methods=("transpose",))
def _transpose(lowering: Lowering, call: CallSite) -> Value:
    """The 2-d transpose. `axes` (`x.transpose(1, 0)`, `axes=`) is refused: a permutation that is the identity
    (`(0, 1)`) must not be taken for a transpose."""
    if "axes" in call.keywords or len(call.positional) > 1:
        raise Refusal(call.node, f"`{call.spelled}` with `axes` is not modelled; only the 2-d transpose")
    (value,) = call.values(lowering, 1)
    return transposed(value, call.node)

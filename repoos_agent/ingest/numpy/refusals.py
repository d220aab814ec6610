"""NumPy functions that stay out of the model, each with what to write instead. A refusal is registered like
any lowering, so a name is either lowered or refused with its reason, in one table."""

from __future__ import annotations

from repoos_agent.ingest.numpy.registry import CallSite, Lowering, lowers
from repoos_agent.ingest.numpy.values import Value
from repoos_agent.ingest.scop import Refusal

RANK_HINT = (
    " (an argument's rank comes from the call's values, e.g. `repoos check FILE:FUNCTION --arg x=f64[64,64]`,"
    " or from `n, m = x.shape` in the source)"
)

UNSUPPORTED = {
    "einsum": "np.einsum is not modelled; write the contraction with `@` or a reduction",
    **{name: f"`np.{name}` is not modelled yet" for name in ("nonzero", "sort")},
}


def _refuse(lowering: Lowering, call: CallSite) -> Value:
    raise Refusal(call.node, UNSUPPORTED[call.function])


for _name in UNSUPPORTED:
    lowers(_name)(_refuse)

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
    "reshape": "reshape is not modelled: write the loops over the shape you need",
    "linspace": "np.linspace is not modelled inside a kernel: pass the array in",
    "tril": "np.tril is not modelled: write the triangle as a loop over rows (`A[i, :i + 1]`)",
    "triu": "np.triu is not modelled: write the triangle as a loop over rows (`A[i, i:]`)",
    "concatenate": "np.concatenate is not modelled: assign the parts into a slice of one array",
    "stack": "np.stack is not modelled: assign the parts into slices of one array",
    **{name: f"`np.{name}` is not modelled yet" for name in ("nonzero", "sort")},
}


def _refuse(lowering: Lowering, call: CallSite) -> Value:
    raise Refusal(call.node, UNSUPPORTED[call.function])


for _name in UNSUPPORTED:
    lowers(_name)(_refuse)

"""Turning a stored VerifiedKernel back into a loaded native kernel, refusing anything that does not match."""

from __future__ import annotations

import json
from pathlib import Path

from repoos_agent.backends.build import file_digest
from repoos_agent.backends.library import NativeKernel
from repoos_agent.codegen import BoundsCheck, CArgument, CSource
from repoos_agent.errors import RepoosError
from repoos_agent.model.kernel import Allocation, DerivedSize
from repoos_agent.model.signature import Signature
from repoos_agent.store.records import VerifiedKernel


class ContractError(RepoosError):
    """A VerifiedKernel that cannot be used as it stands (library missing, altered or unloadable)."""


def load_contract(contract: VerifiedKernel) -> NativeKernel:
    """The contract's library, loaded once per process, after checking it is the very file that was verified."""
    library = Path(contract.library)
    try:
        digest = file_digest(library)
    except OSError as error:
        raise ContractError(f"its library {library} cannot be read ({error.strerror or error})") from None
    if digest != contract.library_sha256:
        raise ContractError(f"its library {library} is not the one that was verified (its SHA-256 differs)")
    interface = json.loads(contract.interface)
    source = CSource(
        text=contract.c_text,
        arguments=tuple(CArgument(**a) for a in interface["arguments"]),
        checks=tuple(BoundsCheck(**c) for c in interface["checks"]),
        sizes=tuple(interface["sizes"]),
        shape_sizes=tuple((array, dim) for array, dim in interface["shape_sizes"]),
        name=interface["name"],
        allocations=tuple(Allocation.from_json(a) for a in interface.get("allocations", [])),
        shape_names=tuple(interface.get("shape_names", [])),
        derived=tuple(DerivedSize.from_json(size) for size in interface.get("derived", [])),
    )
    types = dict(entry.split(":", 1) for entry in contract.signature)
    ranked = {name for name, _, _ in interface["arrays"]}
    signature = Signature(
        tuple((name, kind) for name, kind in types.items() if name in ranked),
        tuple((name, kind) for name, kind in types.items() if name not in ranked),
    )
    try:
        return NativeKernel(signature, source, library)
    except (OSError, AttributeError) as error:
        raise ContractError(f"its library {library} cannot be loaded ({error})") from None

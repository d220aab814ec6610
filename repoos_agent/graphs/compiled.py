"""The bundled graph kernels, built by the engine: ingested, their schedule proven, compiled once.

Each algorithm runs one kernel of `kernels/graphs/` or `kernels/sparse/`. Its schedule is the
one `repoos optimize` finds for it at LARGE (`parallelize` of its row loop where rows are
independent), re-proven here by `prove_legal` on every load: a schedule the engine no longer
proves legal is never run, the source order is. Builds are cached on disk like every other."""

from __future__ import annotations

import threading
from collections.abc import MutableMapping
from dataclasses import dataclass

from repoos_agent.backends import build_native
from repoos_agent.backends.library import NativeKernel
from repoos_agent.catalog import find_bundled
from repoos_agent.ingest import load_kernel
from repoos_agent.legality import prove_legal
from repoos_agent.measure.cores import call_team, usable_cores
from repoos_agent.model import Kernel, Signature

SCHEDULES = {
    "sparse:spmv": "parallelize(i)",
    "graphs:pagerank": "parallelize(S3.i)",
}
"""The schedules the backend runs; the other kernels' searches found nothing better than the source order
(their loops carry dependences through the index arrays: marks, in-place relaxations, scatters)."""


@dataclass
class GraphKernel:
    """One bundled kernel and its builds, one per signature (element types of the arrays)."""

    name: str
    kernel: Kernel
    schedule: str

    def __post_init__(self) -> None:
        self._builds: dict[Signature, NativeKernel] = {}
        self._lock = threading.Lock()

    def __call__(self, values: MutableMapping[str, object]) -> None:
        """Run in place on `values`, on a team sized to the cores nobody else wants."""
        signature = Signature.of_values(self.kernel, values)
        with self._lock:
            native = self._builds.get(signature)
            if native is None:
                native = self._builds[signature] = self._build(signature)
        if native.parallel:
            native.set_team(call_team(usable_cores()))
        native(values)

    def _build(self, signature: Signature) -> NativeKernel:
        verdict = prove_legal(self.kernel, self.schedule, explain=False)
        lowered = verdict.lowered if verdict.legal else prove_legal(self.kernel, "", explain=False).lowered
        return build_native(self.kernel, signature, lowered)


_KERNELS: dict[str, GraphKernel] = {}
_KERNELS_LOCK = threading.Lock()


def graph_kernel(name: str) -> GraphKernel:
    """The bundled kernel `name` (`graphs:pagerank`), ingested once per process."""
    with _KERNELS_LOCK:
        if name not in _KERNELS:
            bundled = find_bundled(name)
            kernel = load_kernel(bundled.path, bundled.function, bundled.ranks())
            _KERNELS[name] = GraphKernel(name, kernel, SCHEDULES.get(name, ""))
        return _KERNELS[name]

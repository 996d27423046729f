"""Compile a generated C source into a shared library with the system C compiler."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from mb_sim.codegen.errors import CodegenError
from mb_sim.codegen.progress import Progress, report

__all__ = ["COMPILE_FLAGS", "compiler_command", "compile_shared_library"]

COMPILE_FLAGS = ("-std=c99", "-O2", "-shared", "-fPIC")

_STDERR_LINES = 20


def compiler_command() -> list[str]:
    """The C compiler command: ``$CC`` (which may carry arguments) or ``cc``.

    Raises
    ------
    CodegenError
        The compiler is not found.
    """
    command = shlex.split(os.environ.get("CC", "")) or ["cc"]
    if shutil.which(command[0]) is None:
        raise CodegenError(f"C compiler {command[0]!r} not found: set $CC to a C compiler, or "
                           "use compile_model(..., backend='numpy')")
    return command


def compile_shared_library(source: Path, library: Path, progress: Progress = None) -> None:
    """Compile C file `source` into shared library `library`.

    Raises
    ------
    CodegenError
        The compiler is missing, cannot be run or fails; the message shows the start of its
        standard error.
    """
    command = [*compiler_command(), *COMPILE_FLAGS, "-o", str(library), str(source), "-lm"]
    report(progress, f"compiling {source} with {command[0]}...")
    start = time.perf_counter()
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as error:
        raise CodegenError(f"cannot run C compiler {command[0]!r}: {error}") from error
    if result.returncode != 0:
        stderr = "\n".join(result.stderr.splitlines()[:_STDERR_LINES])
        raise CodegenError(f"C compiler {command[0]!r} failed (exit status {result.returncode}) "
                           f"on {source}:\n{stderr}")
    report(progress, f"compiled {source.name} ({time.perf_counter() - start:.1f} s)")

"""Compile a generated C source into a shared library with the system C compiler."""
from __future__ import annotations

import os
import platform
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

from mb_sim.codegen.runtime_files import runtime_directory
from mb_sim.codegen.errors import CodegenError
from mb_sim.codegen.progress import Progress, report

__all__ = ["COMPILE_FLAGS", "MAX_SOURCE_BYTES", "check_source_size", "compiler_command", "compile_shared_library",
           "host_flags", "run_compiler", "COMPILE_TIMEOUT"]



def host_flags(cpuinfo: str | os.PathLike = "/proc/cpuinfo") -> tuple[str, ...]:
    """``-mavx`` on an x86-64 CPU with AVX (every one since 2011), else nothing.  The arithmetic
    is the same (no FMA contraction: bit for bit the results of the baseline build), in VEX
    encoding, and steps are about 20 % faster (Solo12: 10.9 -> 8.9 us; glibc's sin, cos and pow
    run AVX code, and legacy SSE code around them pays for every transition).  The flags are
    part of the cache key, so a cache shared with a CPU without AVX builds its own library."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return ()
    try:
        with open(cpuinfo) as file:
            flags = next((line.split(":", 1)[1].split() for line in file if line.startswith("flags")), [])
    except OSError:
        return ()
    return ("-mavx",) if "avx" in flags else ()


#: -fno-math-errno: sqrt as one instruction (the same correctly rounded result) instead of a call
#: that would set errno, which nothing reads.
COMPILE_FLAGS = ("-std=c99", "-O2", "-fno-math-errno", *host_flags(), "-shared", "-fPIC")
#: The largest generated C source mb_sim compiles [bytes].  The generated functions are long
#: straight-line code, and gcc's -O2 time and memory grow superlinearly with their length (register
#: allocation, PRE, dead-store elimination).  Measured on 2 cores, gcc 12 -O2 (CPU time, memory):
#: 0.25 MB 4 s 0.2 GB; 0.69 MB 26 s 0.9 GB; 0.99 MB 68 s 1.8 GB; 1.4 MB 126 s 3.0 GB; 2.0 MB
#: 236 s 5.1 GB.  -O1 is little better (2.0 MB: 136 s, 2.3 GB) and runs 1.7x slower; -O0 is
#: linear (2.0 MB: 4 s, 0.6 GB; 4.1 MB: 10 s, 1.2 GB) but runs 3-7x slower.  The model-size limit
#: (mb_sim.urdf.size) keeps chains below this; it catches wide trees with many links or constraints.
MAX_SOURCE_BYTES = 2_000_000

#: Wall seconds a compilation may take before it is ended (2 MB of C took gcc -O2 4 min).
COMPILE_TIMEOUT = 1800.0

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


def check_source_size(source: str, name: str) -> None:
    """CodegenError (one line) if C `source` of model `name` is above MAX_SOURCE_BYTES."""
    if len(source) > MAX_SOURCE_BYTES:
        raise CodegenError(
            f"model {name!r}: {len(source) / 1e6:.2f} MB of generated C is more than the {MAX_SOURCE_BYTES / 1e6:g} MB "
            "mb_sim compiles (the C compiler's time and memory grow superlinearly with it: 2 MB took gcc -O2 "
            "4 min and 5 GB); with contacts, let fewer links touch (<ground links=\"left_foot right_foot\"/>, "
            "load_urdf(..., ground=[...]), <self_collision links=...>), else use backend='numpy' or a smaller model")


def compile_shared_library(source: Path, library: Path, progress: Progress = None,
                           timeout: float | None = COMPILE_TIMEOUT) -> None:
    """Compile C file `source` into shared library `library` (with the runtime's directory on the
    include path: the generated file includes the hand-written runtime).

    Raises
    ------
    CodegenError
        The compiler is missing, cannot be run, fails or runs past `timeout` seconds; the
        message shows the start of its standard error.
    """
    command = [*compiler_command(), *COMPILE_FLAGS, "-I", str(runtime_directory()), "-o", str(library),
               str(source), "-lm"]
    report(progress, f"compiling {source} ({source.stat().st_size / 1e6:.2f} MB of C) with {command[0]}...")
    start = time.perf_counter()
    returncode, stderr = run_compiler(command, timeout)
    if returncode != 0:
        stderr = "\n".join(stderr.splitlines()[:_STDERR_LINES])
        raise CodegenError(f"C compiler {command[0]!r} failed (exit status {returncode}) "
                           f"on {source}:\n{stderr}")
    report(progress, f"compiled {source.name} ({time.perf_counter() - start:.1f} s)")


def run_compiler(command: list[str], timeout: float | None = COMPILE_TIMEOUT) -> tuple[int, str]:
    """Run `command` in a process group of its own; (exit status, standard error).

    The driver (``cc``) starts ``cc1`` and ``as`` as its children: killing the driver alone
    orphans them (a Ctrl-C during a first compile left ``cc1`` running).  So on any interruption
    (KeyboardInterrupt, a signal turned into an exception, the `timeout`) the whole group is
    killed and reaped before the exception goes on.
    """
    try:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as error:
        raise CodegenError(f"cannot run C compiler {command[0]!r}: {error}") from error
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raise CodegenError(f"C compiler {command[0]!r} ran for more than {timeout:g} s: ended") from None
    except BaseException:
        _kill_group(process)
        raise
    return process.returncode, stderr


def _kill_group(process: subprocess.Popen) -> None:
    """SIGKILL `process`'s whole process group (it leads it) and reap `process`."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is gone already
        pass
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
    process.wait()

"""Compile a generated C source into a shared library with the system C compiler."""
from __future__ import annotations

import os
import platform
import secrets
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from mb_sim.codegen.runtime_files import runtime_directory
from mb_sim.codegen.errors import CodegenError
from mb_sim.codegen.progress import Progress, report
from mb_sim.codegen.units import translation_units

__all__ = ["COMPILE_FLAGS", "QUICK_FLAGS", "TCC_FLAGS", "quick_flags", "MAX_SOURCE_BYTES", "check_source_size",
           "compiler_command", "compile_shared_library", "compile_jobs", "estimated_seconds", "host_flags",
           "run_compiler", "run_compilers", "COMPILE_TIMEOUT", "COMPILER_NICENESS"]



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
#: A first load's quick build (mb_sim.codegen.tiers): the same C unoptimized compiles about 5x
#: faster (G1: 3.4 s of gcc CPU instead of 16.5 s) and runs 3-10x slower, with the same results bit
#: for bit (gcc keeps IEEE evaluation order at every level; no flag here contracts or reassociates).
QUICK_FLAGS = tuple("-O0" if flag == "-O2" else flag for flag in COMPILE_FLAGS)
#: How much faster a quick build compiles than an optimized one (the progress line's estimate).
QUICK_SPEEDUP = 4.0
#: The quick build's compiler on x86-64 where it is installed and ``$CC`` is not set: the Tiny C
#: Compiler (Debian's ``tcc``) compiles the generated C in one pass, at about 20 MB/s (iCub's 1.35 MB:
#: 0.06 s of CPU instead of 4.0 s at gcc -O0), into code about as fast as -O0's, with the same
#: results bit for bit (SSE2 doubles as written, nothing contracted, glibc's libm).  tcc folds
#: arithmetic between two literals in long double, so ``2.0*0.1`` could differ from gcc's in the
#: last bit: SymPy folds such terms before printing, and the generated C has none but exact ones
#: (``1.0/2.0``).  x86-64 only: elsewhere (i386's x87, other backends) bit-identity is unchecked.
TCC = "tcc"
#: tcc's flags, compiling to an object file (and the quick build's cache key): cc links it, since
#: tcc writes no GNU_STACK header and glibc would make the process's stack executable (or, from
#: 2.41, refuse the library).
TCC_FLAGS = ("-std=c99", "-fPIC", "-c")
#: The link of tcc's object file.
TCC_LINK_FLAGS = ("-shared", "-Wl,-z,noexecstack")
#: tcc's speed on generated C for the progress line's estimate, half the measured [bytes/s].
TCC_BYTES_PER_SECOND = 1e7
#: The largest generated C source mb_sim compiles [bytes].  gcc's -O2 time and memory grow
#: superlinearly with a function's length (register allocation, PRE, dead-store elimination): whole
#: functions took (CPU time, memory, 2 cores, gcc 12) 0.25 MB 4 s 0.2 GB; 0.69 MB 26 s 0.9 GB;
#: 0.99 MB 68 s 1.8 GB; 2.0 MB 236 s 5.1 GB.  Long functions are now cut into parts
#: (mb_sim.codegen.parts) and compiled as units of about 80 kB, so the time is about linear in the
#: size: Talos full's 1.25 MB compiles in 16 s of wall time, iCub's 2.23 MB loaded in 77 s with
#: the machine busy, in 1.3 GB.  -O1 runs 1.7x slower, -O0 3-7x.  The model-size limit
#: (mb_sim.urdf.size) keeps chains below this; it catches wide trees with many links or constraints.
MAX_SOURCE_BYTES = 4_000_000

#: Wall seconds a compilation may take before it is ended (2 MB of C in one function took gcc -O2 4 min).
COMPILE_TIMEOUT = 1800.0

_STDERR_LINES = 20


#: The compile-time estimate's terms (gcc 12 -O2 on 2 cores of this project's machines, which differ
#: twofold): the runtime's C, compiled with every model, and a unit of 100 kB of generated C, whose
#: time grows as its size to the COMPILE_EXPONENT.
RUNTIME_COMPILE_SECONDS, UNIT_COMPILE_SECONDS, COMPILE_EXPONENT = 2.5, 2.2, 1.8


def estimated_seconds(units: list[str], cores: int | None = None, flags: tuple[str, ...] = COMPILE_FLAGS) -> float:
    """About how long the compiler takes on `units` (the first holds the runtime), run at once on
    `cores` (the machine's) with `flags`: the progress line's estimate, from the units' sizes."""
    if flags == TCC_FLAGS:
        return sum(map(len, units)) / TCC_BYTES_PER_SECOND
    times = [UNIT_COMPILE_SECONDS * (len(unit) / 1e5) ** COMPILE_EXPONENT for unit in units]
    times[0] += RUNTIME_COMPILE_SECONDS
    seconds = max(max(times), sum(times) / max(1, min(len(units), cores or compile_jobs())))
    return seconds / QUICK_SPEEDUP if flags == QUICK_FLAGS else seconds


def quick_flags() -> tuple[str, ...]:
    """The quick build's flags: :data:`TCC_FLAGS` where tcc is installed and ``$CC`` unset (a
    compiler the user chose is used at every level), else :data:`QUICK_FLAGS`."""
    x86_64 = platform.machine().lower() in ("x86_64", "amd64")
    return TCC_FLAGS if x86_64 and not os.environ.get("CC", "").strip() and shutil.which(TCC) else QUICK_FLAGS


def compiler_command(flags: tuple[str, ...] = COMPILE_FLAGS) -> list[str]:
    """The C compiler command for `flags`: tcc for :data:`TCC_FLAGS`, else ``$CC`` (which may
    carry arguments) or ``cc``.

    Raises
    ------
    CodegenError
        The compiler is not found.
    """
    command = [TCC] if flags == TCC_FLAGS else shlex.split(os.environ.get("CC", "")) or ["cc"]
    if shutil.which(command[0]) is None:
        raise CodegenError(f"C compiler {command[0]!r} not found: set $CC to a C compiler, or "
                           "use compile_model(..., backend='numpy')")
    return command


def check_source_size(source: str, name: str) -> None:
    """CodegenError (one line) if C `source` of model `name` is above MAX_SOURCE_BYTES."""
    if len(source) > MAX_SOURCE_BYTES:
        raise CodegenError(
            f"model {name!r}: {len(source) / 1e6:.2f} MB of generated C is more than the {MAX_SOURCE_BYTES / 1e6:g} MB "
            "mb_sim compiles (the C compiler's time and memory grow with it: 2.2 MB took over a minute and 1.3 GB); "
            "with contacts, let fewer links touch (<ground links=\"left_foot right_foot\"/>, "
            "load_urdf(..., ground=[...]), <self_collision links=...>), else use backend='numpy' or a smaller model")


def compile_shared_library(source: Path, library: Path, progress: Progress = None,
                           timeout: float | None = COMPILE_TIMEOUT, flags: tuple[str, ...] = COMPILE_FLAGS) -> None:
    """Compile C file `source` into shared library `library` with `flags` (with the runtime's
    directory on the include path: the generated file includes the hand-written runtime).  A large
    source is compiled as its translation units side by side, then linked (:mod:`mb_sim.codegen.units`).

    Raises
    ------
    CodegenError
        The compiler is missing, cannot be run, fails or runs past `timeout` seconds; the
        message shows the start of its standard error.
    """
    text = source.read_text()
    units = [text] if flags == TCC_FLAGS else translation_units(text)  # tcc: one pass, units would add processes
    size = f"{len(text) / 1e6:.2f} MB of C" + (f" in {len(units)} units, {min(len(units), compile_jobs())} at a time"
                                              if len(units) > 1 else "")
    compiler = compiler_command(flags)
    how = {QUICK_FLAGS: "quickly (unoptimized, -O0)", TCC_FLAGS: "quickly (tcc)"}.get(flags, f"with {compiler[0]}")
    estimate = estimated_seconds(units, flags=flags)
    report(progress, f"compiling {source} ({size}) {how}, " + (f"about {estimate:.0f} s..." if estimate >= 1 else
                                                                  "under a second..."))
    start = time.perf_counter()
    if flags == TCC_FLAGS:
        _compile_with_tcc(source, library, timeout)
    elif len(units) == 1:
        _compile([[*compiler, *flags, "-I", str(runtime_directory()), "-o", str(library), str(source), "-lm"]],
                 source, timeout)
    else:
        _compile_units(units, source, library, compiler, timeout, flags)
    report(progress, f"compiled {source.name} ({time.perf_counter() - start:.1f} s)")


def _compile_with_tcc(source: Path, library: Path, timeout: float | None) -> None:
    """`source` compiled by tcc into an object file, linked by the C compiler (cc: tcc is used
    only where ``$CC`` is unset) into `library` with a non-executable stack."""
    obj = library.with_name(f".{library.stem}-tcc.{os.getpid()}.{secrets.token_hex(6)}.o")
    try:
        _compile([[TCC, *TCC_FLAGS, "-I", str(runtime_directory()), "-o", str(obj), str(source)]], source, timeout)
        _compile([[*compiler_command(), *TCC_LINK_FLAGS, "-o", str(library), str(obj), "-lm"]], source, timeout)
    finally:
        obj.unlink(missing_ok=True)


def _compile_units(units: list[str], source: Path, library: Path, compiler: list[str], timeout: float | None,
                   flags: tuple[str, ...]) -> None:
    """Each unit to an object file at once, then the objects linked into `library`."""
    objects_flags = [flag for flag in flags if flag != "-shared"]
    token = secrets.token_hex(6)  # named as the cache's temporaries are: removed if this process dies
    names = [library.with_name(f".{library.stem}-unit{k}.{os.getpid()}.{token}") for k in range(len(units))]
    try:
        for name, text in zip(names, units):
            name.with_suffix(".c").write_text(text)
        _compile([[*compiler, *objects_flags, "-c", "-I", str(runtime_directory()), "-o", str(name.with_suffix(".o")),
                   str(name.with_suffix(".c"))] for name in names], source, timeout)
        _compile([[*compiler, "-shared", "-fPIC", "-o", str(library), *(str(n.with_suffix(".o")) for n in names),
                   "-lm"]], source, timeout)
    finally:
        for name in names:
            for suffix in (".c", ".o"):
                name.with_suffix(suffix).unlink(missing_ok=True)


def _compile(commands: list[list[str]], source: Path, timeout: float | None) -> None:
    """Run the compiler `commands` at once; CodegenError with the first failure's standard error."""
    for command, (returncode, stderr) in zip(commands, run_compilers(commands, timeout)):
        if returncode != 0:
            stderr = "\n".join(stderr.splitlines()[:_STDERR_LINES])
            raise CodegenError(f"C compiler {command[0]!r} failed (exit status {returncode}) "
                               f"on {source}:\n{stderr}")


def run_compiler(command: list[str], timeout: float | None = COMPILE_TIMEOUT) -> tuple[int, str]:
    """Run `command` in a process group of its own; (exit status, standard error) (see
    :func:`run_compilers`)."""
    return run_compilers([command], timeout)[0]


#: The compilers' niceness: a first load compiles at a lower priority than the process that waits for
#: it and whatever else runs, so a node publishing beside a build (a spawn, a second robot) keeps its
#: period; alone on the machine the build is as fast.
COMPILER_NICENESS = 10


def compile_jobs() -> int:
    """How many compilers run at once: the cores this process may use (more only queue for them)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def run_compilers(commands: list[list[str]], timeout: float | None = COMPILE_TIMEOUT) -> list[tuple[int, str]]:
    """Run `commands`, at most :func:`compile_jobs` at a time, each in a process group of its own
    and at :data:`COMPILER_NICENESS`; (exit status, standard error) of each.

    The driver (``cc``) starts ``cc1`` and ``as`` as its children: killing the driver alone
    orphans them (a Ctrl-C during a first compile left ``cc1`` running).  So on any interruption
    (KeyboardInterrupt, a signal turned into an exception, the `timeout`) every group is killed
    and reaped before the exception goes on.  Standard error goes to files (a compiler writing
    more than a pipe holds while another is waited for would stall).
    """
    errors = [tempfile.TemporaryFile(mode="w+") for _ in commands]
    processes: list[subprocess.Popen] = []
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        waiting, jobs = list(zip(commands, errors)), compile_jobs()
        while waiting or any(process.poll() is None for process in processes):
            while waiting and sum(process.poll() is None for process in processes) < jobs:
                processes.append(_start_compiler(*waiting.pop(0)))
            if deadline is not None and time.monotonic() > deadline:
                raise CodegenError(f"C compiler {commands[0][0]!r} ran for more than {timeout:g} s: ended")
            time.sleep(0.005)
        results = []
        for process, error in zip(processes, errors):
            error.seek(0)
            results.append((process.returncode, error.read()))
        return results
    except BaseException:
        for process in processes:
            _kill_group(process)
        raise
    finally:
        for error in errors:
            error.close()


def _start_compiler(command: list[str], error) -> subprocess.Popen:
    """Start `command` in a new session (its own process group), niced, standard error to `error`."""
    nice = shutil.which("nice")
    prefix = [nice, "-n", str(COMPILER_NICENESS)] if nice else []
    try:
        return subprocess.Popen(prefix + command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=error, text=True, start_new_session=True)
    except OSError as err:
        raise CodegenError(f"cannot run C compiler {command[0]!r}: {err}") from err


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

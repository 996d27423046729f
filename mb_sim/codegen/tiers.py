"""Quick first builds: a model's first load compiles its C unoptimized, runs at once, and takes up
the optimized build when a process of its own has made it.

gcc's ``-O2`` is most of a large robot's first load (G1: 16.5 s of compiler CPU at ``-O2``, 3.4 s at
``-O0``, 0.03 s with tcc).  So on a cache miss the C is compiled quickly
(:func:`~mb_sim.codegen.compiler.quick_flags`: tcc where installed, else ``cc -O0``) and the model
runs on that library (calls 3-10x slower) while ``python -m mb_sim.codegen.optimize``
builds the optimized one into the cache, niced.  A thread here waits for it; the model switches
libraries at its next call (:class:`mb_sim.codegen.compiled.CompiledModel`).  Both libraries
compute the same results bit for bit (same C, IEEE arithmetic in both compilers and at every level,
nothing contracted or reassociated, the same libm), so a run does not depend on when the switch
happens.  The build outlives the process that started it, so the next load finds the optimized
library.

``$MB_SIM_FIRST_BUILD=optimized`` waits for the optimized build instead, as before (benchmarks).
"""
from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["FIRST_BUILD_VARIABLE", "OptimizedBuild", "OptimizedBuildWarning", "quick_first_builds",
           "process_alive", "running_optimizer", "start_optimized_build"]

#: The environment variable choosing a first load's build: ``quick`` (the default) or ``optimized``.
FIRST_BUILD_VARIABLE = "MB_SIM_FIRST_BUILD"
#: How often a build started by another process is looked at [s].
POLL_SECONDS = 0.2
#: The marker of a running optimized build: ``.<library stem>.<pid>.<12 hex>.optimizing`` beside
#: the library (a cache temporary: removed once its process is gone).
_MARKER = re.compile(r"^\.(?P<stem>.+)\.(?P<pid>\d+)\.[0-9a-f]{12}\.optimizing$")


class OptimizedBuildWarning(UserWarning):
    """The optimized build of a model failed: it keeps running on its quick build."""


def quick_first_builds() -> bool:
    """Whether a cache miss compiles quickly first (``$MB_SIM_FIRST_BUILD``: quick or optimized).

    Raises
    ------
    ValueError
        The variable holds something else (named).
    """
    value = os.environ.get(FIRST_BUILD_VARIABLE, "quick").strip().lower() or "quick"
    if value not in ("quick", "optimized"):
        raise ValueError(f"${FIRST_BUILD_VARIABLE} must be 'quick' or 'optimized', got {value!r}")
    return value == "quick"


class OptimizedBuild:
    """The optimized library of a model being built by another process, watched on a thread.

    Attributes
    ----------
    library_path
        Where the optimized library will be.
    library
        The loaded optimized library once built and checked by `is_ready`, else None.
    failure
        Why it was not built (the compiler's last error line), else None.
    """

    def __init__(self, library_path: Path, is_ready: Callable[[], bool],
                 process: subprocess.Popen | None = None, error=None):
        self.library_path, self.library, self.failure = library_path, None, None
        self._is_ready, self._process, self._error = is_ready, process, error
        self._done = threading.Event()
        threading.Thread(target=self._watch, name=f"mb_sim optimize {library_path.name}", daemon=True).start()

    @property
    def finished(self) -> bool:
        """Whether the build has ended (built or failed)."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait at most `timeout` seconds (None: until it ends); whether the library is ready."""
        self._done.wait(timeout)
        return self.library is not None

    def _watch(self) -> None:
        try:
            status = self._process.wait() if self._process is not None else self._wait_for_other()
            if self._is_ready():
                self.library = ctypes.CDLL(str(self.library_path))
            else:
                self.failure = self._error_line(status)
        except OSError as error:
            self.failure = f"cannot load {self.library_path}: {error}"
        finally:
            self._done.set()

    def _wait_for_other(self) -> int:
        """Wait while another process's build of the library runs; 0."""
        while not self._is_ready() and running_optimizer(self.library_path) is not None:
            time.sleep(POLL_SECONDS)
        return 0

    def _error_line(self, status: int) -> str:
        """The last line the optimizing process wrote to its standard error, or its exit status."""
        text = ""
        if self._error is not None:
            self._error.seek(0)
            text = self._error.read().decode(errors="replace").strip()
            self._error.close()
        last = text.splitlines()[-1] if text else ""
        return last or (f"the optimizing process ended with status {status}" if status else
                        "the optimized library is missing or does not match its record")


def running_optimizer(library: Path) -> int | None:
    """The pid of a live process building `library`, from its marker file, else None."""
    try:
        names = os.listdir(library.parent)
    except OSError:
        return None
    for name in names:
        match = _MARKER.match(name)
        if match and match["stem"] == library.stem and process_alive(int(match["pid"])):
            return int(match["pid"])
    return None


def start_optimized_build(library: Path, source_file: Path, name: str,
                          is_ready: Callable[[], bool]) -> OptimizedBuild:
    """Build the optimized `library` of C `source_file` (model `name`, both in the cache) in a
    process of its own, unless another process builds it already; the build, watched."""
    if running_optimizer(library) is not None:
        return OptimizedBuild(library, is_ready)
    error = tempfile.TemporaryFile()
    package_root = str(Path(__file__).resolve().parents[2])  # this mb_sim, however it was imported
    python_path = os.pathsep.join(filter(None, (package_root, os.environ.get("PYTHONPATH"))))
    process = subprocess.Popen(
        [sys.executable, "-m", "mb_sim.codegen.optimize", str(source_file), name],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=error, start_new_session=True,
        env={**os.environ, FIRST_BUILD_VARIABLE: "optimized", "PYTHONPATH": python_path})
    marker = library.with_name(f".{library.stem}.{process.pid}.{os.urandom(6).hex()}.optimizing")
    try:
        marker.touch()
    except OSError:
        pass  # a second process may then build it too: the same file, written atomically
    return OptimizedBuild(library, is_ready, process, error)


def process_alive(pid: int) -> bool:
    """Whether a process `pid` exists (and is not a zombie of ours)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True

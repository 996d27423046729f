"""On-disk cache of compiled models: one shared library per generated C source.

An entry is ``<model>-<key>.so`` with a JSON sidecar ``.json`` holding the full cache key and the
library's sha256, plus the ``.c`` source for inspection.  Every file is written under a temporary
name in the cache directory and moved into place with ``os.replace``, so no reader ever sees a
half-written file and processes building the same entry at once each install a complete copy.
An entry whose sidecar is missing or does not match (key, sha256) is rebuilt, not trusted; so is
one that ``ctypes`` cannot load, and one whose files other users could have written to.

The cache holds code that is run, so it is trusted only where nobody else can write, as ssh and
pip treat their files: a cache directory owned by another user or writable by group or others is
not used (a :class:`CacheWarning` says why, and a private temporary cache serves the process
instead); a new one is created readable by its owner only.  Temporaries left behind by a compiler
or a process that was killed are removed when their process is gone.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import re
import secrets
import stat
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from mb_sim.codegen.runtime_files import runtime_digest
from mb_sim.codegen.version import GENERATOR_VERSION
from mb_sim.codegen.compiler import COMPILE_FLAGS, QUICK_FLAGS, check_source_size, compile_shared_library, quick_flags
from mb_sim.codegen.tiers import OptimizedBuild, process_alive, quick_first_builds, start_optimized_build
from mb_sim.codegen.errors import CodegenError
from mb_sim.codegen.progress import Progress, report

__all__ = ["CacheWarning", "ChangedSource", "LoadedLibrary", "atomic_write", "cache_directory", "cache_entry", "cache_key",
           "is_private", "load_library",
           "read_index", "remove_stale_temporaries", "safe_name", "temporary_path"]

#: Temporaries older than this [s] are removed even if a process of their pid number exists.
STALE_AGE = 24 * 3600.0
# A temporary's name: ".<stem>.<pid>.<12 hex digits><suffix>" (see temporary_path).
_TEMPORARY = re.compile(r"^\..+\.(\d+)\.[0-9a-f]{12}(\.[A-Za-z0-9]+)*$")
# Untrusted cache directories seen by this process, and the private one used instead.
_REPLACEMENTS: dict[Path, Path] = {}


class CacheWarning(UserWarning):
    """The cache directory cannot be trusted (another user could change the code it holds)."""


def cache_directory(cache_dir: str | os.PathLike | None = None) -> Path:
    """`cache_dir` if given, else ``$MB_SIM_CACHE_DIR``, else ``~/.cache/mb_sim``; if other users
    could write to it, a private temporary directory instead (with a :class:`CacheWarning`).

    ``~/.cache`` is ``$XDG_CACHE_HOME`` when that is set.
    """
    if cache_dir is None:
        cache_dir = os.environ.get("MB_SIM_CACHE_DIR") or Path(
            os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mb_sim"
    return _trusted(Path(cache_dir).expanduser())


def _trusted(directory: Path) -> Path:
    """`directory` if it does not exist yet or only its owner (this user) can write to it."""
    try:
        status = directory.stat()
    except OSError:
        return directory
    if status.st_uid == os.getuid() and not status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return directory
    if directory not in _REPLACEMENTS:
        _REPLACEMENTS[directory] = Path(tempfile.mkdtemp(prefix="mb_sim-cache-"))
        why = (f"owned by uid {status.st_uid}" if status.st_uid != os.getuid()
               else "writable by other users")
        warnings.warn(f"the mb_sim cache directory {directory} is {why}: it holds code mb_sim runs, so it is not "
                      f"used; this process compiles into the private {_REPLACEMENTS[directory]} instead "
                      f"(fix: chmod go-w {directory}, or set $MB_SIM_CACHE_DIR to a directory of yours)",
                      CacheWarning, stacklevel=3)
    return _REPLACEMENTS[directory]


def is_private(path: Path) -> bool:
    """Whether the file at `path` belongs to this user and nobody else can write to it."""
    status = path.stat()
    return status.st_uid == os.getuid() and not status.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def remove_stale_temporaries(directory: Path) -> list[Path]:
    """Remove temporaries whose process is gone (or that are older than STALE_AGE); the paths."""
    removed = []
    try:
        candidates = [p for p in directory.iterdir() if _TEMPORARY.match(p.name)]
    except OSError:
        return removed
    for path in candidates:
        pid = int(_TEMPORARY.match(path.name).group(1))
        try:
            old = time.time() - path.stat().st_mtime > STALE_AGE
            if old or not process_alive(pid):
                path.unlink()
                removed.append(path)
        except OSError:
            continue  # gone meanwhile, or not ours to remove
    return removed


def cache_key(source: str, flags: tuple[str, ...] = COMPILE_FLAGS) -> str:
    """sha256 over the generator version, platform, compile `flags`, C source and the runtime files
    it includes (their content: an edited runtime rebuilds).  The C source is the whole of what
    the generator made (whatever SymPy printed it)."""
    digest = hashlib.sha256()
    for part in (GENERATOR_VERSION, sys.platform, platform.machine(),
                 " ".join(flags), runtime_digest(), source):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


class LoadedLibrary(NamedTuple):
    """A model's shared library as loaded: its path in the cache, the library, the optimized build
    under way when this is the quick one (:mod:`mb_sim.codegen.tiers`), and whether it is the quick one."""

    path: Path
    library: ctypes.CDLL
    optimized_build: OptimizedBuild | None = None
    quick: bool = False


def load_library(
    source: str, name: str, cache_dir: str | os.PathLike | None = None,
    progress: Progress = None, quick: bool | None = None,
) -> LoadedLibrary:
    """The loaded shared library of C `source` (model `name`), built only on a cache miss.

    On a miss, with `quick` (default: :func:`~mb_sim.codegen.tiers.quick_first_builds`), the
    source is compiled unoptimized first and the optimized library built by a process of its own.

    Raises
    ------
    CodegenError
        The source is too large to compile (:func:`~mb_sim.codegen.compiler.check_source_size`),
        compiling fails or the fresh library cannot be loaded.
    """
    directory = cache_directory(cache_dir)
    for path in remove_stale_temporaries(directory):
        report(progress, f"removed {path}, left behind by a process that is gone")
    optimized = _Entry.of(source, name, directory)
    library = optimized.open_valid(source, name, progress)
    if library is not None:
        return LoadedLibrary(optimized.library, library)
    check_source_size(source, name)
    if not (quick_first_builds() if quick is None else quick):
        return LoadedLibrary(optimized.library, optimized.build_and_open(source, progress))
    first, library = _quick_build(source, name, directory, progress)
    try:
        build = start_optimized_build(optimized.library, first.source, name, optimized.is_valid)
    except OSError as error:
        report(progress, f"cannot start the optimized build of {name} ({error}): it runs on the quick build")
        return LoadedLibrary(first.library, library, quick=True)
    report(progress, f"{name}: the optimized build runs in the background; calls switch to it when it is ready")
    return LoadedLibrary(first.library, library, build, quick=True)


def _quick_build(source: str, name: str, directory: Path, progress: Progress) -> tuple[_Entry, ctypes.CDLL]:
    """The quick build's entry and library: tcc's where installed, ``cc -O0``'s if tcc fails (an
    installation without its runtime files, a construct it does not take)."""
    first = _Entry.of(source, name, directory, quick_flags())
    try:
        return first, first.open_valid(source, name, progress) or first.build_and_open(source, progress)
    except CodegenError as error:
        if first.flags == QUICK_FLAGS:
            raise
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        said = next((line for line in lines[1:] if "error" in line), lines[-1])
        report(progress, f"the quick build by tcc failed ({said}); compiling with cc -O0 instead")
    first = _Entry.of(source, name, directory, QUICK_FLAGS)
    return first, first.open_valid(source, name, progress) or first.build_and_open(source, progress)


def cache_entry(source: str, name: str, directory: Path) -> _Entry:
    """The cache entry of C `source`'s optimized library (model `name`) in `directory`."""
    return _Entry.of(source, name, directory)


@dataclass(frozen=True)
class _Entry:
    """The files of one cache entry."""

    key: str
    directory: Path
    stem: str
    flags: tuple[str, ...] = COMPILE_FLAGS

    @classmethod
    def of(cls, source: str, name: str, directory: Path, flags: tuple[str, ...] = COMPILE_FLAGS) -> _Entry:
        key = cache_key(source, flags)
        return cls(key, directory, f"{safe_name(name)}-{key[:16]}", flags)

    @property
    def library(self) -> Path:
        return self.directory / f"{self.stem}.so"

    @property
    def sidecar(self) -> Path:
        return self.directory / f"{self.stem}.json"

    @property
    def source(self) -> Path:
        return self.directory / f"{self.stem}.c"

    def is_valid(self) -> bool:
        """Whether the sidecar exists, names this key and the library's current sha256, and
        nobody else could have written either."""
        try:
            metadata = json.loads(self.sidecar.read_text())
            return (isinstance(metadata, dict) and metadata.get("key") == self.key
                    and is_private(self.sidecar) and is_private(self.library)
                    and metadata.get("sha256") == _sha256(self.library))
        except (OSError, ValueError):
            return False

    def open_valid(self, source: str, name: str, progress: Progress) -> ctypes.CDLL | None:
        """The library if its entry is valid and it loads (its source put back), else None."""
        if not self.is_valid():
            if self.library.exists():
                report(progress, f"cached {self.library} is stale or corrupt; rebuilding")
            return None
        try:
            library = ctypes.CDLL(str(self.library))
        except OSError as error:
            report(progress, f"cannot load cached {self.library} ({error}); rebuilding")
            return None
        report(progress, f"loaded {name} from the cache: {self.library}")
        self.restore_source(source)
        return library

    def build_and_open(self, source: str, progress: Progress) -> ctypes.CDLL:
        """Build the library and load it."""
        self.build(source, progress)
        try:
            return ctypes.CDLL(str(self.library))
        except OSError as error:
            raise CodegenError(f"cannot load {self.library}, just built: {error}") from error

    def restore_source(self, source: str) -> None:
        """Put the library's own source back beside it if the file there differs (edited)."""
        try:
            if self.source.read_text() == source:
                return
        except (OSError, UnicodeDecodeError):
            pass
        try:
            atomic_write(self.source, source.encode())
        except OSError:
            pass  # the source is for reading only; the library is what runs

    def build(self, source: str, progress: Progress) -> None:
        """Compile `source` and install library and sidecar atomically."""
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write(self.source, source.encode())
            with temporary_path(self.library) as library:
                compile_shared_library(self.source, library, progress, flags=self.flags)
                metadata = {"key": self.key, "sha256": _sha256(library), "generator_version": GENERATOR_VERSION}
                os.replace(library, self.library)
            atomic_write(self.sidecar, json.dumps(metadata, indent=1).encode())
        except OSError as error:
            raise CodegenError(f"cannot write to the cache directory {self.directory}: {error} "
                               "(set $MB_SIM_CACHE_DIR or pass cache_dir)") from error


class ChangedSource(ValueError):
    """The generated C a cache index names was changed after it was generated."""


def read_index(index: Path, directory: Path) -> tuple[dict, str] | None:
    """An index entry of the cache (a JSON object naming its generated C by ``source``, with
    ``source_sha256``) and that C, or None: an entry another user could have written, or one
    naming a file outside the cache directory.  ChangedSource (a ValueError) if the C was changed
    after it was generated; OSError, ValueError, KeyError or TypeError for unreadable or malformed
    entries."""
    if not is_private(index):
        return None
    entry = json.loads(index.read_text())
    name = entry["source"]
    if not isinstance(name, str) or Path(name).name != name or name.startswith("."):
        return None  # the index names something outside the cache directory: not ours
    source = (directory / name).read_text()
    if entry.get("source_sha256") != hashlib.sha256(source.encode()).hexdigest():
        raise ChangedSource(f"the cached source {name} was changed after it was generated")
    return entry, source


def safe_name(name: str) -> str:
    """`name` as a file-name stem: characters outside [A-Za-z0-9_.-] become _, at most 64."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64] or "model"


@contextmanager
def temporary_path(target: Path) -> Iterator[Path]:
    """A new unique path beside `target` (hidden, same suffix), removed afterwards if a file is there.

    The file is not created here, so the one written there gets the umask's permissions.
    """
    path = target.with_name(f".{target.stem}.{os.getpid()}.{secrets.token_hex(6)}{target.suffix}")
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically: a temporary file beside it, then ``os.replace``."""
    with temporary_path(path) as temporary:
        with open(temporary, "xb") as file:
            file.write(data)
        os.replace(temporary, path)


def _sha256(path: Path) -> str:
    """Hex sha256 of the file at `path`."""
    return hashlib.sha256(path.read_bytes()).hexdigest()

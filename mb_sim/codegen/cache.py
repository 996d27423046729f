"""On-disk cache of compiled models: one shared library per generated C source.

An entry is ``<model>-<key>.so`` with a JSON sidecar ``.json`` holding the full cache key and the
library's sha256, plus the ``.c`` source for inspection.  Every file is written under a temporary
name in the cache directory and moved into place with ``os.replace``, so no reader ever sees a
half-written file and processes building the same entry at once each install a complete copy.
An entry whose sidecar is missing or does not match (key, sha256) is rebuilt, not trusted; so is
one that ``ctypes`` cannot load.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import re
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sympy

from mb_sim.codegen.c_source import GENERATOR_VERSION
from mb_sim.codegen.compiler import COMPILE_FLAGS, compile_shared_library
from mb_sim.codegen.errors import CodegenError
from mb_sim.codegen.progress import Progress, report

__all__ = ["atomic_write", "cache_directory", "cache_key", "load_library", "safe_name", "temporary_path"]


def cache_directory(cache_dir: str | os.PathLike | None = None) -> Path:
    """`cache_dir` if given, else ``$MB_SIM_CACHE_DIR``, else ``~/.cache/mb_sim``.

    ``~/.cache`` is ``$XDG_CACHE_HOME`` when that is set.
    """
    if cache_dir is None:
        cache_dir = os.environ.get("MB_SIM_CACHE_DIR") or Path(
            os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mb_sim"
    return Path(cache_dir).expanduser()


def cache_key(source: str) -> str:
    """sha256 over the generator and SymPy versions, platform, compile flags and C source."""
    digest = hashlib.sha256()
    for part in (GENERATOR_VERSION, sympy.__version__, sys.platform, platform.machine(),
                 " ".join(COMPILE_FLAGS), source):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def load_library(
    source: str, name: str, cache_dir: str | os.PathLike | None = None,
    progress: Progress = None,
) -> tuple[Path, ctypes.CDLL]:
    """The loaded shared library of C `source` (model `name`), built only on a cache miss.

    Returns the library's path in the cache and the library.

    Raises
    ------
    CodegenError
        Compiling fails or the fresh library cannot be loaded.
    """
    entry = _Entry.of(source, name, cache_directory(cache_dir))
    if entry.is_valid():
        try:
            library = ctypes.CDLL(str(entry.library))
        except OSError as error:
            report(progress, f"cannot load cached {entry.library} ({error}); rebuilding")
        else:
            report(progress, f"loaded {name} from the cache: {entry.library}")
            return entry.library, library
    elif entry.library.exists():
        report(progress, f"cached {entry.library} is stale or corrupt; rebuilding")
    entry.build(source, progress)
    try:
        return entry.library, ctypes.CDLL(str(entry.library))
    except OSError as error:
        raise CodegenError(f"cannot load {entry.library}, just built: {error}") from error


@dataclass(frozen=True)
class _Entry:
    """The files of one cache entry."""

    key: str
    directory: Path
    stem: str

    @classmethod
    def of(cls, source: str, name: str, directory: Path) -> _Entry:
        key = cache_key(source)
        return cls(key, directory, f"{safe_name(name)}-{key[:16]}")

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
        """Whether the sidecar exists, names this key and the library's current sha256."""
        try:
            metadata = json.loads(self.sidecar.read_text())
            return (isinstance(metadata, dict) and metadata.get("key") == self.key
                    and metadata.get("sha256") == _sha256(self.library))
        except (OSError, ValueError):
            return False

    def build(self, source: str, progress: Progress) -> None:
        """Compile `source` and install library and sidecar atomically."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write(self.source, source.encode())
            with temporary_path(self.library) as library:
                compile_shared_library(self.source, library, progress)
                metadata = {"key": self.key, "sha256": _sha256(library),
                            "generator_version": GENERATOR_VERSION, "sympy": sympy.__version__}
                os.replace(library, self.library)
            atomic_write(self.sidecar, json.dumps(metadata, indent=1).encode())
        except OSError as error:
            raise CodegenError(f"cannot write to the cache directory {self.directory}: {error} "
                               "(set $MB_SIM_CACHE_DIR or pass cache_dir)") from error


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

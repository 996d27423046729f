"""The hand-written C runtime's files (``mb_sim/codegen/c``): where they are and their digest,
part of every cache key (a light module: loading a cached model reads it)."""
from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["RUNTIME_HEADER", "RUNTIME_SOURCES", "runtime_digest", "runtime_directory", "runtime_files"]

#: The hand-written runtime, real C files shipped with the package (setup.py package_data): the
#: header the generated part includes first, and the sources it includes after its functions.
_RUNTIME = Path(__file__).resolve().parent / "c"
RUNTIME_HEADER = "mb_runtime.h"
RUNTIME_SOURCES = ("mb_linalg.c", "mb_dynamics.c", "mb_project.c", "mb_integrate.c")


def runtime_directory() -> Path:
    """The directory of the hand-written C runtime the generated file includes (mb_runtime.h and
    RUNTIME_SOURCES): passed to the compiler with -I, copied by the standalone export."""
    return _RUNTIME


def runtime_files() -> list[Path]:
    """The runtime's files: its header first, then the sources in their order of inclusion."""
    return [_RUNTIME / name for name in (RUNTIME_HEADER, *RUNTIME_SOURCES)]


def runtime_digest() -> str:
    """sha256 over the runtime files' names and contents: part of the cache key, so editing the
    runtime rebuilds every cached model even if the generated text is the same."""
    digest = hashlib.sha256()
    for path in runtime_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()

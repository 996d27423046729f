"""``python -m mb_sim.codegen.optimize SOURCE NAME``: build the optimized library of the generated
C file SOURCE (model NAME) into the cache directory that holds it (see :mod:`mb_sim.codegen.tiers`).

Started by a first load that runs on the quick build; exits 0 once the library and its record are
in place, 1 with one line on standard error if it cannot be built.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from mb_sim.codegen.cache import cache_entry
from mb_sim.codegen.errors import CodegenError


def optimize(source_file: Path, name: str) -> None:
    """Compile `source_file` with the optimizing flags into its cache directory (CodegenError, OSError)."""
    source = source_file.read_text()
    entry = cache_entry(source, name, source_file.parent)
    if not entry.is_valid():
        entry.build(source, progress=None)


def main(argv: list[str] | None = None) -> int:
    """The process's entry point; its exit status."""
    source_file, name = (argv if argv is not None else sys.argv[1:])[:2]
    path = Path(source_file)
    try:
        optimize(path, name)
        return 0
    except (CodegenError, OSError, UnicodeDecodeError) as error:
        print(f"optimized build of {name} failed: {' '.join(str(error).split())[:500]}", file=sys.stderr)
        return 1
    finally:
        for marker in path.parent.glob(f".*.{os.getpid()}.*.optimizing"):
            marker.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())

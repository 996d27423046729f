"""Package namespaces whose names are imported on first use (PEP 562), so importing one light
module of a package (the simulator's, from a cached model) does not import the heavy ones
(SymPy, SciPy, urdf_parser_py) the package's other names need."""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for `package`, whose public name N is ``exports[N]``'s
    attribute of the same name (a submodule path)."""
    def __getattr__(name: str) -> object:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        globals_of_package = importlib.import_module(package).__dict__
        globals_of_package[name] = value  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__

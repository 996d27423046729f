"""Code generation: equations of motion -> fast numeric models (C via ctypes, or NumPy).

``compile_model(eom)`` generates one C99 file for the model, compiles it with the system C
compiler into a disk cache (``~/.cache/mb_sim``, or ``$MB_SIM_CACHE_DIR``) and loads it; with
``backend="numpy"`` it builds the same functions with NumPy instead, for machines without a
compiler.  Both return a model with ``evaluate``, ``forward_dynamics`` (with the constraints'
Lagrange multipliers), ``project`` (onto the constraints and unit quaternions) and ``rk4``
(projecting and checking the state after every step, in C for the C backend).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from mb_sim._lazy import lazy_exports

if TYPE_CHECKING:
    from mb_sim.codegen.numeric_model import NumericModel
    from mb_sim.codegen.progress import Progress
    from mb_sim.symbolic.equations import EquationsOfMotion

#: Each public name and the module it is imported from on first use (light to import: see mb_sim._lazy).
_EXPORTS = {
    "load_numeric_model": "mb_sim.codegen.pipeline",
    "generate_c_source": "mb_sim.codegen.c_source",
    "CompiledModel": "mb_sim.codegen.compiled",
    "NumpyModel": "mb_sim.codegen.numpy_backend",
    "NumericModel": "mb_sim.codegen.numeric_model",
    "CodegenError": "mb_sim.codegen.errors",
    "FactorizationError": "mb_sim.codegen.errors",
    "FACTORIZATION_FAILURES": "mb_sim.codegen.errors",
    "GENERATOR_VERSION": "mb_sim.codegen.version",
}
__all__ = ["compile_model", *_EXPORTS]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


def compile_model(
    eom: EquationsOfMotion, backend: str = "c", cache_dir: str | os.PathLike | None = None,
    progress: Progress = None,
) -> NumericModel:
    """A numeric model of `eom`: compiled C (``backend="c"``) or NumPy (``backend="numpy"``).

    Parameters
    ----------
    eom
        The equations of motion.
    backend
        ``"c"`` (fast; needs a C compiler unless the model is cached) or ``"numpy"``.
    cache_dir
        Where compiled models are kept (default ``$MB_SIM_CACHE_DIR`` or ``~/.cache/mb_sim``).
    progress
        Called with a message at each long step (generating, compiling, loading).

    Raises
    ------
    CodegenError
        The model's outputs are malformed, or (C) no compiler is found or compiling fails.
    """
    if backend == "c":
        from mb_sim.codegen.compiled import CompiledModel
        return CompiledModel(eom, cache_dir, progress)
    if backend == "numpy":
        from mb_sim.codegen.numpy_backend import NumpyModel
        return NumpyModel(eom, progress)
    raise ValueError(f"unknown backend {backend!r}: use 'c' or 'numpy'")

"""A model compiled to C, called through ctypes."""
from __future__ import annotations

import ctypes
import os
import warnings

import numpy as np

from typing import TYPE_CHECKING

from mb_sim.codegen.cache import load_library
from mb_sim.codegen.errors import CodegenError, FactorizationError
from mb_sim.codegen.numeric_model import NumericModel, check_step_count
from mb_sim.codegen.progress import Progress, report
from mb_sim.codegen.tiers import OptimizedBuildWarning

if TYPE_CHECKING:
    from mb_sim.codegen.header import ModelHeader
    from mb_sim.symbolic.equations import EquationsOfMotion

__all__ = ["CompiledModel"]

_P, _D, _I = ctypes.c_void_p, ctypes.c_double, ctypes.c_int
#: The C type of the force-law callback (see mb_sim.codegen.c_source).
_FORCE_LAW = ctypes.CFUNCTYPE(_D, _I, _D, _D, _D, _D, _D, _D, _D)


class CompiledModel(NumericModel):
    """A model whose generated C is compiled (or found in the disk cache) and loaded.

    ``source`` is the model's already generated C (found in the cache): then `eom` need only
    carry names, dimensions and output shapes (a :class:`~mb_sim.codegen.header.ModelHeader`).  Pointers to the buffers are made once, here: a call costs one copy into the buffers and one
    foreign call (converting arrays to pointers per call would cost more than the dynamics).

    Attributes
    ----------
    library_path
        The shared library in the cache (the quick build's until the optimized one is taken up:
        :mod:`mb_sim.codegen.tiers`).
    source
        The C source it was compiled from.
    """

    def __init__(
        self, eom: EquationsOfMotion | ModelHeader, cache_dir: str | os.PathLike | None = None,
        progress: Progress = None, source: str | None = None,
    ):
        super().__init__(eom)
        if source is None:
            from mb_sim.codegen.c_source import generate_c_source  # SymPy: only to generate

            source = generate_c_source(eom, progress)
        self.source = source
        self._progress = progress
        self.library_path, library, self._optimized_build, self._quick = load_library(
            self.source, eom.name, cache_dir, progress)
        self._check_matches(library)
        self._time = np.zeros(1)
        b = self.buffers
        arrays = (b.q, b.u, b.inputs, b.params, self._time, b.out, b.qdot, b.udot, b.lam,
                  b.enabled, b.z, b.zdot, b.servo, b.applied)
        # One packed argument (pointers to all buffers, made once): a foreign call costs about
        # 0.35 us instead of 0.9 us with seven arguments.  No argtypes: ctypes then skips its
        # per-argument checks.
        self._packed = (_P * len(arrays))(*(a.ctypes.data for a in arrays))
        # User force laws: the library holds one callback, shared by every model loaded from it,
        # so it is set again before each call.
        self._law_callback = _FORCE_LAW(self._call_force_law) if self.force_laws else None
        self._bind(library)

    def _bind(self, library: ctypes.CDLL) -> None:
        """Call `library`'s functions from now on."""
        self._mb_evaluate = library.mb_evaluate_packed
        self._mb_evaluate.restype = None
        self._mb_forward_dynamics = library.mb_forward_dynamics_packed
        self._mb_project = library.mb_project_packed
        self._mb_rk4 = library.mb_rk4_packed
        self._rollout = library.mb_rollout
        self._rollout.restype = _I
        self._rollout.argtypes = [_P, _P, _I, _P, _I, _D, _D, _I, _I, _P, _P, _P, _P, _P]
        self._set_law = library.mb_set_force_law if self.force_laws else None

    @property
    def rollout_function(self):
        """``mb_rollout`` (see c/mb_integrate.c): batched rollouts, the GIL released (mb_sim.sweep.rollout)."""
        self._take_optimized()
        return self._rollout

    @property
    def optimized(self) -> bool:
        """Whether calls run the optimized library (False while its build runs or after it failed)."""
        self._take_optimized()
        return not self._quick

    def wait_until_optimized(self, timeout: float | None = None) -> bool:
        """Wait at most `timeout` seconds (None: until it ends) for the optimized build and take it
        up; whether calls now run it.  A benchmark calls this after a first load."""
        if self._optimized_build is not None:
            self._optimized_build.wait(timeout)
        return self.optimized

    def _take_optimized(self) -> None:
        """Switch to the optimized library once its build has ended (same results bit for bit)."""
        build = self._optimized_build
        if build is None or not build.finished:
            return
        self._optimized_build = None
        if build.library is not None:
            try:
                self._check_matches(build.library)
            except CodegenError as error:
                build.failure = str(error)
            else:
                self._bind(build.library)
                self.library_path, self._quick = build.library_path, False
                report(self._progress, f"{self.name}: calls run the optimized build now ({build.library_path.name})")
                return
        warnings.warn(f"model {self.name!r}: the optimized build failed ({build.failure}); it runs on the "
                      f"quick build ({self.library_path.name}), 3-10x slower", OptimizedBuildWarning, stacklevel=3)

    def _install_force_law(self) -> None:
        if self._optimized_build is not None:
            self._take_optimized()
        if self._set_law is not None:
            self._set_law(self._law_callback)

    def evaluate_into(self, t: float = 0.0) -> None:
        self._time[0] = t
        self._install_force_law()
        self._mb_evaluate(self._packed)

    def forward_dynamics_into(self, t: float = 0.0) -> None:
        self._time[0] = t
        self._install_force_law()
        status = self._mb_forward_dynamics(self._packed)
        if status:
            raise FactorizationError(self.name, status, t)

    def project_into(self, t: float = 0.0) -> None:
        self._time[0] = t
        self._install_force_law()
        status = self._mb_project(self._packed)
        if status:
            raise FactorizationError(self.name, status, t)

    def rk4_into(self, dt: float, n_steps: int, t: float = 0.0) -> float:
        check_step_count(n_steps)
        self._time[0] = t
        self._install_force_law()
        status = self._mb_rk4(self._packed, _D(dt), _I(n_steps))
        if status:
            raise FactorizationError(self.name, status, float(self._time[0]))
        return float(self._time[0])

    @property
    def rk4_time(self) -> float:
        return float(self._time[0])  # the C code writes it after every completed step

    def _check_matches(self, library: ctypes.CDLL) -> None:
        """Raise CodegenError unless the library's dimensions and layout are this model's."""
        expected = [self.n_q, self.n_u, self.n_z, self.n_inputs, self.n_params, self.n_constraints]
        expected += [(b.offset, *b.shape) for b in self.layout.blocks.values()]
        expected.append(self.layout.size)
        actual = [getattr(library, f"mb_n_{n}")()
                  for n in ("q", "u", "z", "inputs", "params", "constraints")]
        actual += [(library.mb_output_offset(i), library.mb_output_rows(i),
                    library.mb_output_cols(i)) for i in range(len(self.layout.blocks))]
        actual.append(library.mb_output_offset(len(self.layout.blocks)))
        if actual != expected:
            raise CodegenError(f"{self.library_path} does not match model {self.name!r}; "
                               "delete it to rebuild")

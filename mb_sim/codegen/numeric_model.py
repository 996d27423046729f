"""What both backends share: dimensions, default parameters, work buffers, the public methods.

A backend implements four in-place methods on ``buffers`` that allocate nothing per call (the
simulator's fast path): ``evaluate_into``, ``forward_dynamics_into``, ``project_into`` and
``rk4_into``.  The public methods copy their arguments into the buffers, call those and return
copies.  Models are not thread-safe: every call shares the model's buffers.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mb_sim.codegen.errors import CodegenError
from mb_sim.codegen.layout import OutputLayout
from mb_sim.codegen.projection import Projection
from mb_sim.codegen.dissipation import DISSIPATION_WIDTH
from mb_sim.codegen.servo import servo_table

if TYPE_CHECKING:  # or a ModelHeader (mb_sim.codegen.header): names, shapes and values, no expression
    from mb_sim.symbolic.equations import EquationsOfMotion

__all__ = ["Buffers", "ForceLawCallback", "MAX_RK4_STEPS", "NumericModel", "check_step_count"]

#: Most RK4 steps one ``rk4_into`` call takes: the generated C counts them in a C ``int``.
MAX_RK4_STEPS = 2**31 - 1

#: f(index, t, deltaL, deltaL_t, stiffness, damping, force) -> scalar force of user-law spring `index`.
ForceLawCallback = Callable[[int, float, float, float, float, float, float], float]


@dataclass(frozen=True, eq=False)
class Buffers:
    """The float64, C-contiguous work arrays of a model, allocated once and never replaced.

    Write ``q, u, z, inputs, params`` in place (``buffers.q[:] = ...``; ``z`` the electrical
    states, motor currents); results appear in ``out`` (flat outputs, see
    ``NumericModel.layout``), ``qdot``, ``udot``, ``zdot`` and ``lam`` (the ``n_c``
    Lagrange multipliers of the velocity constraints: generalized constraint forces
    ``-A^T lam``).  ``servo`` is the joint-servo table (:mod:`~mb_sim.codegen.servo`) the forward
    dynamics and RK4 apply; ``applied`` the efforts the last forward dynamics applied (the inputs
    where no servo acts).  ``enabled`` switches each velocity constraint row on (1.0, the default) or
    off (0.0; for the first ``n_h`` rows also the holonomic row of Phi): a disabled row gets a
    zero multiplier and is left out of the projection.
    """

    q: np.ndarray
    u: np.ndarray
    inputs: np.ndarray
    params: np.ndarray
    out: np.ndarray
    qdot: np.ndarray
    udot: np.ndarray
    lam: np.ndarray
    enabled: np.ndarray
    z: np.ndarray
    zdot: np.ndarray
    servo: np.ndarray
    applied: np.ndarray


class NumericModel(ABC):
    """Numeric evaluation and integration of one model's equations of motion.

    Attributes
    ----------
    name, link_names
        As in the equations of motion.
    n_q, n_u, n_z, n_inputs, n_params, n_constraints
        Dimensions (``n_z``: electrical states).
    constraint_names, redundant_constraints, constraint_labels
        Per constraint row, the name of the constraint it belongs to; the names that had rows
        judged redundant (see the equations of motion); per row, what it says.
    dependent_coordinates
        Indices of the coordinates the constraints determine (those projection moves).
    generic_configurations
        The configurations redundancy was judged at (the assembled one first).
    spring_names, force_laws
        The spring-dampers (rows of the spring outputs); per user-law spring, ``(spring, law)``.
    contact_names
        The contact features (rows of ``contact_states``: ``ground/link/shape/feature``).
    imu_links
        The links carrying IMUs, each once (rows of ``imu_states``, blocks of 6 rows of
        ``imu_jacobians``; the IMUs on one link share its row).
    noncontributing_names
        The noncontributing forces' symbols (rows of ``noncontributing_states``).
    dissipation_rows
        Per joint with damping or friction, its speed and parameter indices (an ``(n, 4)`` int
        array, see :mod:`~mb_sim.codegen.dissipation`): what RK4 takes implicitly where stiff.
    force_law_error
        ``(index, exception)`` of the last failed force-law call (the call then returned NaN, so
        the integrator stops with a non-finite state), or None.
    projection
        What projection onto the constraints corrects (quaternion blocks, dependent
        coordinates and speeds).
    parameter_values
        Default parameters (read-only), used when a method gets ``params=None``.
    layout
        Offsets and shapes of the outputs in ``buffers.out``.
    buffers
        The work arrays (see :class:`Buffers`).
    """

    def __init__(self, eom: EquationsOfMotion):
        if len(eom.parameter_values) != len(eom.parameters):
            raise CodegenError(f"model {eom.name!r}: {len(eom.parameter_values)} parameter values "
                               f"for {len(eom.parameters)} parameters")
        from mb_sim.codegen.header import ModelHeader

        #: Names, shapes and defaults of the equations (what a cache entry keeps of them).
        self.header = eom if isinstance(eom, ModelHeader) else ModelHeader.from_equations(eom)
        self.name = eom.name
        self.link_names = list(eom.link_names)
        self.n_q, self.n_u, self.n_z, self.n_constraints = eom.n_q, eom.n_u, eom.n_z, eom.n_constraints
        self.n_inputs, self.n_params = len(eom.inputs), len(eom.parameters)
        self.constraint_names = list(eom.constraint_names) or [f"constraint_{i}" for i in range(self.n_constraints)]
        self.redundant_constraints = list(eom.redundant_constraints)
        self.constraint_labels = list(eom.constraint_labels) or list(self.constraint_names)
        self.dependent_coordinates = list(eom.dependent_coordinates)
        self.generic_configurations = [np.array(c, dtype=float) for c in eom.generic_configurations]
        self.spring_names, self.force_laws = list(eom.spring_names), list(eom.force_laws)
        self.contact_names = list(eom.contact_names)
        self.imu_links = list(eom.imu_links)
        self.noncontributing_names = list(eom.noncontributing_names)
        self.dissipation_rows = np.array(eom.dissipation_rows, dtype=int).reshape(-1, DISSIPATION_WIDTH)
        self._force_law: ForceLawCallback | None = None
        self.force_law_error: tuple[int, Exception] | None = None
        if len(self.constraint_names) != self.n_constraints:
            raise CodegenError(f"model {eom.name!r}: {len(self.constraint_names)} constraint names "
                               f"for {self.n_constraints} constraint rows")
        self.layout = OutputLayout.from_equations(eom)
        self.projection = Projection.from_equations(eom)
        self.parameter_values = np.array(eom.parameter_values, dtype=float)
        self.parameter_values.setflags(write=False)
        sizes = {"q": self.n_q, "u": self.n_u, "inputs": self.n_inputs, "params": self.n_params,
                 "out": self.layout.size, "qdot": self.n_q, "udot": self.n_u,
                 "lam": self.n_constraints, "enabled": self.n_constraints, "z": self.n_z, "zdot": self.n_z,
                 "applied": self.n_inputs}
        self.buffers = Buffers(servo=servo_table(self.n_inputs), **{name: np.zeros(n) for name, n in sizes.items()})
        self.buffers.params[:] = self.parameter_values
        self.buffers.enabled[:] = 1.0  # every row: the dynamics leave a row dependent where the robot is to the others

    @property
    def optimized(self) -> bool:
        """Whether calls run the model's optimized code (a compiled model's first load runs a quick
        build for a while: :mod:`mb_sim.codegen.tiers`)."""
        return True

    def wait_until_optimized(self, timeout: float | None = None) -> bool:
        """Wait at most `timeout` seconds for the optimized code; whether calls run it."""
        return self.optimized

    def set_force_law(self, law: ForceLawCallback | None) -> None:
        """The function evaluating the user force laws (see :data:`ForceLawCallback`); without
        one a user-law spring's force is NaN."""
        self._force_law = law
        self.force_law_error = None

    def _call_force_law(self, index: int, t: float, delta: float, rate: float, stiffness: float, damping: float,
                        force: float, active: float) -> float:
        """The callback the generated code calls: never raises (C cannot take an exception)."""
        if active == 0.0:
            return 0.0
        if self._force_law is None:
            return math.nan
        try:
            value = float(self._force_law(int(index), t, delta, rate, stiffness, damping, force))
        except Exception as err:  # noqa: BLE001 (anything a user's law raises)
            self.force_law_error = (int(index), err)
            return math.nan
        if not math.isfinite(value):
            self.force_law_error = (int(index), ValueError(f"returned {value}"))
        return value

    def evaluate(self, q, u, inputs, params=None, t: float = 0.0, z=None) -> dict[str, np.ndarray]:
        """All outputs at the given state, shaped as in the equations of motion (``z=None``: the
        electrical states in the buffers)."""
        self._load(q, u, inputs, params, z)
        self.evaluate_into(t)
        return self.layout.unpack(self.buffers.out)

    def forward_dynamics(
        self, q, u, inputs, params=None, t: float = 0.0, z=None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(q', u')`` at the given state; the Lagrange multipliers are left in ``buffers.lam``,
        ``z'`` in ``buffers.zdot`` (``z=None``: the electrical states in the buffers).

        Raises
        ------
        FactorizationError
            M (or, with constraints, A M^-1 A^T) is not positive definite at this state.
        """
        self._load(q, u, inputs, params, z)
        self.forward_dynamics_into(t)
        return self.buffers.qdot.copy(), self.buffers.udot.copy()

    def rk4(
        self, q, u, inputs, dt: float, n_steps: int, params=None, t: float = 0.0, z=None,
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """``(q, u, t)`` after `n_steps` fixed RK4 steps of `dt`, inputs held constant (the
        electrical states, from `z` or the buffers, end in ``buffers.z``; they take ETDRK4 steps).

        After each step the state is checked to be finite and projected onto the constraints
        (as :meth:`project`, at the end of the step).

        Raises
        ------
        FactorizationError
            As :meth:`forward_dynamics` (codes 1, 2), the state became non-finite (3) or the
            projection failed (4); its ``t`` is the start of the failing step, and ``buffers``
            hold the state there.
        """
        self._load(q, u, inputs, params, z)
        t = self.rk4_into(dt, n_steps, t)
        return self.buffers.q.copy(), self.buffers.u.copy(), t

    def project(self, q, u, params=None, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """``(q, u)`` projected onto unit quaternions, ``Phi(q) = 0`` and ``A u + b = 0`` at `t`.

        The steps are those of :mod:`~mb_sim.codegen.projection`.  ``buffers.inputs`` are left
        as they are (the constraints do not depend on inputs).

        Raises
        ------
        FactorizationError
            Code 4: the projection failed (``buffers.q, buffers.u`` are then `q`, `u`).
        """
        b = self.buffers
        self._load(q, u, b.inputs, params)
        self.project_into(t)
        return b.q.copy(), b.u.copy()

    @abstractmethod
    def evaluate_into(self, t: float = 0.0) -> None:
        """All outputs at the state in ``buffers`` into ``buffers.out``."""

    @abstractmethod
    def forward_dynamics_into(self, t: float = 0.0) -> None:
        """``q', u'`` at the state in ``buffers`` into ``buffers.qdot, buffers.udot``, and the
        multipliers into ``buffers.lam``.

        Raises FactorizationError as :meth:`forward_dynamics`.
        """

    @abstractmethod
    def project_into(self, t: float = 0.0) -> None:
        """Project ``buffers.q, buffers.u`` in place onto the constraints, all or nothing.

        Raises FactorizationError as :meth:`project`.
        """

    @abstractmethod
    def rk4_into(self, dt: float, n_steps: int, t: float = 0.0) -> float:
        """Advance ``buffers.q, buffers.u`` by `n_steps` RK4 steps from `t`; the time reached.

        Each step ends with a finiteness check and the projection, as :meth:`rk4`.  On a
        FactorizationError the buffers hold the state at the start of the failing step.  A
        call interrupted (KeyboardInterrupt) leaves the state of its last completed step, whose
        time is :attr:`rk4_time`.

        Raises
        ------
        ValueError
            `n_steps` is outside ``[0, MAX_RK4_STEPS]`` (see :func:`check_step_count`).
        """

    @property
    @abstractmethod
    def rk4_time(self) -> float:
        """The time of the state ``rk4_into`` left in the buffers: the end of its last completed
        step (also when it was interrupted, e.g. by a KeyboardInterrupt raised as its foreign call
        returned), or the start of its failing step.  Valid until the next call of the model."""

    def _load(self, q, u, inputs, params, z=None) -> None:
        """Copy arguments into the buffers; ``params=None`` means the default parameters,
        ``z=None`` the electrical states already there."""
        b = self.buffers
        b.q[:], b.u[:], b.inputs[:] = q, u, inputs
        b.params[:] = self.parameter_values if params is None else params
        if z is not None:
            b.z[:] = z


def check_step_count(n_steps: int) -> None:
    """ValueError unless `n_steps` is in ``[0, MAX_RK4_STEPS]`` (more would wrap around in the C
    ``int`` that counts them; a count that is not a whole number is the foreign call's TypeError)."""
    if not 0 <= n_steps <= MAX_RK4_STEPS:
        raise ValueError(f"n_steps must be in [0, {MAX_RK4_STEPS}] (the C int counting them), got {n_steps}; "
                         "split longer runs into several calls")

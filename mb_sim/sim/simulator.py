"""The simulator: state, inputs and parameters of one robot, advanced by generated code.

Plain Python over a numeric model (``mb_sim.codegen``); the ROS node is a thin shell around it.
The state lives in the model's work buffers, so the fixed-step path is one foreign call per
``advance`` of up to :data:`MAX_STEPS_PER_CALL` steps (RK4, constraint projection and quaternion
renormalization all inside C); longer advances take several, with Python in control between them
(signals such as Ctrl-C, the runaway checks of :mod:`mb_sim.sim.runaway`).  The integrators
(fixed-step RK4, SciPy's adaptive ones) are steppers of :mod:`mb_sim.sim.integrators`.
"""
from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from typing import TYPE_CHECKING

from mb_sim.codegen.errors import FACTORIZATION_FAILURES, FactorizationError
from mb_sim.codegen.projection import PROJECTION_TOLERANCE
from mb_sim.sim.assembly import assemble
from mb_sim.sim.robot_cache import RobotBundle, load_robot
from mb_sim.sim.robot_cache import bundle as robot_bundle
from mb_sim.sim.robot_facts import StopFacts
from mb_sim.urdf.errors import URDFError
from mb_sim.urdf.inertia import SINGULAR
from mb_sim.sim.integrators import INTEGRATORS, MAX_STEPS_PER_CALL, move_anchors, stepper
from mb_sim.sim.stiff_dissipation import stiff_joints
from mb_sim.sim.constraint_kinematics import ConstraintKinematics
from mb_sim.sim.errors import AssemblyError, AssemblyWarning, EffortLimitWarning, JointLimitWarning, SimulationError
from mb_sim.sim.servos import SERVO_FREQUENCY, JointServos
from mb_sim.sim.runaway import (
    RunawayWatch, resolution_bounds, speed_bounds,
)
from mb_sim.symbolic.rank import independent_rows
from mb_sim.sim.imu import ImuNoise, ImuReading, ImuSet
from mb_sim.sim.force_torque import ForceTorqueSet, Wrench
from mb_sim.sim.outputs import (
    ConstraintErrors, ConstraintReaction, ContactState, ContactWrench, MotorState, SimulationOutputs, SpringState,
    Trajectory,
)

if TYPE_CHECKING:
    from mb_sim.model import Robot

__all__ = ["Simulator", "INTEGRATORS", "MAX_STEPS_PER_CALL", "STOP_FREQUENCY"]

#: Assembly names coordinates it moved by more than this [rad or m] (AssemblyWarning).
ASSEMBLY_NOTED = 1e-6
#: Joint stops are tuned critically damped, at a frequency of at least STOP_FREQUENCY / dt rad/s
#: and stiff enough to hold the joint's rated effort within STOP_OVERSHOOT (rad or m) of its
#: limit, up to STOP_STIFFEST_FREQUENCY / dt: RK4 is stable on a critically damped stop up to
#: 2.78 / dt (the smallest effective inertia makes the frequency an upper bound).  Below
#: STOP_REFERENCE_STEP [s] the floor stays at STOP_FREQUENCY / STOP_REFERENCE_STEP (250 rad/s): a
#: smaller step resolves the same stop better instead of making it stiffer (a stiffness growing as
#: 1/dt^2 threw a joint started 0.3 rad in its stop out at 24 rad/s at 1 ms, 2,300 rad/s at 10 us).
STOP_FREQUENCY = 0.25
STOP_REFERENCE_STEP = 1e-3
STOP_OVERSHOOT = 0.01
STOP_STIFFEST_FREQUENCY = 1.5
#: How far beyond a position limit a joint may be before :meth:`Simulator.beyond_limits` names it
#: (rad for revolute, m for prismatic joints): the stops concede STOP_OVERSHOOT at the rated effort.
LIMIT_TOLERANCE = {"revolute": 0.05, "prismatic": 0.01}
#: A start this close to a position limit [rad or m] counts as inside it (rounding of the limits).
LIMIT_SLACK = 1e-12
#: Positions and speeds given by name (initial positions, set_state) above this magnitude are
#: refused: no robot's (rad or m, rad/s or m/s; a wheel's angle after 100 km stays below).
STATE_MAGNITUDE = 1e6


class Simulator:
    """Simulates one robot: ``step()``, ``advance(duration)``, ``outputs()``.

    Parameters
    ----------
    robot
        A robot model, a URDF path / URDF text (loaded with `floating_base` and `ground`: see
        ``load_urdf``), or a compiled robot's :meth:`bundle`;
        a ``.xacro`` path is expanded first with `xacro_args` (``{"name": "value"}``).  A URDF
        loaded before comes from the cache without being parsed or derived (no SymPy imported:
        :mod:`mb_sim.sim.robot_cache`); ``robot`` then builds the component model on first use.
    dt
        Physics step of the fixed-step integrator [s] (default 1 ms); also the output step of
        ``advance`` for adaptive integrators.
    integrator
        A key of :data:`INTEGRATORS`.
    backend, cache_dir, progress
        Passed to :func:`mb_sim.codegen.load_numeric_model`.
    rtol, atol
        Relative and absolute tolerances of the adaptive integrators (positive).
    initial_positions
        Initial positions by one-DoF joint or coordinate name (as ``set_state`` takes them),
        written into the URDF's zero configuration, which is then *assembled*: the constraints
        are closed with the values given held exactly and the others solved, on the assembly
        branch nearest to them (see :meth:`_assemble`).  AssemblyError when no closed
        configuration is found near them (or near zero, without any) or a value contradicts the
        others.  ``reset`` returns to this state.
    default_effort_limit
        The effort limit [N m or N] of actuated joints whose URDF gives none (no ``<limit
        effort>``, or 0); None (default): their efforts are not clamped.  Either way an
        :class:`~mb_sim.sim.errors.EffortLimitWarning` lists those joints, but for passive ones
        (joints the constraints drive: their coordinates are ``dependent_coordinates``).
    speed_limit_factor, default_speed_bounds
        Runaway speed bounds (see :mod:`mb_sim.sim.runaway`): ``default_speed_bounds``
        (rotational rad/s, translational m/s; None: what the step resolves,
        :func:`~mb_sim.sim.runaway.resolution_bounds`), or for a one-DoF joint `speed_limit_factor`
        times its URDF velocity limit where that is smaller (None: URDF limits bound nothing;
        0: no speed check).  ``speed_bounds`` lists them.
    check_energy
        Whether an energy rising while no power is put in stops the simulation as a runaway.
    servo_frequency, servo_feed_forward
        The joint servos' default gains (natural frequency [Hz], critically damped) and whether
        they add the computed-torque feed-forward (see ``servos``, :mod:`mb_sim.sim.servos`); None
        (the default): on, but off for a robot with contacts, where it would cancel the ground's
        push at the joints and ignore the floating base (a quadruped slid 0.3 m in 5 s).

    ``runaway`` (a :class:`~mb_sim.sim.runaway.RunawayWatch`) judges runaways after every call of
    the integrator: speeds beyond their bounds (``speed_bounds``), an energy rising while no power
    is put in.

    The state lives in ``model.buffers``: calling the model's public methods (``evaluate``,
    ``forward_dynamics``...) loads their arguments there, which changes the simulator's state
    (and ``params=None`` its parameters); pass the buffers themselves to look without touching.
    """

    def __init__(self, robot: Robot | RobotBundle | str | os.PathLike, *, dt: float = 1e-3, integrator: str = "rk4",
                 backend: str = "c", cache_dir: str | os.PathLike | None = None,
                 progress: Callable[[str], None] | None = None, rtol: float = 1e-10, atol: float = 1e-10,
                 default_effort_limit: float | None = None, speed_limit_factor: float | None = None,
                 default_speed_bounds: tuple[float, float] | None = None,
                 check_energy: bool = True, servo_frequency: float = SERVO_FREQUENCY,
                 servo_feed_forward: bool | None = None, initial_positions: Mapping[str, float] | None = None,
                 floating_base: bool = False, xacro_args: Mapping[str, object] | None = None,
                 ground: bool | str | Sequence[str] = False) -> None:
        self._stepper = stepper(integrator)  # ValueError naming the choices
        if not dt > 0:
            raise ValueError(f"dt must be positive, got {dt}")
        for name, tolerance in (("rtol", rtol), ("atol", atol)):
            if not (math.isfinite(tolerance) and tolerance > 0):
                raise ValueError(f"{name} must be a positive finite number, got {tolerance}")
        _check_runaway_options(default_effort_limit, speed_limit_factor, default_speed_bounds)
        self._loaded = load_robot(robot, floating_base=floating_base, xacro_args=xacro_args, ground=ground,
                                  backend=backend, cache_dir=cache_dir, progress=progress)
        self.facts = facts = self._loaded.facts  # what is read of the robot (mb_sim.sim.robot_facts)
        self.model = self._loaded.model
        self.dt, self.integrator, self.rtol, self.atol = dt, integrator, rtol, atol
        self.coordinate_names, self.speed_names = list(facts.coordinate_names), list(facts.speed_names)
        self.parameter_names = list(facts.parameter_names)
        self.actuated_joints = [i.name for i in facts.efforts]
        self._actuated_index = {name: k for k, name in enumerate(self.actuated_joints)}
        self.effort_limits = np.array([i.limit for i in facts.efforts], dtype=float)
        self._default_effort_limits(default_effort_limit)
        self.motors = [i.name for i in facts.voltages]
        self.motor_joints = {i.name: i.joint for i in facts.voltages}
        self.voltage_limits = np.array([i.limit for i in facts.voltages], dtype=float)
        self.electrical_state_names = list(facts.electrical_state_names)
        self._one_dof = {j.name: (self.coordinate_names.index(j.coordinates[0]), self.speed_names.index(j.speeds[0]))
                         for j in facts.joints if len(j.coordinates) == 1}
        self._angles = [k for j, (k, _) in self._one_dof.items()  # compared modulo 2 pi by assembly
                        if facts.joint(j).type in ("revolute", "continuous")]
        self._kinematics = ConstraintKinematics(self.model, self.model.constraint_labels)
        self._released: set[str] = set()  # constraints disabled by the user
        self._connect_force_laws()
        defaults = resolution_bounds(facts, dt) if default_speed_bounds is None else tuple(default_speed_bounds)
        bounds = speed_bounds(facts, defaults, speed_limit_factor) if speed_limit_factor != 0 else []
        self.runaway = RunawayWatch(facts, self.model, self.parameter_names, self.speed_names,
                                     self.electrical_state_names, bounds, check_energy)
        self.time = 0.0
        self._set_neutral(initial_positions)
        self._check_start_mass_matrix()
        self._effective_inertia: np.ndarray | None = None  # computed when first needed
        self._tune_stops()
        self.servos = self._make_servos(servo_frequency, servo_feed_forward)
        move_anchors(self, to_contact_points=True)  # stiction anchors at the contact points
        self._initial = (self.q, self.u, self.z, 0.0)
        self.runaway.restart()  # judges the parameters (a velocity offset in the URDF)

    def bundle(self) -> RobotBundle:
        """The compiled robot as data (:class:`~mb_sim.sim.robot_cache.RobotBundle`): another
        process, or a machine sharing no cache, makes simulators of it with
        ``Simulator(bundle)``, without the URDF or SymPy (compiling the C there if its cache
        has no library of it).  ValueError for the NumPy backend."""
        return robot_bundle(self._loaded)

    @property
    def robot(self) -> Robot:
        """The component model (:class:`mb_sim.model.Robot`): the one given, else built from the
        URDF on first use (a simulator of a cached robot runs without it)."""
        return self._loaded.robot

    def _check_start_mass_matrix(self) -> None:
        """URDFError if the mass matrix is singular where the robot starts: joints that together
        move no mass or rotational inertia there (point-mass links turned about an axis through
        them, e.g. iCub's neck at zero), which the first step cannot survive."""
        model, b = self.model, self.model.buffers
        state = b.q.copy(), b.u.copy()
        try:
            matrix = model.evaluate(b.q.copy(), np.zeros(model.n_u), b.inputs, b.params)["mass_matrix"]
        finally:
            b.q[:], b.u[:] = state
        diagonal = np.diag(matrix).copy()
        if not len(diagonal) or not np.all(np.isfinite(matrix)):
            return
        if np.all(diagonal > SINGULAR * diagonal.max()):  # (a diagonal entry rounding left nonzero is zero)
            scale = 1.0 / np.sqrt(diagonal)
            values, vectors = np.linalg.eigh(matrix * np.outer(scale, scale))
            if values[0] > SINGULAR:
                return
            involved = np.flatnonzero(np.abs(vectors[:, 0]) > 0.1 * np.abs(vectors[:, 0]).max())
        else:
            involved = np.flatnonzero(diagonal <= SINGULAR * diagonal.max())
        joints = {s: j for j, (_, s) in self._one_dof.items()}
        names = ", ".join(f"'{joints.get(int(k), self.speed_names[int(k)])}'" for k in involved)
        raise URDFError(self.facts.source, f"robot '{self.facts.name}'",
                        f"the mass matrix is singular where the robot starts: joint(s) {names} together move no "
                        "mass or rotational inertia in this configuration (a point mass turned about an axis "
                        "through it); give the links they move a rotational inertia, or start elsewhere "
                        "(initial_positions)")

    def _default_effort_limits(self, default: float | None) -> None:
        """Give actuated joints without an effort limit `default` (if any); warn about them, but
        for the passive ones: joints whose coordinates the constraints determine (a linkage's
        coupler and rocker, a mimic joint), driven through the constraints, no effort expected."""
        dependent = {self.coordinate_names[k] for k in self.model.dependent_coordinates}
        passive = {name for name in self.actuated_joints if set(self.facts.joint(name).coordinates) <= dependent}
        unlimited = [name for name, limit in zip(self.actuated_joints, self.effort_limits)
                     if not math.isfinite(limit) and name not in passive]
        if default is not None:
            self.effort_limits[~np.isfinite(self.effort_limits)] = default
        if not unlimited:
            return
        listed = ", ".join(unlimited)
        joints = f"joint {listed} has" if len(unlimited) == 1 else f"joints {listed} have"
        if default is None:
            consequence = "efforts are not clamped; set default_effort_limit (mb-sim: --default-effort-limit)"
        else:
            consequence = f"efforts are clamped to default_effort_limit {default:g} (N m or N)"
        warnings.warn(f"robot '{self.facts.name}': {joints} no effort limit in the URDF: {consequence}",
                      EffortLimitWarning, stacklevel=3)

    @property
    def speed_bounds(self) -> dict[str, float]:
        """The runaway bound of each generalized speed [rad/s or m/s], by speed name (empty: no
        speed check); see :mod:`mb_sim.sim.runaway`."""
        return {bound.speed: bound.bound for bound in self.runaway.bounds}

    # -- state ----------------------------------------------------------------------------
    @property
    def q(self) -> np.ndarray:
        """Generalized coordinates (a copy)."""
        return self.model.buffers.q.copy()

    @property
    def u(self) -> np.ndarray:
        """Generalized speeds (a copy)."""
        return self.model.buffers.u.copy()

    @property
    def z(self) -> np.ndarray:
        """Electrical states (motor currents, in ``electrical_state_names`` order; a copy)."""
        return self.model.buffers.z.copy()

    @property
    def efforts(self) -> np.ndarray:
        """Applied efforts of the actuated joints (after clamping; with a servo, the servo's
        effort at the current state), in ``actuated_joints`` order."""
        b, n = self.model.buffers, len(self.actuated_joints)
        if not self.servos.active:
            return b.inputs[:n].copy()
        self.servos.refresh(self.time)
        try:
            self.model.forward_dynamics_into(self.time)
        except FactorizationError:
            return b.inputs[:n].copy()
        return b.applied[:n].copy()

    @property
    def voltages(self) -> np.ndarray:
        """Applied motor voltages (after clamping), in ``motors`` order."""
        return self.model.buffers.inputs[len(self.actuated_joints):].copy()

    def _connect_force_laws(self) -> None:
        """Hand the model the registered force laws its user-law springs name."""
        if not self.model.force_laws:
            return
        from mb_sim.model import force_law

        laws = []
        for spring, name in self.model.force_laws:
            try:
                laws.append((spring, force_law(name)))
            except KeyError as err:
                raise ValueError(f"spring-damper {spring!r}: {err.args[0]}") from None

        def evaluate(index: int, t: float, delta: float, rate: float, k: float, d: float, f: float) -> float:
            spring, law = laws[index]
            return law(t, spring, delta, rate, k, d, f)

        self.model.set_force_law(evaluate)

    @property
    def dependent_coordinates(self) -> list[str]:
        """Coordinates the constraints determine (solved by ``set_state``, corrected by projection)."""
        return [self.coordinate_names[k] for k in self.model.dependent_coordinates]

    @property
    def joint_indices(self) -> dict[str, tuple[int, int]]:
        """Each one-DoF joint's (coordinate index in ``q``, speed index in ``u``), in the order of
        ``SimulationOutputs.joint_positions``."""
        return dict(self._one_dof)

    @property
    def independent_joints(self) -> list[str]:
        """One-DoF joints whose position is not determined by the constraints: what to set."""
        dependent = set(self.dependent_coordinates)
        return [j for j, (k, _) in self._one_dof.items() if self.coordinate_names[k] not in dependent]

    def _set_neutral(self, initial_positions: Mapping[str, float] | None = None) -> None:
        """The initial state: at rest, the URDF's zero configuration (identity quaternions) with
        `initial_positions` written in, assembled (:meth:`_assemble`)."""
        b = self.model.buffers
        b.q[:], b.u[:], b.z[:], b.inputs[:] = 0.0, 0.0, 0.0, 0.0
        b.q[list(self.model.projection.quaternion_starts)] = 1.0  # scalar parts: identity rotations
        zero = b.q.copy()
        start = zero.copy()
        given = self._assign(start, initial_positions or {}, self.coordinate_names, 0, "position")
        q = self._assemble(zero, start, given, initial_positions or {})
        b.q[:] = q = self._inside_limits(q, given)
        b.u[:] = self._kinematics.solve_speeds(q, b.u.copy(), set(), self.time)

    def _position_limits(self) -> dict[int, tuple[float, float]]:
        """Coordinate index -> (lower, upper) of each joint with a stop (a missing bound infinite)."""
        limits = {}
        for stop in self._limit_stops():
            lower = -math.inf if stop.lower_value is None else stop.lower_value
            upper = math.inf if stop.upper_value is None else stop.upper_value
            if lower <= upper:
                limits[self._one_dof[stop.joint][0]] = (lower, upper)
        return limits

    def _outside_limits(self, q: np.ndarray, skip: Collection[int] = ()) -> dict[int, float]:
        """The coordinates of `q` beyond their position limits (but `skip`), with the nearest limit."""
        return {k: min(max(q[k], lower), upper) for k, (lower, upper) in self._position_limits().items()
                if k not in skip and not lower - LIMIT_SLACK <= q[k] <= upper + LIMIT_SLACK}

    def _inside_limits(self, q: np.ndarray, given: dict[int, float]) -> np.ndarray:
        """The assembled start `q` with every joint not given inside its position limits: at the
        nearest limit, the dependent coordinates solved (a JointLimitWarning names what moved).
        A robot started in its stops is thrown out of them; a given value beyond a limit is the
        user's choice and is kept (noted in the same line)."""
        outside = self._outside_limits(q, given)
        moved = q
        if outside:
            dependent = set(self.model.dependent_coordinates)
            independent = set(outside) - dependent
            moved = self._solve_held(q, outside, set(given) | independent) if independent else q
            left = self._outside_limits(moved, given)
            if left:  # a dependent joint outside: hold it at its limit, the constraints move the others
                moved = self._solve_held(moved, left, set(given) | set(left))
        self._limits_note(q, moved, given)
        return moved

    def _solve_held(self, q: np.ndarray, values: dict[int, float], held: set[int]) -> np.ndarray:
        """`q` with `values` written in, the `held` coordinates kept and the others solved to close
        the constraints (by continuation, else by assembly); `q` itself where that fails."""
        target = q.copy()
        target[list(values)] = list(values.values())
        try:
            solved = self._kinematics.solve_positions(q, target, held, self.time)
        except ValueError:
            try:
                solved = assemble(self._kinematics, target, held, self.time, self._angles).q
            except AssemblyError:
                return q
        if self._moved_given({k: target[k] for k in held}, solved):
            return q
        return solved

    def _limits_note(self, q: np.ndarray, moved: np.ndarray, given: dict[int, float]) -> None:
        """One JointLimitWarning: the joints moved into their limits (and by how much), those the
        constraints keep outside, the given values beyond a limit."""
        names = {k: joint for joint, (k, _) in self._one_dof.items()}
        name = lambda k: names.get(k, self.coordinate_names[k])  # noqa: E731
        parts = []
        shifted = [k for k in range(len(q)) if abs(moved[k] - q[k]) > ASSEMBLY_NOTED]
        if shifted:
            parts.append("the URDF's zero configuration lies outside the position limits: starting at the nearest "
                         "limit, moving " + ", ".join(f"{name(k)} by {moved[k] - q[k]:+.4g}" for k in shifted)
                         + " (rad or m)")
        stuck = self._outside_limits(moved, given)
        if stuck:
            parts.append(", ".join(name(k) for k in stuck) + " cannot move inside its limits without moving an initial "
                         "position given or opening a constraint: it starts in its stop and is pushed out")
        limits = self._position_limits()
        beyond = self._outside_limits(moved, set(range(len(q))) - set(given))
        if beyond:
            parts.append("initial position " + ", ".join(
                f"{name(k)} = {given[k]:g} beyond its limits [{limits[k][0]:g}, {limits[k][1]:g}]" for k in beyond)
                + ": kept as given, the joint starts in its stop and is pushed out")
        if parts:
            warnings.warn(f"robot '{self.facts.name}': joint limits: " + "; ".join(parts), JointLimitWarning,
                          stacklevel=5)

    def _assemble(self, zero: np.ndarray, start: np.ndarray, given: dict[int, float],
                  named: Mapping[str, float]) -> np.ndarray:
        """Coordinates closing the constraints from `start` (`zero` with the `given` values, by
        index; `named` as the user named them, for messages).

        A URDF drawn closed (its zero configuration closes the constraints, to rounding: Gauss-Newton
        from there moves nothing by more than ASSEMBLY_NOTED) keeps its branch: the given values
        are reached from there by continuation, as ``set_state`` does.  Otherwise, or where that
        cannot keep them,
        the assembly of :func:`mb_sim.sim.assembly.assemble`: the given values
        held, the dependent coordinates solved (every coordinate not given where that is not
        enough), by Gauss-Newton, a homotopy and seeded starts, the closed configuration nearest
        the values given taken.  A given value the others determine (a rocker angle given with
        the crank's) is a guess choosing the assembly branch when there are several (an
        AssemblyWarning gives the value solved) and contradicts them when there is one
        (AssemblyError, as ``set_state``).  An AssemblyWarning also names what moved from the
        URDF's zero values without being dependent on the given ones (a loop not closed at zero
        with nothing given, an independent joint freed).
        """
        kinematics, t = self._kinematics, self.time
        try:
            q = kinematics.solve_positions(zero, zero, set(), t)
            if np.abs(q - zero).max(initial=0.0) <= ASSEMBLY_NOTED:  # drawn closed (to rounding)
                q = kinematics.solve_positions(q, start, set(given), t) if given else q
                if not self._moved_given(given, q):
                    self._assembly_note(q, zero, given, "continuation")
                    return q
        except ValueError:
            pass
        try:
            assembly = assemble(kinematics, start, set(given), t, self._angles)
        except AssemblyError as err:
            listed = ", ".join(f"{name} = {value:g}" for name, value in named.items())
            where = f"the initial positions {listed}" if given else "the URDF's zero configuration"
            raise AssemblyError(f"no configuration closing the constraints found near {where}: smallest residual "
                                f"{err.residual:.3g} in {err.row}; give initial positions near one that closes them "
                                "(Simulator initial_positions, mb-sim simulate --initial JOINT=VALUE, the node's "
                                "initial_positions.JOINT)", err.residual, err.row) from None
        moved = self._moved_given(given, assembly.q)
        if moved and assembly.closed == 1:
            k = moved[0]
            raise AssemblyError(f"position {given[k]:g} of {self.coordinate_names[k]!r} contradicts the constraints "
                                f"(consistent value {assembly.q[k]:.12g}); leave it out to have it solved")
        self._assembly_note(assembly.q, zero, given, assembly.method)
        return assembly.q

    @staticmethod
    def _moved_given(given: dict[int, float], q: np.ndarray) -> list[int]:
        """The given coordinates that `q` does not keep (as ``set_state`` judges it)."""
        return [k for k, value in given.items() if abs(q[k] - value) > 1e-9 * max(1.0, abs(value))]

    def _assembly_note(self, q: np.ndarray, zero: np.ndarray, given: dict[int, float], method: str) -> None:
        """One AssemblyWarning naming what assembly moved that a user may expect to stay: with
        nothing given and a loop joint not closed at zero, every coordinate moved; else given
        values that chose the branch, and independent coordinates not given that moved."""
        names = {k: joint for joint, (k, _) in self._one_dof.items()}
        name = lambda k: names.get(k, self.coordinate_names[k])  # noqa: E731
        dependent = set(self.model.dependent_coordinates)
        moved = [k for k in range(len(q)) if k not in given and abs(q[k] - zero[k]) > ASSEMBLY_NOTED]
        parts = []
        if not given:
            loops = self._open_loops_at(zero) if moved else ""
            if loops:
                parts.append(f"the URDF's zero configuration does not close {loops}; assembled the nearest closed "
                             f"configuration found ({method}), moving " + ", ".join(
                                 f"{name(k)} by {q[k] - zero[k]:+.4g}" for k in moved)
                             + " (rad or m); give initial positions to choose another")
        else:
            guessed = self._moved_given(given, q)
            if guessed:
                parts.append("initial position " + ", ".join(f"{name(k)} = {given[k]:g}" for k in guessed)
                             + " is determined by the other values given: it chose the assembly branch, on which it is "
                             + ", ".join(f"{q[k]:.6g}" for k in guessed))
            freed = [k for k in moved if k not in dependent]
            if freed:
                parts.append(", ".join(f"{name(k)} moved by {q[k] - zero[k]:+.4g}" for k in freed)
                             + " from the URDF's zero (not given): the constraints do not close with it there")
        if parts:
            warnings.warn(f"robot '{self.facts.name}': assembly: " + "; ".join(parts), AssemblyWarning, stacklevel=5)

    def _open_loops_at(self, q: np.ndarray) -> str:
        """The loop joints the configuration `q` does not close, with the largest residual, or ''."""
        phi = self.model.evaluate(q, np.zeros(self.model.n_u), self.model.buffers.inputs, self.model.buffers.params,
                                  self.time)["phi"][:, 0]
        names = self.model.constraint_names
        open_rows = [k for k in range(len(phi)) if names[k] in self.facts.loop_joints
                     and abs(phi[k]) > PROJECTION_TOLERANCE and self.model.buffers.enabled[k] != 0.0]
        if not open_rows:
            return ""
        loops = list(dict.fromkeys(names[k] for k in open_rows))
        listed = ", ".join(f"'{loop}'" for loop in loops)
        return (f"loop joint{'s' if len(loops) > 1 else ''} {listed} (residual "
                f"{max(abs(phi[k]) for k in open_rows):.3g})")

    def reset(self) -> None:
        """Back to the initial state (the first ``set_state`` or the neutral one), time 0."""
        q, u, z, t = self._initial
        b = self.model.buffers
        b.q[:], b.u[:], b.z[:], b.inputs[:] = q, u, z, 0.0
        self.time = t
        self.servos.clear()
        self.runaway.restart()

    def set_state(self, positions: Mapping[str, float] | None = None, velocities: Mapping[str, float] | None = None,
                  *, q: Sequence[float] | None = None, u: Sequence[float] | None = None,
                  z: Sequence[float] | None = None, time: float | None = None, as_initial: bool = True) -> None:
        """Set coordinates and speeds, then solve the others so the constraints hold.

        `positions`/`velocities` name one-DoF joints or generalized coordinates/speeds; they are
        kept exactly, the dependent coordinates and speeds are solved for (the constraint
        kinematics solver: positions, then speeds; see
        :mod:`~mb_sim.sim.constraint_kinematics`), the rest keep their values.  Giving a
        dependent one (a rocker angle instead of the crank's) frees an independent one instead.
        A request the constraints cannot meet raises ValueError with the residual and leaves the
        state as it was; so does giving a value the constraints contradict (a mimic joint's
        position together with its reference's).  `q`/`u` replace the whole vectors first (then
        only quaternions are renormalized and the state projected); `z` sets the electrical states
        (motor currents, unconstrained).
        """
        b = self.model.buffers
        new_q = b.q.copy() if q is None else self._vector(q, len(b.q), "q")
        new_u = b.u.copy() if u is None else self._vector(u, len(b.u), "u")
        given_q = self._assign(new_q, positions or {}, self.coordinate_names, 0, "position")
        given_u = self._assign(new_u, velocities or {}, self.speed_names, 1, "velocity")
        before = (b.q.copy(), b.u.copy())
        try:
            if q is not None or u is not None:
                b.q[:], b.u[:] = new_q, new_u
                self._project()
            else:
                self._solve(new_q, new_u, set(given_q), set(given_u))
            self._check_kept(given_q, b.q, self.coordinate_names, "position")
            self._check_kept(given_u, b.u, self.speed_names, "velocity")
        except (ValueError, SimulationError):
            b.q[:], b.u[:] = before
            raise
        if z is not None:
            b.z[:] = self._vector(z, len(b.z), "z")
        if time is not None:
            self.time = float(time)
        if z is None:
            move_anchors(self, to_contact_points=True)  # stiction anchors: the body set down unstressed
        self.runaway.restart()
        if as_initial:
            self._initial = (self.q, self.u, self.z, self.time)

    @property
    def initial_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """``(q, u, z, time)`` that :meth:`reset` returns to (copies)."""
        q, u, z, t = self._initial
        return q.copy(), u.copy(), z.copy(), t

    def restore(self, q: Sequence[float], u: Sequence[float], z: Sequence[float], time: float,
                initial: tuple | None = None) -> None:
        """Put back a recorded state bit for bit, without projecting it (a replay); `initial`, a
        recorded :attr:`initial_state`, becomes what :meth:`reset` returns to."""
        b = self.model.buffers
        b.q[:], b.u[:], b.z[:] = (self._vector(v, len(a), name) for v, a, name in ((q, b.q, "q"), (u, b.u, "u"), (z, b.z, "z")))
        self.time = float(time)
        if initial is not None:
            iq, iu, iz, it = initial
            self._initial = (self._vector(iq, len(b.q), "q"), self._vector(iu, len(b.u), "u"),
                             self._vector(iz, len(b.z), "z"), float(it))
        self.runaway.restart()

    def _solve(self, q: np.ndarray, u: np.ndarray, held_q: set[int], held_u: set[int]) -> None:
        """Dependent coordinates, then speeds, solved with the held ones kept; the state is only
        changed if both succeed."""
        b = self.model.buffers
        start = b.q.copy()
        solved_q = self._kinematics.solve_positions(start, q, held_q, self.time)
        solved_u = self._kinematics.solve_speeds(solved_q, u, held_u, self.time)
        b.q[:], b.u[:] = solved_q, solved_u

    def _vector(self, values: Sequence[float], n: int, what: str) -> np.ndarray:
        array = np.asarray(values, dtype=float)
        if array.shape != (n,) or not np.all(np.isfinite(array)):
            raise ValueError(f"{what} must be {n} finite numbers, got {values!r}")
        return array.copy()

    def _assign(self, target: np.ndarray, values: Mapping[str, float], names: list[str], which: int,
                what: str) -> dict[int, float]:
        """Write named values into `target`; the indices written, with their values."""
        given = {}
        for name, value in values.items():
            if name in self._one_dof:
                index = self._one_dof[name][which]
            elif name in names:
                index = names.index(name)
            else:
                raise ValueError(f"unknown joint or coordinate {name!r} for the {what}; "
                                 f"known: {', '.join([*self._one_dof, *names])}")
            value = float(value)
            if not np.isfinite(value):
                raise ValueError(f"{what} of {name!r} is not finite: {value}")
            if abs(value) > STATE_MAGNITUDE:
                raise ValueError(f"{what} of {name!r} is {value:g}, beyond {STATE_MAGNITUDE:g} (rad or m, "
                                 "rad/s or m/s): no robot's")
            target[index] = given[index] = value
        return given

    def _check_kept(self, given: dict[int, float], actual: np.ndarray, names: list[str], what: str) -> None:
        for index, value in given.items():
            if abs(actual[index] - value) > 1e-9 * max(1.0, abs(value)):
                raise ValueError(f"{what} {value} of {names[index]!r} contradicts the constraints "
                                 f"(consistent value {actual[index]:.12g}); leave it out to have it solved")

    def _project(self) -> None:
        try:
            self.model.project_into(self.time)
        except FactorizationError as err:
            raise SimulationError(f"cannot satisfy the constraints: {FACTORIZATION_FAILURES.get(err.code, err)}", self.time) from None

    # -- named constraints ---------------------------------------------------------------------
    @property
    def constraints(self) -> list[str]:
        """Names of the robot's constraints (mimic joints, loop closures...), in derivation order."""
        return list(dict.fromkeys(self.model.constraint_names))

    def constraint_enabled(self, name: str) -> bool:
        """Whether constraint `name` is enforced."""
        self._constraint_rows(name)
        return name not in self._released

    def set_constraint_enabled(self, name: str, enabled: bool) -> None:
        """Enforce constraint `name` or release it (as Karana's SubGraph enable/disableConstraint).

        A disabled constraint exerts no force and is left out of the projection: its dependent
        coordinates move freely.  Every row of the constraints left enabled is enforced (the
        dynamics leave a row that depends on the others where the robot is to them): a row that
        was redundant with the released constraint's (the other wheel's sideways condition on a
        shared axle) carries its share from then on.  Enabling one projects the state
        onto it (dependent coordinates by Gauss-Newton, then all speeds by the mass-weighted
        impulse: an inelastic engagement that keeps the momentum the constraint does not act on),
        so the motion resumes on the constraint; if that fails the constraint stays disabled and
        SimulationError says so.  Switches survive ``reset()``: they configure the model, they are
        not state.
        """
        self._constraint_rows(name)
        if enabled == (name not in self._released):
            return
        self.runaway.restart()
        if not enabled:
            self._released.add(name)
            self._apply_released()
            return
        self._released.discard(name)
        self._apply_released()
        b = self.model.buffers
        state = b.q.copy(), b.u.copy()
        try:  # the dependent coordinates onto it (the projection alone would move every one a little)
            q = self._kinematics.solve_positions(state[0], state[0], set(), self.time)
            b.q[:], b.u[:] = q, state[1]  # (the solver's evaluations load their own speeds)
            self.model.project_into(self.time)
        except (FactorizationError, ValueError) as err:
            b.q[:], b.u[:] = state
            self._released.add(name)
            self._apply_released()
            reason = FACTORIZATION_FAILURES.get(err.code, err) if isinstance(err, FactorizationError) else err
            raise SimulationError(f"cannot enable constraint {name!r}: the state is too far from satisfying it "
                                  f"({reason})", self.time) from None

    def _apply_released(self) -> None:
        """Row flags: every row of the constraints not released (which of them are independent is
        judged by the dynamics wherever the robot is)."""
        names = self.model.constraint_names
        self.model.buffers.enabled[:] = [0.0 if name in self._released else 1.0 for name in names]

    def degrees_of_freedom(self) -> int:
        """Degrees of freedom where the robot is now: its speeds less the enforced constraint rows
        independent at the current configuration (seed 004's count, judged here: an umbrella has 1
        on its own branch and 2 on the fold with the runner at the hub)."""
        b, view = self.model.buffers, self.model.layout.view
        self.model.evaluate_into(self.time)
        matrix = view(b.out, "constraint_matrix")
        return self.model.n_u - len(independent_rows(matrix, np.flatnonzero(b.enabled != 0.0).tolist()))

    def _constraint_rows(self, name: str) -> np.ndarray:
        rows = np.flatnonzero([n == name for n in self.model.constraint_names])
        if not len(rows):
            known = ", ".join(self.constraints) or "none: this robot has no constraints"
            raise ValueError(f"unknown constraint {name!r}; constraints: {known}")
        return rows

    # -- inputs and parameters ---------------------------------------------------------------
    def set_efforts(self, efforts: Mapping[str, float] | Sequence[float]) -> None:
        """Commanded efforts by joint name (others unchanged) or as a full sequence; each is
        clamped to the joint's URDF effort limit.  A joint driven by a motor takes a voltage
        instead (:meth:`set_voltages`)."""
        motorized = {joint: motor for motor, joint in self.motor_joints.items()}
        for name in efforts if isinstance(efforts, Mapping) else ():
            if name in motorized:
                raise ValueError(f"joint {name!r} is driven by motor {motorized[name]!r}: command its voltage "
                                 "(set_voltages), not an effort")
        self._set_inputs(efforts, self.actuated_joints, self.effort_limits, 0, "effort", "joint")

    def set_voltages(self, voltages: Mapping[str, float] | Sequence[float]) -> None:
        """Motor voltages by motor name (others unchanged) or as a full sequence in ``motors``
        order; each is clamped to the motor's voltage limit."""
        self._set_inputs(voltages, self.motors, self.voltage_limits, len(self.actuated_joints), "voltage", "motor")

    def _set_inputs(self, values: Mapping[str, float] | Sequence[float], names: list[str], limits: np.ndarray,
                    start: int, what: str, owner: str) -> None:
        """Write clamped inputs `names` (at `start` in the input vector) by name or in full."""
        inputs = self.model.buffers.inputs[start:start + len(names)]  # a view
        if not isinstance(values, Mapping):
            inputs[:] = np.clip(self._vector(values, len(names), f"{what}s"), -limits, limits)
            return
        for name, value in values.items():
            if name not in names:
                known = ", ".join(names) or "none"
                raise ValueError(f"{owner} {name!r} takes no {what}; {owner}s taking one: {known}")
            value = float(value)
            if not np.isfinite(value):
                raise ValueError(f"{what} of {owner} {name!r} is not finite: {value}")
            k = names.index(name)
            inputs[k] = min(max(value, -limits[k]), limits[k])

    def set_parameters(self, values: Mapping[str, float]) -> None:
        """Change parameters by name (e.g. ``{"tool_m": 2.0}``) at run time."""
        params = self.model.buffers.params
        for name, value in values.items():
            if name not in self.parameter_names:
                raise ValueError(f"unknown parameter {name!r}")
            params[self.parameter_names.index(name)] = float(value)
        self.runaway.restart()

    def stiff_joints(self) -> dict[str, float]:
        """Joints whose damping or friction is too stiff for explicit RK4 at dt (joint -> largest
        decay rate times dt): the RK4 integrator takes their dissipation implicitly where it is
        stiff (:mod:`mb_sim.codegen.dissipation`); empty for the adaptive integrators."""
        rows = self.model.dissipation_rows
        if self.integrator != "rk4" or not len(rows):
            return {}
        joints = {s: j for j, (_, s) in self._one_dof.items()}
        return stiff_joints(rows, joints, self.model.buffers.params, self._smallest_effective_inertia(), self.dt)

    def parameter(self, name: str) -> float:
        """Current value of a parameter."""
        return float(self.model.buffers.params[self.parameter_names.index(name)])

    def _tune_stops(self) -> None:
        """Critically damped stops scaled by each joint's smallest effective inertia (1 / (M^-1)_ii,
        the other joints free) over the neutral, the derivation's generic and eight seeded random
        poses: M_ii at the neutral pose overstates it in folded poses, where a stop tuned from it
        is too stiff for RK4 at dt.  The frequency (:meth:`_stop_frequency`) holds the rated
        effort within STOP_OVERSHOOT where RK4 stays stable: below STOP_STIFFEST_FREQUENCY / dt, so
        stable at any step size, and bounded as dt shrinks, so a smaller step converges to the same
        motion (a one-sided spring-damper that never pulls: dissipative)."""
        stops = self._limit_stops()
        if not stops:
            return
        inertia = self._smallest_effective_inertia()
        for stop in stops:
            joint = stop.joint
            speed = self._one_dof[joint][1]
            effort = (self.effort_limits[self._actuated_index[joint]] if joint in self._actuated_index
                      else self.facts.joint(joint).effort)  # the clamp, else the rating
            omega = self._stop_frequency(inertia[speed], float(effort))
            self.set_parameters({stop.stiffness: inertia[speed] * omega**2, stop.damping: 2.0 * inertia[speed] * omega})

    def _limit_stops(self) -> tuple[StopFacts, ...]:
        """The stops of the joints with URDF position limits."""
        return self.facts.stops

    def beyond_limits(self) -> dict[str, float]:
        """Joints beyond a URDF position limit by more than LIMIT_TOLERANCE, with how far (rad or m;
        positive above the upper limit, negative below the lower): what the stops did not hold."""
        beyond = {}
        for stop in self._limit_stops():
            joint = stop.joint
            q = float(self.model.buffers.q[self._one_dof[joint][0]])
            bounds = {side: self.parameter(term) if isinstance(term, str) else float(term)  # a 0 stays a number
                      for side, term in (("lower", stop.lower), ("upper", stop.upper)) if term is not None}
            excess = max(q - bounds["upper"], 0.0) if "upper" in bounds else 0.0
            if "lower" in bounds and q < bounds["lower"]:
                excess = q - bounds["lower"]
            if abs(excess) > LIMIT_TOLERANCE[self.facts.joint(joint).type]:
                beyond[joint] = excess
        return beyond

    def _stop_frequency(self, inertia: float, effort: float) -> float:
        """The stop's frequency [rad/s]: at least STOP_FREQUENCY / dt, as stiff as holding `effort`
        (the URDF's rated effort) within STOP_OVERSHOOT needs, at most STOP_STIFFEST_FREQUENCY / dt;
        independent of dt below STOP_REFERENCE_STEP unless the cap binds."""
        needed = math.sqrt(effort / (inertia * STOP_OVERSHOOT)) if math.isfinite(effort) and inertia > 0 else 0.0
        floor = STOP_FREQUENCY / max(self.dt, STOP_REFERENCE_STEP)  # bounded as dt -> 0: see STOP_REFERENCE_STEP
        return min(max(floor, needed), STOP_STIFFEST_FREQUENCY / self.dt)

    def _smallest_effective_inertia(self) -> np.ndarray:
        """Per generalized speed, min over configurations of 1 / (M^-1)_ii (the state is kept;
        computed once)."""
        if self._effective_inertia is not None:
            return self._effective_inertia
        model, b = self.model, self.model.buffers
        state = b.q.copy(), b.u.copy()
        try:
            configurations = [state[0], *model.generic_configurations, *self._random_poses(state[0])]
            inverse_diagonals = [np.diag(np.linalg.inv(model.evaluate(q, np.zeros(model.n_u), b.inputs, b.params)["mass_matrix"]))
                                 for q in configurations]
        finally:
            b.q[:], b.u[:] = state
        self._effective_inertia = 1.0 / np.max(inverse_diagonals, axis=0)
        return self._effective_inertia

    def _make_servos(self, frequency: float, servo_feed_forward: bool | None) -> JointServos:
        """Servos for the effort-actuated one-DoF joints, default gains from their effective inertia;
        the feed-forward, where not said, on for robots without contacts."""
        if servo_feed_forward is None:
            servo_feed_forward = not self.model.contact_names
        joints = {name: (k, *self._one_dof[name]) for k, name in enumerate(self.actuated_joints) if name in self._one_dof}
        effective = self._smallest_effective_inertia() if joints else None
        inertia = [effective[self._one_dof[name][1]] for name in joints]
        limits = [self.effort_limits[self._actuated_index[name]] for name in joints]
        return JointServos(self.model.buffers.servo, joints, limits, inertia, self.dt, frequency,
                           feed_forward=servo_feed_forward)

    def _random_poses(self, neutral: np.ndarray, count: int = 8) -> list[np.ndarray]:
        """Seeded poses with every one-DoF joint drawn inside its limits (within +-pi), the
        other coordinates at `neutral`."""
        rng = np.random.default_rng(20261123)
        coordinates, lower, upper = [], [], []
        for name, (coordinate, _) in self._one_dof.items():
            limit = self.facts.joint(name)
            coordinates.append(coordinate)
            lower.append(-np.pi if limit.lower is None else max(limit.lower, -np.pi))
            upper.append(max(lower[-1], np.pi if limit.upper is None else min(limit.upper, np.pi)))
        poses = np.tile(neutral, (count, 1))
        poses[:, coordinates] = rng.uniform(lower, upper, (count, len(coordinates)))
        return list(poses)

    # -- time stepping ------------------------------------------------------------------------
    def step(self) -> None:
        """Advance one physics step ``dt``."""
        self.advance(self.dt)

    def advance(self, duration: float) -> None:
        """Advance by `duration` (a multiple of ``dt`` for the fixed-step integrator).

        Raises SimulationError on divergence (the state is then the last good one) and on a
        runaway (:mod:`mb_sim.sim.runaway`: the state is then where it was found, finite).  A
        KeyboardInterrupt leaves a consistent state: ``time`` is that of the steps done.
        """
        if duration < 0:
            raise ValueError(f"duration must not be negative, got {duration}")
        self._stepper.advance(self, duration)

    def _failure(self, code: int, at: float | None = None, detail: str = "") -> SimulationError:
        """The error for failure `code` at the (restored) current state, naming the spring-damper
        or force law at fault, else a speed beyond its runaway bound (the failure followed a
        runaway within one call), else a coordinate."""
        message = FACTORIZATION_FAILURES.get(code, f"failure code {code}") + (f" ({detail})" if detail else "")
        when = self.time if at is None else at
        if self.model.force_law_error is not None:
            index, error = self.model.force_law_error
            self.model.force_law_error = None
            spring, law = self.model.force_laws[index]
            return SimulationError(f"spring-damper {spring!r}: force law {law!r} failed: "
                                   f"{type(error).__name__}: {error}", when)
        if code == 5:
            lengths = self.model.evaluate(self.model.buffers.q, self.model.buffers.u, self.model.buffers.inputs,
                                          self.model.buffers.params, self.time)["spring_lengths"][:, 0]
            spring = self.model.spring_names[int(np.argmin(lengths))]
            return SimulationError(f"spring-damper {spring!r}: its length reached zero (its force direction is "
                                   f"undefined; {lengths.min():.3g} m at the start of the step)", when)
        runaway = self.runaway.speed_runaway(when, then=message)  # a runaway that ended in a failure
        if runaway is None and code == 4 and (row := self._constraint_not_held()) is not None:
            return SimulationError(f"{message}: {row}", when)
        return runaway or SimulationError(message, when, self._offending_coordinate())

    def _constraint_not_held(self) -> str | None:
        """The enforced constraint row farthest from holding after one RK4 step from the current
        state without projection (what a failing projection could not correct), for messages."""
        model, b, dt = self.model, self.model.buffers, self.dt
        n_q, n_h, state = len(b.q), model.layout.blocks["phi"].shape[0], (b.q.copy(), b.u.copy())

        def rate(x: np.ndarray, t: float) -> np.ndarray:
            return np.concatenate(model.forward_dynamics(x[:n_q], x[n_q:], b.inputs, b.params, t))

        try:
            x = np.concatenate(state)
            k1 = rate(x, self.time)
            k2 = rate(x + 0.5 * dt * k1, self.time + 0.5 * dt)
            k3 = rate(x + 0.5 * dt * k2, self.time + 0.5 * dt)
            x = x + dt / 6 * (k1 + 2 * (k2 + k3) + rate(x + dt * k3, self.time + dt))
            out = model.evaluate(x[:n_q], x[n_q:], b.inputs, b.params, self.time + dt)
        except FactorizationError:
            return None
        finally:
            b.q[:], b.u[:] = state
        velocity = out["constraint_matrix"] @ x[n_q:] + out["constraint_bias"][:, 0]
        residual = np.abs(np.concatenate([out["phi"][:, 0], velocity[n_h:]]))  # positions where stated
        residual[(b.enabled == 0.0) | ~np.isfinite(residual)] = 0.0
        if not residual.size or residual.max() <= 0.0:
            return None
        worst = int(np.argmax(residual))
        return (f"{self.model.constraint_labels[worst]} cannot be held (residual {residual[worst]:.3g} after one "
                "step: it contradicts the other constraints there)")

    def _offending_coordinate(self) -> str | None:
        """The first coordinate or speed whose value or rate is not finite at, or one Euler step
        after, the current state."""
        b = self.model.buffers
        names = [*self.coordinate_names, *self.speed_names, *self.electrical_state_names]
        state = np.concatenate([b.q, b.u, b.z])
        try:
            qdot, udot = self.model.forward_dynamics(b.q, b.u, b.inputs, b.params, self.time)
            rates = np.concatenate([qdot, udot, b.zdot])
        except FactorizationError:
            return None
        finally:
            b.q[:], b.u[:] = state[:len(b.q)], state[len(b.q):len(b.q) + len(b.u)]
        for candidate in (state, rates, state + self.dt * rates):
            bad = np.flatnonzero(~np.isfinite(candidate))
            if len(bad):
                return names[bad[0]]
        return None

    def simulate(self, duration: float, sample_every: int = 1,
                 progress: Callable[[float], None] | None = None) -> Trajectory:
        """Advance by `duration`, sampling every `sample_every` steps of ``dt`` (start included).

        `progress` is called with the fraction done after each sample.
        """
        steps = round(duration / self.dt)
        samples = [(self.time, self.q, self.u, self.z)]
        done = 0
        while done < steps:
            chunk = min(sample_every, steps - done)
            self.advance(chunk * self.dt)
            done += chunk
            samples.append((self.time, self.q, self.u, self.z))
            if progress is not None:
                progress(done / steps)
        times, qs, us, zs = zip(*samples)
        return Trajectory(np.array(times), np.array(qs), np.array(us), self.coordinate_names, self.speed_names,
                          np.array(zs).reshape(len(times), -1), self.electrical_state_names)

    # -- outputs --------------------------------------------------------------------------------
    def outputs(self, dynamics: bool = True) -> SimulationOutputs:
        """Everything about the current state (see :class:`SimulationOutputs`).

        ``dynamics=False`` skips the forward dynamics (what a publisher of joint states and poses
        needs): accelerations and constraint forces are then empty, the acceleration error NaN.
        """
        b, view = self.model.buffers, self.model.layout.view
        efforts = self.efforts  # before the evaluation: with servos, the forward dynamics are called
        self.model.evaluate_into(self.time)
        A, bias = view(b.out, "constraint_matrix"), view(b.out, "constraint_bias")[:, 0]
        rows = view(b.out, "link_poses")
        poses = {}
        for name, row in zip(self.model.link_names, rows):
            pose = np.eye(4)
            pose[:3, :3], pose[:3, 3] = row[:9].reshape(3, 3), row[9:]
            poses[name] = pose
        on = b.enabled != 0.0  # errors of the enforced constraints only
        largest = lambda v: float(np.abs(v[on[:len(v)]]).max()) if on[:len(v)].any() else 0.0  # noqa: E731
        snapshot = dict(
            time=self.time,
            positions=dict(zip(self.coordinate_names, b.q.tolist())),
            velocities=dict(zip(self.speed_names, b.u.tolist())),
            accelerations={},
            joint_positions={j: float(b.q[i]) for j, (i, _) in self._one_dof.items()},
            joint_velocities={j: float(b.u[k]) for j, (_, k) in self._one_dof.items()},
            efforts=dict(zip(self.actuated_joints, efforts.tolist()))
            | {joint: float(row[2]) for joint, row in zip(self.motor_joints.values(), view(b.out, "motor_states"))},
            link_poses=poses,
            position_error=largest(view(b.out, "phi")[:, 0]),
            velocity_error=largest(A @ b.u + bias),
            acceleration_error=float("nan"),
            kinetic_energy=float(view(b.out, "kinetic_energy")[0, 0]),
            potential_energy=float(view(b.out, "potential_energy")[0, 0]),
        )
        snapshot["springs"] = _spring_states(self.model.spring_names, view(b.out, "spring_states"))
        snapshot["contacts"], snapshot["contact_wrenches"] = _contacts(
            self.model.contact_names, self._contact_links(), view(b.out, "contact_states"), poses)
        snapshot["motors"] = {name: MotorState(*(float(v) for v in row))
                              for name, row in zip(self.motors, view(b.out, "motor_states"))}
        if dynamics:  # (the NumPy backend rewrites A and c in out[]: the same values, same state)
            c = view(b.out, "acceleration_bias")[:, 0]
            wrenches = view(b.out, "constraint_wrenches").copy()
            self.model.forward_dynamics_into(self.time)
            snapshot.update(accelerations=dict(zip(self.speed_names, b.udot.tolist())),
                            acceleration_error=largest(A @ b.udot + c),
                            constraint_forces=dict(zip(self.speed_names, (-A.T @ b.lam).tolist())),
                            reactions=self._reactions(A, wrenches))
        return SimulationOutputs(**snapshot)

    def _reactions(self, matrix: np.ndarray, wrenches: np.ndarray) -> dict[str, ConstraintReaction]:
        """Each named constraint's reaction from the multipliers in the buffers."""
        lam, out = self.model.buffers.lam, {}
        for name in self.constraints:
            rows = self._constraint_rows(name)
            generalized = dict(zip(self.speed_names, (-matrix[rows].T @ lam[rows]).tolist()))
            if name in self.facts.loop_joints or name in self.facts.rolling_wheels:
                wrench = -wrenches[rows].T @ lam[rows]
                out[name] = ConstraintReaction(generalized, wrench[:3], wrench[3:])
            else:
                out[name] = ConstraintReaction(generalized)
        return out

    def _contact_links(self) -> list[tuple[str, str | None]]:
        """Per contact feature, in ``model.contact_names`` order (the derivation's: ground planes and
        contact pairs as the robot walks them), the link its force acts on and the link that gets
        the opposite force (None for a ground).  A feature is named ``<link>/<collision
        index>/<feature>`` within its component, plus ``@<other link>/<collision index>`` in a
        contact pair; a link's name may hold a /."""
        return list(self.facts.contact_links)

    def constraint_reactions(self) -> dict[str, ConstraintReaction]:
        """Each named constraint's reaction at the current state (see :class:`ConstraintReaction`)."""
        return self.outputs().reactions

    def constraint_errors(self) -> dict[str, ConstraintErrors]:
        """Position, velocity and acceleration residuals of each named constraint (Karana's
        poseError, velError, accelError), enabled or not."""
        b, view = self.model.buffers, self.model.layout.view
        self.model.evaluate_into(self.time)
        phi = view(b.out, "phi")[:, 0].copy()
        matrix, bias = view(b.out, "constraint_matrix").copy(), view(b.out, "constraint_bias")[:, 0].copy()
        c = view(b.out, "acceleration_bias")[:, 0].copy()
        try:
            self.model.forward_dynamics_into(self.time)
            acceleration = matrix @ b.udot + c
        except FactorizationError:
            acceleration = np.full(len(c), np.nan)
        velocity = matrix @ b.u + bias
        out = {}
        for name in self.constraints:
            rows = self._constraint_rows(name)
            out[name] = ConstraintErrors(self.constraint_enabled(name), phi[rows[rows < len(phi)]],
                                         velocity[rows], acceleration[rows])
        return out

    # -- IMUs -----------------------------------------------------------------------------------
    @property
    def imu_names(self) -> list[str]:
        """The robot's IMUs (``<mb_sim><imu>``, Gazebo ``<sensor type="imu">``)."""
        return self._imu_set().names

    def imu(self, name: str) -> ImuReading:
        """IMU `name`'s reading at the current state (see :mod:`mb_sim.sim.imu`); KeyError naming
        the IMUs for an unknown name."""
        return self._imu_readings([name])[name]

    def imus(self) -> dict[str, ImuReading]:
        """Every IMU's reading at the current state, by name."""
        return self._imu_readings(None)

    def set_imu_noise(self, name: str, noise: ImuNoise | None) -> None:
        """Gaussian noise and biases (seeded) on IMU `name`'s readings from now on; None: exact."""
        self._imu_set().set_noise(name, noise)

    def _imu_set(self) -> ImuSet:
        if getattr(self, "_imu_cache", None) is None:
            self._imu_cache = ImuSet(self.facts, self.model)
        return self._imu_cache

    def _imu_readings(self, names: list[str] | None) -> dict[str, ImuReading]:
        """Readings with the servos' efforts refreshed first (as ``outputs`` does)."""
        if self.servos.active:
            self.servos.refresh(self.time)
        return self._imu_set().read(self.time, names)

    # -- force-torque sensors -------------------------------------------------------------------
    @property
    def force_torque_names(self) -> list[str]:
        """The robot's force-torque sensors (``<mb_sim><force_torque>``, Gazebo ``<sensor
        type="force_torque">``)."""
        return self._force_torque_set().names

    def force_torque(self, name: str) -> Wrench:
        """Sensor `name`'s ``(force, torque)`` at the current state: the wrench through its joint
        (see :mod:`mb_sim.sim.force_torque`); KeyError naming the sensors for an unknown name."""
        return self.force_torques([name])[name]

    def force_torques(self, names: list[str] | None = None) -> dict[str, Wrench]:
        """Readings of sensors `names` (all: None) at the current state, by name."""
        if self.servos.active:
            self.servos.refresh(self.time)
        return self._force_torque_set().read(self.time, names)

    def _force_torque_set(self) -> ForceTorqueSet:
        if getattr(self, "_force_torque_cache", None) is None:
            self._force_torque_cache = ForceTorqueSet(self.facts, self.model)
        return self._force_torque_cache


def _spring_states(names: list[str], rows: np.ndarray) -> dict[str, SpringState]:
    """Spring outputs by name from the rows of the spring_states block (see SPRING_STATE)."""
    states = {}
    for name, row in zip(names, rows):
        p0, p1, dv, length, force = row[0:3], row[3:6], row[6:9], row[9], row[11]  # row[10]: length rate
        displacement = p1 - p0
        states[name] = SpringState(float(length), displacement, dv.copy(), float(force),
                                   force * displacement / length if length > 0 else np.full(3, np.nan),
                                   (p0.copy(), p1.copy()))
    return states


def _contacts(names: list[str], links: list[tuple[str, str | None]], rows: np.ndarray, poses: dict[str, np.ndarray]
              ) -> tuple[dict[str, ContactState], dict[str, ContactWrench]]:
    """The features touching (penetration > 0) from the rows of the contact_states block (see
    CONTACT_STATE), and each contact link's total contact force and torque about its origin (world
    axes; zero while it does not touch); `links` from :meth:`Simulator._contact_links`."""
    contacts: dict[str, ContactState] = {}
    wrenches = {link: (np.zeros(3), np.zeros(3)) for pair in links for link in pair if link is not None}
    for name, (link, other), row in zip(names, links, rows):
        if not row[6] > 0.0:
            continue
        point, force = row[0:3].copy(), row[9:12].copy()
        contacts[name] = ContactState(link, name, point, row[3:6].copy(), float(row[6]), float(row[7]),
                                      float(row[8]), force)
        for on, f in ((link, force), (other, -force)):
            if on is not None:
                total, torque = wrenches[on]
                total += f
                torque += np.cross(point - poses[on][:3, 3], f)
    return contacts, {link: ContactWrench(force, torque) for link, (force, torque) in wrenches.items()}


def _check_runaway_options(default_effort_limit: float | None, speed_limit_factor: float | None,
                           default_speed_bounds: tuple[float, float] | None) -> None:
    """ValueError naming the option unless each is a positive number (or None where allowed)."""
    if default_effort_limit is not None and not (math.isfinite(default_effort_limit) and default_effort_limit > 0):
        raise ValueError(f"default_effort_limit must be a positive finite number or None, got {default_effort_limit}")
    if speed_limit_factor is not None and not (math.isfinite(speed_limit_factor) and speed_limit_factor >= 0):
        raise ValueError(f"speed_limit_factor must be a positive finite number (None: URDF velocity limits bound "
                         f"nothing; 0: no speed check), got {speed_limit_factor}")
    if default_speed_bounds is None:
        return
    bounds = tuple(default_speed_bounds)
    if len(bounds) != 2 or not all(b > 0 for b in bounds):  # (inf: unbounded; NaN fails the test)
        raise ValueError(f"default_speed_bounds must be two positive numbers (rotational rad/s, translational "
                         f"m/s), got {default_speed_bounds!r}")

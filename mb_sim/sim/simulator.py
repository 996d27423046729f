"""The simulator: state, inputs and parameters of one robot, advanced by generated code.

Plain Python over a numeric model (``mb_sim.codegen``); the ROS node is a thin shell around it.
The state lives in the model's work buffers, so the fixed-step path is one foreign call per
``advance`` of up to :data:`MAX_STEPS_PER_CALL` steps (RK4, constraint projection and quaternion
renormalization all inside C); longer advances take several, with Python in control between them
(signals such as Ctrl-C, the runaway checks of :mod:`mb_sim.sim.runaway`).  The integrators
(fixed-step RK4, SciPy's adaptive ones) are steppers of :mod:`mb_sim.sim.integrators`; the other
parts a :class:`Simulator` composes are listed in its docstring.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from mb_sim.codegen.errors import FACTORIZATION_FAILURES, FactorizationError
from mb_sim.sim.constraint_kinematics import ConstraintKinematics
from mb_sim.sim.errors import SimulationError
from mb_sim.sim.failures import failure
from mb_sim.sim.force_laws import connect_force_laws
from mb_sim.sim.force_torque import ForceTorqueSet, Wrench
from mb_sim.sim.reactions import NoncontributingForces
from mb_sim.sim.imu import ImuNoise, ImuReading, ImuSet
from mb_sim.sim.inputs import Inputs
from mb_sim.sim.integrators import INTEGRATORS, MAX_STEPS_PER_CALL, stepper
from mb_sim.sim.named_constraints import NamedConstraints
from mb_sim.sim.output_reader import OutputReader
from mb_sim.sim.outputs import ConstraintErrors, ConstraintReaction, ConstraintSystem, SimulationOutputs, Trajectory
from mb_sim.sim.robot_cache import RobotBundle, bundle as robot_bundle, load_robot
from mb_sim.sim.robot_model import RobotModel
from mb_sim.sim.runaway import RunawayWatch, check_runaway_options, resolution_bounds, speed_bounds
from mb_sim.sim.singularity import SingularityWatch
from mb_sim.sim.servos import SERVO_FREQUENCY, JointServos
from mb_sim.sim.start import StartAssembly
from mb_sim.sim.state import STATE_MAGNITUDE, SimulationState, assign_named, check_kept, vector
from mb_sim.sim.manifolds import ContactManifolds
from mb_sim.urdf.scene import SceneObject, compose_scene
from mb_sim.sim.stiction_anchors import move_anchors
from mb_sim.sim.stiff_dissipation import stiff_joints
from mb_sim.sim.stops import STOP_FREQUENCY, JointStops, smallest_effective_inertia
from mb_sim.sim.wrenches import ExternalWrenches

if TYPE_CHECKING:
    from mb_sim.model import Robot

__all__ = ["Simulator", "INTEGRATORS", "MAX_STEPS_PER_CALL", "STATE_MAGNITUDE", "STOP_FREQUENCY"]


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
        With `objects` (:class:`~mb_sim.urdf.scene.SceneObject`) a URDF becomes a scene: the robot
        and the objects in one model, touching each other (:mod:`mb_sim.urdf.scene`).
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
    wrench_links
        Links that take an external wrench (a push: :meth:`apply_wrench`), loaded as
        ``<mb_sim><external_wrench link>`` loads them (a URDF path or text only).
    servo_frequency, servo_feed_forward
        The joint servos' default gains (natural frequency [Hz], critically damped) and whether
        they add the computed-torque feed-forward (see ``servos``, :mod:`mb_sim.sim.servos`); None
        (the default): on, but off for a robot with contacts, where it would cancel the ground's
        push at the joints and ignore the floating base (a quadruped slid 0.3 m in 5 s).

    ``runaway`` (a :class:`~mb_sim.sim.runaway.RunawayWatch`) judges runaways after every call of
    the integrator: speeds beyond their bounds (``speed_bounds``), an energy rising while no power
    is put in; ``singularities`` (:mod:`~mb_sim.sim.singularity`) the constraint singularities passed.

    The simulator composes a run of parts, as Pinocchio's model and data and MuJoCo's ``MjModel``
    and ``MjData``: ``robot_model`` (:class:`~mb_sim.sim.robot_model.RobotModel`: names, tables,
    defaults; never changed by a run), ``state`` (:class:`~mb_sim.sim.state.SimulationState`: time,
    the initial state, released constraints; q, u, z, inputs and parameters in ``model.buffers``),
    the stepper of :mod:`~mb_sim.sim.integrators`, the start's assembly (:mod:`~mb_sim.sim.start`),
    the stops (:mod:`~mb_sim.sim.stops`), the servos, the named constraints
    (:mod:`~mb_sim.sim.named_constraints`), the inputs (:mod:`~mb_sim.sim.inputs`) and the outputs
    (:mod:`~mb_sim.sim.output_reader`).

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
                 ground: bool | str | Sequence[str] = False, objects: Sequence[SceneObject] = (),
                 wrench_links: Sequence[str] = ()) -> None:
        self._stepper = stepper(integrator)  # ValueError naming the choices
        if objects:  # a scene: the robot and the objects in one URDF (mb_sim.urdf.scene)
            if not isinstance(robot, (str, os.PathLike)):
                raise ValueError("objects need the robot as a URDF path or text")
            robot, floating_base = compose_scene(robot, list(objects), floating_base), False
        if not dt > 0:
            raise ValueError(f"dt must be positive, got {dt}")
        for name, tolerance in (("rtol", rtol), ("atol", atol)):
            if not (math.isfinite(tolerance) and tolerance > 0):
                raise ValueError(f"{name} must be a positive finite number, got {tolerance}")
        check_runaway_options(default_effort_limit, speed_limit_factor, default_speed_bounds)
        self._loaded = load_robot(robot, floating_base=floating_base, xacro_args=xacro_args, ground=ground,
                                  backend=backend, cache_dir=cache_dir, progress=progress, wrench_links=wrench_links)
        self.facts = facts = self._loaded.facts  # what is read of the robot (mb_sim.sim.robot_facts)
        self.model = self._loaded.model
        self.robot_model = robot = RobotModel.of(facts, self.model)
        self.state = SimulationState(self.model.buffers)
        self.dt, self.integrator, self.rtol, self.atol = dt, integrator, rtol, atol
        self.coordinate_names, self.speed_names = list(robot.coordinate_names), list(robot.speed_names)
        self.parameter_names, self.electrical_state_names = list(robot.parameter_names), list(robot.electrical_state_names)
        self.actuated_joints, self.motors = list(robot.actuated_joints), list(robot.motors)
        self.motor_joints = dict(robot.motor_joints)
        self._inputs = Inputs(robot, self.model.buffers.inputs, default_effort_limit)
        self.wrench_links = list(robot.wrench_links)
        self.wrenches = ExternalWrenches(robot, self.model.buffers.inputs)  # pushes (mb_sim.sim.wrenches)
        self.effort_limits, self.voltage_limits = self._inputs.effort_limits, self._inputs.voltage_limits
        kinematics = ConstraintKinematics(self.model, self.model.constraint_labels)
        self._constraints = NamedConstraints(self.model, kinematics, self.state)
        self._outputs = OutputReader(robot, self.model, self._constraints)
        self._stops = JointStops(robot, self.model.buffers.params)
        connect_force_laws(self.model)
        defaults = resolution_bounds(facts, dt) if default_speed_bounds is None else tuple(default_speed_bounds)
        bounds = speed_bounds(facts, defaults, speed_limit_factor) if speed_limit_factor != 0 else []
        self.runaway = RunawayWatch(facts, self.model, self.parameter_names, self.speed_names,
                                     self.electrical_state_names, bounds, check_energy)
        self.singularities = SingularityWatch(facts.name, self.model, lambda: self.runaway.restarts)
        self._start = StartAssembly(robot, self.model, kinematics, self._stops)
        self._start.start(initial_positions)
        self._start.check_mass_matrix()
        self._effective_inertia: np.ndarray | None = None  # computed when first needed
        limits = dict(zip(self.actuated_joints, self.effort_limits))  # the clamps (stops of others: the rating)
        self.set_parameters(self._stops.tune(self._smallest_effective_inertia(), limits, dt) if facts.stops else {})
        self.servos = self._make_servos(servo_frequency, servo_feed_forward)
        self._sensors: dict[str, object] = {}  # IMU and force-torque sets, made when first read
        self.manifolds = ContactManifolds(facts, self.model)  # contact slots coal fills (mb_sim.sim.manifolds)
        self._set_down()
        self.state.mark_initial()
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

    @property
    def speed_bounds(self) -> dict[str, float]:
        """The runaway bound of each generalized speed [rad/s or m/s], by speed name (empty: no
        speed check); see :mod:`mb_sim.sim.runaway`."""
        return {bound.speed: bound.bound for bound in self.runaway.bounds}

    # -- state ----------------------------------------------------------------------------
    @property
    def time(self) -> float:
        """Sim time [s]."""
        return self.state.time

    @time.setter
    def time(self, value: float) -> None:
        self.state.time = value

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
        """Electrical states (motor currents, stiction anchors, in ``electrical_state_names`` order; a copy)."""
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
        n = len(self.actuated_joints)
        return self.model.buffers.inputs[n:n + len(self.motors)].copy()

    @property
    def dependent_coordinates(self) -> list[str]:
        """Coordinates the constraints determine (solved by ``set_state``, corrected by projection)."""
        return [self.coordinate_names[k] for k in self.model.dependent_coordinates]

    @property
    def joint_indices(self) -> dict[str, tuple[int, int]]:
        """Each one-DoF joint's (coordinate index in ``q``, speed index in ``u``), in the order of
        ``SimulationOutputs.joint_positions``."""
        return dict(self.robot_model.one_dof)

    @property
    def independent_joints(self) -> list[str]:
        """One-DoF joints whose position is not determined by the constraints: what to set."""
        return self.robot_model.independent_joints()

    def reset(self) -> None:
        """Back to the initial state (the first ``set_state`` or the neutral one), time 0."""
        self.state.reset()
        self.wrenches.clear()
        self.manifolds.clear()
        self.manifolds.refresh(self.time)
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
        b, one_dof = self.model.buffers, self.robot_model.one_dof
        new_q = b.q.copy() if q is None else vector(q, len(b.q), "q")
        new_u = b.u.copy() if u is None else vector(u, len(b.u), "u")
        given_q = assign_named(new_q, positions or {}, self.coordinate_names, one_dof, 0, "position")
        given_u = assign_named(new_u, velocities or {}, self.speed_names, one_dof, 1, "velocity")
        before = (b.q.copy(), b.u.copy())
        try:
            if q is not None or u is not None:
                b.q[:], b.u[:] = new_q, new_u
                self.project()
            else:
                self._solve(new_q, new_u, set(given_q), set(given_u))
            check_kept(given_q, b.q, self.coordinate_names, "position")
            check_kept(given_u, b.u, self.speed_names, "velocity")
        except (ValueError, SimulationError):
            b.q[:], b.u[:] = before
            raise
        if z is not None:
            b.z[:] = vector(z, len(b.z), "z")
        if time is not None:
            self.time = float(time)
        if z is None:
            self._set_down()
        else:
            self.manifolds.clear()
            self.manifolds.refresh(self.time)
        self.runaway.restart()
        if as_initial:
            self.state.mark_initial()

    @property
    def initial_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """``(q, u, z, time)`` that :meth:`reset` returns to (copies)."""
        q, u, z, t = self.state.initial
        return q.copy(), u.copy(), z.copy(), t

    def restore(self, q: Sequence[float], u: Sequence[float], z: Sequence[float], time: float,
                initial: tuple | None = None) -> None:
        """Put back a recorded state bit for bit, without projecting it (a replay); `initial`, a
        recorded :attr:`initial_state`, becomes what :meth:`reset` returns to."""
        b = self.model.buffers
        b.q[:], b.u[:], b.z[:] = (vector(v, len(a), name) for v, a, name in ((q, b.q, "q"), (u, b.u, "u"), (z, b.z, "z")))
        self.time = float(time)
        self.manifolds.clear()
        self.manifolds.refresh(self.time)
        if initial is not None:
            iq, iu, iz, it = initial
            self.state.initial = (vector(iq, len(b.q), "q"), vector(iu, len(b.u), "u"), vector(iz, len(b.z), "z"),
                                  float(it))
        self.runaway.restart()

    def _set_down(self) -> None:
        """The contacts found anew and every stiction anchor at its contact point (unstressed)."""
        self.manifolds.clear()
        self.manifolds.refresh(self.time)
        move_anchors(self.robot_model, self.model, self.time, to_contact_points=True)

    def _solve(self, q: np.ndarray, u: np.ndarray, held_q: set[int], held_u: set[int]) -> None:
        """Dependent coordinates, then speeds, solved with the held ones kept; the state is only
        changed if both succeed."""
        b = self.model.buffers
        start = b.q.copy()
        solved_q = self._constraints.kinematics.solve_positions(start, q, held_q, self.time)
        solved_u = self._constraints.kinematics.solve_speeds(solved_q, u, held_u, self.time)
        b.q[:], b.u[:] = solved_q, solved_u

    def project(self) -> None:
        """Project the state onto the enforced constraints (SimulationError where that fails)."""
        try:
            self.model.project_into(self.time)
        except FactorizationError as err:
            raise SimulationError(f"cannot satisfy the constraints: {FACTORIZATION_FAILURES.get(err.code, err)}",
                                  self.time) from None

    # -- named constraints ---------------------------------------------------------------------
    @property
    def constraints(self) -> list[str]:
        """Names of the robot's constraints (mimic joints, loop closures...), in derivation order."""
        return list(self._constraints.names)

    @property
    def enabled_constraints(self) -> list[str]:
        """Names of the constraints enforced now (the others are released)."""
        return self._constraints.enabled_names()

    def constraints_on(self, link: str) -> list[str]:
        """Names of the constraints acting on `link` (a loop joint at it, its rolling wheel, a mimic
        joint moving it), enabled or not: Karana's per-body query.  ValueError for an unknown link."""
        return self._constraints.on_link(link, self.facts.constraint_links)

    def constraint_system(self) -> ConstraintSystem:
        """Every constraint row at the current state: A, b, c (Karana's Gamma is -c), the
        multipliers and the generalized constraint forces (see :class:`ConstraintSystem`)."""
        self.outputs()  # the forward dynamics with the efforts applied: the multipliers
        return self._constraints.system()

    def constraint_enabled(self, name: str) -> bool:
        """Whether constraint `name` is enforced."""
        return self._constraints.enabled(name)

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
        if self.constraint_enabled(name) != bool(enabled):
            self.runaway.restart()
            self._constraints.set_enabled(name, enabled)

    def degrees_of_freedom(self) -> int:
        """Degrees of freedom where the robot is now: its speeds less the enforced constraint rows
        independent at the current configuration (seed 004's count, judged here: an umbrella has 1
        on its own branch and 2 on the fold with the runner at the hub)."""
        return self._constraints.degrees_of_freedom()

    # -- inputs and parameters ---------------------------------------------------------------
    def set_efforts(self, efforts: Mapping[str, float] | Sequence[float]) -> None:
        """Commanded efforts by joint name (others unchanged) or as a full sequence; each is
        clamped to the joint's URDF effort limit.  A joint driven by a motor takes a voltage
        instead (:meth:`set_voltages`)."""
        self._inputs.set_efforts(efforts)

    def set_voltages(self, voltages: Mapping[str, float] | Sequence[float]) -> None:
        """Motor voltages by motor name (others unchanged) or as a full sequence in ``motors``
        order; each is clamped to the motor's voltage limit."""
        self._inputs.set_voltages(voltages)

    def apply_wrench(self, link: str, force: Sequence[float] = (0.0, 0.0, 0.0),
                     torque: Sequence[float] = (0.0, 0.0, 0.0), frame: str = "world",
                     duration: float | None = None, replace: bool = False) -> None:
        """Push `link` from now for `duration` seconds (None: until :meth:`clear_wrenches`): a
        `force` [N] at the link's origin and a `torque` [N m], components in `frame` ("world" or
        the link's name: turned into the world's once, now); pushes add, or `replace` the link's.
        The link must take a wrench (``wrench_links``).  See :mod:`mb_sim.sim.wrenches`."""
        pose = (lambda: self.outputs(dynamics=False).link_poses[link][:3, :3]) if frame == link else None
        self.wrenches.add(link, force, torque, frame, pose, self.time, duration, replace)
        self.wrenches.write_at(self.time)

    def clear_wrenches(self, link: str | None = None) -> None:
        """End the pushes on `link` (None: on every link) now."""
        self.wrenches.clear(link)

    def set_parameters(self, values: Mapping[str, float]) -> None:
        """Change parameters by name (e.g. ``{"tool_m": 2.0}``) at run time."""
        params = self.model.buffers.params
        for name, value in values.items():
            if name not in self.parameter_names:
                raise ValueError(f"unknown parameter {name!r}")
            params[self.parameter_names.index(name)] = float(value)
        self.runaway.restart()

    def parameter(self, name: str) -> float:
        """Current value of a parameter."""
        return float(self.model.buffers.params[self.parameter_names.index(name)])

    def stiff_joints(self) -> dict[str, float]:
        """Joints whose damping or friction is too stiff for explicit RK4 at dt (joint -> largest
        decay rate times dt): the RK4 integrator takes their dissipation implicitly where it is
        stiff (:mod:`mb_sim.codegen.dissipation`); empty for the adaptive integrators."""
        rows = self.model.dissipation_rows
        if self.integrator != "rk4" or not len(rows):
            return {}
        joints = {s: j for j, (_, s) in self.robot_model.one_dof.items()}
        return stiff_joints(rows, joints, self.model.buffers.params, self._smallest_effective_inertia(), self.dt)

    def beyond_limits(self) -> dict[str, float]:
        """Joints beyond a URDF position limit by more than LIMIT_TOLERANCE, with how far (rad or m;
        positive above the upper limit, negative below the lower): what the stops did not hold."""
        return self._stops.beyond_limits(self.model.buffers.q)

    def _smallest_effective_inertia(self) -> np.ndarray:
        """Per generalized speed, min over configurations of 1 / (M^-1)_ii (computed once; see
        :func:`~mb_sim.sim.stops.smallest_effective_inertia`)."""
        if self._effective_inertia is None:
            self._effective_inertia = smallest_effective_inertia(self.robot_model, self.model)
        return self._effective_inertia

    def _make_servos(self, frequency: float, servo_feed_forward: bool | None) -> JointServos:
        """Servos for the effort-actuated one-DoF joints, default gains from their effective inertia;
        the feed-forward, where not said, on for robots without contacts."""
        if servo_feed_forward is None:
            servo_feed_forward = not self.model.contact_names
        one_dof = self.robot_model.one_dof
        joints = {name: (k, *one_dof[name]) for k, name in enumerate(self.actuated_joints) if name in one_dof}
        effective = self._smallest_effective_inertia() if joints else None
        inertia = [effective[one_dof[name][1]] for name in joints]
        limits = [self.effort_limits[self.actuated_joints.index(name)] for name in joints]
        return JointServos(self.model.buffers.servo, joints, limits, inertia, self.dt, frequency,
                           feed_forward=servo_feed_forward)

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
        if self.wrenches.active:  # the inputs as they are now (a push that ended: zero)
            self.wrenches.write_at(self.time)

    def failure(self, code: int, at: float | None = None, detail: str = "") -> SimulationError:
        """The error for failure `code` of the numeric model at the (restored) current state (see
        :func:`mb_sim.sim.failures.failure`); what the steppers raise."""
        return failure(self.robot_model, self.model, self.runaway, code, self.time, self.dt, at, detail)

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
        efforts = self.efforts  # before the evaluation: with servos, the forward dynamics are called
        return self._outputs.outputs(self.time, efforts, dynamics)

    def constraint_reactions(self) -> dict[str, ConstraintReaction]:
        """Each named constraint's reaction at the current state (see :class:`ConstraintReaction`)."""
        return self.outputs().reactions

    def constraint_errors(self) -> dict[str, ConstraintErrors]:
        """Position, velocity and acceleration residuals of each named constraint (Karana's
        poseError, velError, accelError), enabled or not."""
        return self._outputs.constraint_errors(self.time)

    # -- sensors ----------------------------------------------------------------------------------
    @property
    def imu_names(self) -> list[str]:
        """The robot's IMUs (``<mb_sim><imu>``, Gazebo ``<sensor type="imu">``)."""
        return self._sensor_set("imu").names

    def imu(self, name: str) -> ImuReading:
        """IMU `name`'s reading at the current state (see :mod:`mb_sim.sim.imu`); KeyError naming
        the IMUs for an unknown name."""
        return self._read_sensors("imu", [name])[name]

    def imus(self) -> dict[str, ImuReading]:
        """Every IMU's reading at the current state, by name."""
        return self._read_sensors("imu", None)

    def set_imu_noise(self, name: str, noise: ImuNoise | None) -> None:
        """Gaussian noise and biases (seeded) on IMU `name`'s readings from now on; None: exact."""
        self._sensor_set("imu").set_noise(name, noise)

    @property
    def force_torque_names(self) -> list[str]:
        """The robot's force-torque sensors (``<mb_sim><force_torque>``, Gazebo ``<sensor
        type="force_torque">``)."""
        return self._sensor_set("force_torque").names

    def force_torque(self, name: str) -> Wrench:
        """Sensor `name`'s ``(force, torque)`` at the current state: the wrench through its joint
        (see :mod:`mb_sim.sim.force_torque`); KeyError naming the sensors for an unknown name."""
        return self.force_torques([name])[name]

    def force_torques(self, names: list[str] | None = None) -> dict[str, Wrench]:
        """Readings of sensors `names` (all: None) at the current state, by name."""
        return self._read_sensors("force_torque", names)

    def noncontributing_forces(self) -> dict[str, float]:
        """The reactions components registered as noncontributing forces (seed 000's auxiliary
        data handler), by their symbol's name, at the current state (see :mod:`mb_sim.sim.reactions`)."""
        if self.servos.active:
            self.servos.refresh(self.time)
        if "reactions" not in self._sensors:
            self._sensors["reactions"] = NoncontributingForces(self.facts, self.model)
        return self._sensors["reactions"].read(self.time)

    def _sensor_set(self, kind: str):
        """The IMU or force-torque set of this run, made when first needed."""
        if kind not in self._sensors:
            self._sensors[kind] = (ImuSet if kind == "imu" else ForceTorqueSet)(self.facts, self.model)
        return self._sensors[kind]

    def _read_sensors(self, kind: str, names: list[str] | None) -> dict:
        """Readings with the servos' efforts refreshed first (as ``outputs`` does)."""
        if self.servos.active:
            self.servos.refresh(self.time)
        return self._sensor_set(kind).read(self.time, names)

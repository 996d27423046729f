"""Runaway detection: a simulation that has left physics behind, stopped while its state is finite.

The divergence check in the generated code stops a simulation once its state is NaN or infinite;
by then a run has often produced seconds of nonsense (a joint spinning at 1e6 rad/s, an energy
growing by orders of magnitude per step).  The simulator judges two criteria after each call of
the integrator (at most :data:`~mb_sim.sim.integrators.MAX_STEPS_PER_CALL` steps) and raises
:class:`~mb_sim.sim.errors.SimulationError` naming the speed at fault, leaving the (finite)
state where the runaway was found:

**Speed bounds.**  Every generalized speed has a bound, set by what the integration can
resolve, not by the robot's hardware: a joint turning more than :data:`MAX_TURN_PER_STEP` (1 rad)
in one step is beyond anything RK4 follows at that step (its stability ends at 2.8 rad per step
for an oscillation), so angular rates are bounded by ``MAX_TURN_PER_STEP / dt`` (1,000 rad/s at
1 ms) and linear velocities by that times the robot's size (its longest chain of joint offsets
and centres of mass from the root, at least :data:`ROBOT_SIZE_FLOOR`): a point of the robot
cannot move farther than that in a step while it turns less than a radian.  A URDF's velocity
limits are its motors' controllers', which the physics does not enforce: real motion exceeds them
(ARMAR-4's fingers reach 206 rad/s falling freely, as Pinocchio's trajectory does too; a lift in
free fall passes 9.81 m/s after a second), so they bound nothing by default; ``speed_limit_factor`` makes a one-DoF joint's bound that many times its URDF limit
(the smaller of the two) for a robot whose limits are physical.  What a runaway reaches is far
beyond either (it grows by orders of magnitude per step).

**Energy without input power.**  While nothing feeds power in (all efforts, voltages and wrenches zero, no
joint servo acting, no user force law, no spring-damper with a velocity offset, no component the
watch does not know, e.g. a user's load group) the robot's energy cannot rise:

    E = T + V + sum over stops of k d^2 / 2 + sum over motors of (n^2 J u^2 + L i^2) / 2

with T the kinetic energy of the links, V the potential energy of gravity, joint springs,
spring-dampers and contacts' elastic energy (the model's ``potential_energy``), d how far a joint is beyond its limit (its
stop's one-sided spring), J a motor's rotor inertia reflected through its gear n and L i^2 / 2
its inductor's energy.  Every other load dissipates (damping, friction, a stop's damper, a motor's
resistance) and the constraints do no work.  ``E`` is measured when the watch (re)starts: on
the first step after construction, ``set_state``, ``reset``, ``set_parameters``, a constraint
switch, or efforts and voltages going back to zero.  From then on ``T + V``, which is at most E
(the other terms are never negative), is compared with that start value each time at least
:data:`ENERGY_CHECK_STEPS` steps have passed: more than ``ENERGY_TOLERANCE`` of the energy scale
(the larger of ``|E|`` and the largest kinetic energy seen) plus :data:`ENERGY_FLOOR` above it
is a runaway: the integration is unstable (a stiffness too high for ``dt``).  Writing the
parameter or input buffers of the model directly bypasses the restarts: use the simulator's
setters.

**Contact energy.**  The springs of the contacts hold about ``f_n d / 2`` per penetrating feature;
more than :data:`CONTACT_ENERGY_HEIGHTS` times the work of lifting the whole robot by its size is
no contact a robot makes (Upkie started with its wheels below the ground held 33 kJ and was flung
545 m up, its energy conserved all along): a state set inside the ground or another body.  Judged
when the watch (re)starts and every :data:`ENERGY_CHECK_STEPS` steps, powered or not.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from typing import TYPE_CHECKING

from mb_sim.sim.errors import SimulationError
from mb_sim.sim.robot_facts import ROBOT_SIZE_FLOOR, RobotFacts, as_facts, robot_size, unknown_component

if TYPE_CHECKING:
    from mb_sim.codegen.numeric_model import NumericModel

__all__ = [
    "check_runaway_options",
    "ENERGY_CHECK_STEPS", "ENERGY_FLOOR", "ENERGY_TOLERANCE", "MAX_TURN_PER_STEP", "ROBOT_SIZE_FLOOR",
    "RunawayWatch", "SpeedBound", "resolution_bounds", "robot_size", "speed_bounds", "unknown_component",
]

#: The most a joint may turn in one step [rad] before the motion is beyond what the integration
#: resolves: angular rates are bounded by MAX_TURN_PER_STEP / dt (see the module docstring).
MAX_TURN_PER_STEP = 1.0
#: The energy may rise by this fraction of its scale (numerical error of a stable integration
#: is orders of magnitude below it; an unstable one multiplies the energy every step).
ENERGY_TOLERANCE = 1e-3
#: ... plus this much [J], so a robot at rest (energy scale zero) is not judged on rounding.
ENERGY_FLOOR = 1e-9
#: The contacts may hold at most this many times the work of lifting the robot by its size.
CONTACT_ENERGY_HEIGHTS = 10.0
#: The energy is judged at most once per this many steps (one output evaluation each time).
ENERGY_CHECK_STEPS = 100



@dataclass(frozen=True)
class SpeedBound:
    """The bound of one generalized speed: ``speed`` (its name) of joint ``joint``, ``bound`` in
    ``unit`` (rad/s or m/s), and ``origin``: where the bound comes from, for messages."""

    speed: str
    joint: str
    bound: float
    unit: str
    origin: str


def resolution_bounds(robot: RobotFacts, dt: float) -> tuple[float, float]:
    """The default bounds at step `dt`: angular rates [rad/s], linear velocities [m/s] (`robot`: its
    facts, or a :class:`mb_sim.model.Robot`)."""
    rotational = MAX_TURN_PER_STEP / dt
    return rotational, rotational * as_facts(robot).size


def speed_bounds(robot: RobotFacts, defaults: tuple[float, float], factor: float | None = None) -> list[SpeedBound]:
    """The bound of every generalized speed of `robot` (its facts, or a Robot), in speed order:
    `defaults` (rotational rad/s, translational m/s, e.g. :func:`resolution_bounds`) by the unit
    of the speed; with `factor`, a one-DoF joint with a URDF velocity limit gets the smaller of
    its default and `factor` times that limit."""
    facts = as_facts(robot)
    by_speed = {}
    for joint in facts.joints:
        limit = joint.velocity
        for speed, unit in zip(joint.speeds, joint.speed_units):
            rotational = unit == "rad/s"
            bound = defaults[0] if rotational else defaults[1]
            origin = (f"{MAX_TURN_PER_STEP:g} rad per step" + ("" if rotational else " times the robot's size")
                      + ": beyond what the integration resolves")
            if factor and len(joint.speeds) == 1 and math.isfinite(limit) and 0 < factor * limit < bound:
                bound, origin = factor * limit, f"{factor:g} x its URDF velocity limit {limit:g} {unit}"
            by_speed[speed] = SpeedBound(speed, joint.name, float(bound), unit, origin)
    return [by_speed[u] for u in facts.speed_names]


class RunawayWatch:
    """The speed bounds and the energy watch of one simulator (see the module docstring).

    The simulator calls :meth:`restart` whenever it changes the state, the parameters or the
    constraints other than by integrating, :meth:`begin` before integrating and :meth:`check`
    after each call of the integrator.

    Parameters
    ----------
    robot, model
        The robot's facts (or the robot) and its numeric model (whose buffers hold the state).
    parameter_names, speed_names, electrical_state_names
        As the simulator's.
    bounds
        Per speed (in ``speed_names`` order), or empty: no speed check.
    check_energy
        Whether to judge the energy at all.
    """

    def __init__(self, robot: RobotFacts, model: NumericModel, parameter_names: list[str], speed_names: list[str],
                 electrical_state_names: list[str], bounds: list[SpeedBound], check_energy: bool = True) -> None:
        robot = as_facts(robot)
        self._model, self._speed_names = model, speed_names
        b = model.buffers
        self._u, self._inputs, self._out, self._params, self._servo = b.u, b.inputs, b.out, b.params, b.servo
        self.bounds = bounds
        self._bound_values = np.array([s.bound for s in bounds]) if bounds else np.full(len(speed_names), np.inf)
        smallest = float(self._bound_values.min()) if len(self._bound_values) else math.inf
        self._smallest_squared = smallest * smallest  # |u|^2 below it: every speed within its bound
        layout = model.layout
        self._kinetic_at = layout.blocks["kinetic_energy"].offset
        self._potential_at = layout.blocks["potential_energy"].offset
        self._parameter_index = {name: k for k, name in enumerate(parameter_names)}
        self._stops, self._motors, self._springs = self._energy_terms(robot, speed_names, electrical_state_names)
        self._never = "the energy check is switched off" if not check_energy else self._never_judged(robot, model)
        self._blocked: str | None = self._never  # ... or with the current parameters
        self._reference: float | None = None  # E at the watch start; None: not watching
        self.restarts = 0
        self._start_time = 0.0
        self._kinetic_peak = 0.0
        self._pending = 0  # steps since the energy was last judged
        self._contact_pending = 0  # steps since the contacts' energy was last judged
        self._contacts_judged = False  # since the last restart
        self._contacts = layout.blocks["contact_states"] if model.contact_names else None
        self._contact_links = robot.contact_links
        self._contact_bound = CONTACT_ENERGY_HEIGHTS * robot.weight * robot.size

    # -- what the energy consists of ---------------------------------------------------------
    def _energy_terms(self, robot: RobotFacts, speed_names: list[str], electrical_state_names: list[str]) -> tuple:
        """Stops ``(joint, q index, k, lower, upper)``, motors ``(u index, n, J, z index, L)`` and
        springs ``(name, velocity offset, active)``, as parameter names (or numbers)."""
        coordinates = list(robot.coordinate_names)
        stops = [(stop.joint, coordinates.index(robot.joint(stop.joint).coordinates[0]), self._term(stop.stiffness),
                  self._term(stop.lower), self._term(stop.upper)) for stop in robot.stops]
        motors = [(speed_names.index(m.speed), self._term(m.gear_ratio), self._term(m.rotor_inertia),
                   None if m.current is None else electrical_state_names.index(m.current), self._term(m.inductance))
                  for m in robot.motors]
        springs = [(s.name, self._term(s.velocity_offset), self._term(s.active)) for s in robot.springs]
        return stops, motors, springs

    def _term(self, value) -> str | float | None:
        """A parameter's name (read from the buffers when needed), the exact number, or None."""
        if value is None:
            return None
        return str(value) if str(value) in self._parameter_index else float(value)

    def _value(self, term: str | float) -> float:
        return float(self._params[self._parameter_index[term]]) if isinstance(term, str) else term

    def _never_judged(self, robot: RobotFacts, model: NumericModel) -> str | None:
        """Why this robot's energy may rise without the inputs: a user force law or an unknown
        component; None if it cannot."""
        if model.force_laws:
            return f"spring-damper {model.force_laws[0][0]!r} follows a user force law"
        return robot.unjudged_energy

    def _fed(self) -> str | None:
        """Why the energy may rise with the current parameters (a velocity offset), or None."""
        for name, offset, active in self._springs:
            if self._value(active) != 0.0 and self._value(offset) != 0.0:
                return f"spring-damper {name!r} has a velocity offset"
        return None

    def energy(self, time: float) -> tuple[float, float]:
        """``(E, T)`` at the current state: the whole energy of the module docstring and the
        links' kinetic energy (evaluates the outputs)."""
        self._model.evaluate_into(time)
        b, out = self._model.buffers, self._out
        kinetic = out.item(self._kinetic_at)
        total = kinetic + out.item(self._potential_at)
        for _, index, k, lower, upper in self._stops:
            q = b.q.item(index)
            beyond = (max(0.0, q - self._value(upper)) if upper is not None else 0.0) + \
                     (max(0.0, self._value(lower) - q) if lower is not None else 0.0)
            total += 0.5 * self._value(k) * beyond * beyond
        for speed, n, inertia, current, inductance in self._motors:
            total += 0.5 * self._value(n) ** 2 * self._value(inertia) * b.u.item(speed) ** 2
            if current is not None:
                total += 0.5 * self._value(inductance) * b.z.item(current) ** 2
        return total, kinetic

    # -- the watch -----------------------------------------------------------------------------
    @property
    def energy_unwatched(self) -> str | None:
        """Why the energy is not judged now (a user force law, efforts not zero...); None: it is."""
        if self._blocked is not None:
            return self._blocked
        if self._servo[0] > 0:
            return "joint servos are active"
        return "inputs (efforts, voltages, wrenches) are not zero" if any(self._inputs.tolist()) else None

    def restart(self) -> None:
        """Forget the energy measured so far: the state, parameters or constraints were changed
        other than by integrating.  The next :meth:`begin` measures it again.  ``restarts``
        counts the calls (other watches compare nothing across one)."""
        self.restarts += 1
        self._reference = None
        self._contacts_judged = False
        if self._never is None:
            self._blocked = self._fed()

    def _powered(self) -> bool:
        """Whether power may be fed in: an effort or voltage not zero, or a joint servo acting."""
        return self._servo[0] > 0 or any(self._inputs.tolist())

    def begin(self, time: float) -> None:
        """Before integrating: measure the energy the watch starts from, if it needs one and
        nothing feeds power in (and judge the contacts' energy: raises SimulationError)."""
        if not self._contacts_judged and self._contacts is not None:
            self._contacts_judged = True
            self._model.evaluate_into(time)
            self._judge_contacts(time)
        if self._reference is None and self._blocked is None and not self._powered():
            self._reference, self._kinetic_peak = self.energy(time)
            self._start_time, self._pending = time, 0

    def _judge_contacts(self, time: float) -> None:
        """SimulationError if the contacts hold more energy than :data:`CONTACT_ENERGY_HEIGHTS`
        robot heights (the outputs evaluated at the current state)."""
        rows = self._model.layout.view(self._out, "contact_states")
        depth, force = np.maximum(rows[:, 6], 0.0), np.maximum(rows[:, 8], 0.0)
        energy = 0.5 * float(depth @ force)
        if not energy > self._contact_bound or self._contact_bound <= 0:
            return
        k = int(np.argmax(depth))
        link, other = self._contact_links[k] if k < len(self._contact_links) else ("?", None)
        into = f"link '{other}'" if other is not None else "the ground"
        raise SimulationError(
            f"runaway: the contacts hold about {energy:.4g} J (link '{link}' {depth[k]:.4g} m into {into}), more than "
            f"{CONTACT_ENERGY_HEIGHTS:g} times lifting the robot by its size ({self._contact_bound:.4g} J): a state set "
            "inside the ground or another body (set_state, a reset to such a start, a ground moved by set_parameters)",
            time, None)

    def check(self, time: float, steps: int) -> None:
        """After `steps` steps ending at `time`: raise SimulationError on a runaway."""
        u = self._u
        if u.dot(u) > self._smallest_squared and (error := self.speed_runaway(time)) is not None:
            raise error
        evaluated = False  # (one output evaluation serves the contacts' and the energy's judgements)
        if self._contacts is not None:
            self._contact_pending += steps
            if self._contact_pending >= ENERGY_CHECK_STEPS:
                self._contact_pending = 0
                self._model.evaluate_into(time)
                evaluated = True
                self._judge_contacts(time)
        if self._reference is None:
            return
        if self._powered():  # power fed in: judged again once the inputs are zero
            self._reference = None
            return
        self._pending += steps
        if self._pending < ENERGY_CHECK_STEPS:
            return
        self._pending = 0
        if not evaluated:
            self._model.evaluate_into(time)
        out = self._out
        kinetic = out.item(self._kinetic_at)
        energy = kinetic + out.item(self._potential_at)
        if kinetic > self._kinetic_peak:
            self._kinetic_peak = kinetic
        tolerance = ENERGY_TOLERANCE * max(abs(self._reference), self._kinetic_peak) + ENERGY_FLOOR
        if energy > self._reference + tolerance:  # (the reference stays: going on fails again)
            raise self._energy_runaway(time, energy, tolerance)

    def speed_runaway(self, time: float, then: str = "") -> SimulationError | None:
        """The runaway error if a speed of the current state is beyond its bound (the worst one
        named, five more listed), else None; `then` says what failed next (a divergence that
        followed within the same call)."""
        ratios = np.abs(self._u) / self._bound_values
        over = np.flatnonzero(ratios > 1.0)
        if not len(over):
            return None
        worst = [int(k) for k in over[np.argsort(-ratios[over])]]
        s, speed = self.bounds[worst[0]], abs(float(self._u[worst[0]]))
        which = f"joint {s.joint!r} speed" + (f" {s.speed}" if s.speed != f"{s.joint}_u" else "")
        others = ""
        if len(worst) > 1:
            names = ", ".join(self._speed_names[k] for k in worst[1:6])
            others = f"; also over their bounds: {names}" + (f" and {len(worst) - 6} more" if len(worst) > 6 else "")
        then = f"; then {then}" if then else ""
        return SimulationError(
            f"runaway: {which} {speed:.3g} {s.unit} exceeds its bound {s.bound:.3g} {s.unit} ({s.origin}){others}; "
            "the integration has left the physics: look for a very light link, a huge effort, or joints whose "
            "axes align with massless links between them (the mass matrix turns singular there whatever dt: give "
            "those links a rotational inertia); a smaller dt resolves faster motion, default_speed_bounds sets "
            f"the bounds{then}",
            time, s.speed)

    def _energy_runaway(self, time: float, energy: float, tolerance: float) -> SimulationError:
        """The error for an energy that rose to `energy` at `time`, naming the speed holding the
        largest share of the kinetic energy (diagonal terms of the mass matrix)."""
        b = self._model.buffers
        diagonal = self._model.layout.view(self._out, "mass_matrix").diagonal()
        shares = 0.5 * diagonal * b.u * b.u
        culprit = int(np.argmax(shares)) if len(shares) else None
        where = ""
        if culprit is not None and shares.sum() > 0:
            where = (f"; {self._speed_names[culprit]} ({b.u[culprit]:.3g}) holds "
                     f"{shares[culprit] / shares.sum():.0%} of the kinetic energy")
        reference = self._reference
        return SimulationError(
            f"runaway: the energy rose from {reference:.6g} J to {energy:.6g} J (by {energy - reference:.3g} J, "
            f"tolerance {tolerance:.3g} J) in {time - self._start_time:.3g} s with no power put in"
            f"{where}: the integration is unstable (a stiffness too high for the time step?); "
            "use a smaller dt or an adaptive integrator",
            time, None if culprit is None else self._speed_names[culprit])


def check_runaway_options(default_effort_limit: float | None, speed_limit_factor: float | None,
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

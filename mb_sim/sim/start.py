"""Where a run starts: the URDF's zero configuration (identity quaternions) with the initial
positions given written in, assembled (the constraints closed, on the branch nearest the values
given), every joint not given inside its position limits, at rest; refused where the mass matrix
is singular.  What moved that a user may expect to stay is said in one warning each
(:class:`~mb_sim.sim.errors.AssemblyWarning`, :class:`~mb_sim.sim.errors.JointLimitWarning`).
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np

from mb_sim.codegen.projection import PROJECTION_TOLERANCE
from mb_sim.sim.assembly import assemble
from mb_sim.sim.constraint_kinematics import ConstraintKinematics
from mb_sim.sim.errors import AssemblyError, AssemblyWarning, JointLimitWarning
from mb_sim.sim.robot_model import RobotModel
from mb_sim.sim.state import assign_named, kept, moved_given
from mb_sim.sim.stops import JointStops
from mb_sim.urdf.description import WORLD_LINK
from mb_sim.urdf.errors import URDFError
from mb_sim.urdf.inertia import SINGULAR

__all__ = ["ASSEMBLY_NOTED", "StartAssembly"]

#: Assembly names coordinates it moved by more than this [rad or m] (AssemblyWarning).
ASSEMBLY_NOTED = 1e-6
#: A start whose contacts press with more than this many times the robot's weight is inside the
#: ground (or its paired shapes overlap): at rest they carry the weight once, at their rest
#: penetration, which is a start like any other.
PRESSED_WEIGHTS = 3.0


class StartAssembly:
    """Builds the initial state of a run of `robot` in `model`'s buffers (at time 0)."""

    def __init__(self, robot: RobotModel, model, kinematics: ConstraintKinematics, stops: JointStops) -> None:
        self.robot, self.model, self.kinematics, self.stops = robot, model, kinematics, stops
        self.time = 0.0

    def start(self, initial_positions: Mapping[str, float] | None = None) -> None:
        """At rest, the zero configuration with `initial_positions` written in, assembled
        (:meth:`assemble`), joints not given moved inside their limits."""
        b = self.model.buffers
        b.q[:], b.u[:], b.z[:], b.inputs[:] = 0.0, 0.0, 0.0, 0.0
        b.q[list(self.model.projection.quaternion_starts)] = 1.0  # scalar parts: identity rotations
        zero = b.q.copy()
        start = zero.copy()
        given = assign_named(start, initial_positions or {}, self.robot.coordinate_names, self.robot.one_dof, 0,
                             "position")
        q = self.assemble(zero, start, given, initial_positions or {})
        b.q[:] = q = self.out_of_the_ground(self.inside_limits(q, given))
        b.u[:] = self.kinematics.solve_speeds(q, b.u.copy(), set(), self.time)

    def check_mass_matrix(self) -> None:
        """URDFError if the mass matrix is singular where the robot starts: joints that together
        move no mass or rotational inertia there (point-mass links turned about an axis through
        them, e.g. iCub's neck at zero), which the first step cannot survive."""
        model, b = self.model, self.model.buffers
        with kept(b) as (q, _):
            matrix = model.evaluate(q, np.zeros(model.n_u), b.inputs, b.params)["mass_matrix"]
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
        names = ", ".join(f"'{self.robot.speed_label(int(k))}'" for k in involved)
        raise URDFError(self.robot.facts.source, f"robot '{self.robot.name}'",
                        f"the mass matrix is singular where the robot starts: joint(s) {names} together move no "
                        "mass or rotational inertia in this configuration (a point mass turned about an axis "
                        "through it); give the links they move a rotational inertia, or start elsewhere "
                        "(initial_positions)")

    # -- the ground --------------------------------------------------------------------------
    def out_of_the_ground(self, q: np.ndarray) -> np.ndarray:
        """`q` with a robot whose collision features start below a ground lifted along its normal
        until the deepest touches (a floating base: one warning naming the link and the depth), or
        refused in one line naming the link (anything else: a fixed or planar base cannot be
        lifted); paired shapes overlapping at the start are warned about, naming both links."""
        deepest = self._deepest(q)
        if deepest is None:
            return q
        depth, link, other, normal = deepest
        if other is not None:
            warnings.warn(f"robot '{self.robot.name}': links '{link}' and '{other}' start overlapping by {depth:.4g} m "
                          "(paired shapes pressed into each other push apart at once): start them apart "
                          "(initial_positions)", AssemblyWarning, stacklevel=4)
            return q
        translation = self._floating_translation()
        if translation is None:
            raise URDFError(self.robot.facts.source, f"link '{link}'",
                            f"starts {depth:.4g} m inside the ground, and robot '{self.robot.name}' has no floating base "
                            "to lift: start it out of the ground (initial_positions) or lower the ground (<ground "
                            "height>)")
        lifted = q.copy()
        for _ in range(5):  # (a floating joint's axes may be turned from the world's: repeat what is left)
            lifted[translation] += depth * normal
            found = self._deepest(lifted, grounds_only=True)
            if found is None:
                break
            depth, normal = found[0], found[3]
        warnings.warn(f"robot '{self.robot.name}': starts inside the ground: link '{link}' {deepest[0]:.4g} m below it; "
                      f"lifted by that along the ground's normal (initial_positions of the floating base choose "
                      "another start)", AssemblyWarning, stacklevel=4)
        return lifted

    def _deepest(self, q: np.ndarray, grounds_only: bool = False) -> tuple | None:
        """The deepest contact feature at `q` (ground features first): ``(depth, link, other link or
        None, ground normal)``, or None where the contacts press with at most :data:`PRESSED_WEIGHTS`
        times the robot's weight (`grounds_only`, while lifting: where nothing penetrates)."""
        if not self.model.contact_names:
            return None
        b = self.model.buffers
        rows = self.model.evaluate(q, np.zeros(self.model.n_u), b.inputs, b.params, self.time)["contact_states"]
        links = self.robot.facts.contact_links
        found, pressed = None, PRESSED_WEIGHTS * self.robot.facts.weight
        for grounds in (True,) if grounds_only else (True, False):
            candidates = [k for k, (_, other) in enumerate(links) if (other is None) == grounds and rows[k, 6] > 1e-12]
            if candidates and (grounds_only or sum(rows[k, 8] for k in candidates) > pressed):
                k = max(candidates, key=lambda i: rows[i, 6])
                found = (float(rows[k, 6]), links[k][0], links[k][1], rows[k, 3:6].copy())
                break
        return found

    def _floating_translation(self) -> list[int] | None:
        """The coordinates of the floating joint out of the world (its translation), or None."""
        for joint in self.robot.facts.joints:
            if joint.type == "floating" and joint.parent == WORLD_LINK:
                return [self.robot.coordinate_names.index(name) for name in joint.coordinates[:3]]
        return None

    # -- joint limits --------------------------------------------------------------------------
    def inside_limits(self, q: np.ndarray, given: dict[int, float]) -> np.ndarray:
        """The assembled start `q` with every joint not given inside its position limits: at the
        nearest limit, the dependent coordinates solved (a JointLimitWarning names what moved).
        A robot started in its stops is thrown out of them; a given value beyond a limit is the
        user's choice and is kept (noted in the same line)."""
        outside = self.stops.outside_limits(q, given)
        moved = q
        if outside:
            independent = set(outside) - set(self.robot.dependent_coordinates)
            moved = self._solve_held(q, outside, set(given) | independent) if independent else q
            left = self.stops.outside_limits(moved, given)
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
            solved = self.kinematics.solve_positions(q, target, held, self.time)
        except ValueError:
            try:
                solved = assemble(self.kinematics, target, held, self.time, self.robot.angles).q
            except AssemblyError:
                return q
        if moved_given({k: target[k] for k in held}, solved):
            return q
        return solved

    def _limits_note(self, q: np.ndarray, moved: np.ndarray, given: dict[int, float]) -> None:
        """One JointLimitWarning: the joints moved into their limits (and by how much), those the
        constraints keep outside, the given values beyond a limit."""
        name = self.robot.coordinate_label
        parts = []
        shifted = [k for k in range(len(q)) if abs(moved[k] - q[k]) > ASSEMBLY_NOTED]
        if shifted:
            parts.append("the URDF's zero configuration lies outside the position limits: starting at the nearest "
                         "limit, moving " + ", ".join(f"{name(k)} by {moved[k] - q[k]:+.4g}" for k in shifted)
                         + " (rad or m)")
        stuck = self.stops.outside_limits(moved, given)
        if stuck:
            parts.append(", ".join(name(k) for k in stuck) + " cannot move inside its limits without moving an initial "
                         "position given or opening a constraint: it starts in its stop and is pushed out")
        limits = self.stops.position_limits()
        beyond = self.stops.outside_limits(moved, set(range(len(q))) - set(given))
        if beyond:
            parts.append("initial position " + ", ".join(
                f"{name(k)} = {given[k]:g} beyond its limits [{limits[k][0]:g}, {limits[k][1]:g}]" for k in beyond)
                + ": kept as given, the joint starts in its stop and is pushed out")
        if parts:
            warnings.warn(f"robot '{self.robot.name}': joint limits: " + "; ".join(parts), JointLimitWarning,
                          stacklevel=5)

    # -- closing the constraints ---------------------------------------------------------------
    def assemble(self, zero: np.ndarray, start: np.ndarray, given: dict[int, float],
                 named: Mapping[str, float]) -> np.ndarray:
        """Coordinates closing the constraints from `start` (`zero` with the `given` values, by
        index; `named` as the user named them, for messages).

        A URDF drawn closed (its zero configuration closes the constraints, to rounding: Gauss-Newton
        from there moves nothing by more than ASSEMBLY_NOTED) keeps its branch: the given values
        are reached from there by continuation, as ``set_state`` does.  Otherwise, or where that
        cannot keep them, the assembly of :func:`mb_sim.sim.assembly.assemble`: the given values
        held, the dependent coordinates solved (every coordinate not given where that is not
        enough), by Gauss-Newton, a homotopy and seeded starts, the closed configuration nearest
        the values given taken.  A given value the others determine (a rocker angle given with
        the crank's) is a guess choosing the assembly branch when there are several (an
        AssemblyWarning gives the value solved) and contradicts them when there is one
        (AssemblyError, as ``set_state``).  An AssemblyWarning also names what moved from the
        URDF's zero values without being dependent on the given ones (a loop not closed at zero
        with nothing given, an independent joint freed).
        """
        kinematics, t = self.kinematics, self.time
        try:
            q = kinematics.solve_positions(zero, zero, set(), t)
            if np.abs(q - zero).max(initial=0.0) <= ASSEMBLY_NOTED:  # drawn closed (to rounding)
                q = kinematics.solve_positions(q, start, set(given), t) if given else q
                if not moved_given(given, q):
                    self._assembly_note(q, zero, given, "continuation")
                    return q
        except ValueError:
            pass
        try:
            assembly = assemble(kinematics, start, set(given), t, self.robot.angles)
        except AssemblyError as err:
            listed = ", ".join(f"{name} = {value:g}" for name, value in named.items())
            where = f"the initial positions {listed}" if given else "the URDF's zero configuration"
            raise AssemblyError(f"no configuration closing the constraints found near {where}: smallest residual "
                                f"{err.residual:.3g} in {err.row}; give initial positions near one that closes them "
                                "(Simulator initial_positions, mb-sim simulate --initial JOINT=VALUE, the node's "
                                "initial_positions.JOINT)", err.residual, err.row) from None
        moved = moved_given(given, assembly.q)
        if moved and assembly.closed == 1:
            k = moved[0]
            raise AssemblyError(f"position {given[k]:g} of {self.robot.coordinate_names[k]!r} contradicts the "
                                f"constraints (consistent value {assembly.q[k]:.12g}); leave it out to have it solved")
        self._assembly_note(assembly.q, zero, given, assembly.method)
        return assembly.q

    def _assembly_note(self, q: np.ndarray, zero: np.ndarray, given: dict[int, float], method: str) -> None:
        """One AssemblyWarning naming what assembly moved that a user may expect to stay: with
        nothing given and a loop joint not closed at zero, every coordinate moved; else given
        values that chose the branch, and independent coordinates not given that moved."""
        name = self.robot.coordinate_label
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
            guessed = moved_given(given, q)
            if guessed:
                parts.append("initial position " + ", ".join(f"{name(k)} = {given[k]:g}" for k in guessed)
                             + " is determined by the other values given: it chose the assembly branch, on which it is "
                             + ", ".join(f"{q[k]:.6g}" for k in guessed))
            freed = [k for k in moved if k not in set(self.robot.dependent_coordinates)]
            if freed:
                parts.append(", ".join(f"{name(k)} moved by {q[k] - zero[k]:+.4g}" for k in freed)
                             + " from the URDF's zero (not given): the constraints do not close with it there")
        if parts:
            warnings.warn(f"robot '{self.robot.name}': assembly: " + "; ".join(parts), AssemblyWarning, stacklevel=5)

    def _open_loops_at(self, q: np.ndarray) -> str:
        """The loop joints the configuration `q` does not close, with the largest residual, or ''."""
        b = self.model.buffers
        phi = self.model.evaluate(q, np.zeros(self.model.n_u), b.inputs, b.params, self.time)["phi"][:, 0]
        names = self.robot.constraint_names
        open_rows = [k for k in range(len(phi)) if names[k] in self.robot.facts.loop_joints
                     and abs(phi[k]) > PROJECTION_TOLERANCE and b.enabled[k] != 0.0]
        if not open_rows:
            return ""
        loops = list(dict.fromkeys(names[k] for k in open_rows))
        listed = ", ".join(f"'{loop}'" for loop in loops)
        return (f"loop joint{'s' if len(loops) > 1 else ''} {listed} (residual "
                f"{max(abs(phi[k]) for k in open_rows):.3g})")

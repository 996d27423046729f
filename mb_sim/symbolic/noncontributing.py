"""Noncontributing forces (seed 000's auxiliary data handler): reactions a component asks to see.

A component registers a force ``s a`` at a point P with an auxiliary speed (SymBRiM's
``add_noncontributing_force``): the speed moves P and every point positioned from P, the side S,
along ``a``.  A reaction acts on S and its opposite on the rest at P, so it does no work on the
real speeds: the equations of motion are Kane's as before (SymPy's single force at P would add
``s a . v_P`` to them wherever P moves), and reactions at points deeper inside S act on S in
equal and opposite pairs.  Kane's equation of the auxiliary speed then gives the reaction:

    sum_j [P_j = P] (a . a_j) s_j = a . (sum_{links of S} m (a_G)  -  forces applied on S)

The links of S are those whose origin is in S (with every point fixed in them); the forces are the
applied loads at P or at points fixed in those links (gravity, efforts of prismatic joints across
S's border, springs, pushes...), torques do no work along ``a``.  Per force the generated outputs
give the right side's u'-dependent part ``J u'`` (``noncontributing_jacobians``, 1 x n_u) and one
row of ``noncontributing_states``: the u'-free part b (loads included), ``a`` in world
components (contact forces on S's links are taken off at run time from ``contact_states``) and the
coupling row ``a . a_j [P_j = P]`` (several reactions across one cut), so the reactions solve one small linear system
(:mod:`mb_sim.sim.reactions`).  Robots with constraint rows are refused: their multipliers' share
of a reaction is not derived.
"""
from __future__ import annotations

from sympy import Matrix, zeros
from sympy.physics.mechanics import Force

from mb_sim.model import ComponentError, Robot
from mb_sim.model.base import applied_loads
from mb_sim.symbolic.composite import ZERO3, dot
from mb_sim.symbolic.force_torque import side_wrench
from mb_sim.symbolic.temporaries import Temporaries

__all__ = ["noncontributing_outputs", "noncontributing_sides", "NONCONTRIBUTING_STATE_FIXED_COLUMNS"]

#: Columns of a noncontributing_states row before the coupling row: b, then the axis (world).
NONCONTRIBUTING_STATE_FIXED_COLUMNS = 4


def noncontributing_sides(robot: Robot) -> list[tuple[object, set, list[str]]]:
    """Per noncontributing force: the force, the points of its side S and the links of S
    (parents first).  ComponentError when the robot has constraint rows."""
    handler = robot.auxiliary_handler
    forces = handler.noncontributing_forces
    if forces and (robot.system.holonomic_constraints or robot.system.nonholonomic_constraints):
        names = ", ".join(str(f.symbol) for f in forces)
        raise ComponentError(f"robot '{robot.name}': noncontributing forces ({names}) on a robot with constraints "
                             "(loop joints, mimic joints, rolling wheels): their multipliers' share of a reaction "
                             "is not derived (the constraints' own reactions: Simulator.constraint_reactions())")
    sides = []
    for force in forces:
        points = handler.subtree(force.point)
        links = [name for name, link in robot.links.items() if link.origin in points]
        sides.append((force, points, links))
    return sides


def _tops(robot: Robot, links: list[str]) -> list[list[str]]:
    """`links` (closed under children, parents first) split into subtrees, each parents first."""
    inside, parent_of = set(links), {j.joint_description.child: j.joint_description.parent
                                     for j in robot.joints.values()}
    groups: dict[str, list[str]] = {}
    top_of: dict[str, str] = {}
    for name in links:
        parent = parent_of.get(name)
        top = top_of[parent] if parent in inside else name
        top_of[name] = top
        groups.setdefault(top, []).append(name)
    return list(groups.values())


def noncontributing_outputs(robot: Robot, kane, n_u: int, temps: Temporaries) -> tuple[Matrix, Matrix]:
    """``(noncontributing_jacobians, noncontributing_states)`` (n_nc x n_u, n_nc x (4 + n_nc)) of
    the robot's noncontributing forces, from the derivation's recursion (module docstring)."""
    sides = noncontributing_sides(robot)
    n = len(sides)
    jacobians, states = zeros(n, n_u), zeros(n, NONCONTRIBUTING_STATE_FIXED_COLUMNS + n)
    if not n:
        return jacobians, states
    rec, root = kane.recursion, robot.root_link.name
    axes = [temps.matrix(rec.vector_in_link(force.axis, root), f"axis of noncontributing force {force.symbol} (world)")
            for force, _, _ in sides]
    reactions = {id(load) for load in robot.auxiliary_handler.loads}
    forces = [load for load in applied_loads(robot.system) if isinstance(load, Force) and id(load) not in reactions]
    for i, (force, points, links) in enumerate(sides):
        a = axes[i]
        inertia, bias = zeros(3, n_u), ZERO3
        for group in _tops(robot, links):
            J, b = side_wrench(robot, kane.links, n_u, group, ZERO3, temps, f"noncontributing force {force.symbol}")
            inertia, bias = inertia + J[0:3, :], bias + b[0, 0:3].T
        applied = ZERO3
        inside = set(links)
        for load in forces:
            if load.point is force.point or rec.locate(load.point)[0] in inside:  # (a joint's reaction point
                # is the parent's, even where it is positioned from the child)
                applied = applied + rec.vector_in_link(load.vector, root)
        applied = temps.matrix(applied, f"forces applied on the side of noncontributing force {force.symbol} (world)")
        for k in range(n_u):
            jacobians[i, k] = dot(a, inertia[:, k])
        states[i, 0] = dot(a, bias - applied)
        states[i, 1:4] = a.T
        for j, (other, _, _) in enumerate(sides):
            if other.point is force.point:  # reactions deeper inside S act on S in pairs: they cancel
                states[i, NONCONTRIBUTING_STATE_FIXED_COLUMNS + j] = dot(a, axes[j])
    return jacobians, states

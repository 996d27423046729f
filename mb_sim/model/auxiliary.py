"""Auxiliary data handler: noncontributing forces (reactions to report) registered by any component.

Shared from the root with every component, as in SymBRiM.  A component registers a force on a
point along an axis with an auxiliary speed; the handler adds ``u_aux * axis`` to the velocity of
that point and of every point positioned from it (its subtree in the position graph), adds the
auxiliary speed and the force to the root system, and reports the auxiliary velocity of any point
so that constraints can account for it.
"""
from __future__ import annotations

from dataclasses import dataclass

from sympy import Symbol
from sympy.physics.mechanics import Force, Point, ReferenceFrame, System, Vector

__all__ = ["AuxiliaryDataHandler", "NoncontributingForce"]


@dataclass(frozen=True)
class NoncontributingForce:
    """A force ``symbol * axis`` at ``point`` made visible by the auxiliary speed ``speed``."""

    point: Point
    axis: Vector
    speed: Symbol
    symbol: Symbol


class AuxiliaryDataHandler:
    """Computes auxiliary velocities and noncontributing forces for the whole component tree."""

    def __init__(self, inertial_frame: ReferenceFrame, inertial_point: Point) -> None:
        self.inertial_frame = inertial_frame
        self.inertial_point = inertial_point
        self.noncontributing_forces: list[NoncontributingForce] = []
        self.loads: list[Force] = []  # the forces of noncontributing_forces, once added to the system

    def add_noncontributing_force(self, point: Point, axis: Vector, speed: Symbol, symbol: Symbol) -> None:
        """Register the force ``symbol * axis`` at `point`, with auxiliary speed `speed`."""
        self.noncontributing_forces.append(NoncontributingForce(point, axis, speed, symbol))

    def _position_tree_parents(self) -> dict[Point, Point | None]:
        """Each point's parent when walking the position graph out from the inertial point."""
        parents: dict[Point, Point | None] = {self.inertial_point: None}
        frontier = [self.inertial_point]
        while frontier:
            point = frontier.pop(0)
            for neighbour in point._pos_dict:  # SymPy keeps the position graph here
                if neighbour not in parents:
                    parents[neighbour] = point
                    frontier.append(neighbour)
        return parents

    def subtree(self, point: Point) -> set[Point]:
        """`point` and every point positioned from it (what its auxiliary speed moves)."""
        parents = self._position_tree_parents()
        inside = {point}
        for other in parents:
            chain, current = [], other
            while current is not None and current not in inside:
                chain.append(current)
                current = parents.get(current)
            if current is not None:
                inside.update(chain)
        return inside

    def get_auxiliary_velocity(self, point: Point) -> Vector:
        """Sum of ``u_aux * axis`` of every registered point `point` is positioned from."""
        parents = self._position_tree_parents()
        ancestors, current = set(), point
        while current is not None:
            ancestors.add(current)
            current = parents.get(current)
        velocity = Vector(0)
        for force in self.noncontributing_forces:
            if force.point in ancestors:
                velocity += force.speed * force.axis
        return velocity

    def apply_auxiliary_velocities(self, system: System) -> None:
        """End of define kinematics: add auxiliary velocities to points and speeds to `system`."""
        if not self.noncontributing_forces:
            return
        frame = self.inertial_frame
        extras = {point: self.get_auxiliary_velocity(point) for point in self._position_tree_parents()}
        extras = {point: extra for point, extra in extras.items() if extra != Vector(0)}
        # Velocities without the auxiliary parts first: each may be derived from its neighbours'.
        velocities = {point: point.vel(frame) for point in extras}
        for point, extra in extras.items():
            point.set_vel(frame, velocities[point] + extra)
        system.add_auxiliary_speeds(*[f.speed for f in self.noncontributing_forces])

    def apply_noncontributing_forces(self, system: System) -> None:
        """End of define loads: add the registered forces to `system` (kept in ``loads``: a
        reaction does no work on the real speeds, so the equations of motion leave them out)."""
        self.loads = [Force(f.point, f.symbol * f.axis) for f in self.noncontributing_forces]
        system.add_loads(*self.loads)

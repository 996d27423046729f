"""Compliant contact between the collision shapes of two links (``<contact_pair>``).

Each point-like feature of one link's shapes (a sphere, a capsule's end spheres, a box's corners,
a mesh's support points; :func:`~mb_sim.model.contact.contact_features`) touches each sphere and
capsule of the other link: with ``C`` the target's centre (a capsule's nearest point on its axis
segment), ``P`` the feature's centre, the normal ``n = (P - C) / |P - C|`` (from the target to the
feature), the penetration ``d = r_feature + r_target - |P - C|`` and the contact point
``x = P - r_feature n``, the force on the feature's link at x is the ground's law (Hunt-Crossley
normal force, regularized Coulomb friction) with the velocity of x on the feature's link
relative to the target's; the target's link gets the opposite force at x.  Each feature-target
pair is guarded by one test of the two shapes' bounding spheres.

Each touching pair is checked once (a sphere against a sphere from link1's side; a sphere against
a capsule, not the capsule's ends against the sphere); two capsules' ends are checked against the
other's axis both ways, so where their end caps touch each other the force counts twice.  Not
covered: a box or a mesh against a box or a mesh (their faces; only spheres and capsules are
targets), a cylinder's rims, and two capsules crossing between their ends.
"""
from __future__ import annotations

import numpy as np
from sympy import Float, Matrix, Max, Min, sqrt
from sympy.physics.mechanics import System

from mb_sim.model.base import ConnectionBase
from mb_sim.model.contact import (
    ContactFeature, _guard, bounding_sphere, contact_features, contact_force, contact_parameters, default_parameters,
)
from mb_sim.urdf import CollisionDescription, ContactPairDescription

__all__ = ["BodyContact", "TARGET_SHAPES"]

#: Shapes another link's features touch.
TARGET_SHAPES = ("sphere", "capsule")
#: Regularization of the centre distance (m): the normal stays defined where centres meet.
DISTANCE_REGULARIZATION = 1e-9


class BodyContact(ConnectionBase):
    """``<contact_pair>``: the shapes of `link1` and `link2` touch (see the module docstring).

    ``checks`` lists ``(feature shape, feature, target shape)`` in order; ``features`` names each
    check's feature (rows of ``contact_states``).
    """

    def __init__(self, description: ContactPairDescription, shapes: list[CollisionDescription], mass: float,
                 gravity: float, lightest: float | None = None) -> None:
        super().__init__(description.name)
        self.pair_description = description
        self._defaults = default_parameters(mass, gravity, description.stiffness, description.exponent, lightest,
                                            description.friction)
        by_link = {link: [s for s in shapes if s.link == link] for link in (description.link1, description.link2)}
        self.checks: list[tuple[CollisionDescription, ContactFeature, CollisionDescription]] = []
        for second, (own, other) in enumerate(((description.link1, description.link2),
                                               (description.link2, description.link1))):
            for shape in by_link[own]:
                for feature in contact_features(shape):
                    if feature.axis is None:
                        self.checks += [(shape, feature, target) for target in by_link[other]
                                        if _checked(shape.shape, target.shape, bool(second))]
        self.features = [ContactFeature(f"{f.name}@{t.link}/{t.index}", f.centre, f.radius) for _, f, t in self.checks]
        self.rows: list[Matrix] = []

    def resolve(self, links: dict, joints: dict) -> None:
        """Nothing to look up: shapes name their links (checked by the URDF reader)."""

    def _define_objects(self) -> None:
        self._system = System()
        pair = self.pair_description
        value = lambda given, key: given if given is not None else self._defaults[key]  # noqa: E731
        contact_parameters(self, {"stiffness": value(pair.stiffness, "stiffness"),
                                  "damping": value(pair.damping, "damping"), "exponent": pair.exponent,
                                  "friction": pair.friction,
                                  "stick_velocity": value(pair.stick_velocity, "stick_velocity")},
                           f"contact pair '{self.name}' ({pair.link1}, {pair.link2})")

    def kinematic_loads(self, link_state, reference: Matrix, temps) -> list[tuple[str, Matrix, Matrix]]:
        """``(link, force, torque about reference)`` on both links of every check (see
        :meth:`mb_sim.model.contact.GroundContact.kinematic_loads`); sets ``rows``."""
        loads, self.rows = [], []
        for shape, feature, target in self.checks:
            label = f"{shape.label} {feature.name.split('/')[-1]} on {target.label}"
            R1, p1, v1, w1 = link_state(shape.link)
            R2, p2, v2, w2 = link_state(target.link)
            (c1, r1), (c2, r2) = bounding_sphere(contact_features(shape)), bounding_sphere(contact_features(target))
            gap = (p1 + R1 * Matrix(c1)) - (p2 + R2 * Matrix(c2))
            clearance = temps.scalar(_dot(gap, gap) - Float(r1 + r2) ** 2,
                                     f"bounding spheres of {label}: squared distance less squared reach")
            guarded = _guard(clearance < 0, temps)

            P = guarded(p1 + R1 * Matrix(feature.centre), f"centre of {label} (world)")
            C, radius = self._target_centre(target, R2, p2, P, guarded, label)
            offset = P - C
            distance = guarded(Matrix([sqrt(_dot(offset, offset) + Float(DISTANCE_REGULARIZATION) ** 2)]),
                               f"centre distance of {label}")[0]
            n = guarded(offset / distance, f"contact normal of {label} (world)")
            x = guarded(P - Float(feature.radius) * n, f"contact point of {label} (world)")
            d = guarded(Matrix([Float(feature.radius + radius) - distance]), f"penetration of {label}")[0]
            touching = _guard(d > 0, temps)
            arms = [touching(R.T * (x - p), f"contact point of {label} from {side}'s origin (link axes)")
                    for R, p, side in ((R1, p1, shape.link), (R2, p2, target.link))]
            speeds = [touching(R * (v + _cross(w, arm)), f"velocity of the contact point on {side} (world)")
                      for R, v, w, arm, side in ((R1, v1, w1, arms[0], shape.link), (R2, v2, w2, arms[1], target.link))]
            relative = touching(speeds[0] - speeds[1], f"relative velocity at the contact point of {label} (world)")
            rate, f_n, f = contact_force(self, n, d, relative, touching, label)
            torque = _cross(x - reference, f)
            loads += [(shape.link, f, torque), (target.link, -f, -torque)]
            self.rows.append(Matrix([[*x, *n, d, rate, f_n, *f]]))
        return loads

    def signature(self) -> str:
        """What the derivation reads besides the parameters: every check's feature and target."""
        return repr((self.name, [(s.link, f.centre, f.radius, t.link, t.shape, t.size, np.round(t.xyz, 15).tolist(),
                                  np.round(t.rotation, 15).tolist(), bounding_sphere(contact_features(s))[1])
                                 for s, f, t in self.checks]))

    @staticmethod
    def _target_centre(target: CollisionDescription, R: Matrix, p: Matrix, P: Matrix, guarded,
                       label: str) -> tuple[Matrix, float]:
        """The target's point nearest P on its centre (sphere) or axis segment (capsule), and its radius."""
        centre = p + R * Matrix([float(v) for v in target.xyz])
        if target.shape == "sphere":
            return centre, float(target.size[0])
        half = float(target.size[1]) / 2
        axis = R * Matrix([float(v) for v in np.asarray(target.rotation)[:, 2]])
        along = Min(Max(_dot(P - centre, axis), -half), half)
        return guarded(centre + along * axis, f"nearest point on the axis of {label} (world)"), float(target.size[0])


def _checked(shape: str, target: str, second: bool) -> bool:
    """Whether the features of a `shape` are checked against a `target` shape: once per touching
    pair (a sphere against a sphere from link1's side only; a capsule's end spheres against a
    sphere never, the sphere against the capsule covers it)."""
    if target not in TARGET_SHAPES:
        return False
    if shape == "sphere" and target == "sphere":
        return not second
    return not (shape == "capsule" and target == "sphere")


def _dot(a: Matrix, b: Matrix):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a: Matrix, b: Matrix) -> Matrix:
    return Matrix([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])

"""Compliant contact between the collision shapes of two links (``<contact_pair>``).

Each point-like feature of one link's shapes (a sphere, a capsule's end spheres, a box's corners,
a mesh's support points; :func:`~mb_sim.model.contact.contact_features`) touches each sphere and
capsule of the other link: with ``C`` the target's centre (a capsule's nearest point on its axis
segment), ``P`` the feature's centre, the normal ``n = (P - C) / |P - C|`` (from the target to the
feature), the penetration ``d = r_feature + r_target - |P - C|`` and the contact point
``x = P - r_feature n``, the force on the feature's link at x is the ground's law (Hunt-Crossley
normal force, regularized Coulomb friction) with the velocity of x on the feature's link
relative to the target's; the target's link gets the opposite force at x.  Friction is held by a
sticking point per check, anchored on the target's link (:mod:`mb_sim.model.stiction`; the
default of ``<contact_pair>``, ``stiction="false"`` gives the regularized law; ``<self_collision>``
is regularized).  Each feature-target pair is guarded by one test of the two shapes' bounding spheres.

Each touching pair is checked once (a sphere against a sphere from link1's side; a sphere against
a capsule, not the capsule's ends against the sphere); two capsules' ends are checked against the
other's axis both ways, so where their end caps touch each other the force counts twice.  Not
covered: a box or a mesh against a box or a mesh (their faces; only spheres and capsules are
targets), a cylinder's rims, and two capsules crossing between their ends.

``<self_collision>`` makes one such component for all its link pairs (fixed when the model is
built: :func:`mb_sim.urdf.collision.self_collision_pairs`), sharing one parameter set.  The broad
phase: a link pair sits behind one test of its links' bounding spheres, each shape pair behind one
of its shapes', so a far-apart pair costs one distance test per evaluation.
"""
from __future__ import annotations

import numpy as np
from sympy import Float, Matrix, Max, Min, sqrt

from sympy import Expr, S

from mb_sim.model.base import ConnectionBase, component_system
from mb_sim.model.contact import ContactFeature, _guard, bounding_sphere, contact_features
from mb_sim.model.contact_law import (
    DEFAULT_PENETRATION, REFERENCE_STEP, STIFFEST_FREQUENCY, ContactLaw, contact_energy, contact_force,
    contact_parameters, default_parameters, stiction_parameters,
)
from mb_sim.model.manifold import SLOTS, SlotGroup, slot_loads, slot_parameters
from mb_sim.model.parameters import parameter
from mb_sim.model.stiction import AnchorFields, anchor_states, anchor_update, define_stiction, plain, stiction_force
from mb_sim.urdf import CollisionDescription, ContactPairDescription
from mb_sim.urdf.description import SelfCollisionDescription

__all__ = ["BodyContact", "TARGET_SHAPES"]

#: Shapes another link's features touch.
TARGET_SHAPES = ("sphere", "capsule")
#: Regularization of the centre distance (m): the normal stays defined where centres meet.
DISTANCE_REGULARIZATION = 1e-9


class BodyContact(AnchorFields, ConnectionBase):
    """``<contact_pair>`` (or ``<self_collision>``): the shapes of each pair of links touch (see
    the module docstring).

    `pairs` are the link pairs (default the description's ``link1``, ``link2``); `carried` the
    mass of the lighter body of the pair that moves (its defaults' damping and friction are sized
    for its weight, not the robot's: a 100 g box on a table beside an 18 kg arm); all share one
    parameter set, named after the component.  ``groups`` holds per link pair its shape pairs
    ``(shape of link1, shape of link2, checks)``; ``checks`` lists every ``(feature's shape,
    feature, target shape)`` in that order; ``features`` names each check's feature (rows of ``contact_states``).
    """

    def __init__(self, description: ContactPairDescription | SelfCollisionDescription,
                 shapes: list[CollisionDescription], mass: float,
                 gravity: float, lightest: float | None = None,
                 pairs: list[tuple[str, str]] | None = None, carried: float | None = None) -> None:
        super().__init__(description.name)
        self.pair_description = description
        self.pairs = list(pairs) if pairs is not None else [(description.link1, description.link2)]
        stiffness = _stiffness(description, mass, gravity, lightest)
        mass = carried or mass  # (a pair of an object: damped and held for the weight it carries)
        self._defaults = default_parameters(mass, gravity, stiffness, description.exponent, lightest,
                                            description.friction)
        manifold = isinstance(description, ContactPairDescription)  # <self_collision> stays closed-form
        self._lightest = lightest if manifold else None  # (<self_collision> keeps its law)
        self.groups = [(pair, _shape_pairs(pair, shapes, manifold)) for pair in self.pairs]
        self.checks: list[tuple[CollisionDescription, ContactFeature, CollisionDescription]] = [
            check for _, group in self.groups for _, _, checks in group for check in checks]
        self.features = [ContactFeature(f"{f.name}@{t.link}/{t.index}", f.centre, f.radius) for _, f, t in self.checks]
        found = [(pair, pairs) for pair in self.pairs if manifold for pairs in [_manifold_pairs(pair, shapes)] if pairs]
        self.slot_groups = [SlotGroup(k, *_plane_last(pair, pairs), getattr(description, "points", SLOTS))
                            for k, (pair, pairs) in enumerate(found)]
        self.features += [ContactFeature(name, (0.0, 0.0, 0.0), 0.0)
                          for group in self.slot_groups for name in group.feature_names()]
        self.stiction = bool(getattr(description, "stiction", False))
        self._defaults.update(stiction_parameters(mass, gravity, stiffness, description.exponent, lightest))
        self.rows: list[Matrix] = []
        self._no_anchors()  # stiction's fields (anchors in the target link's axes)

    def resolve(self, links: dict, joints: dict) -> None:
        """Nothing to look up: shapes name their links (checked by the URDF reader)."""

    def _define_objects(self) -> None:
        self._system = component_system()
        pair = self.pair_description
        value = lambda given, key: given if given is not None else self._defaults[key]  # noqa: E731
        owner = (f"contact pair '{self.name}' ({pair.link1}, {pair.link2})" if len(self.pairs) == 1
                 and self.pairs[0] == (pair.link1, pair.link2) else f"self_collision '{self.name}'")
        contact_parameters(self, {"stiffness": value(pair.stiffness, "stiffness"),
                                  "damping": value(pair.damping, "damping"), "exponent": pair.exponent,
                                  "friction": pair.friction,
                                  "stick_velocity": value(pair.stick_velocity, "stick_velocity")}, owner)
        for group in self.slot_groups:
            slot_parameters(self, group)
        stiction = ()
        if self.stiction:
            stiction = self.k_t, self.c_t = define_stiction(self, {"stiction_stiffness": pair.stiction_stiffness,
                                              "stiction_damping": pair.stiction_damping}, self._defaults, owner)
            self.anchors = anchor_states(self, self.features, "target link")
            self.anchor_frictions = [self.mu] * len(self.features)
            self.anchor_frames = [target.link for _, _, target in self.checks] + [
                group.link2 for group in self.slot_groups for _ in range(group.count)]
        limit = S.Zero
        if self._lightest:  # a light object squeezed far beyond its weight: the viscous part stays within RK4's reach
            limit = parameter(self, "damping_limit", self._lightest / REFERENCE_STEP,
                              f"{owner}: most viscous damping k d^p c at a point [N s/m]", self._descriptions)
        self.law_of_pair = ContactLaw(self.k, self.c, self.p, self.mu, self.v_s, *stiction, c_max=limit)

    def elastic_energy(self) -> Expr:
        """The energy stored in the contacts (after the derivation's contact loads)."""
        return contact_energy(self.law_of_pair, [row[6] for row in self.rows]) + self.stiction_energy

    def kinematic_loads(self, link_state, reference: Matrix, temps) -> list[tuple[str, Matrix, Matrix]]:
        """``(link, force, torque about reference)`` on both links of every shape pair (see
        :meth:`mb_sim.model.contact.GroundContact.kinematic_loads`); sets ``rows``.

        The broad phase: a link pair with several shape pairs sits behind one test of the two
        links' bounding spheres (of their shapes in the pair), and each shape pair behind one test
        of its two shapes' bounding spheres, so links far apart cost one distance test."""
        loads, self.rows, self.anchor_rates, self.anchor_updates, self.stiction_energy = [], [], {}, {}, S.Zero
        self._anchor_iter = iter(self.anchors)
        for (link1, link2), group in self.groups:
            outer = None
            if len(group) > 1:
                spheres = [_link_sphere(group, side) for side in (0, 1)]
                clearance = _clearance(link_state, (link1, link2), spheres, None, temps,
                                       f"bounding spheres of links {link1} and {link2}")
                outer = _guard(clearance < 0, temps)
            for first, second, checks in group:
                loads += self._shape_pair_loads(link_state, reference, temps, outer, first, second, checks)
        for group in self.slot_groups:
            anchors = [next(self._anchor_iter) for _ in range(group.count)] if self.anchors else None
            found, energy = slot_loads(group, self.law_of_pair, link_state, reference, temps, _guard,
                                       anchors, self.rows, self.anchor_updates, self.anchor_rates)
            loads += found
            self.stiction_energy += energy
        return loads

    @property
    def row_links(self) -> list[tuple[str, str]]:
        """Per row of ``contact_states``: the link its force acts on and the one getting the opposite."""
        return [(shape.link, target.link) for shape, _, target in self.checks] + [
            (group.link1, group.link2) for group in self.slot_groups for _ in range(group.count)]

    def _shape_pair_loads(self, link_state, reference: Matrix, temps, outer, first: CollisionDescription,
                          second: CollisionDescription, checks: list) -> list:
        """The loads of two shapes' checks on their links, behind the test of their bounding spheres
        (itself computed only where the links' test, `outer`, passes)."""
        label = f"{first.label} and {second.label}"
        spheres = [bounding_sphere(contact_features(s)) for s in (first, second)]
        clearance = _clearance(link_state, (first.link, second.link), spheres, outer, temps,
                               f"bounding spheres of {label}")
        guarded = _guard(clearance < 0, temps)
        motion, frames = {}, {}  # per link: R, p, origin velocity and angular velocity (world)
        for link in (first.link, second.link):
            R, p, v, w = link_state(link)
            frames[link] = (R, p)
            motion[link] = (R, p, guarded(R * v, f"velocity of {link}'s origin (world)"),
                            guarded(R * w, f"angular velocity of {link} (world)"))
        geometry = [self._check_geometry(check, motion, guarded) for check in checks]  # one run: one test
        force, torque = Matrix([0, 0, 0]), Matrix([0, 0, 0])  # on the first shape's link
        law = self.law_of_pair
        for (shape, feature, target), (name, x, n, d) in zip(checks, geometry):
            (_, p1, v1, w1), (_, p2, v2, w2) = motion[shape.link], motion[target.link]
            touching = _guard(d > 0, temps)
            relative = touching((v1 + _cross(w1, x - p1)) - (v2 + _cross(w2, x - p2)),
                                f"relative velocity at the contact point of {name} (world)")
            anchor = next(self._anchor_iter, None)
            rate, f_n, f = contact_force(law, n, d, relative, touching, name, friction=anchor is None)
            if anchor is not None:
                f = self._held(law, (shape, feature, target), anchor, (x, n, d, f_n, relative), motion, frames,
                               touching, guarded.temps, name)
            sign = 1 if shape is first else -1
            force += sign * f
            torque += sign * touching(_cross(x - reference, f), f"moment of the contact force of {name} "
                                                                 "about the reference")
            self.rows.append(Matrix([[*x, *n, d, rate, f_n, *f]]))
        force = guarded(force, f"contact force of {label} on {first.link}")
        torque = guarded(torque, f"contact torque of {label} on {first.link} about the reference point")
        return [(first.link, force, torque), (second.link, -force, -torque)]

    def _held(self, law: ContactLaw, check: tuple, anchor: Matrix, contact: tuple, motion: dict, frames: dict,
              touching, temps, name: str) -> Matrix:
        """The force of a check held by its anchor (fixed in the target's link; the stiction law),
        the anchor's rate (a rolling feature's contact point moving over its material relative to
        the target: ``R^T ((w - w_t) x (c - x))``) and its value after a step."""
        shape, feature, target = check
        x, n, d, f_n, relative = contact
        (R1, p1, _, w1), (R2, p2, _, w2) = motion[shape.link], motion[target.link]
        if feature.radius:
            centre = p1 + R1 * Matrix(feature.centre)
            rolling = touching(R2.T * _cross(w1 - w2, centre - x),
                               f"motion of the contact point of {name} over its feature's link (target axes)")
            self.anchor_rates.update(zip(anchor, rolling))
        else:
            self.anchor_rates.update(dict.fromkeys(anchor, S.Zero))
        a = Matrix([plain(s) for s in anchor])
        held = touching(p2 + R2 * a, f"anchor of {name} (world)")
        slide = touching(relative - _dot(n, relative) * n, f"slip velocity of {name} (world)")
        f, energy = stiction_force(law, x, held, slide, n, f_n, touching, name)
        self.stiction_energy += energy
        self.anchor_updates.update(anchor_update(law, anchor, x, n, d, f_n, frames[target.link], temps, name))
        return f

    def signature(self) -> str:
        """What the derivation reads besides the parameters: every check's feature and target."""
        return repr((self.name, [(s.link, f.centre, f.radius, t.link, t.shape, t.size, np.round(t.xyz, 15).tolist(),
                                  np.round(t.rotation, 15).tolist(), bounding_sphere(contact_features(s))[1])
                                 for s, f, t in self.checks],
                     [(g.link1, g.link2, g.count) for g in self.slot_groups]))

    def _check_geometry(self, check: tuple, motion: dict, guarded) -> tuple:
        """Label, contact point x, normal n (world) and penetration d of one check, as temporaries
        under its shape pair's test."""
        shape, feature, target = check
        name = f"{shape.label} {feature.name.split('/')[-1]} on {target.label}"
        (R1, p1, _, _), (R2, p2, _, _) = motion[shape.link], motion[target.link]
        P = guarded(p1 + R1 * Matrix(feature.centre), f"centre of {name} (world)")
        C, radius = self._target_centre(target, R2, p2, P, guarded, name)
        offset = P - C
        distance = guarded(Matrix([sqrt(_dot(offset, offset) + Float(DISTANCE_REGULARIZATION) ** 2)]),
                           f"centre distance of {name}")[0]
        n = guarded(offset / distance, f"contact normal of {name} (world)")
        x = guarded(P - Float(feature.radius) * n, f"contact point of {name} (world)")
        d = guarded(Matrix([Float(feature.radius + radius) - distance]), f"penetration of {name}")[0]
        return name, x, n, d

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


def _shape_pairs(pair: tuple[str, str], shapes: list[CollisionDescription], manifold: bool = False) -> list[
        tuple[CollisionDescription, CollisionDescription, list]]:
    """The shape pairs of a link pair that have checks: ``(shape of link1, shape of link2,
    checks)``, each check ``(feature's shape, feature, target)`` (see :func:`_checked`); with
    `manifold` only pairs of two round shapes (the others touch through slots)."""
    by_link = [[s for s in shapes if s.link == link] for link in pair]
    found = []
    for first in by_link[0]:
        for second in by_link[1]:
            if manifold and not _round_pair(first, second):
                continue
            checks = [(shape, feature, target)
                      for is_second, (shape, target) in enumerate(((first, second), (second, first)))
                      if _checked(shape.shape, target.shape, bool(is_second))
                      for feature in contact_features(shape) if feature.axis is None]
            if checks:
                found.append((first, second, checks))
    return found


def _stiffness(description, mass: float, gravity: float, lightest: float | None) -> float | None:
    """The pair's stiffness: the given one, else the robot's weight over the default penetration
    (:func:`~mb_sim.model.contact_law.default_parameters`) but at most what keeps its lightest
    contact point's frequency below STIFFEST_FREQUENCY over REFERENCE_STEP (a 100 g box in an
    18 kg arm's gripper: RK4 at 1 ms would leave the physics on the arm's weight's stiffness)."""
    if description.stiffness is not None or not lightest or description.exponent != 1.0:
        return description.stiffness
    weight = max(mass, 1e-3) * max(gravity, 1e-3)
    return min(weight / DEFAULT_PENETRATION, lightest * (STIFFEST_FREQUENCY / REFERENCE_STEP) ** 2)


def _round_pair(first: CollisionDescription, second: CollisionDescription) -> bool:
    """Whether two shapes touch in closed form (spheres and capsules) rather than through slots."""
    return first.shape in TARGET_SHAPES and second.shape in TARGET_SHAPES


def _manifold_pairs(pair: tuple[str, str], shapes: list[CollisionDescription]) -> list[
        tuple[CollisionDescription, CollisionDescription]]:
    """The shape pairs of a link pair the collision library checks (not both round)."""
    by_link = [[s for s in shapes if s.link == link] for link in pair]
    return [(first, second) for first in by_link[0] for second in by_link[1] if not _round_pair(first, second)]


#: How flat a shape's surface is where it touches: a slot's plane goes on the flatter link.
_FLATNESS = {"box": 3, "mesh": 2, "cylinder": 1, "capsule": 0, "sphere": 0}


def _plane_last(pair: tuple[str, str], shape_pairs: list) -> tuple[str, str, list]:
    """The link pair with the link whose shapes are flatter last (a slot's plane is on link2: a
    plane on a rolling or faceted body would turn with it and push), and its shape pairs so."""
    flatness = [max(_FLATNESS[p[side].shape] for p in shape_pairs) for side in (0, 1)]
    if flatness[0] > flatness[1]:
        return pair[1], pair[0], [(second, first) for first, second in shape_pairs]
    return pair[0], pair[1], shape_pairs


def _link_sphere(group: list, side: int) -> tuple[np.ndarray, float]:
    """A sphere (link frame) holding every shape of one link (`side` 0: link1) in the shape pairs
    `group`."""
    return bounding_sphere([f for pair in group for f in contact_features(pair[side])])


def _clearance(link_state, links: tuple[str, str], spheres: list, outer, temps, meaning: str):
    """Squared distance less squared reach of two spheres fixed in `links` (negative: they
    overlap), a temporary; computed only where `outer` passes, if given (zero elsewhere)."""
    (R1, p1, _, _), (R2, p2, _, _) = link_state(links[0]), link_state(links[1])
    (c1, r1), (c2, r2) = spheres
    gap = (p1 + R1 * Matrix(c1)) - (p2 + R2 * Matrix(c2))
    value = _dot(gap, gap) - Float(r1 + r2) ** 2
    if outer is None:
        return temps.scalar(value, f"{meaning}: squared distance less squared reach")
    return outer(Matrix([value]), f"{meaning}: squared distance less squared reach")[0]


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

"""Compliant contact of the links' collision shapes with a ground plane.

Each collision shape is a set of contact *features*, each of which touches the plane at one point
``x`` (world axes): a sphere (centre c, radius r) at ``c - r n``, a capsule as the spheres at its
ends, a box and a mesh at their corners and hull support points (spheres of radius 0), a cylinder
at the lowest point of each end's rim, ``e - r t / |t|`` with ``t = n - (n . a) a`` (a the axis;
``|t|`` regularized by :data:`RIM_REGULARIZATION` where the cylinder stands on an end).  With the
plane ``n . x = h``, the penetration ``d = h - n . x`` and its rate ``d' = -n . v`` (v the velocity
of the material point at x), the force on the link at x is

    f_n = k d^p max(1 + c d', 0)     for d > 0, else 0     (Hunt and Crossley)
    f   = f_n n - mu f_n v_t / sqrt(|v_t|^2 + v_s^2)       (v_t = v - (n . v) n)

so ``|f_t| <= mu f_n`` always (the friction cone) and friction is Coulomb's beyond the stick
velocity v_s, viscous below it.  All of h, k, c, p, mu, v_s are parameters of the ground (symbols,
changeable at run time); defaults from the robot (:func:`default_parameters`).

The forces are written in terms of the links' kinematics by the derivation
(:meth:`GroundContact.kinematic_loads`), each shape's behind one test of its bounding sphere
against the plane, so a shape far from the ground costs one dot product per evaluation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from sympy import Expr, Float, Integer, Matrix, Piecewise, S, sqrt
from sympy.physics.mechanics import System

from mb_sim.model.base import ConnectionBase
from mb_sim.model.parameters import parameter
from mb_sim.urdf import CollisionDescription, GroundDescription

__all__ = ["CONTACT_STATE", "ContactFeature", "GroundContact", "RIM_REGULARIZATION", "contact_features",
           "default_parameters"]

#: Columns of a contact feature's row in the ``contact_states`` output (world axes, SI units).
CONTACT_STATE = ("x", "y", "z", "nx", "ny", "nz", "penetration", "penetration_rate", "normal_force",
                 "fx", "fy", "fz")
#: Regularization of a cylinder rim's lowest point where its axis is along the normal.
RIM_REGULARIZATION = 1e-6
#: The penetration the default stiffness gives under the robot's whole weight on one point [m].
DEFAULT_PENETRATION = 2e-3
#: The damping ratio the default damping gives the robot bouncing on that point at that penetration.
DEFAULT_DAMPING_RATIO = 1.0
#: The default stick velocity [m/s]: friction's slope mu f_n / v_s keeps RK4 stable at 1 ms.
DEFAULT_STICK_VELOCITY = 0.01


@dataclass(frozen=True)
class ContactFeature:
    """One point-like part of a shape, in its link's frame: a sphere (``axis`` None; radius 0 for a
    corner) or a cylinder end's rim (centre, unit axis, radius)."""

    name: str
    centre: tuple[float, float, float]
    radius: float
    axis: tuple[float, float, float] | None = None


def contact_features(shape: CollisionDescription) -> list[ContactFeature]:
    """The features of one collision shape (link-frame numbers)."""
    R, o = np.asarray(shape.rotation, float), np.asarray(shape.xyz, float)
    base = f"{shape.link}/{shape.index}"

    def at(local, radius, name, axis=None):
        centre = tuple(float(v) for v in o + R @ np.asarray(local, float))
        return ContactFeature(f"{base}/{name}", centre, float(radius),
                              None if axis is None else tuple(float(v) for v in R @ np.asarray(axis, float)))

    if shape.shape == "sphere":
        return [at((0, 0, 0), shape.size[0], "sphere")]
    if shape.shape == "capsule":
        r, half = shape.size[0], shape.size[1] / 2
        return [at((0, 0, -half), r, "end0"), at((0, 0, half), r, "end1")]
    if shape.shape == "cylinder":
        r, half = shape.size[0], shape.size[1] / 2
        return [at((0, 0, -half), r, "rim0", (0, 0, 1)), at((0, 0, half), r, "rim1", (0, 0, 1))]
    if shape.shape == "box":
        hx, hy, hz = (s / 2 for s in shape.size)
        corners = [(sx * hx, sy * hy, sz * hz) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
        return [at(c, 0.0, f"corner{i}") for i, c in enumerate(corners)]
    return [at(p, 0.0, f"point{i}") for i, p in enumerate(np.asarray(shape.points, float))]


def bounding_sphere(features: list[ContactFeature]) -> tuple[np.ndarray, float]:
    """A sphere (link frame) holding every feature of a shape: centre and radius."""
    centres = np.array([f.centre for f in features])
    centre = (centres.min(axis=0) + centres.max(axis=0)) / 2
    radius = max(float(np.linalg.norm(np.array(f.centre) - centre)) + f.radius for f in features)
    return centre, radius


def default_parameters(mass: float, gravity: float) -> dict[str, float]:
    """Stiffness, damping and stick velocity for a robot of total `mass` [kg] under `gravity`
    [m/s^2]: its weight on one point penetrates :data:`DEFAULT_PENETRATION`, bouncing there is
    damped at :data:`DEFAULT_DAMPING_RATIO` (``k d0 c = 2 zeta sqrt(k m)``)."""
    mass, gravity = max(mass, 1e-3), max(gravity, 1e-3)
    stiffness = mass * gravity / DEFAULT_PENETRATION
    damping = 2 * DEFAULT_DAMPING_RATIO * math.sqrt(mass / stiffness) / DEFAULT_PENETRATION
    return {"stiffness": stiffness, "damping": damping, "stick_velocity": DEFAULT_STICK_VELOCITY}


class GroundContact(ConnectionBase):
    """``<ground>``: the plane every collision shape of the robot's moving links touches.

    Parameters (symbols, named ``<ground>_height`` ...): height h, stiffness k, damping c,
    exponent p, friction mu, stick velocity v_s (see the module docstring).  ``shapes`` are the
    collision shapes; ``features`` their contact features in order (rows of ``contact_states``).
    After the derivation ``rows`` holds the ``contact_states`` row of each feature.
    """

    def __init__(self, description: GroundDescription, shapes: list[CollisionDescription], mass: float,
                 gravity: float) -> None:
        super().__init__(description.name)
        self.ground_description = description
        self.shapes = list(shapes)
        self.features = [f for shape in self.shapes for f in contact_features(shape)]
        self._defaults = default_parameters(mass, gravity)
        self.rows: list[Matrix] = []

    def resolve(self, links: dict, joints: dict) -> None:
        """Nothing to look up: shapes name their links (checked by the URDF reader)."""

    def _define_objects(self) -> None:
        self._system = System()
        g, d, name = self.ground_description, self._descriptions, self.name
        value = lambda given, key: given if given is not None else self._defaults[key]  # noqa: E731
        values = (("height", g.height, "height of the plane along its normal [m]"),
                  ("stiffness", value(g.stiffness, "stiffness"), "contact stiffness k [N/m^p]"),
                  ("damping", value(g.damping, "damping"), "Hunt-Crossley damping c [s/m]"),
                  ("exponent", g.exponent, "exponent p of the penetration"),
                  ("friction", g.friction, "Coulomb friction coefficient mu"),
                  ("stick_velocity", value(g.stick_velocity, "stick_velocity"),
                   "stick velocity v_s of the regularized friction [m/s]"))
        self.height, self.k, self.c, self.p, self.mu, self.v_s = (
            parameter(self, key, v, f"ground '{name}': {meaning}", d, keep_zero=True) for key, v, meaning in values)
        self.normal = Matrix([Integer(int(v)) if float(v).is_integer() else Float(float(v)) for v in g.normal])

    def shape_features(self) -> list[tuple[CollisionDescription, list[ContactFeature]]]:
        """Each shape with its features, in order."""
        return [(shape, contact_features(shape)) for shape in self.shapes]

    def kinematic_loads(self, link_state, reference: Matrix, temps) -> list[tuple[str, Matrix, Matrix]]:
        """``(link, force, torque about reference)`` (world components) of every shape.

        `link_state(name)` gives a link's world rotation R, origin position p, origin velocity and
        angular velocity (world components); `temps` names intermediate quantities (``scalar``,
        ``matrix``).  Every quantity of a shape is guarded by one test of its bounding sphere, so
        the generated code skips a shape far from the plane (and its quantities read zero there).
        Sets ``rows``: per feature its ``contact_states`` row.
        """
        loads, self.rows = [], []
        for shape, features in self.shape_features():
            R, p, v, w = link_state(shape.link)
            centre, radius = bounding_sphere(features)
            label = shape.label
            clearance = temps.scalar(self._dot(self.normal, p + R * Matrix(centre)) - self.height - Float(radius),
                                     f"clearance of the bounding sphere of {label} from ground '{self.name}'")
            near = clearance < 0

            def guarded(expr: Matrix, meaning: str) -> Matrix:
                return temps.matrix(expr.applyfunc(lambda e: Piecewise((e, near), (S.Zero, True))), meaning)

            force, torque = Matrix([0, 0, 0]), Matrix([0, 0, 0])
            for feature in features:
                x, d, rate, f_n, f = self._feature_force(feature, R, p, v, w, guarded, f"{label} {feature.name}")
                force += f
                torque += _cross(x - reference, f)
                exact_x, exact_d = self._contact_point(feature, R, p)
                self.rows.append(Matrix([[*exact_x, *self.normal, exact_d, rate, f_n, *f]]))
            loads.append((shape.link, guarded(force, f"contact force on {label}"),
                          guarded(torque, f"contact torque on {label} about the reference point")))
        return loads

    def _contact_point(self, feature: ContactFeature, R: Matrix, p: Matrix) -> tuple[Matrix, Expr]:
        """The feature's point nearest the plane (world) and its penetration."""
        n = self.normal
        centre = p + R * Matrix(feature.centre)
        if feature.axis is None:
            x = centre - Float(feature.radius) * n if feature.radius else centre
        else:
            a = R * Matrix(feature.axis)
            t = n - self._dot(n, a) * a
            x = centre - Float(feature.radius) * t / sqrt(self._dot(t, t) + Float(RIM_REGULARIZATION) ** 2)
        return x, self.height - self._dot(n, x)

    def _feature_force(self, feature: ContactFeature, R: Matrix, p: Matrix, v: Matrix, w: Matrix, guarded,
                       label: str) -> tuple[Matrix, Expr, Expr, Expr, Matrix]:
        """Contact point, penetration, its rate, normal force and force vector of one feature (each
        a guarded temporary)."""
        n = self.normal
        x, d = self._contact_point(feature, R, p)
        x = guarded(x, f"contact point of {label} (world)")
        velocity = guarded(v + _cross(w, x - p), f"velocity of the contact point of {label} (world)")
        d = guarded(Matrix([self.height - self._dot(n, x)]), f"penetration of {label}")[0]
        rate = guarded(Matrix([-self._dot(n, velocity)]), f"penetration rate of {label}")[0]
        pressing = 1 + self.c * rate
        f_n = guarded(Matrix([Piecewise((self.k * d ** self.p * pressing, (d > 0) & (pressing > 0)), (S.Zero, True))]),
                      f"normal contact force of {label}")[0]
        tangential = velocity - self._dot(n, velocity) * n
        scale = guarded(Matrix([self.mu * f_n / sqrt(self._dot(tangential, tangential) + self.v_s ** 2)]),
                        f"friction force per slip speed of {label}")[0]
        f = guarded(f_n * n - scale * tangential, f"contact force of {label} (world)")
        return x, d, rate, f_n, f

    @staticmethod
    def _dot(a: Matrix, b: Matrix) -> Expr:
        return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]

    def signature(self) -> str:
        """What the derivation reads besides the parameters: the plane's normal and the features."""
        return repr((self.name, tuple(self.normal), [(f.name, f.centre, f.radius, f.axis) for f in self.features]))


def _cross(a: Matrix, b: Matrix) -> Matrix:
    return Matrix([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])

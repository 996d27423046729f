"""Compliant contact of the links' collision shapes with a ground plane.

Each collision shape is a set of contact *features*, each of which touches the plane at one point
``x`` (world axes): a sphere (centre c, radius r) at ``c - r n``, a capsule as the spheres at its
ends, a box and a mesh at their corners and hull support points (spheres of radius 0), a cylinder
at the lowest point of each end's rim, ``e - r t / max(|t|, s)`` with ``t = n - (n . a) a`` (a the
axis, ``|t|`` the sine of its tilt from the normal; ``s`` = :data:`RIM_TILT`: within that tilt of
standing on an end the point moves linearly from the rim to the end's centre, a restoring torque
RK4 resolves at 1 ms, where a sharper one made a standing cylinder walk).  With the
plane ``n . x = h``, the penetration ``d = h - n . x`` and its rate ``d' = -n . v`` (v the velocity
of the material point at x), the force on the link at x is

    f_n = k d^p (1 + c d')     where d > 0 and 1 + c d' > 0, else 0     (Hunt and Crossley)

and friction holds each contact point to an *anchor* (stiction, the default: exact Coulomb, see
:mod:`mb_sim.model.stiction`), or with ``<ground stiction="false">`` is the regularized law
``f_t = -mu f_n v_t / sqrt(|v_t|^2 + v_s^2)`` (:mod:`mb_sim.model.contact_law`, which also has the
linear damping, rolling and spinning friction a URDF may give a link).  All of h, k, c, p, mu,
v_s, k_t, c_t are parameters of the ground (symbols, changeable at run time), defaults from the
robot (:func:`~mb_sim.model.contact_law.default_parameters`); a link's own parameters
(``<mb_sim><contact>``, Gazebo's and pybullet's tags) are symbols of their own.

The forces are written in terms of the links' kinematics by the derivation
(:meth:`GroundContact.kinematic_loads`), each shape's behind one test of its bounding sphere
against the plane, so a shape far from the ground costs one dot product per evaluation.
"""
from __future__ import annotations

from sympy import Abs, Expr, Float, Integer, Matrix, Piecewise, S, sqrt

from mb_sim.model.anchors import updated_anchors  # noqa: F401  (the rule's NumPy twin, here too)
from mb_sim.model.base import ConnectionBase, component_system
from mb_sim.model.contact_law import (  # (the defaults' constants re-exported: their names here before)
    DEFAULT_DAMPING_RATIO, DEFAULT_PENETRATION, DEFAULT_STICK_VELOCITY, REFERENCE_STEP, SUPPORTS, ContactLaw,
    contact_energy, contact_force, contact_parameters, default_parameters, link_laws, rolling_torque,
    stiction_parameters,
)
from mb_sim.model.parameters import parameter
from mb_sim.model.stiction import AnchorFields, anchor_states, anchor_update, define_stiction, plain, stiction_force
from mb_sim.urdf import CollisionDescription, GroundDescription
from mb_sim.urdf.contact_geometry import ContactFeature, bounding_sphere, contact_features

__all__ = ["CONTACT_STATE", "ContactFeature", "DEFAULT_DAMPING_RATIO", "DEFAULT_PENETRATION", "DEFAULT_STICK_VELOCITY",
           "GroundContact", "REFERENCE_STEP", "RIM_TILT", "SUPPORTS", "contact_energy", "contact_features",
           "default_parameters", "stiction_parameters", "updated_anchors"]

#: Columns of a contact feature's row in the ``contact_states`` output (world axes, SI units).
CONTACT_STATE = ("x", "y", "z", "nx", "ny", "nz", "penetration", "penetration_rate", "normal_force",
                 "fx", "fy", "fz")
#: Within this clearance [m] of the ground a shape's anchors follow its contact points (parked
#: there, ready for its first touch); farther off they are not computed.  A shape closing more than
#: this in one step (50 m/s at 1 ms) starts touching with its anchors where they were left.
ANCHOR_MARGIN = Float(0.05)
#: Sine of the tilt below which a cylinder's contact point moves from its rim towards its end's
#: centre (about 1.1 degrees): a restoring stiffness m g r / RIM_TILT standing on an end.
RIM_TILT = 0.02


class GroundContact(AnchorFields, ConnectionBase):
    """``<ground>``: the plane every collision shape of the robot's moving links touches.

    Parameters (symbols, named ``<ground>_height`` ...): height h, stiffness k, damping c,
    exponent p, friction mu, stick velocity v_s, with stiction k_t and c_t (see the module
    docstring); `links` gives a link's own values (by
    :class:`~mb_sim.urdf.description.LinkContactDescription` key: symbols
    ``<ground>_<link>_<key>``).  ``shapes`` are the collision shapes; ``features`` their contact
    features in order (rows of ``contact_states``).  After the derivation ``rows`` holds the
    ``contact_states`` row of each feature.
    """

    def __init__(self, description: GroundDescription, shapes: list[CollisionDescription], mass: float,
                 gravity: float, lightest: float | None = None, links: dict | None = None) -> None:
        super().__init__(description.name)
        self.ground_description = description
        self.shapes = list(shapes)
        self.features = [f for shape in self.shapes for f in contact_features(shape)]
        self.link_values = {link: values for link, values in (links or {}).items()
                            if link in {shape.link for shape in self.shapes}}
        #: Per link with values of its own: where they came from, what was not simulated (for listings).
        self.link_notes: dict[str, tuple[str, ...]] = {}
        self._defaults = default_parameters(mass, gravity, description.stiffness, description.exponent, lightest,
                                            description.friction)
        self._defaults.update(stiction_parameters(mass, gravity, description.stiffness, description.exponent, lightest))
        self.rows: list[Matrix] = []
        self.row_laws: list[ContactLaw] = []  # per row, the law of its link
        self._no_anchors()  # stiction's fields (anchors in world axes)

    def resolve(self, links: dict, joints: dict) -> None:
        """Nothing to look up: shapes name their links (checked by the URDF reader)."""

    def _define_objects(self) -> None:
        self._system = component_system()
        g, d, name = self.ground_description, self._descriptions, self.name
        value = lambda given, key: given if given is not None else self._defaults[key]  # noqa: E731
        self.height = parameter(self, "height", g.height, f"ground '{name}': height of the plane along its normal [m]",
                                d, keep_zero=True)
        contact_parameters(self, {"stiffness": value(g.stiffness, "stiffness"), "damping": value(g.damping, "damping"),
                                  "exponent": g.exponent, "friction": g.friction,
                                  "stick_velocity": value(g.stick_velocity, "stick_velocity")}, f"ground '{name}'")
        self.normal = Matrix([Integer(int(v)) if float(v).is_integer() else Float(float(v)) for v in g.normal])
        if g.stiction:
            self.k_t, self.c_t = define_stiction(self, {"stiction_stiffness": g.stiction_stiffness,
                                                        "stiction_damping": g.stiction_damping},
                                                 self._defaults, f"ground '{name}'")
        base = ContactLaw(self.k, self.c, self.p, self.mu, self.v_s, *((self.k_t, self.c_t) if g.stiction else ()))
        self.laws = link_laws(self, base, self.link_values, f"ground '{name}'")
        self.law = lambda link: self.laws.get(link, base)  # noqa: E731
        if g.stiction:
            self.anchors = anchor_states(self, self.features, "world")
            self.anchor_frictions = [self.law(shape.link).mu for shape, features in self.shape_features()
                                     for _ in features]
            self.anchor_frames = [None] * len(self.features)

    def shape_features(self) -> list[tuple[CollisionDescription, list[ContactFeature]]]:
        """Each shape with its features, in order."""
        return [(shape, contact_features(shape)) for shape in self.shapes]

    def kinematic_loads(self, link_state, reference: Matrix, temps) -> list[tuple[str, Matrix, Matrix]]:
        """``(link, force, torque about reference)`` (world components) of every shape.

        `link_state(name)` gives a link's world rotation R, origin position p, origin velocity and
        angular velocity (link components); `temps` names intermediate quantities (``scalar``,
        ``matrix``).  Every quantity of a shape is guarded by one test of its bounding sphere, so
        the generated code skips a shape far from the plane (and its quantities read zero there).
        Sets ``rows``: per feature its ``contact_states`` row.
        """
        loads, self.rows, self.anchor_rates, self.anchor_updates, self.stiction_energy = [], [], {}, {}, S.Zero
        self.row_laws = []
        anchors = iter(self.anchors)
        for shape, features in self.shape_features():
            R, p, v, w = link_state(shape.link)
            law = self.law(shape.link)
            centre, radius = bounding_sphere(features)
            label = shape.label
            clearance = temps.scalar(self._dot(self.normal, p + R * Matrix(centre)) - self.height - Float(radius),
                                     f"clearance of the bounding sphere of {label} from ground '{self.name}'")
            guarded = _guard(clearance < 0, temps)
            parking = _guard(clearance < ANCHOR_MARGIN, temps) if self.anchors else None
            level = guarded(Matrix([self._dot(self.normal, p) - self.height]),
                            f"height of the origin of {shape.link} above ground '{self.name}'")[0]
            down = guarded(R.T * self.normal, f"normal of ground '{self.name}' in {shape.link}'s axes")
            force, moment = Matrix([0, 0, 0]), Matrix([0, 0, 0])  # moment about the link's origin
            for feature in features:
                anchor = next(anchors, None)
                x, d, rate, f_n, f, m = self._feature_force(feature, law, (R, p, v, w), (level, down), guarded,
                                                            f"{label} {feature.name}", anchor)
                force += f
                moment += m
                exact_x, exact_d = self._contact_point(feature, R, p)
                self.rows.append(Matrix([[*exact_x, *self.normal, exact_d, rate, f_n, *f]]))
                self.row_laws.append(law)
                if anchor is not None:  # (a shape far off costs its anchors nothing: see ANCHOR_MARGIN)
                    near_x = parking(self._friction_point(feature, R, exact_x),
                                     f"contact point of {label} {feature.name} for its anchor (world)")
                    near_d = parking(Matrix([exact_d]), f"penetration of {label} {feature.name} for its anchor")[0]
                    self.anchor_updates.update(anchor_update(law, anchor, near_x, self.normal, near_d, f_n, None,
                                                             temps, f"{label} {feature.name}"))
            force = guarded(force, f"contact force on {label}")  # a sum: accumulated in the C
            moment = guarded(moment, f"moment of the contact forces on {label} about its link's origin")
            loads.append((shape.link, force, guarded(moment + _cross(p - reference, force),
                                                     f"contact torque on {label} about the reference point")))
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
            tilt = sqrt(self._dot(t, t))
            x = centre - Float(feature.radius) * t / Piecewise((tilt, tilt > RIM_TILT), (Float(RIM_TILT), True))
        return x, self.height - self._dot(n, x)

    def _friction_point(self, feature: ContactFeature, R: Matrix, x: Matrix) -> Matrix:
        """Where friction acts for a feature touching at `x` (world): `x` itself, but for a
        cylinder's rim moved toward its tread's middle by ``1 - |n . a|`` of the way (all the way
        for a wheel on its tread: the two rims' friction then acts at the contact patch's centre,
        so unequal loads on them do not steer a turning wheel; none for a cylinder on its end)."""
        if feature.tread is None:
            return x
        along = self._dot(self.normal, R * Matrix(feature.axis))
        return x + (1 - Abs(along)) * (R * Matrix(feature.tread))

    def _feature_force(self, feature: ContactFeature, law: ContactLaw, link: tuple, plane: tuple, guarded,
                       label: str, anchor: Matrix | None = None) -> tuple[Matrix, Expr, Expr, Expr, Matrix, Matrix]:
        """Contact point, penetration, its rate, normal force, force vector and its moment about the
        link's origin (world axes) of one feature, pressed and rubbed by `law`.

        `link` is the link's (R, p, v, w), `plane` the shape's guarded height of the link origin
        above the plane and the normal in link axes.  A sphere's penetration is
        ``r - level - down . c`` (three products), guarded by the shape's test; everything else
        only where it touches, so a feature near the plane that does not touch costs that and a
        comparison."""
        n, (R, p, v, w), (level, down) = self.normal, link, plane
        if feature.axis is None:
            c, r = Matrix(feature.centre), Float(feature.radius)
            d = guarded(Matrix([r - level - self._dot(down, c)]), f"penetration of {label}")[0]
            touching = _guard(d > 0, guarded.temps)
            arm = touching(c - r * down if feature.radius else c, f"contact point of {label} in its link (link axes)")
            x = p + touching(R * arm, f"contact point of {label} from its link's origin (world)")
        else:
            x, d = self._contact_point(feature, R, p)
            x = guarded(x, f"contact point of {label} (world)")
            d = guarded(Matrix([self.height - self._dot(n, x)]), f"penetration of {label}")[0]
            touching = _guard(d > 0, guarded.temps)
            arm = touching(R.T * (x - p), f"contact point of {label} from its link's origin (link axes)")
        local = touching(v + _cross(w, arm), f"velocity of the contact point of {label} (link axes)")
        velocity = touching(R * local, f"velocity of the contact point of {label} (world)")
        rub_x, rub_v = x, velocity
        if feature.tread is not None:
            rub_x = touching(self._friction_point(feature, R, x), f"point where the friction of {label} acts (world)")
            rub_arm = touching(R.T * (rub_x - p), f"point where the friction of {label} acts (link axes)")
            rub_v = touching(R * (v + _cross(w, rub_arm)), f"velocity of the friction point of {label} (world)")
        rate, f_n, f = contact_force(law, n, d, velocity, touching, label, friction=anchor is None, rubbing=rub_v)
        if anchor is not None:
            if feature.radius:  # the anchor follows the contact point over the material: w x (c - x)
                rolling = touching(R * _cross(w, Matrix(feature.centre) - arm),
                                   f"motion of the contact point of {label} over its link (world)")
                self.anchor_rates.update(zip(anchor, rolling))
            else:
                self.anchor_rates.update(dict.fromkeys(anchor, S.Zero))
            slide = touching(rub_v - self._dot(n, rub_v) * n, f"slip velocity of {label} (world)")
            f, energy = stiction_force(law, rub_x, Matrix([plain(s) for s in anchor]), slide, n, f_n, touching, label)
            self.stiction_energy += energy
        moment = _cross(x - p, f)
        if feature.tread is not None:  # the friction part acts at rub_x
            moment += _cross(rub_x - x, f - f_n * n)
        moment = touching(moment, f"moment of the contact force of {label} about its link's origin")
        if feature.radius and (law.mu_r != 0 or law.mu_s != 0):
            moment += rolling_torque(law, n, R * w, f_n, touching, label)
        return x, d, rate, f_n, f, moment

    def elastic_energy(self) -> Expr:
        """The energy stored in the contacts (after the derivation's contact loads): the normal
        springs at the rows' penetrations, each with its link's law, and the stiction springs."""
        return sum((contact_energy(law, [row[6]]) for law, row in zip(self.row_laws, self.rows)), S.Zero) \
            + self.stiction_energy

    @staticmethod
    def _dot(a: Matrix, b: Matrix) -> Expr:
        return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]

    def signature(self) -> str:
        """What the derivation reads besides the parameters: the plane's normal and the features."""
        return repr((self.name, tuple(self.normal), [(f.name, f.centre, f.radius, f.axis, f.tread) for f in self.features]))


def _guard(condition, temps):
    """``guarded(expr, meaning)``: `expr` (a Matrix) as temporaries computed only where `condition`
    holds, zero elsewhere (the generated C puts a run of them under one ``if``)."""
    def guarded(expr: Matrix, meaning: str) -> Matrix:
        return temps.matrix(expr.applyfunc(lambda e: Piecewise((e, condition), (S.Zero, True))), meaning)

    guarded.temps = temps
    return guarded


def _cross(a: Matrix, b: Matrix) -> Matrix:
    return Matrix([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])

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
    f   = f_n n - mu f_n v_t / sqrt(|v_t|^2 + v_s^2)       (v_t = v - (n . v) n)

so ``|f_t| <= mu f_n`` always (the friction cone) and friction is Coulomb's beyond the stick
velocity v_s, viscous below it.  All of h, k, c, p, mu, v_s are parameters of the ground (symbols,
changeable at run time); defaults from the robot (:func:`default_parameters`).

With ``<ground stiction="true">`` friction instead holds each contact point to an *anchor* a (its
sticking point, world axes, three states per feature: Exudyn's contact): within a step

    F   = -k_t (x - a)_t - c_t v_t,        f_t = F min(1, mu f_n / |F|)          (touching; else 0)

so sliding friction is exactly ``mu f_n`` and sticking holds with a deflection ``|F| / k_t``; after
each step (:meth:`GroundContact.anchor_updates`, the runtime's ``mb_finish_step``) a touching
point keeps its anchor while ``k_t |(x - a)_t| <= mu f_n``, beyond it the anchor is dragged along
to the cone's edge, and a point off the ground has its anchor at itself.  An anchor moves within
a step only as the contact point moves over the material (a rolling sphere: ``w x (c - x)``).

The forces are written in terms of the links' kinematics by the derivation
(:meth:`GroundContact.kinematic_loads`), each shape's behind one test of its bounding sphere
against the plane, so a shape far from the ground costs one dot product per evaluation.
"""
from __future__ import annotations

import math
from sympy import Expr, Float, Integer, Matrix, Max, Piecewise, S, Symbol, sqrt
from sympy.physics.mechanics import System

from mb_sim.model.anchors import updated_anchors  # noqa: F401  (the rule's NumPy twin, here too)
from mb_sim.model.base import ConnectionBase, symbol_name
from mb_sim.model.parameters import dynamic_symbol, parameter
from mb_sim.urdf import CollisionDescription, GroundDescription
from mb_sim.urdf.contact_geometry import ContactFeature, bounding_sphere, contact_features

__all__ = ["CONTACT_STATE", "ContactFeature", "GroundContact", "contact_energy", "RIM_TILT", "contact_features",
           "default_parameters", "stiction_parameters", "updated_anchors"]

#: Columns of a contact feature's row in the ``contact_states`` output (world axes, SI units).
CONTACT_STATE = ("x", "y", "z", "nx", "ny", "nz", "penetration", "penetration_rate", "normal_force",
                 "fx", "fy", "fz")
#: Sine of the tilt below which a cylinder's contact point moves from its rim towards its end's
#: centre (about 1.1 degrees): a restoring stiffness m g r / RIM_TILT standing on an end.
RIM_TILT = 0.02
#: The penetration the default stiffness gives under the robot's whole weight on one point [m].
DEFAULT_PENETRATION = 2e-3
#: The damping ratio the default damping gives the robot bouncing on that point at that penetration.
DEFAULT_DAMPING_RATIO = 1.0
#: The share of the weight one contact body is taken to carry (a quadruped's foot, a box's corner).
SUPPORTS = 4
#: The step the defaults keep RK4 stable at [s].
REFERENCE_STEP = 1e-3
#: A divisor's floor where it is divided by only when larger (NumPy evaluates every branch).
_TINY = Float(1e-300)
#: The default stick velocity [m/s]: friction's slope mu f_n / v_s keeps RK4 stable at 1 ms.
DEFAULT_STICK_VELOCITY = 0.01


def default_parameters(mass: float, gravity: float, stiffness: float | None = None, exponent: float = 1.0,
                       lightest: float | None = None, friction: float = 1.0) -> dict[str, float]:
    """Stiffness, damping and stick velocity for a robot of total `mass` [kg] under `gravity`
    [m/s^2] whose lightest contact point has the effective mass `lightest` [kg] (the ground passes
    :func:`mb_sim.urdf.collision.contact_effective_mass`: a flat foot's toe or heel, which turns the
    foot about its centre of mass, is several times lighter than the foot: G1's 608 g ankle link is
    77 g at its toe, and sized by the link's mass the contact damping and friction slopes made its
    foot roll at -6800/s, beyond RK4's -2785/s at 1 ms).

    Stiffness: the weight on one point penetrates :data:`DEFAULT_PENETRATION` (``k = m g / d0^p``,
    unless `stiffness` is given).  Damping: bouncing there, at ``d0 = (m g / k)^(1/p)`` where the
    force's slope is ``k_0 = p m g / d0``, damped at :data:`DEFAULT_DAMPING_RATIO`
    (``m g c = 2 zeta sqrt(k_0 m)``).  A light foot carries a share ``F = m g /``
    :data:`SUPPORTS` of the weight, so its damping ``F c`` and friction slope ``mu F / v_s`` act on
    its own small mass: both are bounded so that their rate times :data:`REFERENCE_STEP` stays
    below 1 for that mass (RK4 at 1 ms stays stable on Go1's and Solo12's feet and on G1's flat
    feet)."""
    mass, gravity = max(mass, 1e-3), max(gravity, 1e-3)
    weight = mass * gravity
    stiffness = stiffness if stiffness is not None else weight / DEFAULT_PENETRATION ** exponent
    rest = (weight / stiffness) ** (1.0 / exponent)
    damping = 2 * DEFAULT_DAMPING_RATIO * math.sqrt(exponent * weight / rest * mass) / weight
    stick = DEFAULT_STICK_VELOCITY
    if lightest is not None and lightest > 0:
        share = weight / SUPPORTS
        damping = min(damping, lightest / (share * REFERENCE_STEP))
        stick = max(stick, friction * share * REFERENCE_STEP / lightest)
    return {"stiffness": stiffness, "damping": damping, "stick_velocity": stick}


def stiction_parameters(mass: float, gravity: float, stiffness: float | None = None, exponent: float = 1.0,
                        lightest: float | None = None) -> dict[str, float]:
    """Default stiffness k_t [N/m] and damping c_t [N s/m] of the stiction spring of one contact point.

    k_t is the normal law's slope at the default rest penetration (``p k d0^(p-1) = p m g / d0``
    with ``d0 = (m g / k)^(1/p)``: k itself for p = 1), so a sticking point deflects about as far
    sideways as it sinks.  c_t damps the `lightest` contact point's effective mass (as
    :func:`default_parameters` takes it; else the whole robot's) critically on k_t, bounded as
    that function bounds the normal damping: its rate ``c_t / m`` times :data:`REFERENCE_STEP`
    stays at most 1 (RK4 stable at 1 ms)."""
    mass, gravity = max(mass, 1e-3), max(gravity, 1e-3)
    weight = mass * gravity
    stiffness = stiffness if stiffness is not None else weight / DEFAULT_PENETRATION ** exponent
    rest = (weight / stiffness) ** (1.0 / exponent)
    tangential = exponent * weight / rest
    body = lightest if lightest is not None and lightest > 0 else mass
    damping = min(2 * math.sqrt(tangential * body), body / REFERENCE_STEP)
    return {"stiction_stiffness": tangential, "stiction_damping": damping}


class GroundContact(ConnectionBase):
    """``<ground>``: the plane every collision shape of the robot's moving links touches.

    Parameters (symbols, named ``<ground>_height`` ...): height h, stiffness k, damping c,
    exponent p, friction mu, stick velocity v_s (see the module docstring).  ``shapes`` are the
    collision shapes; ``features`` their contact features in order (rows of ``contact_states``).
    After the derivation ``rows`` holds the ``contact_states`` row of each feature.
    """

    def __init__(self, description: GroundDescription, shapes: list[CollisionDescription], mass: float,
                 gravity: float, lightest: float | None = None) -> None:
        super().__init__(description.name)
        self.ground_description = description
        self.shapes = list(shapes)
        self.features = [f for shape in self.shapes for f in contact_features(shape)]
        self._defaults = default_parameters(mass, gravity, description.stiffness, description.exponent, lightest,
                                            description.friction)
        self._defaults.update(stiction_parameters(mass, gravity, description.stiffness, description.exponent, lightest))
        self.rows: list[Matrix] = []
        #: With stiction: per feature its anchor (3 states, world axes), and after the derivation
        #: the anchors' rates and values after a step (plain symbols), the tangential springs' energy.
        self.anchors: list[Matrix] = []
        self.anchor_rates: dict = {}
        self.anchor_updates: dict = {}
        self.stiction_energy: Expr = S.Zero

    def resolve(self, links: dict, joints: dict) -> None:
        """Nothing to look up: shapes name their links (checked by the URDF reader)."""

    def _define_objects(self) -> None:
        self._system = System()
        g, d, name = self.ground_description, self._descriptions, self.name
        value = lambda given, key: given if given is not None else self._defaults[key]  # noqa: E731
        self.height = parameter(self, "height", g.height, f"ground '{name}': height of the plane along its normal [m]",
                                d, keep_zero=True)
        contact_parameters(self, {"stiffness": value(g.stiffness, "stiffness"), "damping": value(g.damping, "damping"),
                                  "exponent": g.exponent, "friction": g.friction,
                                  "stick_velocity": value(g.stick_velocity, "stick_velocity")}, f"ground '{name}'")
        self.normal = Matrix([Integer(int(v)) if float(v).is_integer() else Float(float(v)) for v in g.normal])
        if g.stiction:
            self._define_stiction()

    def _define_stiction(self) -> None:
        """The stiction spring's parameters k_t, c_t and every feature's anchor (3 states)."""
        g, d, name = self.ground_description, self._descriptions, self.name
        for key, attribute, meaning in (("stiction_stiffness", "k_t", "stiffness k_t of the stiction spring [N/m]"),
                                        ("stiction_damping", "c_t", "damping c_t of the stiction spring [N s/m]")):
            given = getattr(g, key)
            setattr(self, attribute, parameter(self, key, given if given is not None else self._defaults[key],
                                               f"ground '{name}': {meaning}", d, keep_zero=True))
        self.anchors = []
        for k, feature in enumerate(self.features):
            anchor = []
            for axis in "xyz":
                state = dynamic_symbol(self._add_prefix(f"anchor_{k}_{axis}"))
                d[state] = f"anchor of {name}/{feature.name} along {axis} (stiction state, world) [m]"
                anchor.append(state)
            self.anchors.append(Matrix(anchor))

    def electrical_states(self) -> list[tuple[Expr, Expr, Expr]]:
        """With stiction, the anchors: ``(state, rate, 0)``; the rate (the contact point's motion
        over the material, zero for a corner) is known after the derivation's contact loads, zero
        before (only the states are read then)."""
        return [(state, self.anchor_rates.get(state, S.Zero), S.Zero) for anchor in self.anchors for state in anchor]

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
        anchors = iter(self.anchors)
        for shape, features in self.shape_features():
            R, p, v, w = link_state(shape.link)
            centre, radius = bounding_sphere(features)
            label = shape.label
            clearance = temps.scalar(self._dot(self.normal, p + R * Matrix(centre)) - self.height - Float(radius),
                                     f"clearance of the bounding sphere of {label} from ground '{self.name}'")
            guarded = _guard(clearance < 0, temps)
            level = guarded(Matrix([self._dot(self.normal, p) - self.height]),
                            f"height of the origin of {shape.link} above ground '{self.name}'")[0]
            down = guarded(R.T * self.normal, f"normal of ground '{self.name}' in {shape.link}'s axes")
            force, moment = Matrix([0, 0, 0]), Matrix([0, 0, 0])  # moment about the link's origin
            for feature in features:
                anchor = next(anchors, None)
                x, d, rate, f_n, f, m = self._feature_force(feature, (R, p, v, w), (level, down), guarded,
                                                            f"{label} {feature.name}", anchor)
                force += f
                moment += m
                exact_x, exact_d = self._contact_point(feature, R, p)
                self.rows.append(Matrix([[*exact_x, *self.normal, exact_d, rate, f_n, *f]]))
                if anchor is not None:
                    self._anchor_update(anchor, exact_x, exact_d, f_n, temps, f"{label} {feature.name}")
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

    def _anchor_update(self, anchor: Matrix, x: Matrix, d: Expr, f_n: Expr, temps, label: str) -> None:
        """The anchor's value after a step (``anchor_updates``, the module docstring's rule) from
        the feature's exact contact point `x`, penetration `d` and normal force `f_n`."""
        a = Matrix([_plain(s) for s in anchor])
        x = temps.matrix(x, f"contact point of {label} for its anchor (world)")
        offset = x - a
        slip = temps.matrix(offset - _dot(self.normal, offset) * self.normal,
                            f"tangential offset of {label} from its anchor after the step (world)")
        spring = temps.scalar(self.k_t * sqrt(_dot(slip, slip)), f"stiction spring force of {label} after the step")
        cone = self.mu * f_n
        for k, state in enumerate(anchor):
            dragged = x[k] - slip[k] * cone / Max(spring, _TINY)
            self.anchor_updates[state] = Piecewise((x[k], d <= 0), (dragged, spring > cone), (a[k], True))

    def _stiction_force(self, feature: ContactFeature, x: Matrix, anchor: Matrix, velocity: Matrix, f_n: Expr,
                        arms: tuple, touching, label: str) -> Matrix:
        """The contact force (world) of a touching feature held to its `anchor` (the module
        docstring's stiction law); sets the anchor's rate: the contact point's motion over the
        material, ``w x (c - x)`` (zero for a corner; a cylinder's rim point sliding round the
        rim as the axis tilts is left out)."""
        n, a = self.normal, Matrix([_plain(s) for s in anchor])
        R, w, centre, arm = arms
        if feature.radius:
            rolling = touching(R * _cross(w, centre - arm),
                               f"motion of the contact point of {label} over its link (world)")
        else:
            rolling = Matrix([0, 0, 0])
        for state, rate in zip(anchor, rolling):
            self.anchor_rates[state] = rate
        offset = x - a
        slip = touching(offset - _dot(n, offset) * n, f"tangential offset of {label} from its anchor (world)")
        slide = velocity - _dot(n, velocity) * n
        spring = touching(-self.k_t * slip - self.c_t * slide, f"stiction spring-damper force of {label} (world)")
        size = touching(Matrix([sqrt(_dot(spring, spring))]), f"size of the stiction force of {label}")[0]
        cone = self.mu * f_n
        scale = touching(Matrix([Piecewise((cone / Max(size, _TINY), size > cone), (S.One, True))]),
                         f"friction cone factor of {label}")[0]
        self.stiction_energy += touching(Matrix([self.k_t * _dot(slip, slip) / 2]),
                                         f"energy of the stiction spring of {label}")[0]
        return touching(f_n * n + scale * spring, f"contact force of {label} (world)")

    def _feature_force(self, feature: ContactFeature, link: tuple, plane: tuple, guarded,
                       label: str, anchor: Matrix | None = None) -> tuple[Matrix, Expr, Expr, Expr, Matrix, Matrix]:
        """Contact point, penetration, its rate, normal force, force vector and its moment about the
        link's origin (world axes) of one feature.

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
        rate, f_n, f = contact_force(self, n, d, velocity, touching, label, friction=anchor is None)
        if anchor is not None:
            f = self._stiction_force(feature, x, anchor, velocity, f_n, (R, w, Matrix(feature.centre), arm),
                                     touching, label)
        moment = touching(_cross(x - p, f), f"moment of the contact force of {label} about its link's origin")
        return x, d, rate, f_n, f, moment

    @staticmethod
    def _dot(a: Matrix, b: Matrix) -> Expr:
        return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]

    def signature(self) -> str:
        """What the derivation reads besides the parameters: the plane's normal and the features."""
        return repr((self.name, tuple(self.normal), [(f.name, f.centre, f.radius, f.axis) for f in self.features]))


def contact_energy(law, penetrations: list[Expr]) -> Expr:
    """The elastic energy stored at these penetrations, ``k d^(p+1) / (p+1)`` each where ``d > 0``
    (the damping and friction only dissipate): part of the model's potential energy, so the
    runaway watch judges robots with contacts too."""
    return sum((Piecewise((law.k * d ** (law.p + 1) / (law.p + 1), d > 0), (S.Zero, True)) for d in penetrations),
               S.Zero)


def contact_force(law, n: Matrix, d: Expr, velocity: Matrix, guarded, label: str,
                  friction: bool = True) -> tuple[Expr, Expr, Matrix]:
    """Penetration rate, normal force and force (world) at a point penetrating `d` along the
    normal `n` with velocity `velocity` relative to the other side; `law` holds the parameters
    k, c, p, mu, v_s (the module docstring's law), `guarded` names guarded temporaries.
    `friction` False: the force is None (the caller adds its own friction: stiction)."""
    rate = guarded(Matrix([-_dot(n, velocity)]), f"penetration rate of {label}")[0]
    pressing = 1 + law.c * rate
    f_n = guarded(Matrix([Piecewise((law.k * d ** law.p * pressing, (d > 0) & (pressing > 0)), (S.Zero, True))]),
                  f"normal contact force of {label}")[0]
    if not friction:
        return rate, f_n, None
    tangential = guarded(velocity - _dot(n, velocity) * n, f"slip velocity of {label} (world)")
    scale = guarded(Matrix([law.mu * f_n / sqrt(_dot(tangential, tangential) + law.v_s ** 2)]),
                    f"friction force per slip speed of {label}")[0]
    return rate, f_n, guarded(f_n * n - scale * tangential, f"contact force of {label} (world)")


def contact_parameters(component, values: dict, owner: str) -> None:
    """The law's parameter symbols on `component` (k, c, p, mu, v_s) from `values` by key."""
    meanings = (("stiffness", "k", "contact stiffness k [N/m^p]"), ("damping", "c", "Hunt-Crossley damping c [s/m]"),
                ("exponent", "p", "exponent p of the penetration"), ("friction", "mu", "Coulomb friction coefficient mu"),
                ("stick_velocity", "v_s", "stick velocity v_s of the regularized friction [m/s]"))
    for key, attribute, meaning in meanings:
        setattr(component, attribute, parameter(component, key, values[key], f"{owner}: {meaning}",
                                                component._descriptions, keep_zero=True))


def _guard(condition, temps):
    """``guarded(expr, meaning)``: `expr` (a Matrix) as temporaries computed only where `condition`
    holds, zero elsewhere (the generated C puts a run of them under one ``if``)."""
    def guarded(expr: Matrix, meaning: str) -> Matrix:
        return temps.matrix(expr.applyfunc(lambda e: Piecewise((e, condition), (S.Zero, True))), meaning)

    guarded.temps = temps
    return guarded


def _dot(a: Matrix, b: Matrix) -> Expr:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _plain(state: Expr) -> Symbol:
    """The plain symbol the derivation gives a state (as :class:`~mb_sim.symbolic.plain.PlainSymbols`)."""
    return Symbol(symbol_name(state), real=True)


def _cross(a: Matrix, b: Matrix) -> Matrix:
    return Matrix([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])

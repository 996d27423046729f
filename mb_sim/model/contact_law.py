"""The contact law the ground and contact pairs share, and its parameters.

At a point penetrating ``d`` with penetration rate ``d'`` and velocity ``v_t`` along the surface
(relative to the other side), the force is

    f_n = k d^p (1 + c d') + b d'      where d > 0 and that is > 0, else 0     (Hunt and Crossley)
    f_t = -mu f_n v_t / sqrt(|v_t|^2 + v_s^2)                                 (regularized Coulomb)

with ``b`` a linear damper only where a URDF gives one (Gazebo's ``kd``, pybullet's ``damping``);
with stiction (the default, :mod:`mb_sim.model.stiction`) friction is instead a spring-damper to a
sticking point, clipped to ``mu f_n``.  A rolling shape (sphere, capsule end, cylinder rim) feels
the torques ``-mu_r f_n w_t / sqrt(|w_t|^2 + w_s^2)`` against rolling and ``-mu_s f_n w_n /
sqrt(w_n^2 + w_s^2)`` against spinning about the normal where a URDF gives ``mu_r``, ``mu_s``.

Every parameter is a symbol (changeable at run time); :class:`ContactLaw` holds one link's.  The
defaults come from the robot's weight and its contact points' effective masses, sized so RK4 at
:data:`REFERENCE_STEP` stays stable (:func:`default_parameters`, :func:`stiction_parameters`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sympy import Expr, Matrix, Min, Piecewise, S, sqrt

from mb_sim.model.parameters import parameter

__all__ = ["ContactLaw", "DEFAULT_DAMPING_RATIO", "DEFAULT_PENETRATION", "DEFAULT_ROLLING_SPEED",
           "DEFAULT_STICK_VELOCITY", "REFERENCE_STEP", "STIFFEST_FREQUENCY", "SUPPORTS", "contact_energy",
           "contact_force", "contact_parameters", "default_parameters", "link_laws", "rolling_torque",
           "stable_link_values", "stiction_parameters"]

#: The penetration the default stiffness gives under the robot's whole weight on one point [m].
DEFAULT_PENETRATION = 2e-3
#: The damping ratio the default damping gives the robot bouncing on that point at that penetration.
DEFAULT_DAMPING_RATIO = 1.0
#: The share of the weight one contact body is taken to carry (a quadruped's foot, a box's corner).
SUPPORTS = 4
#: The step the defaults keep RK4 stable at [s].
REFERENCE_STEP = 1e-3
#: The highest frequency [rad/s, times REFERENCE_STEP] a spring of a contact point may give its
#: effective mass: RK4 is stable on a critically damped oscillator up to about 2.8 / dt.
STIFFEST_FREQUENCY = 1.5
#: The default stick velocity [m/s]: friction's slope mu f_n / v_s keeps RK4 stable at 1 ms.
DEFAULT_STICK_VELOCITY = 0.01
#: The angular speed [rad/s] below which rolling and spinning friction fade (their regularization).
DEFAULT_ROLLING_SPEED = 0.1


@dataclass(frozen=True)
class ContactLaw:
    """One link's contact parameters (symbols or exact numbers): stiffness k, Hunt-Crossley damping
    c, exponent p, friction mu, stick velocity v_s; stiction spring k_t, damper c_t; linear damping
    b; rolling and spinning friction mu_r, mu_s [m] and their speed scale w_s [rad/s]."""

    k: Expr
    c: Expr
    p: Expr
    mu: Expr
    v_s: Expr
    k_t: Expr = S.Zero
    c_t: Expr = S.Zero
    b: Expr = S.Zero
    mu_r: Expr = S.Zero
    mu_s: Expr = S.Zero
    w_s: Expr = S.One
    #: The most viscous damping [N s/m] Hunt-Crossley's k d^p c may reach at a point (0: no cap);
    #: a pair sets it so a light object squeezed hard stays within RK4's reach.
    c_max: Expr = S.Zero


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
    sideways as it sinks, but at most what keeps the `lightest` contact point's frequency below
    :data:`STIFFEST_FREQUENCY` over :data:`REFERENCE_STEP` (a light point of a heavy robot: a
    gripper's fingertip).  c_t damps that point (else the whole robot) critically on k_t, bounded
    as :func:`default_parameters` bounds the normal damping: its rate ``c_t / m`` times
    :data:`REFERENCE_STEP` stays at most 1 (RK4 stable at 1 ms)."""
    mass, gravity = max(mass, 1e-3), max(gravity, 1e-3)
    weight = mass * gravity
    stiffness = stiffness if stiffness is not None else weight / DEFAULT_PENETRATION ** exponent
    rest = (weight / stiffness) ** (1.0 / exponent)
    body = lightest if lightest is not None and lightest > 0 else mass
    tangential = min(exponent * weight / rest, body * (STIFFEST_FREQUENCY / REFERENCE_STEP) ** 2)
    damping = min(2 * math.sqrt(tangential * body), body / REFERENCE_STEP)
    return {"stiction_stiffness": tangential, "stiction_damping": damping}


def stable_link_values(values: dict[str, float], lightest: float, exponent: float = 1.0,
                       weight: float = 0.0) -> tuple[dict[str, float], list[str]]:
    """A link's given contact values, with a stiffness or linear damping too stiff for RK4 at
    :data:`REFERENCE_STEP` on its lightest contact point's effective mass `lightest` [kg] brought
    down to what it takes (Gazebo's ``kp`` 5e5 N/m on a 50 g wheel: Gazebo's ODE steps contact
    implicitly), and a note per value changed.  For p != 1 the stiffness bound is the slope's at
    the link's rest penetration under `weight` [N]."""
    stable, notes = dict(values), []
    k = values.get("stiffness")
    if k is not None and lightest > 0:
        highest = lightest * (STIFFEST_FREQUENCY / REFERENCE_STEP) ** 2
        slope = k if exponent == 1.0 or weight <= 0 else exponent * k ** (1 / exponent) * weight ** (1 - 1 / exponent)
        if slope > highest:
            stable["stiffness"] = k * highest / slope
            notes.append(f"stiffness {k:g} is more than RK4 at {REFERENCE_STEP * 1e3:g} ms takes on its "
                         f"{lightest * 1e3:.3g} g contact point: {stable['stiffness']:.4g} used")
    b = values.get("linear_damping")
    if b is not None and lightest > 0 and b > lightest / REFERENCE_STEP:
        stable["linear_damping"] = lightest / REFERENCE_STEP
        notes.append(f"linear damping {b:g} N s/m is more than RK4 at {REFERENCE_STEP * 1e3:g} ms takes on its "
                     f"{lightest * 1e3:.3g} g contact point: {stable['linear_damping']:.4g} used")
    return stable, notes


def contact_parameters(component, values: dict, owner: str) -> None:
    """The law's parameter symbols on `component` (k, c, p, mu, v_s) from `values` by key."""
    meanings = (("stiffness", "k", "contact stiffness k [N/m^p]"), ("damping", "c", "Hunt-Crossley damping c [s/m]"),
                ("exponent", "p", "exponent p of the penetration"), ("friction", "mu", "Coulomb friction coefficient mu"),
                ("stick_velocity", "v_s", "stick velocity v_s of the regularized friction [m/s]"))
    for key, attribute, meaning in meanings:
        setattr(component, attribute, parameter(component, key, values[key], f"{owner}: {meaning}",
                                                component._descriptions, keep_zero=True))


#: What each parameter of a link is: the law's attribute, and its meaning.
_LINK_PARAMETERS = {
    "friction": ("mu", "Coulomb friction coefficient mu"),
    "stiffness": ("k", "contact stiffness k [N/m^p]"),
    "damping": ("c", "Hunt-Crossley damping c [s/m]"),
    "linear_damping": ("b", "linear contact damping b [N s/m]"),
    "rolling_friction": ("mu_r", "rolling friction mu_r [m] (torque mu_r f_n against rolling)"),
    "spinning_friction": ("mu_s", "spinning friction mu_s [m] (torque mu_s f_n against spinning about the normal)"),
}


def link_laws(component, base: ContactLaw, links: dict[str, dict[str, float]], owner: str) -> dict[str, ContactLaw]:
    """Per link of `links` (its given values by :class:`~mb_sim.urdf.description.LinkContactDescription`
    key) the law `base` with those values as symbols named ``<component>_<link>_<key>``; a shared
    ``rolling_speed`` symbol (w_s) where a link has rolling or spinning friction."""
    laws, w_s = {}, None
    for link, values in links.items():
        changes = {}
        for key, value in values.items():
            attribute, meaning = _LINK_PARAMETERS[key]
            changes[attribute] = parameter(component, f"{link}_{key}", value, f"{owner}, link '{link}': {meaning}",
                                           component._descriptions, keep_zero=True)
        if {"rolling_friction", "spinning_friction"} & set(values):
            if w_s is None:
                w_s = parameter(component, "rolling_speed", DEFAULT_ROLLING_SPEED,
                                f"{owner}: angular speed below which rolling and spinning friction fade [rad/s]",
                                component._descriptions, keep_zero=True)
            changes["w_s"] = w_s
        laws[link] = replace(base, **changes)
    return laws



def contact_energy(law, penetrations: list[Expr]) -> Expr:
    """The elastic energy stored at these penetrations, ``k d^(p+1) / (p+1)`` each where ``d > 0``
    (the damping and friction only dissipate): part of the model's potential energy, so the
    runaway watch judges robots with contacts too."""
    return sum((Piecewise((law.k * d ** (law.p + 1) / (law.p + 1), d > 0), (S.Zero, True)) for d in penetrations),
               S.Zero)


def contact_force(law: ContactLaw, n: Matrix, d: Expr, velocity: Matrix, guarded, label: str,
                  friction: bool = True, rubbing: Matrix | None = None) -> tuple[Expr, Expr, Matrix]:
    """Penetration rate, normal force and force (world) at a point penetrating `d` along the
    normal `n` with velocity `velocity` relative to the other side (the module docstring's law);
    friction from `rubbing`'s slip where given (the velocity of the point friction acts at: a
    wheel's tread middle), else `velocity`'s; `guarded` names guarded temporaries.  `friction`
    False: the force is None (the caller adds its own friction: stiction)."""
    rate = guarded(Matrix([-_dot(n, velocity)]), f"penetration rate of {label}")[0]
    pressing = 1 + law.c * rate
    if law.c_max != 0:  # the viscous part k d^p c capped at c_max
        spring = law.k * d ** law.p
        pushed = spring + Min(spring * law.c, law.c_max) * rate + law.b * rate
        press = pushed
    elif law.b == 0:
        pushed, press = law.k * d ** law.p * pressing, pressing
    else:
        pushed = law.k * d ** law.p * pressing + law.b * rate
        press = pushed
    f_n = guarded(Matrix([Piecewise((pushed, (d > 0) & (press > 0)), (S.Zero, True))]),
                  f"normal contact force of {label}")[0]
    if not friction:
        return rate, f_n, None
    rubbing = velocity if rubbing is None else rubbing
    tangential = guarded(rubbing - _dot(n, rubbing) * n, f"slip velocity of {label} (world)")
    scale = guarded(Matrix([law.mu * f_n / sqrt(_dot(tangential, tangential) + law.v_s ** 2)]),
                    f"friction force per slip speed of {label}")[0]
    return rate, f_n, guarded(f_n * n - scale * tangential, f"contact force of {label} (world)")


def rolling_torque(law: ContactLaw, n: Matrix, spin: Matrix, f_n: Expr, guarded, label: str) -> Matrix:
    """The rolling and spinning friction torque (world) on a shape turning at `spin` (world,
    relative to the other side) pressed by `f_n` along `n`; zero where the law has neither."""
    torque = Matrix([0, 0, 0])
    if law.mu_r == 0 and law.mu_s == 0:
        return torque
    about = _dot(n, spin)
    if law.mu_r != 0:
        rolling = guarded(spin - about * n, f"rolling speed of {label} (world)")
        torque -= law.mu_r * f_n / sqrt(_dot(rolling, rolling) + law.w_s ** 2) * rolling
    if law.mu_s != 0:
        torque -= law.mu_s * f_n * about / sqrt(about ** 2 + law.w_s ** 2) * n
    return guarded(torque, f"rolling and spinning friction torque on {label} (world)")


def _dot(a: Matrix, b: Matrix) -> Expr:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


"""Stiction: friction that holds (the default of grounds and contact pairs).

Each contact feature gets a sticking point, its *anchor* ``a`` (3 states; Exudyn's contact model),
fixed in a *frame*: the world for a ground, the other link (the target's) for a contact pair.
Friction is a spring-damper from the anchor to the contact point ``x``, clipped to the cone:

    F   = -k_t (x - a)_t - c_t v_t,        f_t = F min(1, mu f_n / |F|)      (touching; else 0)

(``v_t`` the slip velocity along the surface, relative to the other side).  After every step a
touching point keeps its anchor while ``k_t |(x - a)_t| <= mu f_n``; beyond, the anchor is dragged
to the cone's edge; a point that does not touch has its anchor at itself.  So sliding friction is
exactly ``mu f_n``, a sticking body holds with a deflection ``|F| / k_t``, and within a step an
anchor moves only as the contact point moves over the material, ``(w - w_o) x (c - x)`` for a
rolling shape of centre c (w, w_o the two sides' angular velocities): a wheel rolls without
slipping with its anchor under it.
"""
from __future__ import annotations

from sympy import Expr, Float, Matrix, Max, Piecewise, S, Symbol, sqrt

from mb_sim.model.base import symbol_name
from mb_sim.model.contact_law import ContactLaw
from mb_sim.model.parameters import dynamic_symbol, parameter

__all__ = ["AnchorFields", "anchor_states", "anchor_update", "define_stiction", "plain", "stiction_force"]


class AnchorFields:
    """What a contact component with stiction holds (the ground's and a pair's alike): per
    feature its anchor (3 states), friction term and frame (None: the world); after the
    derivation the anchors' rates and values after a step (plain symbols), and the tangential
    springs' energy.  Empty until the component defines its objects with stiction on."""

    def _no_anchors(self) -> None:
        self.anchors: list[Matrix] = []
        self.anchor_frictions: list[Expr] = []
        self.anchor_frames: list[str | None] = []
        self.anchor_rates: dict = {}
        self.anchor_updates: dict = {}
        self.stiction_energy: Expr = S.Zero

    def electrical_states(self) -> list[tuple[Expr, Expr, Expr]]:
        """With stiction, the anchors: ``(state, rate, 0)``; the rate (the contact point's motion
        over the material, zero for a corner) is known after the derivation's contact loads, zero
        before (only the states are read then)."""
        return [(state, self.anchor_rates.get(state, S.Zero), S.Zero) for anchor in self.anchors for state in anchor]

#: A divisor's floor where it is divided by only when larger (NumPy evaluates every branch).
_TINY = Float(1e-300)


def define_stiction(component, given: dict, defaults: dict, owner: str) -> tuple[Expr, Expr]:
    """The stiction spring's stiffness k_t and damping c_t symbols of `component` (`given`
    values by key, None: the `defaults`)."""
    symbols = []
    for key, meaning in (("stiction_stiffness", "stiffness k_t of the stiction spring [N/m]"),
                         ("stiction_damping", "damping c_t of the stiction spring [N s/m]")):
        value = given.get(key)
        symbols.append(parameter(component, key, value if value is not None else defaults[key],
                                 f"{owner}: {meaning}", component._descriptions, keep_zero=True))
    return symbols[0], symbols[1]


def anchor_states(component, features: list, frame: str) -> list[Matrix]:
    """Per feature its anchor: three states ``<component>_anchor_<k>_<axis>`` (axes of `frame`)."""
    anchors = []
    for k, feature in enumerate(features):
        anchor = []
        for axis in "xyz":
            state = dynamic_symbol(component._add_prefix(f"anchor_{k}_{axis}"))
            component._descriptions[state] = (f"anchor of {component.name}/{feature.name} along {axis} "
                                              f"(stiction state, {frame} axes) [m]")
            anchor.append(state)
        anchors.append(Matrix(anchor))
    return anchors


def plain(state: Expr) -> Symbol:
    """The plain symbol the derivation gives a state (as :class:`~mb_sim.symbolic.plain.PlainSymbols`)."""
    return Symbol(symbol_name(state), real=True)


def stiction_force(law: ContactLaw, x: Matrix, anchor: Matrix, slide: Matrix, n: Matrix, f_n: Expr, touching,
                   label: str) -> tuple[Matrix, Expr]:
    """The contact force (world) of a touching feature at `x` held to its anchor at `anchor`
    (world) while slipping at `slide` (world, along the surface), and the stiction spring's energy."""
    offset = x - anchor
    slip = touching(offset - _dot(n, offset) * n, f"tangential offset of {label} from its anchor (world)")
    spring = touching(-law.k_t * slip - law.c_t * slide, f"stiction spring-damper force of {label} (world)")
    size = touching(Matrix([sqrt(_dot(spring, spring))]), f"size of the stiction force of {label}")[0]
    cone = law.mu * f_n
    scale = touching(Matrix([Piecewise((cone / Max(size, _TINY), size > cone), (S.One, True))]),
                     f"friction cone factor of {label}")[0]
    energy = touching(Matrix([law.k_t * _dot(slip, slip) / 2]), f"energy of the stiction spring of {label}")[0]
    return touching(f_n * n + scale * spring, f"contact force of {label} (world)"), energy


def anchor_update(law: ContactLaw, anchor: Matrix, x: Matrix, n: Matrix, d: Expr, f_n: Expr, frame: tuple | None,
                  temps, label: str) -> dict:
    """The anchor's states after a step (the module docstring's rule) from the feature's exact
    contact point `x`, normal `n` (world), penetration `d` and normal force `f_n`; `frame` the
    anchor frame's rotation and origin (world; None: the world)."""
    a = Matrix([plain(s) for s in anchor])
    if frame is not None:
        R, p = frame
        x, n = R.T * (x - p), R.T * n
    x = temps.matrix(x, f"contact point of {label} for its anchor")
    offset = x - a
    slip = temps.matrix(offset - _dot(n, offset) * n, f"tangential offset of {label} from its anchor after the step")
    spring = temps.scalar(law.k_t * sqrt(_dot(slip, slip)), f"stiction spring force of {label} after the step")
    cone = law.mu * f_n
    updates = {}
    for k, state in enumerate(anchor):
        dragged = x[k] - slip[k] * cone / Max(spring, _TINY)
        updates[state] = Piecewise((x[k], d <= 0), (dragged, spring > cone), (a[k], True))
    return updates


def _dot(a: Matrix, b: Matrix) -> Expr:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]

"""Contact slots: where two links' shapes touch face to face, edge to face or along a curve.

Spheres and capsules touch each other at points the derivation writes in closed form
(:mod:`mb_sim.model.body_contact`).  Any other pair of shapes (box, cylinder, mesh against
anything) is found at run time by a collision library (coal, :mod:`mb_sim.sim.manifolds`) as a
*contact manifold*: a few points where the two surfaces meet.  The equations hold, per link pair,
``S`` contact *slots* (``<contact_pair points>``, default :data:`SLOTS`), each a material point
``a`` of link1 (link1's axes) against a plane of link2 through its point ``b`` with normal ``n``
(link2's axes), all nine numbers parameters the simulator sets before every step:

    x_a = p_1 + R_1 a,   x_b = p_2 + R_2 b,   n_w = R_2 n,   d = n_w . (x_b - x_a)

with ``d`` the penetration, the force acting at ``x = (x_a + x_b) / 2`` by the pair's law (on
link1; link2 gets its opposite), friction held by an anchor in link2's axes (stiction).  Within a
step a slot is exact for a corner on a face (the corner stays a material point, the face moves
with its link), and each step starts from the library's new manifold.  An unused slot has
``n = 0``, so ``d = 0``: no force, and one short test in the generated code.
"""
from __future__ import annotations

from sympy import Expr, Matrix, S

from mb_sim.model.contact_law import ContactLaw, contact_force
from mb_sim.model.parameters import parameter
from mb_sim.model.stiction import anchor_update, plain, stiction_force

__all__ = ["SLOTS", "SLOT_FIELDS", "SlotGroup", "slot_parameters", "slot_loads"]

#: Contact slots per link pair by default: a box resting on a face needs its four corners.
SLOTS = 4
#: The nine numbers of a slot, in parameter order: a (link1 axes), b and n (link2 axes).
SLOT_FIELDS = ("a_x", "a_y", "a_z", "b_x", "b_y", "b_z", "n_x", "n_y", "n_z")


class SlotGroup:
    """The slots of one link pair: ``link1``, ``link2``, the shape pairs the library checks
    (``shape_pairs``: (shape of link1, shape of link2)) and per slot its nine parameter symbols."""

    def __init__(self, index: int, link1: str, link2: str, shape_pairs: list, count: int) -> None:
        self.index, self.link1, self.link2 = index, link1, link2
        self.shape_pairs = list(shape_pairs)
        self.count = count
        self.symbols: list[list[Expr]] = []

    def feature_names(self) -> list[str]:
        """Names of its slots' rows of ``contact_states`` (after the component's name)."""
        return [f"{self.link1}@{self.link2}/slot{k}" for k in range(self.count)]


def slot_parameters(component, group: SlotGroup) -> None:
    """The nine parameters of each of `group`'s slots (zero: unused), described."""
    axes = {"a": f"link {group.link1}'s", "b": f"link {group.link2}'s", "n": f"link {group.link2}'s"}
    meaning = {"a": "material point of link1 touching", "b": "point of link2's surface",
               "n": "surface normal of link2 (towards link1; zero: slot unused)"}
    group.symbols = []
    for k in range(group.count):
        row = []
        for field in SLOT_FIELDS:
            which, axis = field.split("_")
            row.append(parameter(component, f"slot{group.index}_{k}_{field}", 0.0,
                                 f"contact slot {k} of {group.link1} on {group.link2}: {meaning[which]}, "
                                 f"{axis} in {axes[which]} axes [m] (set by the simulator every step)",
                                 component._descriptions, keep_zero=True))
        group.symbols.append(row)


def slot_loads(group: SlotGroup, law: ContactLaw, link_state, reference: Matrix, temps, guard, anchors,
               rows: list, updates: dict, rates: dict) -> tuple[list, Expr]:
    """The loads of `group`'s slots on its two links (``(link, force, torque about reference)``),
    appending each slot's ``contact_states`` row to `rows`; with stiction (`anchors`: one per slot,
    else None) the anchors' rates (zero: a slot's point is a material point) and updates go into
    `rates` and `updates`.  Returns the loads and the stiction springs' energy."""
    (R1, p1, v1, w1), (R2, p2, v2, w2) = link_state(group.link1), link_state(group.link2)
    v1 = temps.matrix(R1 * v1, f"velocity of {group.link1}'s origin (world)")
    w1 = temps.matrix(R1 * w1, f"angular velocity of {group.link1} (world)")
    v2 = temps.matrix(R2 * v2, f"velocity of {group.link2}'s origin (world)")
    w2 = temps.matrix(R2 * w2, f"angular velocity of {group.link2} (world)")
    force, torque, energy = Matrix([0, 0, 0]), Matrix([0, 0, 0]), S.Zero
    for k, symbols in enumerate(group.symbols):
        name = f"slot {k} of {group.link1} on {group.link2}"
        a, b, n = (Matrix(symbols[i:i + 3]) for i in (0, 3, 6))
        x_a = temps.matrix(p1 + R1 * a, f"material point of {name} on {group.link1} (world)")
        x_b = temps.matrix(p2 + R2 * b, f"surface point of {name} on {group.link2} (world)")
        normal = temps.matrix(R2 * n, f"normal of {name} (world)")
        d = temps.scalar(_dot(normal, x_b - x_a), f"penetration of {name}")
        touching = guard(d > 0, temps)
        point = temps.matrix((x_a + x_b) / 2, f"midpoint of {name} (world)")  # (the anchor follows it off contact)
        x = touching(point, f"contact point of {name} (world)")
        relative = touching((v1 + _cross(w1, x - p1)) - (v2 + _cross(w2, x - p2)),
                            f"relative velocity at {name} (world)")
        anchor = anchors[k] if anchors is not None else None
        rate, f_n, f = contact_force(law, normal, d, relative, touching, name, friction=anchor is None)
        if anchor is not None:
            rates.update(dict.fromkeys(anchor, S.Zero))
            held = touching(p2 + R2 * Matrix([plain(s) for s in anchor]), f"anchor of {name} (world)")
            slide = touching(relative - _dot(normal, relative) * normal, f"slip velocity of {name} (world)")
            f, spring = stiction_force(law, x, held, slide, normal, f_n, touching, name)
            energy += spring
            updates.update(anchor_update(law, anchor, point, normal, d, f_n, (R2, p2), temps, name))
        force += f
        torque += touching(_cross(x - reference, f), f"moment of the contact force of {name} about the reference")
        rows.append(Matrix([[*x, *normal, d, rate, f_n, *f]]))
    force = temps.matrix(force, f"contact force of the slots of {group.link1} on {group.link2} (on {group.link1})")
    torque = temps.matrix(torque, f"contact torque of the slots of {group.link1} on {group.link2} about the reference")
    return [(group.link1, force, torque), (group.link2, -force, -torque)], energy


def _dot(a: Matrix, b: Matrix) -> Expr:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a: Matrix, b: Matrix) -> Matrix:
    return Matrix([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])

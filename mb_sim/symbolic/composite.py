"""Kane's mass matrix and forcing by composite bodies and subtree wrenches.

Summing ``m vc_k . vc_l + w_k . I w_l`` body by body costs, per body, the square of the number
of speeds above it; a humanoid's 35 speeds then give megabytes of C.  The same sums regroup by
subtree (the composite-rigid-body idea, in Kane's terms): every body below joint ``i`` moves
rigidly with ``i``'s speeds, so with each joint's partial twist ``s_k = (w_k, v0_k)`` (world
components; ``v0_k`` the partial velocity of the body point at the reference point ``p0``) and
the composite inertia of the subtree below ``i`` (mass ``m``, first moment ``h``, inertia ``J``
about ``p0``)

    M_kl = w_l . (J w_k + h x v0_k) + v0_l . (m v0_k + w_k x h)     (l at or above k's joint)
    F_k  = w_k . n_i + v0_k . f_i

where ``(f_i, n_i)`` is the subtree's resultant wrench about ``p0``: applied loads minus the
inertia forces that do not depend on u' (``m ac_b`` at each mass centre, ``I alpha_b + w x I w``).
Subtree sums are plain additions in world components, so M costs one dot product per entry and
F one per speed.  A pair of equal and opposite loads between a link and its parent (a joint's
effort, damping, stop) acts only on that joint's own speeds and is added there directly.

``p0`` is the origin of the first moving link if its position depends on the coordinates (a
floating or planar base), else the world origin: moments about a point that travels with the robot keep
their rounding independent of how far it has gone.

Links fixed to a moving link (sensor frames, covers, feet: a quadruped's URDF may have 60) move as
one rigid body with it, its *carrier*: their masses, first moments and inertias are summed in the
carrier's frame first (expressions of the parameters alone, evaluated once per call), so each body
costs one rotation and one set of bias terms however many links it is made of, as Pinocchio
merges fixed joints into bodies.  About the carrier's origin O, with first moment h (body frame),
inertia J_O, origin acceleration bias a, angular acceleration bias alpha and angular velocity w:
the u'-free inertia force is ``-(m a + alpha x h + w x (w x h))`` and torque about O
``-(h x a + J_O alpha + w x J_O w)``; J about p0 follows by the parallel-axis theorem with the
first moment, so no division by a mass that may be zero.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sympy import Expr, Matrix, S, zeros
from sympy.physics.mechanics import Force, Vector

from mb_sim.model.algebra import matrix_product as mul, position_from
from mb_sim.model.base import applied_loads
from mb_sim.symbolic.temporaries import Temporaries

__all__ = ["ZERO3", "cross", "dot", "mass_matrix_and_forcing", "mul", "symmetric"]

ZERO3 = Matrix([0, 0, 0])


def cross(a: Matrix, b: Matrix) -> Matrix:
    """a x b of two 3-component columns (no simplification: temporaries stay as they are)."""
    return Matrix([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def dot(a: Matrix, b: Matrix) -> Expr:
    """a . b of two 3-component columns."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@dataclass
class _Subtree:
    """Composite inertia and resultant wrench of a link and everything below it (world
    components, about the reference point)."""

    mass: Expr = S.Zero
    moment: Matrix = field(default_factory=lambda: ZERO3)  # first moment of mass, h
    inertia: Matrix = field(default_factory=lambda: zeros(3, 3))  # J about the reference point
    force: Matrix = field(default_factory=lambda: ZERO3)
    torque: Matrix = field(default_factory=lambda: ZERO3)

    def add(self, other: "_Subtree") -> None:
        self.mass += other.mass
        self.moment += other.moment
        self.inertia += other.inertia
        self.force += other.force
        self.torque += other.torque

    def named(self, temps: Temporaries, link: str) -> "_Subtree":
        return _Subtree(temps.scalar(self.mass, f"mass of the subtree of {link}"),
                        temps.matrix(self.moment, f"first moment of the subtree of {link}"),
                        temps.matrix(self.inertia, f"inertia of the subtree of {link} about the reference point"),
                        temps.matrix(self.force, f"resultant force on the subtree of {link}"),
                        temps.matrix(self.torque, f"resultant torque on the subtree of {link}"))


class _Composite:
    """One pass over the tree of a :class:`~mb_sim.symbolic.kane._Recursion` (kinematics run)."""

    def __init__(self, rec, robot, temps: Temporaries) -> None:
        self.rec, self.robot, self.temps = rec, robot, temps
        self.own: dict[str, _Subtree] = {name: _Subtree() for name in rec.links}
        self.reference = self._reference_point()
        self.twists: dict[int, tuple[Matrix, Matrix]] = {}
        self.pair_forces: dict[int, Expr] = {}

    def _reference_point(self) -> Matrix:
        plain_q = set(self.rec.plain.q)
        first = next((kin for kin in self.rec.links.values() if kin.own_speeds), None)
        if first is not None and first.position.free_symbols & plain_q:
            return first.position
        return ZERO3

    def relative(self, position: Matrix, meaning: str) -> Matrix:
        return self.temps.matrix(position - self.reference, meaning)

    # -- partial twists ------------------------------------------------------------------------
    def joint_twists(self) -> None:
        """``(w_k, v0_k)`` in world components for every speed, from its joint's child link."""
        t = self.temps
        for name, kin in self.rec.links.items():
            if not kin.own_speeds:
                continue
            arm = self.relative(kin.position, f"origin of {name} from the reference point")
            for k in kin.own_speeds:
                w = t.matrix(mul(kin.rotation, kin.angular_partials[k]), f"partial angular velocity of {name} (world)")
                v0 = t.matrix(mul(kin.rotation, kin.partials[k]) - cross(w, arm),
                              f"partial velocity of {name} at the reference point (world)")
                self.twists[k] = (w, v0)

    # -- bodies and loads ------------------------------------------------------------------------
    def carrier(self, name: str) -> tuple[str, Matrix, Matrix]:
        """The moving link `name` is fixed to (itself if its joint has speeds or it is the root),
        with the rotation carrier <- link and the link origin in carrier-frame components."""
        rotation, offset = Matrix.eye(3), ZERO3
        kin = self.rec.links[name]
        while not kin.own_speeds and kin.parent is not None and kin.rotation_from_parent is not None:
            rotation = mul(kin.rotation_from_parent, rotation)
            offset = mul(kin.rotation_from_parent, offset) + kin.offset_from_parent
            name = kin.parent
            kin = self.rec.links[name]
        return name, rotation, offset

    def bodies(self) -> None:
        """Each rigid body's inertia about the reference point and its u'-free inertia wrench,
        its links' mass properties summed in its carrier's frame first (module docstring)."""
        merged: dict[str, list] = {}  # carrier -> [m, h, J_O] in carrier-frame components
        for name, link in self.robot.links.items():
            if link.body is None or not self._moves(name):
                continue
            carrier, rotation, offset = self.carrier(name)
            m, I = link.body.mass, link.inertia_matrix
            c = offset + mul(rotation, self.rec.points[link.body.masscenter][1])
            total = merged.setdefault(carrier, [S.Zero, ZERO3, zeros(3, 3)])
            total[0] += m
            total[1] += m * c
            total[2] += mul(mul(rotation, I), rotation.T) + m * (dot(c, c) * Matrix.eye(3) - mul(c, c.T))
        for carrier, (m, h_body, J_body) in merged.items():
            self._body(carrier, m, h_body, J_body)

    def _body(self, name: str, m: Expr, h_body: Matrix, J_body: Matrix) -> None:
        """Add one rigid body (carrier `name`; mass m, first moment and inertia about the carrier's
        origin in its frame) to its carrier's own sums."""
        t, kin = self.temps, self.rec.links[name]
        h_body = t.matrix(h_body, f"first moment of the body of {name} about its origin")
        J_body = t.matrix(symmetric(lambda i, j: J_body[i, j]), f"inertia of the body of {name} about its origin")
        R, w, a, alpha = kin.rotation, kin.angular_velocity, kin.acceleration_bias, kin.angular_acceleration_bias
        Jw = t.matrix(mul(J_body, w), f"body inertia times angular velocity of {name}")
        f_body = t.matrix(-(m * a + cross(alpha, h_body) + cross(w, cross(w, h_body))),
                          f"inertia force bias of the body of {name} (its frame)")
        n_body = t.matrix(-(cross(h_body, a) + mul(J_body, alpha) + cross(w, Jw)),
                          f"inertia torque bias of the body of {name} about its origin (its frame)")
        o = self.relative(kin.position, f"origin of {name} from the reference point")
        h = t.matrix(mul(R, h_body), f"first moment of the body of {name} (world)")
        f = t.matrix(mul(R, f_body), f"inertia force bias of the body of {name} (world)")
        n = t.matrix(cross(o, f) + mul(R, n_body), f"inertia torque bias of the body of {name} about the reference point")
        RJ = t.matrix(mul(R, J_body), f"rotation times body inertia of {name}")
        J_world = t.matrix(symmetric(lambda i, j: sum(RJ[i, k] * R[j, k] for k in range(3))),
                           f"body inertia of {name} about its origin (world)")
        own = self.own[name]
        own.mass += m
        own.moment += m * o + h
        oo = t.scalar(dot(o, o), f"squared distance of {name} from the reference point")
        oh = t.scalar(dot(o, h), f"first moment of the body of {name} along its offset from the reference point")
        own.inertia += (J_world + m * (oo * Matrix.eye(3) - mul(o, o.T)) + 2 * oh * Matrix.eye(3) - mul(o, h.T)
                        - mul(h, o.T))
        own.force += f
        own.torque += n

    def _moves(self, name: str) -> bool:
        """Whether any speed moves link `name` (bodies on the fixed root subtree do not count)."""
        return self.rec.links[name].moves

    def loads(self) -> None:
        """Applied loads: joint pairs onto their joint's speeds, the rest onto their link; not the
        noncontributing forces (reactions, workless on the real speeds: outputs of their own)."""
        reactions = {id(load) for load in self.robot.auxiliary_handler.loads}
        loads = [load for load in applied_loads(self.robot.system) if id(load) not in reactions]
        i = 0
        while i < len(loads):
            if i + 1 < len(loads) and self._joint_pair(loads[i], loads[i + 1]):
                i += 2
                continue
            self._load(loads[i])
            i += 1

    def kinematic_loads(self) -> None:
        """Loads written in terms of the links' kinematics (contacts): each component's
        ``kinematic_loads(link_state, reference)`` gives ``(link, force, torque about the reference
        point)`` in world components, added to the body the link is part of.  ``link_state(name)``
        gives the link's world rotation and origin, and its origin velocity and angular velocity in
        link components (rotated to the world only where a contact needs them)."""

        def link_state(name: str) -> tuple[Matrix, ...]:
            kin = self.rec.links[name]
            return kin.rotation, kin.position, kin.velocity, kin.angular_velocity

        for component in self.robot.walk():
            hook = getattr(component, "kinematic_loads", None)
            if hook is None:
                continue
            for link, force, torque in hook(link_state, self.reference, self.temps):
                if self._moves(link):
                    own = self.own[self.carrier(link)[0]]
                    own.force += force
                    own.torque += torque

    def _joint_pair(self, load, reaction) -> bool:
        """Add `load` and `reaction` as one joint's generalized force when they are equal and
        opposite on a link and its parent at one point (or torques); False if they are not."""
        if isinstance(load, Force) != isinstance(reaction, Force) or load.vector + reaction.vector != Vector(0):
            return False
        if isinstance(load, Force):
            (link, offset), (parent, _) = self.rec.locate(load.point), self.rec.locate(reaction.point)
            if position_from(load.point, reaction.point) != Vector(0):
                return False
        else:
            if load.frame not in self.rec.frames or reaction.frame not in self.rec.frames:
                return False
            link, parent, offset = self.rec.frames[load.frame][0], self.rec.frames[reaction.frame][0], None
        kin = self.rec.links[link]
        if kin.parent != parent or parent == link:
            return False
        vector = self.temps.matrix(self.rec.vector_in_link(load.vector, link), f"joint load on {link}")
        for k in kin.own_speeds:
            if offset is None:
                partial = kin.angular_partials[k]
            else:
                partial = kin.partials[k] + cross(kin.angular_partials[k], offset)
            self.pair_forces[k] = self.pair_forces.get(k, S.Zero) + dot(partial, vector)
        return True

    def _load(self, load) -> None:
        root = self.robot.root_link.name
        if isinstance(load, Force):
            link, offset = self.rec.locate(load.point)
            if not self._moves(link):
                return
            link, rotation, origin = self.carrier(link)  # a point fixed in the link is fixed in its body
            offset = origin + mul(rotation, offset)
            kin = self.rec.links[link]
            f = self.temps.matrix(self.rec.vector_in_link(load.vector, root), f"force on {load.point} (world)")
            arm = self.relative(kin.position + mul(kin.rotation, offset), f"point {load.point} from the reference point")
            self.own[link].force += f
            self.own[link].torque += cross(arm, f)
        else:
            if load.frame not in self.rec.frames:
                raise ValueError(f"torque on frame {load.frame}, which no link owns")
            link = self.rec.frames[load.frame][0]
            if self._moves(link):
                self.own[self.carrier(link)[0]].torque += self.temps.matrix(self.rec.vector_in_link(load.vector, root),
                                                           f"torque on {load.frame} (world)")

    # -- subtrees -----------------------------------------------------------------------------
    def subtrees(self) -> dict[str, _Subtree]:
        """Every link's subtree sums, leaves first, each a set of temporaries."""
        totals: dict[str, _Subtree] = {}
        children: dict[str, list[str]] = {name: [] for name in self.rec.links}
        for name, kin in self.rec.links.items():
            if kin.parent is not None:
                children[kin.parent].append(name)
        for name in reversed(list(self.rec.links)):
            if not self._moves(name):
                continue
            total = _Subtree()
            total.add(self.own[name])
            for child in children[name]:
                total.add(totals[child])
            totals[name] = total.named(self.temps, name)
        return totals

    def ancestor_speeds(self, name: str) -> list[int]:
        """Speeds of the joints from link `name` up to the root (its own first)."""
        speeds: list[int] = []
        while name is not None:
            kin = self.rec.links[name]
            speeds.extend(kin.own_speeds)
            name = kin.parent
        return speeds


def symmetric(entry) -> Matrix:
    """The symmetric 3 x 3 matrix whose upper triangle is ``entry(i, j)`` (each computed once)."""
    upper = {(i, j): entry(i, j) for i in range(3) for j in range(i, 3)}
    return Matrix(3, 3, [upper[min(i, j), max(i, j)] for i in range(3) for j in range(3)])


def mass_matrix_and_forcing(rec, robot, temps: Temporaries, n_u: int) -> tuple[Matrix, Matrix]:
    """Kane's M and F (without reflected rotor inertias) of the robot whose kinematics `rec`
    holds; see the module docstring."""
    composite = _Composite(rec, robot, temps)
    composite.joint_twists()
    composite.bodies()
    composite.loads()
    composite.kinematic_loads()
    totals = composite.subtrees()
    mass, forcing = [[S.Zero] * n_u for _ in range(n_u)], [S.Zero] * n_u  # lists: a Matrix's setitem is slow
    for name, kin in rec.links.items():
        if not kin.own_speeds:
            continue
        total = totals[name]
        above = composite.ancestor_speeds(name)
        for position, k in enumerate(kin.own_speeds):
            w, v0 = composite.twists[k]
            forcing[k] = dot(w, total.torque) + dot(v0, total.force) + composite.pair_forces.get(k, S.Zero)
            f = temps.matrix(total.mass * v0 + cross(w, total.moment), f"composite momentum of {name} per unit speed")
            n = temps.matrix(mul(total.inertia, w) + cross(total.moment, v0),
                             f"composite angular momentum of {name} per unit speed")
            for l in above[position:]:  # the joint's own speeds from k on, then those above
                wl, v0l = composite.twists[l]
                mass[k][l] = mass[l][k] = dot(wl, n) + dot(v0l, f)
    return Matrix(n_u, n_u, [entry for row in mass for entry in row]), Matrix(n_u, 1, forcing)

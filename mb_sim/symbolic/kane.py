"""Kane's method, link by link, with named temporaries.

For each link (parents first) the recursion computes, in link-frame components: the world
rotation R and origin position p, the angular velocity w and origin velocity v, their partial
velocities with respect to the joint's own speeds (w_k, v_k), and the parts of the angular and
origin accelerations that do not depend on u' (alpha_bias, a_bias).  With the joint's local
kinematics (rotation E parent <- child, offset r, relative angular velocity w_rel, relative
velocity v_rel), in components:

    w       = E^T w_p + w_rel
    v       = E^T (v_p + w_p x r + v_rel)
    alpha_b = E^T alpha_b,p + dw_rel/dt|b + (E^T w_p) x w_rel
    a_b     = E^T (a_b,p + alpha_b,p x r + w_p x (w_p x r) + 2 w_p x v_rel + dv_rel/dt|b)

where ``|b`` means the derivative without its u' terms.  The partial velocities are those of the
joint's own speeds (the joint's motion subspace); Kane's equations Fr + Fr* = 0 then give
M u' = F, assembled subtree by subtree in :mod:`mb_sim.symbolic.composite` (composite bodies for
M, resultant wrenches for F), so expression size grows with the number of links times their
depth, not with the depth squared as body-by-body sums do.  A link on a fixed joint gets w, v and
the biases only when something reads them (a sensor frame nothing reads costs its pose alone).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sympy import Expr, Matrix, Rational, S, eye, zeros
from sympy.physics.mechanics import Point, ReferenceFrame

from mb_sim.model import Gravity, PrismaticJoint, Robot
from mb_sim.model.algebra import components, matrix_product as _mul, position_from
from mb_sim.symbolic.composite import ZERO3, cross as _cross, dot as _dot, mass_matrix_and_forcing
from mb_sim.symbolic.plain import PlainSymbols
from mb_sim.symbolic.temporaries import Temporaries

__all__ = ["LinkKinematics", "KaneEquations", "derive_kane"]

class LinkKinematics:
    """Kinematic quantities of one link, all in link-frame components except R and p.

    A link fixed to its parent (a sensor frame, a cover, a foot sole) gets its velocities and
    acceleration biases from `motion`, called the first time something reads one: most such links
    are leaves nothing reads them on (iCub's URDF has 175 of its 214 joints fixed).
    """

    def __init__(self, rotation: Matrix, position: Matrix, angular_velocity: Matrix = ZERO3, velocity: Matrix = ZERO3,
                 angular_partials: dict[int, Matrix] | None = None, partials: dict[int, Matrix] | None = None,
                 angular_acceleration_bias: Matrix = ZERO3, acceleration_bias: Matrix = ZERO3,
                 parent: str | None = None, rotation_from_parent: Matrix | None = None,
                 offset_from_parent: Matrix | None = None, own_speeds: list[int] | None = None, moves: bool = False,
                 motion: Callable[[], tuple[Matrix, Matrix, Matrix, Matrix]] | None = None) -> None:
        self.rotation, self.position = rotation, position  # world <- link; world coordinates of the origin
        self.angular_partials = angular_partials or {}  # by own speed index
        self.partials = partials or {}  # of the origin, by own speed index
        self.parent, self.rotation_from_parent = parent, rotation_from_parent  # parent <- link
        self.offset_from_parent = offset_from_parent  # the link origin in parent-frame components
        self.own_speeds = own_speeds or []  # the joint's speeds (indices into u)
        self.moves = moves  # whether any speed moves the link
        self._motion = motion
        self._values = None if motion else (angular_velocity, velocity, angular_acceleration_bias, acceleration_bias)

    def _motion_values(self) -> tuple[Matrix, Matrix, Matrix, Matrix]:
        if self._values is None:
            self._values = self._motion()
        return self._values

    @property
    def angular_velocity(self) -> Matrix:
        return self._motion_values()[0]

    @property
    def velocity(self) -> Matrix:
        """Of the link origin."""
        return self._motion_values()[1]

    @property
    def angular_acceleration_bias(self) -> Matrix:
        """The angular acceleration's part without u'."""
        return self._motion_values()[2]

    @property
    def acceleration_bias(self) -> Matrix:
        """The origin acceleration's part without u'."""
        return self._motion_values()[3]


@dataclass
class KaneEquations:
    """Mass matrix, forcing and per-link kinematics from :func:`derive_kane`."""

    mass_matrix: Matrix
    forcing: Matrix
    links: dict[str, LinkKinematics]
    kinetic_energy: Expr
    potential_energy: Expr
    recursion: "_Recursion | None" = None  # where points and frames are (outputs locate loads with it)


class _Recursion:
    """State shared by the steps of the derivation."""

    def __init__(self, robot: Robot, plain: PlainSymbols, temps: Temporaries) -> None:
        self.robot, self.plain, self.temps = robot, plain, temps
        self.speed_index = {u: i for i, u in enumerate(robot.system.u)}
        self.q_index = {q: i for i, q in enumerate(robot.system.q)}
        self.links: dict[str, LinkKinematics] = {}
        self.frames: dict[ReferenceFrame, tuple[str, Matrix]] = {}
        self.points: dict[Point, tuple[str, Matrix]] = {}
        self.mounts: dict = {}  # joint -> its rotation parent <- joint frame (temporaries)

    # -- kinematics ---------------------------------------------------------------------------
    def run_kinematics(self) -> None:
        root = self.robot.root_link
        self.links[root.name] = LinkKinematics(eye(3), ZERO3, ZERO3, ZERO3)
        self.frames[self.robot.world_frame] = (root.name, eye(3))
        self.points[self.robot.world_origin] = (root.name, ZERO3)
        self._register_link(root)
        for joint in self.robot.joints.values():
            self._child_kinematics(joint)
            self._register_link(joint.child)
            parent = joint.parent
            mount = self.mounts.get(joint)
            self.frames[joint.frame] = (parent.name, self.plain.convert_matrix(parent.frame.dcm(joint.frame))
                                        if mount is None else mount)
            self.points[joint.point] = (parent.name, self.plain.convert_matrix(
                components(position_from(joint.point, parent.origin), parent.frame)))
            if isinstance(joint, PrismaticJoint):
                self.points[joint.reaction_point] = (parent.name, self.plain.convert_matrix(
                    components(joint.reaction_point.pos_from(parent.origin), parent.frame)))

    def locate(self, point: Point) -> tuple[str, Matrix]:
        """The link `point` is fixed in and its position there (link-frame components): registered
        points directly, others (a spring's marker) through a neighbour in the position graph at
        a constant offset in that link's frame."""
        if point in self.points:
            return self.points[point]
        for neighbour, offset in point._pos_dict.items():  # SymPy keeps the position graph here
            if neighbour not in self.points:
                continue
            link, base = self.points[neighbour]
            components = self.vector_in_link(offset, link)
            if not components.free_symbols & set(self.plain.q):
                self.points[point] = (link, base + components)
                return self.points[point]
        raise ValueError(f"force on point {point}, which is not fixed in any link")

    def _register_link(self, link) -> None:
        self.frames[link.frame] = (link.name, eye(3))
        self.points[link.origin] = (link.name, ZERO3)
        if link.body is not None:
            self.points[link.body.masscenter] = (link.name, link.com)

    def _rate_bias(self, expr: Matrix, joint) -> Matrix:
        """d(expr)/dt without u' terms: through the joint's coordinates and explicit time."""
        q_plain = [self.plain.plain(q) for q in joint.q]
        qdot = Matrix([self.plain.qdot[self.q_index[q]] for q in joint.q])
        bias = expr.jacobian(q_plain) * qdot if q_plain else zeros(*expr.shape)
        time = self.plain.time
        return bias + expr.applyfunc(lambda e: e.diff(time)) if time in expr.free_symbols else bias

    def _child_kinematics(self, joint) -> None:
        t, plain = self.temps, self.plain
        name = joint.child.name
        p = self.links[joint.parent.name]
        rotation, translation, angular_velocity, velocity = joint.local_kinematics()
        factors = joint.rotation_factors()
        if factors is None:
            E = t.matrix(plain.convert_matrix(rotation), f"rotation {joint.parent.name} <- {name}")
        else:  # each factor's entries once, as temporaries: they would repeat in every entry of E
            mount = self.mounts[joint] = t.matrix(plain.convert_matrix(factors[0]),
                                                        f"rotation {joint.parent.name} <- joint {joint.name}")
            turn = t.matrix(plain.convert_matrix(factors[1]), f"rotation joint {joint.name} <- {name}")
            E = t.matrix(_mul(mount, turn), f"rotation {joint.parent.name} <- {name}")
        Et = E.T
        r = plain.convert_matrix(translation)
        w_rel = plain.convert_matrix(angular_velocity)
        v_rel = plain.convert_matrix(velocity)
        own_u = [plain.plain(u) for u in joint.u]
        w_partials, v_partials = {}, {}  # the joint's own speeds only: see composite.py
        for dynamic, u in zip(joint.u, own_u):
            k = self.speed_index[dynamic]
            w_partials[k] = t.matrix(w_rel.applyfunc(lambda e: e.diff(u)), f"partial angular velocity of {name}")
            v_partials[k] = t.matrix(_mul(Et, v_rel.applyfunc(lambda e: e.diff(u))), f"partial velocity of {name}")
        R = t.matrix(_mul(p.rotation, E), f"world rotation of {name}")
        position = t.matrix(p.position + _mul(p.rotation, r), f"world position of {name}")
        own = [self.speed_index[dynamic] for dynamic in joint.u]

        tree = {"parent": joint.parent.name, "rotation_from_parent": E, "offset_from_parent": r, "own_speeds": own,
                "moves": bool(own) or p.moves}
        if own:  # a moving link's body reads its motion at once
            w, v, alpha_b, a_b = self._motion(joint, p, Et, r, w_rel, v_rel)
            self.links[name] = LinkKinematics(R, position, w, v, w_partials, v_partials, alpha_b, a_b, **tree)
        else:
            self.links[name] = LinkKinematics(R, position, **tree,
                                              motion=lambda: self._motion(joint, p, Et, r, w_rel, v_rel))

    def _motion(self, joint, p: LinkKinematics, Et: Matrix, r: Matrix, w_rel: Matrix, v_rel: Matrix
                ) -> tuple[Matrix, Matrix, Matrix, Matrix]:
        """Angular velocity, origin velocity and their u'-free rates of `joint`'s child."""
        t, name = self.temps, joint.child.name
        w_p_here = t.matrix(_mul(Et, p.angular_velocity), f"parent angular velocity in {name}")
        w = t.matrix(w_p_here + w_rel, f"angular velocity of {name}")
        # Sums in the parent's frame are temporaries before E^T turns them: each would repeat in
        # the three entries of the product.
        v_here = t.matrix(p.velocity + _cross(p.angular_velocity, r) + v_rel,
                          f"velocity of {name} origin (parent frame)")
        v = t.matrix(_mul(Et, v_here), f"velocity of {name} origin")
        alpha_b = t.matrix(_mul(Et, p.angular_acceleration_bias) + self._rate_bias(w_rel, joint)
                           + _cross(w_p_here, w_rel), f"angular acceleration bias of {name}")
        wp = p.angular_velocity
        a_here = t.matrix(p.acceleration_bias + _cross(p.angular_acceleration_bias, r) + _cross(wp, _cross(wp, r))
                          + 2 * _cross(wp, v_rel) + self._rate_bias(v_rel, joint),
                          f"acceleration bias of {name} origin (parent frame)")
        a_b = t.matrix(_mul(Et, a_here), f"acceleration bias of {name} origin")
        return w, v, alpha_b, a_b

    # -- loads --------------------------------------------------------------------------------
    def in_link(self, components: Matrix, source: str, target: str) -> Matrix:
        """Components in link `source`'s frame re-expressed in link `target`'s frame."""
        if source == target:
            return components
        kin = self.links[target]
        if kin.parent == source:
            return _mul(kin.rotation_from_parent.T, components)
        return _mul(kin.rotation.T, _mul(self.links[source].rotation, components))

    def vector_in_link(self, vector, target: str) -> Matrix:
        """A SymPy Vector's components in link `target`'s frame."""
        total = ZERO3
        for components, frame in vector.args:
            if frame not in self.frames:
                raise ValueError(f"load expressed in frame {frame}, which no link or joint owns")
            link, dcm = self.frames[frame]
            total = total + self.in_link(_mul(dcm, self.plain.convert_matrix(components)), link, target)
        return total


def derive_kane(robot: Robot, plain: PlainSymbols, temps: Temporaries) -> KaneEquations:
    """M, F, energies and link kinematics of `robot` (define steps already run)."""
    rec = _Recursion(robot, plain, temps)
    rec.run_kinematics()
    n_u = len(robot.system.u)
    mass, forcing = mass_matrix_and_forcing(rec, robot, temps, n_u)
    kinetic, potential = S.Zero, S.Zero
    gravity = next((Matrix(g.components) for g in robot.load_groups if isinstance(g, Gravity)), ZERO3)
    for name, link in robot.links.items():
        if link.body is None:
            continue
        kin = rec.links[name]
        m = link.body.mass
        c = rec.points[link.body.masscenter][1]
        w = kin.angular_velocity
        Iw = temps.matrix(_mul(link.inertia_matrix, w), f"inertia times angular velocity of {name}")
        vc = temps.matrix(kin.velocity + _cross(w, c), f"mass centre velocity of {name}")
        kinetic += Rational(1, 2) * (m * _dot(vc, vc) + _dot(w, Iw))
        potential -= m * _dot(gravity, kin.position + _mul(kin.rotation, c))
    for component in robot.walk():  # rotor inertias reflected through gears
        for speed, inertia in component.reflected_inertia():
            k = rec.speed_index[speed]
            mass[k, k] += plain.convert(inertia)
    return KaneEquations(mass, forcing, rec.links, kinetic, potential, rec)  # a column even if empty

"""What a force-torque sensor on a joint reads, from the derivation's link kinematics: the outputs
``ft_jacobians`` and ``ft_states``.

The sensor on joint J (parent link P, child link C) reports the wrench the parent side exerts on
the child side through J: the constraint wrench plus everything J transmits (its effort, damping,
friction, limit stop, motor).  Newton-Euler of the child side S (C and every link below it,
:meth:`mb_sim.model.Robot.force_torque_subtree`) about J's origin O (C's origin) gives it:

    W = sum_i (m_i (a_Gi - g),  I_i alpha_i + omega_i x I_i omega_i + (G_i - O) x m_i (a_Gi - g))
        - (contact loads on S)

Loads between links of S cancel (joint pairs, contact pairs inside S); the contact loads come from
the ``contact_states`` rows at run time (:mod:`mb_sim.sim.force_torque`).  Everything else here is
linear in u' at a state: W_inertial = J u' + b.  Per speed k (partial twist ``w_k``, ``v_k`` of
the point at O moving with k's joint) that moves the links T (all of S for J's speeds and those
above it, the subtree of L for a joint inside S with child L), with T's mass m_T, first moment
h_T and inertia J_T about O (world components):

    dW/du_k = (m_T v_k + w_k x h_T,  J_T w_k + h_T x v_k)

and b sums each link's u'-free inertia wrench and its weight.  A fixed joint's child is a link of
its own here (the model merges it into its parent's body only for M and F), so a sensor on a fixed
joint reports the wrench through that joint.

Rows per sensor: ``ft_jacobians`` 6 (force, then torque about O, world axes); ``ft_states`` one
row of :data:`FT_STATE_COLUMNS`: the bias force and torque (world axes; gravity as the robot's
gravity parameters, so ``set_parameters`` changes it).
"""
from __future__ import annotations

from sympy import Matrix, S, eye, zeros

from mb_sim.model import Robot
from mb_sim.symbolic.composite import ZERO3, cross, dot, mul, symmetric
from mb_sim.symbolic.equations import FT_JACOBIAN_ROWS, FT_STATE_COLUMNS
from mb_sim.symbolic.imu import _gravity, link_jacobian
from mb_sim.symbolic.temporaries import Temporaries

__all__ = ["force_torque_outputs", "sensor_wrench", "side_wrench"]


class _Side:
    """The mass properties of the links of one child side, about the sensor point O (world)."""

    def __init__(self, robot: Robot, links: dict, side: list[str], temps: Temporaries) -> None:
        self.robot, self.links, self.side, self.temps = robot, links, side, temps
        self.origin = links[side[0]].position
        self.bodies: dict[str, tuple] = {}  # link -> (m, r = G - O, inertia about G, world)
        for name in side:
            link = robot.links[name]
            if link.body is not None:
                self.bodies[name] = self._body(name, link)

    def _body(self, name: str, link) -> tuple:
        kin, t = self.links[name], self.temps
        R = kin.rotation
        r = t.matrix(kin.position + mul(R, link.com) - self.origin,
                     f"mass centre of {name} from the force-torque point")
        RI = t.matrix(mul(R, link.inertia_matrix), f"rotation times inertia of {name}")
        inertia = t.matrix(symmetric(lambda i, j: sum(RI[i, k] * R[j, k] for k in range(3))),  # R I R^T
                           f"inertia of {name} about its mass centre (world)")
        return link.body.mass, r, inertia

    def composite(self, members: list[str]) -> tuple:
        """Mass, first moment and inertia about O (world) of the links `members`."""
        m, h, J = S.Zero, ZERO3, zeros(3, 3)
        for name in members:
            if name not in self.bodies:
                continue
            mi, r, inertia = self.bodies[name]
            m += mi
            h = h + mi * r
            J = J + inertia + mi * (dot(r, r) * eye(3) - r * r.T)
        return m, h, J

    def bias(self, gravity: Matrix) -> Matrix:
        """6 x 1: the u'-free inertia wrench minus the weight of the side, about O (world)."""
        force, torque = ZERO3, ZERO3
        t = self.temps  # the link-frame sums below once each: R turns them into three entries apiece
        for name, (m, r, inertia) in self.bodies.items():
            kin, link = self.links[name], self.robot.links[name]
            R, w, c = kin.rotation, kin.angular_velocity, link.com
            a_local = t.matrix(kin.acceleration_bias + cross(kin.angular_acceleration_bias, c) + cross(w, cross(w, c)),
                               f"mass centre acceleration bias of {name} (its frame)")
            f = t.matrix(m * (mul(R, a_local) - gravity), f"inertia force bias less weight of {name} (world)")
            Iw = mul(link.inertia_matrix, w)
            n_local = t.matrix(mul(link.inertia_matrix, kin.angular_acceleration_bias) + cross(w, Iw),
                               f"inertia torque bias of {name} about its mass centre (its frame)")
            force = force + f
            torque = torque + mul(R, n_local) + cross(r, f)
        return Matrix([*force, *torque])


def _descendants(links: dict, side: list[str]) -> dict[str, list[str]]:
    """Each link of `side` (parents first) with the links of `side` at and below it."""
    below = {name: [name] for name in side}
    for name in reversed(side[1:]):
        below[links[name].parent].extend(below[name])
    return below


def sensor_wrench(robot: Robot, links: dict, n_u: int, sensor, gravity: Matrix,
                  temps: Temporaries) -> tuple[Matrix, Matrix]:
    """``(J, b)``, 6 x n_u and 1 x 6: the wrench on the child side of `sensor`'s joint, less its
    contact loads, is ``J u' + b`` (module docstring)."""
    return side_wrench(robot, links, n_u, robot.force_torque_subtree(sensor), gravity, temps, sensor.name)


def side_wrench(robot: Robot, links: dict, n_u: int, side: list[str], gravity: Matrix, temps: Temporaries,
                label: str) -> tuple[Matrix, Matrix]:
    """``(J, b)``, 6 x n_u and 1 x 6: the mass times acceleration of the links `side` (a link and
    every link below it, parents first) less their weight under `gravity`, as force and moment
    about the first link's origin (world), is ``J u' + b``; `label` names the side's temporaries."""
    child = side[0]
    body = _Side(robot, links, side, temps)
    below = _descendants(links, side)
    jacobian = zeros(FT_JACOBIAN_ROWS, n_u)
    whole = link_jacobian(links, child, n_u)  # partial twists at O of J's speeds and those above it
    groups = [(side, [(k, whole[0:3, k], whole[3:6, k]) for k in range(n_u) if any(e != 0 for e in whole[:, k])])]
    for name in side[1:]:
        kin = links[name]
        twists = []
        for k in kin.own_speeds:
            w_k = mul(kin.rotation, kin.angular_partials[k])
            twists.append((k, w_k, mul(kin.rotation, kin.partials[k]) + cross(w_k, body.origin - kin.position)))
        if twists:
            groups.append((below[name], twists))
    for members, twists in groups:
        if not any(m in body.bodies for m in members):
            continue
        m, h, J = body.composite(members)
        label_here = f"the links below {members[0]} ({label})"
        m = temps.scalar(m, f"mass of {label_here}")
        h = temps.matrix(h, f"first moment of {label_here} about the force-torque point")
        J = temps.matrix(J, f"inertia of {label_here} about the force-torque point")
        for k, w_k, v_k in twists:
            jacobian[0:3, k] = m * v_k + cross(w_k, h)
            jacobian[3:6, k] = mul(J, w_k) + cross(h, v_k)
    return jacobian, body.bias(gravity).T


def force_torque_outputs(robot: Robot, links: dict, n_u: int, temps: Temporaries) -> tuple[Matrix, Matrix]:
    """``(ft_jacobians, ft_states)`` for ``robot.force_torques`` from the derivation's link
    kinematics (:class:`mb_sim.symbolic.kane.LinkKinematics` by link name)."""
    sensors = list(getattr(robot, "force_torques", []))
    gravity = _gravity(robot)
    blocks = [sensor_wrench(robot, links, n_u, sensor, gravity, temps) for sensor in sensors]
    jacobians = Matrix.vstack(zeros(0, n_u), *[j for j, _ in blocks])
    states = Matrix.vstack(zeros(0, FT_STATE_COLUMNS), *[b for _, b in blocks])
    return jacobians, states

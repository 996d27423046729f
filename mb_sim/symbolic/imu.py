"""What an IMU reads, from the derivation's link kinematics: the outputs ``imu_jacobians`` and
``imu_states``.

An IMU is fixed in a link L.  Its reading is the link's angular velocity and the specific force
(acceleration minus gravity) of the sensor point, both linear in u' at a given state:

    omega = R w                                   (world components)
    alpha = J_w u' + alpha_b,   a_O = J_v u' + a_b

where ``J_w``, ``J_v`` (3 x n_u each) are the partial angular velocities and the partial velocities
of L's origin O with respect to every speed, in world components: for the speeds of the joint
whose child is C (C is L or one of its ancestors), ``J_w[:, k] = R_C w_k`` and
``J_v[:, k] = R_C v_k + J_w[:, k] x (p_L - p_C)`` (everything below C turns with it).  The bias
parts are the recursion's u'-free accelerations rotated to world.  The sensor's mounting (offset
``d`` and rotation in L) stays out of the generated code: the point's acceleration is
``a_O + alpha x d + omega x (omega x d)`` (:mod:`mb_sim.sim.imu`), so moving a sensor needs no
new build, only its link does.

Rows per link carrying IMUs (:func:`imu_links`, each link once: the IMUs on it share them, and
adding, renaming or moving an IMU on such a link needs no new build): ``imu_jacobians`` 6 (J_w
then J_v); ``imu_states`` one row of :data:`IMU_STATE_COLUMNS`: omega, v_O, alpha_b, a_b - g
(world components; gravity as the robot's gravity parameters, so ``set_parameters`` changes it).
"""
from __future__ import annotations

from sympy import Matrix, zeros

from mb_sim.model import Gravity, Robot
from mb_sim.symbolic.composite import ZERO3, cross, mul
from mb_sim.symbolic.equations import IMU_JACOBIAN_ROWS, IMU_STATE_COLUMNS

__all__ = ["imu_links", "imu_outputs", "link_jacobian", "link_state"]


def _gravity(robot: Robot) -> Matrix:
    """The robot's gravitational acceleration (world components; parameters or zeros)."""
    return next((Matrix(g.components) for g in robot.load_groups if isinstance(g, Gravity)), ZERO3)


def link_jacobian(links: dict, name: str, n_u: int) -> Matrix:
    """6 x n_u: partial angular velocities, then partial velocities of link `name`'s origin, with
    respect to all speeds (world components)."""
    jacobian = zeros(IMU_JACOBIAN_ROWS, n_u)
    origin = links[name].position
    link = name
    while link is not None:
        kin = links[link]
        for k in kin.own_speeds:
            w_k = mul(kin.rotation, kin.angular_partials[k])
            v_k = mul(kin.rotation, kin.partials[k]) + cross(w_k, origin - kin.position)
            jacobian[0:3, k] = w_k
            jacobian[3:6, k] = v_k
        link = kin.parent
    return jacobian


def link_state(links: dict, name: str, gravity: Matrix) -> Matrix:
    """1 x 12: omega, v_O, alpha_b, a_b - g of link `name` (world components)."""
    kin = links[name]
    R = kin.rotation
    return Matrix([[*mul(R, kin.angular_velocity), *mul(R, kin.velocity), *mul(R, kin.angular_acceleration_bias),
                    *(mul(R, kin.acceleration_bias) - gravity)]])


def imu_links(robot: Robot) -> list[str]:
    """The links carrying ``robot.imus``, each once, in the robot's order of links (so the IMUs'
    order changes no build)."""
    carriers = {imu.link for imu in getattr(robot, "imus", [])}
    return [name for name in robot.links if name in carriers]


def imu_outputs(robot: Robot, links: dict, n_u: int) -> tuple[Matrix, Matrix]:
    """``(imu_jacobians, imu_states)``, rows per link of :func:`imu_links`, from the derivation's
    link kinematics (:class:`mb_sim.symbolic.kane.LinkKinematics` by link name)."""
    carriers, gravity = imu_links(robot), _gravity(robot)
    jacobians = Matrix.vstack(zeros(0, n_u), *[link_jacobian(links, link, n_u) for link in carriers])
    states = Matrix.vstack(zeros(0, IMU_STATE_COLUMNS), *[link_state(links, link, gravity) for link in carriers])
    return jacobians, states

"""The inverse dynamics of a tree as a regressor: efforts linear in the inertial parameters.

For every rigid body b (a moving link with the links fixed to it merged, as in
:mod:`mb_sim.symbolic.composite`) the standard inertial parameters are, in the body's frame about
its origin O: the mass m, the first moment h = m c and the inertia J_O, ten numbers in
Pinocchio's order ``m, hx, hy, hz, Jxx, Jxy, Jyy, Jxz, Jyz, Jzz``.  With the origin's full
acceleration a, the angular acceleration alpha and angular velocity w (body components) and
gravity g, the body's inertia wrench less its weight about O is

    f = m (a - g) + alpha x h + w x (w x h)
    n = h x (a - g) + J_O alpha + w x (J_O w)

linear in the ten: f = Y_f pi_b, n = Y_n pi_b.  Kane's generalized inertia force less gravity on
speed k is the sum over the bodies it moves of ``v_k . f + w_k . n`` (v_k, w_k the partial
velocities of the body's origin and angular velocity), so the efforts are

    tau = Y(q, u, u') pi,

one column per body parameter, and two per one-DoF joint for its ``<dynamics>``: viscous
damping (u) and smooth Coulomb friction (tanh(u / v_s), as :class:`mb_sim.model.JointDissipation`
applies it).  Joint stops, springs, contacts and motors are not part of it: identification
refuses robots with motors or constraint rows (:func:`derive_regressor`).
"""
from __future__ import annotations

from dataclasses import dataclass

from sympy import Expr, Matrix, S, Symbol, tanh, zeros

from mb_sim.model import Gravity, JointDissipation, Robot
from mb_sim.model.loads import FRICTION_SPEED
from mb_sim.symbolic.composite import ZERO3, _Composite, cross
from mb_sim.symbolic.kane import _Recursion
from mb_sim.symbolic.plain import PlainSymbols, robot_inputs
from mb_sim.symbolic.temporaries import Temporaries

__all__ = ["BODY_PARAMETERS", "Regressor", "RegressorError", "derive_regressor"]

BODY_PARAMETERS = ("m", "hx", "hy", "hz", "Jxx", "Jxy", "Jyy", "Jxz", "Jyz", "Jzz")
"""A body's ten standard parameters, in Pinocchio's order (first moment and inertia about the
body frame's origin, body-frame components)."""


class RegressorError(ValueError):
    """The robot's efforts are not a regressor of its parameters (names the reason)."""


@dataclass
class Regressor:
    """``tau = matrix * pi``: the symbolic regressor and what its columns mean.

    ``matrix`` is n_u x n_pi in the plain coordinates ``q``, speeds ``u`` and accelerations
    ``accelerations`` (and the robot's other parameters, ``parameters``), with ``temporaries``
    assigned first.  ``columns`` names each column ``<link>.<parameter>`` or
    ``<joint>.damping`` / ``<joint>.friction``; ``bodies`` maps each body (its carrier link) to the
    links merged into it with their rotation and offset in the carrier's frame.
    """

    q: list[Symbol]
    u: list[Symbol]
    accelerations: list[Symbol]
    temporaries: list[tuple[Symbol, Expr]]
    matrix: Matrix
    columns: list[str]
    bodies: dict[str, list[tuple[str, Matrix, Matrix]]]
    joints: dict[str, int]  # one-DoF joint name -> its speed index
    coordinates: dict[str, int]  # one-DoF joint name -> its coordinate index
    friction_joints: list[str]  # joints with a damping and a friction column, in column order
    parameters: dict[Symbol, float]
    meanings: dict[Symbol, str]


def _check_identifiable(robot: Robot) -> None:
    """Refuse what the regressor does not model, naming it."""
    if list(robot.system.holonomic_constraints) or list(robot.system.nonholonomic_constraints):
        raise RegressorError(f"robot '{robot.name}' has constraint rows (closed loops, mimic joints or rolling): "
                             "identification handles open trees only")
    voltages = [i.component.name for i in robot.collect_inputs("voltage")]
    if voltages:
        raise RegressorError(f"robot '{robot.name}' has DC motors ({', '.join(voltages)}): identify it from "
                             "efforts, without the <motor> elements")


def _inertia_columns(x: Matrix) -> Matrix:
    """L(x) with J x = L(x) (Jxx, Jxy, Jyy, Jxz, Jyz, Jzz) for a symmetric J."""
    return Matrix([[x[0], x[1], 0, x[2], 0, 0],
                   [0, x[0], x[1], 0, x[2], 0],
                   [0, 0, 0, x[0], x[1], x[2]]])


def _skew(x: Matrix) -> Matrix:
    return Matrix([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def _body_regressor(a: Matrix, alpha: Matrix, w: Matrix) -> Matrix:
    """The 6 x 10 map from (m, h, J_O) to (f, n) of the module docstring; `a` already less g."""
    W = _skew(w)
    f = Matrix.hstack(a, _skew(alpha) + W * W, zeros(3, 6))
    n = Matrix.hstack(ZERO3, -_skew(a), _inertia_columns(alpha) + W * _inertia_columns(w))
    return Matrix.vstack(f, n)


def derive_regressor(robot: Robot) -> Regressor:
    """The regressor of `robot`'s inverse dynamics (define steps already run)."""
    _check_identifiable(robot)
    system = robot.system
    plain = PlainSymbols(list(system.q), list(system.u), robot_inputs(robot), list(system.kdes), [],
                         list(system.u_aux))
    temps = Temporaries("_reg")
    rec = _Recursion(robot, plain, temps)
    rec.run_kinematics()
    composite = _Composite(rec, robot, temps)
    composite.joint_twists()
    accelerations = [Symbol(f"{u}_dot", real=True) for u in plain.u]
    gravity = next((Matrix(g.components) for g in robot.load_groups if isinstance(g, Gravity)), ZERO3)
    bodies = _bodies(robot, composite)
    n_u = len(plain.u)
    blocks, columns = [], []
    for carrier in bodies:
        blocks.append(_body_columns(composite, carrier, accelerations, gravity, n_u))
        columns += [f"{carrier}.{p}" for p in BODY_PARAMETERS]
    one_dof = [j for j in robot.joints.values() if len(j.u) == 1 and len(j.q) == 1]
    joints = {j.name: rec.speed_index[j.u[0]] for j in one_dof}
    coordinates = {j.name: rec.q_index[j.q[0]] for j in one_dof}
    friction_joints = [name for name, joint in robot.joints.items() if name in joints]
    for name in friction_joints:
        k, u = joints[name], plain.u[joints[name]]
        blocks.append(Matrix(n_u, 2, lambda i, j: (u if j == 0 else tanh(u / FRICTION_SPEED)) if i == k else 0))
        columns += [f"{name}.damping", f"{name}.friction"]
    matrix = Matrix.hstack(zeros(n_u, 0), *blocks)
    parameters = {p: v for p, v in robot.parameters.items() if not _is_dissipation(robot, p)}
    return Regressor(plain.q, plain.u, accelerations, temps.assignments, matrix, columns, bodies, joints, coordinates,
                     friction_joints, parameters, temps.meanings)


def _is_dissipation(robot: Robot, symbol) -> bool:
    return any(symbol in (g.d, g.f, g.v_s) for g in robot.load_groups if isinstance(g, JointDissipation))


def _bodies(robot: Robot, composite: _Composite) -> dict[str, list[tuple[str, Matrix, Matrix]]]:
    """Moving carriers with a massive link, each with its links (name, rotation, offset)."""
    bodies: dict[str, list] = {}
    for name, link in robot.links.items():
        if link.body is None or not composite._moves(name):
            continue
        carrier, rotation, offset = composite.carrier(name)
        bodies.setdefault(carrier, []).append((name, rotation, offset))
    return bodies


def _body_columns(composite: _Composite, name: str, accelerations: list, gravity: Matrix, n_u: int) -> Matrix:
    """The ten columns of body `name`: rows of the speeds that move it."""
    t, kin = composite.temps, composite.rec.links[name]
    R = kin.rotation
    o = composite.relative(kin.position, f"origin of {name} from the reference point")
    speeds = composite.ancestor_speeds(name)
    partials = {}
    for k in speeds:
        w_k, v0_k = composite.twists[k]
        partials[k] = (t.matrix(R.T * (v0_k + cross(w_k, o)), f"partial velocity of the origin of {name} (body)"),
                       t.matrix(R.T * w_k, f"partial angular velocity of {name} (body)"))
    a = kin.acceleration_bias - R.T * gravity + sum((partials[k][0] * accelerations[k] for k in speeds), ZERO3)
    alpha = kin.angular_acceleration_bias + sum((partials[k][1] * accelerations[k] for k in speeds), ZERO3)
    a = t.matrix(a, f"acceleration of the origin of {name} less gravity (body)")
    alpha = t.matrix(alpha, f"angular acceleration of {name} (body)")
    Y = t.matrix(_body_regressor(a, alpha, kin.angular_velocity), f"inertia wrench of {name} per parameter")
    block = zeros(n_u, len(BODY_PARAMETERS))
    for k in speeds:
        v_k, w_k = partials[k]
        row = (Matrix.hstack(v_k.T, w_k.T) * Y)
        for j in range(len(BODY_PARAMETERS)):
            block[k, j] = row[j]
    return block

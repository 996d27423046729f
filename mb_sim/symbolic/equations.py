"""The derived equations of motion of a robot, as the code generators consume them.

All quantities are in terms of plain SymPy symbols (no functions of time): coordinates ``q``,
speeds ``u``, electrical states ``z`` (motor currents), ``inputs`` (joint efforts, then motor
voltages), ``parameters`` (values in ``parameter_values``) and time ``time``.  ``temporaries`` are named intermediate quantities, in evaluation order: each right-hand
side uses only the input symbols and earlier temporaries.  This keeps expression size near-linear
in the number of bodies.

Outputs (keys of ``outputs``; each a column or matrix of expressions in the symbols above and the
temporaries):

=====================  =============  ===========================================================
name                   shape          meaning
=====================  =============  ===========================================================
``mass_matrix``        (n_u, n_u)     M(q), symmetric positive definite
``forcing``            (n_u, 1)       F(q, u, inputs, t), so that M u' = F without constraints
``qdot``               (n_q, 1)       kinematic differential equations solved: q' = qdot(q, u)
``kinematic_map``      (n_q, n_u)     N(q) = dq'/du (q' = N(q) u): how a change of the speeds
                                      moves the coordinates (identity but for quaternions)
``phi``                (n_h, 1)       holonomic constraint errors Phi(q) (0 when satisfied)
``phi_jacobian``       (n_h, n_q)     dPhi/dq, for projecting coordinates onto Phi = 0
``constraint_matrix``  (n_c, n_u)     A(q) of the velocity constraints A u + b = 0
``constraint_bias``    (n_c, 1)       b(q, t)
``acceleration_bias``  (n_c, 1)       c(q, u, t) so that the acceleration constraints read
                                      A u' + c = 0
``link_poses``         (n_links, 12)  world pose of each link frame: row-major rotation (9)
                                      then position (3)
``kinetic_energy``     (1, 1)         kinetic energy [J]
``potential_energy``   (1, 1)         potential energy of gravity and springs [J]
``constraint_wrenches`` (n_c, 6)      per constraint row, the unit wrench (force, torque) on a
                                      loop joint's child its multiplier scales, in the loop
                                      joint's frame (zero for constraints between coordinates)
``spring_states``      (n_s, 12)      per spring-damper: marker positions p0, p1, relative
                                      velocity v1 - v0 (world axes), length L, L', scalar force
``spring_lengths``     (n_s, 1)       per spring-damper, its length L (checked by the dynamics)
``electrical_rates``   (n_z, 1)       z' of the electrical states (motor currents)
``electrical_decay``   (n_z, 1)       per electrical state, the coefficient ``lambda`` of the
                                      part ``lambda z`` of z' linear in z itself (-R/L for a
                                      motor; the integrator takes it exactly)
``motor_states``       (n_m, 4)       per DC motor: voltage, current, joint torque, joint speed
``contact_states``     (n_k, 12)      per contact feature (``contact_names``): contact point,
                                      normal, penetration, its rate, normal force, force on
                                      the link (world axes; see :mod:`mb_sim.model.contact`)
``imu_jacobians``      (6 n_i, n_u)   per link carrying IMUs (``imu_links``, each once): partial
                                      angular velocities (3 rows), then partial velocities of
                                      the link's origin (3 rows), world axes (see
                                      :mod:`mb_sim.symbolic.imu`)
``imu_states``         (n_i, 12)      per link carrying IMUs: its angular velocity, origin velocity,
                                      angular acceleration bias, origin acceleration bias
                                      minus gravity (world axes; the u'-free parts)
``ft_jacobians``       (6 n_f, n_u)   per force-torque sensor (``force_torque_names``): d(force,
                                      torque about the joint origin)/du' of the wrench on the
                                      joint's child side (world; :mod:`mb_sim.symbolic.force_torque`)
``ft_states``          (n_f, 6)       per force-torque sensor: that wrench's u'-free part, its
                                      weight included (contacts are added at run time)
``noncontributing_    (n_r, n_u)     per noncontributing force (``noncontributing_names``):
jacobians``                           d(right side of its auxiliary equation)/du'
``noncontributing_    (n_r, 4 + n_r) per noncontributing force: the right side's u'-free part
states``                              (applied loads included), its axis (world), its row of the
                                      coupling a . a_j (:mod:`mb_sim.symbolic.noncontributing`)
=====================  =============  ===========================================================

Optional, only in a model with a ground's stiction anchors (not in ``OUTPUT_NAMES``, no block of
the flat output vector): ``state_updates`` (n_z, 1), every electrical state's value after a step
(the anchors moved as :mod:`mb_sim.model.contact` says, the others as they are), which the
integrators copy into z after each step (C: ``mb_state_updates`` in ``mb_finish_step``).

Constrained accelerations solve ``[M A^T; A 0] [u'; lam] = [F; -c]``; the generalized
constraint forces are then ``-A^T lam``, and a loop joint's reaction on its child is
``-sum(lam_i w_i)`` over its rows ``i`` (``w_i`` the rows of ``constraint_wrenches``).

After each integration step the simulator projects the state back onto the constraints (see
:mod:`mb_sim.codegen`): each unit quaternion block ``q[s:s + 4] = (qw, qx, qy, qz)`` for ``s`` in
``quaternion_starts`` is renormalized, the ``dependent_coordinates`` (all coordinates if empty)
are corrected onto ``Phi(q) = 0``, then the ``dependent_speeds`` (all speeds if empty) onto
``A u + b = 0``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sympy import Expr, Matrix, Symbol

__all__ = ["CONTACT_STATE_COLUMNS", "FT_JACOBIAN_ROWS", "FT_STATE_COLUMNS", "IMU_JACOBIAN_ROWS", "IMU_STATE_COLUMNS", "EquationsOfMotion", "OUTPUT_NAMES", "SPRING_STATE_COLUMNS"]

from mb_sim.symbolic.output_names import (  # noqa: E402  (SymPy-free: the numeric models read them)
    CONTACT_STATE_COLUMNS, FT_JACOBIAN_ROWS, FT_STATE_COLUMNS, IMU_JACOBIAN_ROWS, IMU_STATE_COLUMNS, OUTPUT_NAMES,
    SPRING_STATE_COLUMNS, Dimensions,
)


@dataclass
class EquationsOfMotion(Dimensions):
    """Equations of motion of one robot (see the module docstring for the outputs).

    ``projection_speeds`` are the speeds along which projection moves the coordinates onto
    ``Phi = 0`` (``dq = N(q) du``; empty: all), ``position_speeds`` those the constraint
    kinematics solver prefers to solve positions for, ``dependent_speeds`` those it solves
    velocity constraints for, ``dependent_coordinates`` the coordinates the position speeds move
    (what the constraints determine; for reports); ``quaternion_starts``
    holds the index in ``q`` of the scalar part of each unit quaternion block ``(qw, qx, qy, qz)``.

    ``constraint_names`` names, per row of the constraint matrix, the constraint (the component
    that added it: a mimic joint, a loop-closure joint...) it belongs to; rows of one name are
    enabled and disabled together.  ``redundant_constraints`` are the names that had rows
    redundant with the others where the robot is assembled; ``constraint_labels`` says what each
    row is (for messages).

    ``constraint_independent`` holds, per constraint row, whether it was independent of the rows
    before it where redundancy was judged (seed 004's count; empty: all).  Every row is enforced
    all the same: the generated dynamics leave a row dependent on the others where the robot is to
    them, at every evaluation (see :mod:`mb_sim.symbolic.constraints`).
    ``generic_configurations`` are the configurations redundancy was judged at (the assembled one
    first).
    ``z`` are the electrical states (motor currents; empty by default) and ``motor_names`` names
    the rows of ``motor_states``; ``spring_names`` names the rows of the spring outputs; ``force_laws`` holds, per spring with a
    user force law (numbered as its generated code calls back), ``(spring name, law name)``.
    Outputs introduced after the first ones (``constraint_wrenches`` and the spring outputs) are
    filled with zeros of the right shape when not given.
    """

    name: str
    q: list[Symbol]
    u: list[Symbol]
    inputs: list[Symbol]
    parameters: list[Symbol]
    parameter_values: list[float]
    time: Symbol
    temporaries: list[tuple[Symbol, Expr]]
    outputs: dict[str, Matrix]
    link_names: list[str] = field(default_factory=list)
    descriptions: dict[Symbol, str] = field(default_factory=dict)
    dependent_coordinates: list[int] = field(default_factory=list)
    dependent_speeds: list[int] = field(default_factory=list)
    position_speeds: list[int] = field(default_factory=list)
    projection_speeds: list[int] = field(default_factory=list)
    quaternion_starts: list[int] = field(default_factory=list)
    constraint_names: list[str] = field(default_factory=list)
    redundant_constraints: list[str] = field(default_factory=list)
    constraint_labels: list[str] = field(default_factory=list)
    spring_names: list[str] = field(default_factory=list)
    force_laws: list[tuple[str, str]] = field(default_factory=list)
    z: list[Symbol] = field(default_factory=list)
    motor_names: list[str] = field(default_factory=list)
    constraint_independent: list[bool] = field(default_factory=list)
    generic_configurations: list[list[float]] = field(default_factory=list)
    dissipation_rows: list[int] = field(default_factory=list)
    contact_names: list[str] = field(default_factory=list)
    imu_links: list[str] = field(default_factory=list)
    force_torque_names: list[str] = field(default_factory=list)
    noncontributing_names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if "kinematic_map" not in self.outputs and "qdot" in self.outputs:
            qdot = Matrix(self.outputs["qdot"]).reshape(len(self.q), 1)
            self.outputs["kinematic_map"] = qdot.jacobian(Matrix(len(self.u), 1, self.u))
        defaults = {"constraint_wrenches": (self.n_constraints, 6),
                    "spring_states": (len(self.spring_names), SPRING_STATE_COLUMNS),
                    "spring_lengths": (len(self.spring_names), 1),
                    "electrical_rates": (len(self.z), 1), "electrical_decay": (len(self.z), 1),
                    "motor_states": (len(self.motor_names), 4),
                    "contact_states": (len(self.contact_names), CONTACT_STATE_COLUMNS),
                    "imu_jacobians": (IMU_JACOBIAN_ROWS * len(self.imu_links), self.n_u),
                    "imu_states": (len(self.imu_links), IMU_STATE_COLUMNS),
                    "ft_jacobians": (FT_JACOBIAN_ROWS * len(self.force_torque_names), self.n_u),
                    "ft_states": (len(self.force_torque_names), FT_STATE_COLUMNS),
                    "noncontributing_jacobians": (len(self.noncontributing_names), self.n_u),
                    "noncontributing_states": (len(self.noncontributing_names), 4 + len(self.noncontributing_names))}
        for name, shape in defaults.items():
            self.outputs.setdefault(name, Matrix.zeros(*shape))

"""The names and fixed shapes of the outputs of the equations of motion (documented in
:mod:`mb_sim.symbolic.equations`), without SymPy: the numeric models read them when a model is
loaded from the cache."""
from __future__ import annotations

__all__ = ["CONTACT_STATE_COLUMNS", "FT_JACOBIAN_ROWS", "FT_STATE_COLUMNS", "IMU_JACOBIAN_ROWS", "IMU_STATE_COLUMNS",
           "OUTPUT_NAMES", "SPRING_STATE_COLUMNS"]

OUTPUT_NAMES = (
    "mass_matrix", "forcing", "qdot", "kinematic_map", "phi", "phi_jacobian", "constraint_matrix",
    "constraint_bias", "acceleration_bias", "link_poses", "kinetic_energy", "potential_energy",
    "constraint_wrenches", "spring_states", "spring_lengths", "electrical_rates", "electrical_decay",
    "motor_states", "contact_states", "imu_jacobians", "imu_states", "ft_jacobians", "ft_states",
)
#: Columns of the spring_states output.
SPRING_STATE_COLUMNS = 12
#: Columns of the contact_states output.
CONTACT_STATE_COLUMNS = 12
#: Columns of the imu_states output, rows of the imu_jacobians output per IMU.
IMU_STATE_COLUMNS, IMU_JACOBIAN_ROWS = 12, 6
#: Columns of the ft_states output, rows of the ft_jacobians output per force-torque sensor.
FT_STATE_COLUMNS, FT_JACOBIAN_ROWS = 6, 6

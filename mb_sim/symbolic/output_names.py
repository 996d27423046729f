"""The names and fixed shapes of the outputs of the equations of motion (documented in
:mod:`mb_sim.symbolic.equations`), without SymPy: the numeric models read them when a model is
loaded from the cache."""
from __future__ import annotations

__all__ = ["CONTACT_STATE_COLUMNS", "Dimensions", "FT_JACOBIAN_ROWS", "FT_STATE_COLUMNS", "IMU_JACOBIAN_ROWS",
           "IMU_STATE_COLUMNS", "OUTPUT_NAMES", "SPRING_STATE_COLUMNS"]

OUTPUT_NAMES = (
    "mass_matrix", "forcing", "qdot", "kinematic_map", "phi", "phi_jacobian", "constraint_matrix",
    "constraint_bias", "acceleration_bias", "link_poses", "kinetic_energy", "potential_energy",
    "constraint_wrenches", "spring_states", "spring_lengths", "electrical_rates", "electrical_decay",
    "motor_states", "contact_states", "imu_jacobians", "imu_states", "ft_jacobians", "ft_states",
    "noncontributing_jacobians", "noncontributing_states",
)
#: Columns of the spring_states output.
SPRING_STATE_COLUMNS = 12
#: Columns of the contact_states output.
CONTACT_STATE_COLUMNS = 12
#: Columns of the imu_states output, rows of the imu_jacobians output per link carrying IMUs.
IMU_STATE_COLUMNS, IMU_JACOBIAN_ROWS = 12, 6
#: Columns of the ft_states output, rows of the ft_jacobians output per force-torque sensor.
FT_STATE_COLUMNS, FT_JACOBIAN_ROWS = 6, 6


class Dimensions:
    """The dimensions of equations of motion with ``q``, ``u``, ``z`` and ``outputs`` (shaped): the
    equations themselves, or their header (:class:`mb_sim.codegen.header.ModelHeader`)."""

    @property
    def n_q(self) -> int:
        """Number of generalized coordinates."""
        return len(self.q)

    @property
    def n_u(self) -> int:
        """Number of generalized speeds."""
        return len(self.u)

    @property
    def n_z(self) -> int:
        """Number of electrical states."""
        return len(self.z)

    @property
    def n_holonomic(self) -> int:
        """Number of holonomic constraints: the rows of Phi, which are the first rows of A."""
        return self.outputs["phi"].shape[0]

    @property
    def n_constraints(self) -> int:
        """Number of (independent) velocity constraints."""
        matrix = self.outputs.get("constraint_matrix")
        return 0 if matrix is None else matrix.shape[0]

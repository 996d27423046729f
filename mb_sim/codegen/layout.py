"""Where each output of a model lives in the flat output vector shared by all backends.

Outputs are stored in ``OUTPUT_NAMES`` order, each block flattened row-major.  The dynamics
entry points write only the ``DYNAMICS_OUTPUTS`` blocks, the projection onto the constraints
only the ``PROJECTION_OUTPUTS`` blocks, at the same offsets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mb_sim.codegen.errors import CodegenError
from mb_sim.symbolic.output_names import (
    CONTACT_STATE_COLUMNS, FT_STATE_COLUMNS, IMU_JACOBIAN_ROWS, IMU_STATE_COLUMNS, OUTPUT_NAMES, SPRING_STATE_COLUMNS,
)

if TYPE_CHECKING:  # or a ModelHeader (mb_sim.codegen.header), which has what is read here
    from mb_sim.symbolic.equations import EquationsOfMotion

__all__ = ["Block", "OutputLayout", "DYNAMICS_OUTPUTS", "PROJECTION_OUTPUTS"]

DYNAMICS_OUTPUTS = (
    "mass_matrix", "forcing", "qdot", "constraint_matrix", "constraint_bias", "acceleration_bias",
    "spring_lengths", "electrical_rates",
)
# The kinematic map moves coordinates along speeds; the mass matrix weighs the velocity projection.
PROJECTION_OUTPUTS = ("phi", "kinematic_map", "mass_matrix", "constraint_matrix", "constraint_bias")


@dataclass(frozen=True)
class Block:
    """One output: its offset in the flat vector and its (rows, columns)."""

    name: str
    offset: int
    shape: tuple[int, int]

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]


@dataclass(frozen=True)
class OutputLayout:
    """Offsets and shapes of all outputs of one model, and the total size."""

    blocks: dict[str, Block]
    size: int

    @classmethod
    def from_equations(cls, eom: EquationsOfMotion) -> OutputLayout:
        """Layout of `eom`'s outputs, after checking each has the documented shape.

        Raises
        ------
        CodegenError
            An output is missing or has the wrong shape, or Phi has more rows than A (each row
            of Phi is one of the first rows of A: they are enabled together).
        """
        missing = [name for name in OUTPUT_NAMES if name not in eom.outputs]
        if missing:
            raise CodegenError(f"model {eom.name!r}: outputs {', '.join(missing)} missing")
        if eom.n_holonomic > eom.n_constraints:
            raise CodegenError(f"model {eom.name!r}: {eom.n_holonomic} holonomic constraints but only "
                               f"{eom.n_constraints} rows in the constraint matrix; its first rows must be dPhi/dt")
        expected = _expected_shapes(eom)
        blocks, offset = {}, 0
        for name in OUTPUT_NAMES:
            shape = tuple(eom.outputs[name].shape)
            if any(e is not None and e != s for e, s in zip(expected[name], shape)):
                want = " x ".join("any" if e is None else str(e) for e in expected[name])
                raise CodegenError(
                    f"model {eom.name!r}: output {name!r} has shape {shape[0]} x {shape[1]}, "
                    f"expected {want}")
            blocks[name] = Block(name, offset, shape)
            offset += blocks[name].size
        return cls(blocks, offset)

    def indices(self, names: tuple[str, ...]) -> np.ndarray:
        """Positions in the flat vector of the elements of outputs `names`, in order."""
        return np.concatenate(
            [np.arange(b.offset, b.offset + b.size) for b in (self.blocks[n] for n in names)])

    def view(self, flat: np.ndarray, name: str) -> np.ndarray:
        """Output `name` as a shaped view into `flat` (no copy)."""
        block = self.blocks[name]
        return flat[block.offset:block.offset + block.size].reshape(block.shape)

    def unpack(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """All outputs as shaped copies, keyed by name."""
        return {name: self.view(flat, name).copy() for name in self.blocks}


def _expected_shapes(eom: EquationsOfMotion) -> dict[str, tuple[int | None, int]]:
    """Documented shape of each output (None: any number of rows)."""
    n_q, n_u, n_c, n_h, n_s = eom.n_q, eom.n_u, eom.n_constraints, eom.n_holonomic, len(eom.spring_names)
    return {
        "mass_matrix": (n_u, n_u), "forcing": (n_u, 1), "qdot": (n_q, 1), "kinematic_map": (n_q, n_u),
        "phi": (None, 1),
        "phi_jacobian": (n_h, n_q),
        "constraint_matrix": (n_c, n_u), "constraint_bias": (n_c, 1),
        "acceleration_bias": (n_c, 1), "link_poses": (None, 12), "kinetic_energy": (1, 1),
        "potential_energy": (1, 1), "constraint_wrenches": (n_c, 6),
        "spring_states": (n_s, SPRING_STATE_COLUMNS), "spring_lengths": (n_s, 1),
        "electrical_rates": (eom.n_z, 1), "electrical_decay": (eom.n_z, 1),
        "motor_states": (len(eom.motor_names), 4),
        "contact_states": (len(eom.contact_names), CONTACT_STATE_COLUMNS),
        "imu_jacobians": (IMU_JACOBIAN_ROWS * len(eom.imu_links), n_u),
        "imu_states": (len(eom.imu_links), IMU_STATE_COLUMNS),
        "ft_jacobians": (None, n_u), "ft_states": (None, FT_STATE_COLUMNS),  # sensors' rows: cache keeps no names
        "noncontributing_jacobians": (len(eom.noncontributing_names), n_u),
        "noncontributing_states": (len(eom.noncontributing_names), 4 + len(eom.noncontributing_names)),
    }

"""The inputs of a run: efforts of the actuated joints, then voltages of the DC motors, each
clamped to its limit when written (by name, or in full)."""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from mb_sim.sim.errors import EffortLimitWarning
from mb_sim.sim.robot_model import RobotModel
from mb_sim.sim.state import vector

__all__ = ["Inputs"]


class Inputs:
    """Writes clamped inputs into `inputs` (the model's input buffer) for a run of `robot`;
    actuated joints without an effort limit get `default_effort_limit` (None: unclamped)."""

    def __init__(self, robot: RobotModel, inputs: np.ndarray, default_effort_limit: float | None) -> None:
        self.robot, self.inputs = robot, inputs
        self.effort_limits = np.array(robot.rated_effort_limits, dtype=float)
        self.voltage_limits = np.array(robot.voltage_limits, dtype=float)
        self._default_effort_limits(default_effort_limit)

    def _default_effort_limits(self, default: float | None) -> None:
        """Give actuated joints without an effort limit `default` (if any); warn about them, but
        for the passive ones (:meth:`RobotModel.passive_joints`: no effort expected)."""
        passive = self.robot.passive_joints()
        unlimited = [name for name, limit in zip(self.robot.actuated_joints, self.effort_limits)
                     if not math.isfinite(limit) and name not in passive]
        if default is not None:
            self.effort_limits[~np.isfinite(self.effort_limits)] = default
        if not unlimited:
            return
        listed = ", ".join(unlimited)
        joints = f"joint {listed} has" if len(unlimited) == 1 else f"joints {listed} have"
        if default is None:
            consequence = "efforts are not clamped; set default_effort_limit (mb-sim: --default-effort-limit)"
        else:
            consequence = f"efforts are clamped to default_effort_limit {default:g} (N m or N)"
        warnings.warn(f"robot '{self.robot.name}': {joints} no effort limit in the URDF: {consequence}",
                      EffortLimitWarning, stacklevel=4)

    def set_efforts(self, efforts: Mapping[str, float] | Sequence[float]) -> None:
        """Efforts by joint name (others unchanged) or in full; a joint a motor drives is refused."""
        motorized = {joint: motor for motor, joint in self.robot.motor_joints.items()}
        for name in efforts if isinstance(efforts, Mapping) else ():
            if name in motorized:
                raise ValueError(f"joint {name!r} is driven by motor {motorized[name]!r}: command its voltage "
                                 "(set_voltages), not an effort")
        self._write(efforts, self.robot.actuated_joints, self.effort_limits, 0, "effort", "joint")

    def set_voltages(self, voltages: Mapping[str, float] | Sequence[float]) -> None:
        """Voltages by motor name (others unchanged) or in full, in ``motors`` order."""
        self._write(voltages, self.robot.motors, self.voltage_limits, len(self.robot.actuated_joints), "voltage",
                    "motor")

    def _write(self, values: Mapping[str, float] | Sequence[float], names: Sequence[str], limits: np.ndarray,
               start: int, what: str, owner: str) -> None:
        """Write clamped inputs `names` (at `start` in the input vector) by name or in full."""
        inputs = self.inputs[start:start + len(names)]  # a view
        if not isinstance(values, Mapping):
            inputs[:] = np.clip(vector(values, len(names), f"{what}s"), -limits, limits)
            return
        for name, value in values.items():
            if name not in names:
                known = ", ".join(names) or "none"
                raise ValueError(f"{owner} {name!r} takes no {what}; {owner}s taking one: {known}")
            value = float(value)
            if not np.isfinite(value):
                raise ValueError(f"{what} of {owner} {name!r} is not finite: {value}")
            k = list(names).index(name)
            inputs[k] = min(max(value, -limits[k]), limits[k])

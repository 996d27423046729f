"""The compiled robot a simulator runs, as the tables its parts read: names, index maps, limits and
default parameters; built once per robot and never changed by a run (Pinocchio's ``Model``,
MuJoCo's ``MjModel``).  What changes during a run lives in :mod:`mb_sim.sim.state`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from mb_sim.sim.robot_facts import RobotFacts

__all__ = ["RobotModel"]


@dataclass(frozen=True, eq=False)
class RobotModel:
    """What a run reads of its compiled robot (read-only).

    Attributes
    ----------
    facts
        The robot's facts (:class:`~mb_sim.sim.robot_facts.RobotFacts`).
    coordinate_names, speed_names, electrical_state_names, parameter_names
        In the order of ``q``, ``u``, ``z`` and the parameters.
    actuated_joints, motors, wrench_links
        Joints taking an effort (the first inputs), DC motors taking a voltage (the next), links
        taking an external wrench (six inputs each, the last).
    motor_joints
        Each motor's joint.
    rated_effort_limits, voltage_limits
        The URDF's effort limits of the actuated joints (inf where it gives none) and the motors'
        voltage limits.
    one_dof
        Each one-DoF joint's (coordinate index in ``q``, speed index in ``u``).
    angles
        Coordinate indices of the revolute and continuous one-DoF joints (compared modulo 2 pi).
    dependent_coordinates
        Indices of the coordinates the constraints determine.
    constraint_names
        Per velocity-constraint row, the name of the constraint it belongs to.
    parameter_defaults
        The parameters' values as compiled (the URDF's).
    """

    facts: RobotFacts
    coordinate_names: tuple[str, ...]
    speed_names: tuple[str, ...]
    electrical_state_names: tuple[str, ...]
    parameter_names: tuple[str, ...]
    actuated_joints: tuple[str, ...]
    motors: tuple[str, ...]
    motor_joints: Mapping[str, str]
    rated_effort_limits: np.ndarray
    voltage_limits: np.ndarray
    one_dof: Mapping[str, tuple[int, int]]
    angles: tuple[int, ...]
    dependent_coordinates: tuple[int, ...]
    constraint_names: tuple[str, ...]
    parameter_defaults: np.ndarray
    wrench_links: tuple[str, ...] = ()

    @classmethod
    def of(cls, facts: RobotFacts, numeric_model) -> RobotModel:
        """The tables of a robot with `facts` compiled into `numeric_model` (its header's names)."""
        coordinates, speeds = tuple(facts.coordinate_names), tuple(facts.speed_names)
        one_dof = {j.name: (coordinates.index(j.coordinates[0]), speeds.index(j.speeds[0]))
                   for j in facts.joints if len(j.coordinates) == 1}
        angles = tuple(k for j, (k, _) in one_dof.items() if facts.joint(j).type in ("revolute", "continuous"))
        return cls(facts, coordinates, speeds, tuple(facts.electrical_state_names), tuple(facts.parameter_names),
                   tuple(i.name for i in facts.efforts), tuple(i.name for i in facts.voltages),
                   MappingProxyType({i.name: i.joint for i in facts.voltages}),
                   _frozen([i.limit for i in facts.efforts]), _frozen([i.limit for i in facts.voltages]),
                   MappingProxyType(one_dof), angles, tuple(numeric_model.dependent_coordinates),
                   tuple(numeric_model.constraint_names), _frozen(numeric_model.parameter_values),
                   tuple(dict.fromkeys(i.joint for i in facts.wrenches)))

    @property
    def name(self) -> str:
        """The robot's name."""
        return self.facts.name

    def coordinate_label(self, k: int) -> str:
        """Coordinate `k` by its joint's name where it is a one-DoF joint's, else its own name."""
        for joint, (coordinate, _) in self.one_dof.items():
            if coordinate == k:
                return joint
        return self.coordinate_names[k]

    def speed_label(self, k: int) -> str:
        """Speed `k` by its joint's name where it is a one-DoF joint's, else its own name."""
        for joint, (_, speed) in self.one_dof.items():
            if speed == k:
                return joint
        return self.speed_names[k]

    def independent_joints(self) -> list[str]:
        """One-DoF joints whose position the constraints do not determine."""
        dependent = set(self.dependent_coordinates)
        return [j for j, (k, _) in self.one_dof.items() if k not in dependent]

    def passive_joints(self) -> set[str]:
        """Actuated joints whose coordinates the constraints determine (a linkage's coupler, a mimic
        joint): driven through the constraints, no effort expected."""
        dependent = {self.coordinate_names[k] for k in self.dependent_coordinates}
        return {name for name in self.actuated_joints if set(self.facts.joint(name).coordinates) <= dependent}


def _frozen(values) -> np.ndarray:
    array = np.array(values, dtype=float)
    array.setflags(write=False)
    return array

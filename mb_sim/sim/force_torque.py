"""Force-torque sensor readings on joints, from the exact accelerations of the model.

A sensor on joint J (parent link P, child link C; ``<mb_sim><force_torque>`` or Gazebo's
``<sensor type="force_torque">``) reports the wrench the parent side exerts on the child side
through J: the constraint wrench plus everything J transmits (its effort, damping, friction, limit
stop, motor torque), as force and torque about J's origin (C's origin), in C's axes (``frame``
"child", the frame of J's origin, which moves with C) or P's axes ("parent"; the torque still
about J's origin, as SDFormat says).  ``measure_direction`` "child_to_parent" reports its
negative: the wrench the child side exerts on the parent.

By Newton-Euler of the child side S (C and every link below it) about J's origin O:

    W = sum_i (m_i (a_Gi - g),  I_i alpha_i + omega_i x I_i omega_i + (G_i - O) x m_i (a_Gi - g))
        - sum over contact forces f at x on links of S of (f, (x - O) x f)

The generated code gives the first sum as ``J u' + b`` (outputs ``ft_jacobians``, ``ft_states``,
world axes, see :mod:`mb_sim.symbolic.force_torque`); u' comes from the forward dynamics, the
contact forces from the ``contact_states`` rows (ground planes and contact pairs; a pair's force
acts on its second link with the opposite sign, and pairs inside S cancel).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from mb_sim.sim.robot_facts import RobotFacts, as_facts, contact_loads

__all__ = ["ForceTorqueSet", "Wrench", "contact_loads", "contact_wrench_on"]


class Wrench(NamedTuple):
    """A force-torque reading: ``force`` [N] and ``torque`` [N m] (3 each, the sensor's frame)."""

    force: np.ndarray
    torque: np.ndarray


@dataclass
class _Sensor:
    """Where one sensor reads: its block index, the rows in ``link_poses`` of the child and of the
    frame it reports in, its child side and its sign (+1 parent_to_child)."""

    index: int
    origin_row: int
    frame_row: int
    side: frozenset[str]
    sign: float


class ForceTorqueSet:
    """The force-torque sensors of one simulator's robot: readings at the state in the buffers."""

    def __init__(self, robot: RobotFacts, model) -> None:
        robot = as_facts(robot)  # (or a mb_sim.model.Robot)
        self.model = model
        sensors = robot.force_torques
        rows = model.layout.blocks["ft_states"].shape[0]
        if rows != len(sensors):
            raise ValueError(f"the compiled model has {rows} force-torque sensor rows for {len(sensors)} sensors "
                             f"({', '.join(s.name for s in sensors) or 'none'}); rebuild it (another cache_dir)")
        link_rows = {name: k for k, name in enumerate(model.link_names)}
        self.sensors: dict[str, _Sensor] = {
            sensor.name: _Sensor(index, link_rows[sensor.child], link_rows[sensor.frame_link], frozenset(sensor.side),
                                 sensor.sign)
            for index, sensor in enumerate(sensors)}
        self.contacts = [list(row) for row in robot.contact_loads] if sensors else []
        if sensors and len(self.contacts) != len(model.contact_names):
            raise ValueError(f"force-torque sensors: {len(self.contacts)} contact rows expected, the model has "
                             f"{len(model.contact_names)}")

    @property
    def names(self) -> list[str]:
        return list(self.sensors)

    def _sensor(self, name: str) -> _Sensor:
        if name not in self.sensors:
            known = ", ".join(self.sensors) or "none"
            raise KeyError(f"no force-torque sensor named {name!r} (sensors: {known})")
        return self.sensors[name]

    def read(self, time: float, names: list[str] | None = None) -> dict[str, Wrench]:
        """Readings of sensors `names` (all: None) at the state in the buffers: one evaluation of
        the outputs and one of the forward dynamics (which write ``buffers.udot``, ``buffers.lam``)."""
        names = self.names if names is None else names
        sensors = {name: self._sensor(name) for name in names}
        if not sensors:
            return {}
        model, view = self.model, self.model.layout.view
        b = model.buffers
        model.evaluate_into(time)
        poses = view(b.out, "link_poses").copy()
        jacobians, states = view(b.out, "ft_jacobians").copy(), view(b.out, "ft_states").copy()
        contacts = view(b.out, "contact_states").copy()
        model.forward_dynamics_into(time)
        udot = b.udot.copy()
        readings = {}
        for name, sensor in sensors.items():
            k = sensor.index
            wrench = jacobians[6 * k:6 * k + 6] @ udot + states[k]
            origin = poses[sensor.origin_row, 9:12]
            readings[name] = self._reading(sensor, wrench - self._contact_wrench(sensor, contacts, origin),
                                           poses[sensor.frame_row, :9].reshape(3, 3))
        return readings

    def _contact_wrench(self, sensor: _Sensor, contacts: np.ndarray, origin: np.ndarray) -> np.ndarray:
        """Force and torque about `origin` (world) of the contact forces on the sensor's child side."""
        return contact_wrench_on(sensor.side, contacts, self.contacts, origin)

    @staticmethod
    def _reading(sensor: _Sensor, wrench: np.ndarray, rotation: np.ndarray) -> Wrench:
        """The world wrench on the child side in the sensor's frame and direction."""
        return Wrench(sensor.sign * (rotation.T @ wrench[:3]), sensor.sign * (rotation.T @ wrench[3:]))


def contact_wrench_on(side, contacts: np.ndarray, loads: list, origin: np.ndarray) -> np.ndarray:
    """Force and torque about `origin` (world, 6) of the contact forces on the links of `side`:
    `contacts` the model's contact rows (point 0:3, force 9:12), `loads` per row its (link, sign)
    pairs (the robot's ``contact_loads``)."""
    wrench = np.zeros(6)
    for row, pairs in zip(contacts, loads):
        for link, sign in pairs:
            if link in side:
                force = sign * row[9:12]
                wrench[:3] += force
                wrench[3:] += np.cross(row[0:3] - origin, force)
    return wrench

"""The ``mb_sim`` node's sensor topics, robots that have the sensors only: contact wrenches and
markers (:mod:`mb_sim.ros.contacts`), IMUs (:mod:`mb_sim.ros.imus`) and force-torque sensors
(:mod:`mb_sim.ros.force_torque`); each computed only while someone subscribes."""
from __future__ import annotations

from collections.abc import Callable

from mb_sim.codegen import FactorizationError
from mb_sim.ros.contacts import ContactTopics
from mb_sim.ros.conversions import stamp
from mb_sim.ros.force_torque import ForceTorqueTopics
from mb_sim.ros.imus import ImuTopics
from mb_sim.ros.node_parameters import StartupError
from mb_sim.sim import Simulator

__all__ = ["SensorPublishers"]

#: Seconds between two warnings about readings that could not be computed.
WARNING_THROTTLE = 2.0


class SensorPublishers:
    """The contact, IMU and force-torque publishers of `sim`'s robot; `frames` maps each link to
    its TF frame (the root link to `world_frame` where it has none)."""

    def __init__(self, node, sim: Simulator, frames: dict[str, str], world_frame: str) -> None:
        self._node, self._sim = node, sim
        before = set(node.publishers)
        self._make(node, sim, frames, world_frame)
        self._created = [publisher for publisher in node.publishers if publisher not in before]

    def destroy(self) -> None:
        """Destroy the publishers made here (the scene changed: its sensors are made anew)."""
        for publisher in self._created:
            self._node.destroy_publisher(publisher)
        self._created = []

    def _make(self, node, sim: Simulator, frames: dict[str, str], world_frame: str) -> None:
        robot = sim.robot
        frames = dict(frames)
        self.contacts = self.imus = self.force_torques = None
        try:
            if sim.model.contact_names:
                links = sim.outputs(dynamics=False).contact_wrenches
                self.contacts = ContactTopics(node, links, frames, world_frame, sim.model.contact_names)
        except ValueError as err:
            raise StartupError(f"robot '{robot.name}': {err}") from None
        frames.setdefault(robot.root_link.name, world_frame)
        try:
            if robot.imus:
                self.imus = ImuTopics(node, robot.imus, frames)
        except (ValueError, KeyError) as err:
            raise StartupError(f"robot '{robot.name}': IMUs: {err}") from None
        try:
            if robot.force_torques:
                self.force_torques = ForceTorqueTopics(node, robot.force_torques, robot.joints, frames)
        except (ValueError, KeyError) as err:
            raise StartupError(f"robot '{robot.name}': force-torque sensors: {err}") from None

    def _groups(self) -> list:
        return [group for group in (self.contacts, self.imus, self.force_torques) if group is not None]

    def listened(self) -> bool:
        """Whether someone reads one of the sensor topics."""
        return any(group.listened() for group in self._groups())

    def contacts_listened(self) -> bool:
        """Whether someone reads the contact topics (they need the outputs evaluated)."""
        return self.contacts is not None and self.contacts.listened()

    def publish_contacts(self, out, now) -> None:
        """Contact wrenches and markers of the outputs `out`, stamped `now`."""
        if self.contacts is not None:
            self.contacts.publish(out, now)

    def publish_readings(self) -> None:
        """IMU and force-torque readings at the current state, where someone subscribes."""
        if self.imus is not None and self.imus.listened():
            self._publish("IMU", self._sim.imus, self.imus)
        if self.force_torques is not None and self.force_torques.listened():
            self._publish("force-torque", self._sim.force_torques, self.force_torques)

    def _publish(self, kind: str, read: Callable[[], dict], topics) -> None:
        """Readings `read()` (they need the forward dynamics) published by `topics`; a failing
        forward dynamics is a throttled warning naming the `kind`, not an end of the tick."""
        try:
            readings = read()
        except FactorizationError as err:
            self._node.get_logger().warning(f"no {kind} readings at sim time {self._sim.time:.6g} s: the forward "
                                            f"dynamics failed ({err})", throttle_duration_sec=WARNING_THROTTLE)
            return
        topics.publish(readings, stamp(self._sim.time))

    def descriptions(self) -> list[str]:
        """One log line per kind of sensor topic."""
        return [group.description() for group in self._groups()]

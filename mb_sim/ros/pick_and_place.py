"""The ``mb_sim_pick_and_place`` node: an arm picks an object of the scene and places it elsewhere,
through the simulator's topics and services only (a client like any other).

Reads the robot from ``robot_description`` (transient local) and the object's pose from the
simulation_interfaces service ``<simulator>/get_entity_state``; plans (:mod:`mb_sim.sim.pick_place`:
straight lines of the tool point, inverse kinematics from the arm's home pose) and sends the plan
as one ``<simulator>/joint_trajectory`` (the arm goes from wherever it is to the first point in
``first_move`` seconds); waits in sim time (``/clock``) for its end, then reads the object's pose
again and logs where it is.  Exit status 0 if the object
ended within ``tolerance`` of the place, 1 (with one line saying why) otherwise.

Parameters: ``simulator`` (the simulation node's name, ``mb_sim``: in this node's namespace), ``object`` (``box``), ``place_offset``
([0, 0.2, 0] m: from where the object is), ``grasp_height`` (0.0: the tool point at the object's
origin), ``tolerance`` (0.02 m), ``approach`` (0.13 m), ``speed`` (0.065 m/s); the arm is a Panda
(:data:`mb_sim.sim.pick_place.PANDA`).
"""
from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np
import rclpy
from rosgraph_msgs.msg import Clock
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import GetEntityState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from mb_sim.ros.conversions import duration
from mb_sim.ros.qos import LATCHED_QOS
from mb_sim.sim.pick_place import PANDA, plan_pick_and_place

__all__ = ["PickAndPlace"]

#: Seconds of wall time to wait for each of the simulator's answers.
WAIT = 120.0


class PickAndPlace:
    """One pick-and-place through a running simulator node (see the module docstring)."""

    def __init__(self, node) -> None:
        self.node = node
        declare = node.declare_parameter
        self.simulator = declare("simulator", "mb_sim").value.rstrip("/")  # (relative: in the namespace)
        self.object = declare("object", "box").value
        self.offset = np.array(declare("place_offset", [0.0, 0.2, 0.0]).value, dtype=float)
        self.grasp_height = float(declare("grasp_height", 0.0).value)
        self.tolerance = float(declare("tolerance", 0.02).value)
        self.spec = replace(PANDA, approach=float(declare("approach", PANDA.approach).value),
                            speed=float(declare("speed", PANDA.speed).value))
        self.description: list[str] = []
        self.clock = [0.0]  # sim time, from /clock (0 until the first: a paused simulator)
        node.create_subscription(String, "robot_description", lambda m: self.description.append(m.data), LATCHED_QOS)
        node.create_subscription(Clock, "/clock", lambda m: self.clock.append(m.clock.sec + m.clock.nanosec * 1e-9), 10)
        self.trajectory = node.create_publisher(JointTrajectory, f"{self.simulator}/joint_trajectory", 10)
        self.entity = node.create_client(GetEntityState, f"{self.simulator}/get_entity_state")

    def run(self) -> int:
        """Plan, send, wait, judge: the exit status."""
        log = self.node.get_logger()
        if not self._spin_until(lambda: self.description):
            return self._fail("no /robot_description from the simulator")
        start = self._object_position()
        if start is None:
            return self._fail(f"{self.simulator}/get_entity_state has no entity {self.object!r}")
        from mb_sim.model import load_urdf

        robot = load_urdf(self.description[0])
        pick = start + np.array([0.0, 0.0, self.grasp_height])
        names, points = plan_pick_and_place(robot, pick, pick + self.offset, self.spec)
        message = JointTrajectory(joint_names=names, points=[
            JointTrajectoryPoint(positions=positions, time_from_start=duration(t))
            for t, positions in points])
        del self.clock[:-1]  # planning took a while: the sim time now, from a fresh /clock (none while paused)
        self._spin_until(lambda: len(self.clock) > 1, 1.0)
        began = self._sim_time()
        self.trajectory.publish(message)
        log.info(f"picking {self.object!r} at {np.round(start, 4).tolist()}, placing it "
                 f"{np.round(self.offset, 4).tolist()} m away: {len(points)} points, {points[-1][0]:.1f} s")
        if not self._spin_until(lambda: self._sim_time() >= began + points[-1][0] + 1.0, WAIT + points[-1][0] * 20):
            return self._fail("the simulator's time did not reach the plan's end")
        end = self._object_position()
        miss = float(np.linalg.norm(end - (start + self.offset))) if end is not None else np.inf
        log.info(f"{self.object!r} ended at {np.round(end, 4).tolist()}: {miss * 1e3:.1f} mm from the place")
        return 0 if miss <= self.tolerance else self._fail(f"{self.object!r} ended {miss:.3f} m from the place")

    def _object_position(self) -> np.ndarray | None:
        if not self.entity.wait_for_service(timeout_sec=WAIT):
            return None
        future = self.entity.call_async(GetEntityState.Request(entity=self.object))
        rclpy.spin_until_future_complete(self.node, future, timeout_sec=WAIT)
        response = future.result()
        if response is None or response.result.result != Result.RESULT_OK:
            return None
        p = response.state.pose.position
        return np.array([p.x, p.y, p.z])

    def _sim_time(self) -> float:
        return self.clock[-1]

    def _spin_until(self, done, timeout: float = WAIT) -> bool:
        end = time.monotonic() + timeout
        while not done() and time.monotonic() < end:
            rclpy.spin_once(self.node, timeout_sec=0.05)
        return bool(done())

    def _fail(self, why: str) -> int:
        print(f"mb_sim_pick_and_place: {why}", file=sys.stderr, flush=True)
        return 1


def _run(args: list[str] | None = None) -> int:
    rclpy.init(args=args)
    node = rclpy.create_node("pick_and_place")
    try:
        return PickAndPlace(node).run()
    finally:
        node.destroy_node()
        rclpy.try_shutdown()

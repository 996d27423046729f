"""The ``mb_sim`` node's state topics: ``joint_states``, ``/tf``, ``/tf_static``, ``odom``,
``/clock`` and ``robot_description``; per loop joint its reaction wrench, the spring markers and
the motor states of robots that have them; the sensors' through :mod:`~mb_sim.ros.sensor_publishers`.
A topic nobody subscribes to is not computed (what lets a headless run go faster): the
subscriber counts follow the middleware's matched events (:mod:`mb_sim.ros.subscribers`)."""
from __future__ import annotations

import time

import numpy as np
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock as ClockMessage
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

from mb_sim.codegen import FactorizationError
from mb_sim.ros.constraint_services import constraint_wrench_topics
from mb_sim.ros.conversions import stamp, transform_stamped, wrench_stamped
from mb_sim.ros.motors import motor_states_message
from mb_sim.ros.node_parameters import NodeParameters
from mb_sim.ros.qos import LATCHED_QOS, TF_QOS
from mb_sim.ros.reactions import loop_wrenches
from mb_sim.ros.ros2_control_topics import Ros2ControlTopics
from mb_sim.ros.sensor_publishers import SensorPublishers
from mb_sim.ros.springs import spring_markers
from mb_sim.ros.state_messages import StateMessages
from mb_sim.ros.subscribers import counted_publisher, listened
from mb_sim.session import Session
from mb_sim.sim import Simulator
from mb_sim.sim.frames import ROBOT_WORLD_LINK, FrameTree, edge_poses

__all__ = ["MOTOR_STATES_TOPIC", "SPRINGS_TOPIC", "StatePublishers"]

#: The spring-damper markers, relative to the node.
SPRINGS_TOPIC = "~/springs"
#: The DC motors' states (robots with motors only), relative to the node.
MOTOR_STATES_TOPIC = "~/motor_states"
#: Seconds between two warnings about wrenches that could not be computed.
WARNING_THROTTLE = 2.0


class StatePublishers:
    """The state publishers of `node` over `session`'s simulator (`tree`: its TF frames;
    `messages`: the serialized per-period messages; `description_topic`: where the URDF came from,
    where the node then does not publish its own)."""

    def __init__(self, node, session: Session, params: NodeParameters, tree: FrameTree, messages: StateMessages,
                 sensors: SensorPublishers, ros2_control: Ros2ControlTopics, description_topic: str | None) -> None:
        self._node, self._session, self._sim = node, session, session.sim
        self._params, self._tree, self._messages = params, tree, messages
        self._sensors, self._ros2_control = sensors, ros2_control
        sim, robot = self._sim, self._sim.robot
        self.wrenches = self._loop_wrenches(sim, tree, params.world_frame)
        self.joints = counted_publisher(node, JointState, "joint_states", 10)  # in the node's namespace
        self.tf = counted_publisher(node, TFMessage, "/tf", TF_QOS)
        self.tf_static = node.create_publisher(TFMessage, "/tf_static", LATCHED_QOS)
        self.odometry = counted_publisher(node, Odometry, "odom", 10) if tree.odometry else None
        self.clock = counted_publisher(node, ClockMessage, "/clock", 10) if params.publish_clock else None
        self.description = (None if description_topic == node.resolve_topic_name("robot_description")
                            else node.create_publisher(String, "robot_description", LATCHED_QOS))
        self.wrench_publishers = [counted_publisher(node, WrenchStamped, w.topic, 10) for w in self.wrenches]
        self.springs = counted_publisher(node, MarkerArray, SPRINGS_TOPIC, 10) if robot.spring_dampers else None
        self.motor_states = (counted_publisher(node, Float64MultiArray, MOTOR_STATES_TOPIC, 10) if sim.motors
                             else None)
        self.last_clock = -float("inf")  # wall time /clock was last published while not running

    def rebind(self, tree: FrameTree, messages: StateMessages, sensors: SensorPublishers) -> None:
        """Publish the session's simulator now (the scene changed: an object spawned or deleted),
        with its `tree`, `messages` and `sensors`; the robot's own publishers stay."""
        self._sim, self._tree, self._messages, self._sensors = self._session.sim, tree, messages, sensors
        if tree.odometry and self.odometry is None:
            self.odometry = counted_publisher(self._node, Odometry, "odom", 10)

    @staticmethod
    def _loop_wrenches(sim: Simulator, tree: FrameTree, world_frame: str) -> list:
        """The reaction wrench to publish for each loop joint that is a named constraint."""
        robot = sim.robot
        loops = [name for name in robot.loop_joints if name in sim.constraints]
        frames = {edge.child_link: edge.child_frame for edge in [*tree.moving, *tree.static]}
        if robot.root_link.name == ROBOT_WORLD_LINK:
            frames[ROBOT_WORLD_LINK] = world_frame
        return loop_wrenches(robot.loop_joints, constraint_wrench_topics(loops), frames)

    def publish_start(self, urdf_text: str) -> None:
        """The URDF on robot_description (unless it came from that topic), /tf_static, the state."""
        if self.description is not None:
            self.description.publish(String(data=urdf_text))
        poses = self._sim.outputs(dynamics=False).link_poses
        self.tf_static.publish(TFMessage(transforms=[transform_stamped(edge.parent_frame, edge.child_frame, pose,
                                                                       stamp(0.0))
                                                     for edge, pose in edge_poses(self._tree.static, poses)]))
        self.publish_state()

    def periods_read(self) -> bool:
        """Whether someone reads what each publish period publishes (/clock, /joint_states, /tf,
        /odom, ros2_control's state, wrenches, springs, motors, contacts, sensors, a recording)."""
        return (self._session.recording is not None
                or any(map(listened, (self.clock, self.joints, self.tf, self.odometry, self.springs,
                                      self.motor_states)))
                or self._ros2_control.listened() or any(map(listened, self.wrench_publishers))
                or self._sensors.listened())

    def publish_state(self) -> None:
        """/joint_states, /tf, /odom (serialized once, patched: :mod:`mb_sim.ros.state_messages`),
        the wrenches, springs and motor states of robots that have them, the sensors', then /clock."""
        wrenches = any(listened(pub) for pub in self.wrench_publishers)
        out = (self._state_outputs(wrenches) if wrenches or listened(self.springs) or listened(self.motor_states)
               or self._sensors.contacts_listened() else None)
        recording = self._session.recording is not None
        state = self._messages.render(
            evaluated=out is not None,
            joint_states=recording or listened(self.joints) or self._ros2_control.listened(),
            tf=listened(self.tf), odometry=listened(self.odometry))
        if state.joint_states is not None:
            self.joints.publish(state.joint_states)
            self._ros2_control.publish(state.joint_states)
            if recording:
                self._session.write(self.joints.topic_name, "sensor_msgs/msg/JointState", state.joint_states)
        if state.tf is not None:
            self.tf.publish(state.tf)
        for message in state.odometry:
            self.odometry.publish(message)
        if out is not None:
            self._publish_extras(out)
        self._sensors.publish_readings()
        if self.clock is not None:
            self.clock.publish(state.clock)
        self.last_clock = time.monotonic()

    def publish_paused_clock(self, now: float) -> None:
        """/clock keeps the paused (or diverged) sim time, once per publish period, as Gazebo does:
        nodes on sim time see time standing still rather than no time at all."""
        if self.clock is not None and now - self.last_clock >= 0.999 / self._params.publish_rate:
            self.last_clock = now
            self.clock.publish(self._messages.clock())

    def _state_outputs(self, wrenches: bool):
        """The outputs to publish: without forward dynamics unless loop-joint reactions are wanted."""
        if wrenches:
            try:
                return self._sim.outputs()
            except FactorizationError as err:
                self._node.get_logger().warning(f"no loop-joint wrenches at sim time {self._sim.time:.6g} s: the "
                                                f"forward dynamics failed ({err})",
                                                throttle_duration_sec=WARNING_THROTTLE)
        return self._sim.outputs(dynamics=False)  # positions, velocities, efforts, poses and springs only

    def _publish_extras(self, out) -> None:
        """Loop-joint wrenches, spring markers, motor states and contacts of `out`, stamped with its time."""
        now, poses = stamp(out.time), out.link_poses
        if out.reactions:
            for wrench, publisher in zip(self.wrenches, self.wrench_publishers):
                if not listened(publisher):
                    continue
                reaction = out.reactions[wrench.constraint]
                if self._sim.constraint_enabled(wrench.constraint):
                    force, torque = wrench.in_child_frame(reaction.force, reaction.torque, poses)
                else:
                    force = torque = np.zeros(3)  # a released loop exerts nothing
                publisher.publish(wrench_stamped(wrench.frame, force, torque, now))
        if listened(self.springs):
            self.springs.publish(spring_markers(out.springs, self._params.world_frame, now,
                                               self._params.spring_force_scale))
        if listened(self.motor_states):
            self.motor_states.publish(motor_states_message(out.motors))
        self._sensors.publish_contacts(out, now)

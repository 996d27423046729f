"""The ``mb_sim`` node: the ROS 2 adapter over one simulation run, a
:class:`~mb_sim.session.Session` (the :class:`~mb_sim.sim.Simulator`, held commands, pause and
divergence, the command clock, the recording); it paces the run on a wall-clock timer and
publishes its state.  Its topics, services and timing are described in
:mod:`mb_sim.ros.node` (the executable), its parameters in ``config/mb_sim.yaml``.

The logic that needs no rclpy lives beside it: :mod:`~mb_sim.session.commands` (validation, command
timeout), :mod:`~mb_sim.session.pacing` (real-time pacing), :mod:`~mb_sim.sim.frames` (TF tree, base
twist), :mod:`~mb_sim.ros.reactions` (loop-joint wrenches), :mod:`~mb_sim.ros.springs` (spring
markers), :mod:`~mb_sim.ros.motors` (motor states) and :mod:`~mb_sim.ros.conversions` (messages).
"""
from __future__ import annotations

import datetime
import math
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import rclpy
import rclpy.logging
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import (
    InvalidTopicNameException, NameValidationException, ParameterException, ParameterUninitializedException,
)
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock as ClockMessage
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

from mb_sim.codegen import CodegenError, FactorizationError
from mb_sim.model import ComponentError, Robot, load_urdf
from mb_sim.resources import robot_path
from mb_sim.ros.constraint_services import constraint_service_names, constraint_wrench_topics
from mb_sim.ros.contacts import ContactTopics
from mb_sim.ros.force_torque import ForceTorqueTopics
from mb_sim.ros.imus import ImuTopics
from mb_sim.session import MAX_ADVANCE_STEPS, Session, SessionError
from mb_sim.session.command_router import COMMAND_TOPICS, ROS2_CONTROL_TOPIC
from mb_sim.session.commands import CommandError
from mb_sim.session.recorder import RecordingError
from mb_sim.ros.conversions import stamp, transform_stamped, wrench_stamped
from mb_sim.ros.motors import motor_diagnostics, motor_states_message
from mb_sim.ros.reactions import loop_wrenches
from mb_sim.ros.simulation_interfaces_server import SimulationInterfacesServer
from mb_sim.ros.springs import spring_markers
from mb_sim.ros.state_messages import StateMessages
from mb_sim.ros.subscribers import counted_publisher, listened as _listened
from mb_sim.sim.frames import ROBOT_WORLD_LINK, base_twist_function, edge_poses, frame_tree
from mb_sim.sim.simulator import STATE_MAGNITUDE
from mb_sim.session.pacing import (
    FAST_TICK_BUDGET, FAST_TIMER_PERIOD, MAX_CATCH_UP_PERIODS, RATE_WINDOW, Pacer, RateMonitor, StepCost,
    advance_within, is_lagging, lag_warning, periods_passed, tick_budget,
    steps_per_period,
)
from mb_sim.sim import AssemblyError, SimulationError, Simulator
from mb_sim.urdf import RepairWarning, URDFError, parse_urdf
from mb_sim.urdf.xacro_expansion import expand_xacro_bounded, is_xacro, parse_xacro_args, uses_xacro
from mb_sim.ros.teardown import interrupted, spin_until
from mb_sim.urdf.ros2_control import Ros2ControlSystem, check_systems, ros2_control_systems
from mb_sim.urdf.ros2_control import initial_positions as ros2_control_initial_positions

__all__ = ["SimulationNode", "StartupError", "DEFAULT_ROBOT", "LATCHED_QOS", "TF_QOS"]

DEFAULT_ROBOT = "pendulum"
#: Compiled C models (the real-time backend).
BACKEND = "c"
#: Seconds between two warnings about the same bad input, or about lagging.
WARNING_THROTTLE = 2.0
#: Seconds more to wait, after robot_description_timeout passed with nothing, for the graph to show a
#: publisher on the topic (what makes the error name it: another type, volatile) on a loaded machine.
DISCOVERY_GRACE = 2.0
#: Period of /diagnostics [s].
DIAGNOSTICS_PERIOD = 1.0
#: The spring-damper markers, relative to the node.
SPRINGS_TOPIC = "~/springs"
#: The DC motors' states (robots with motors only), relative to the node.
MOTOR_STATES_TOPIC = "~/motor_states"
#: Bounds of the numeric parameters that set the pace: name -> (lowest, highest, unit).  Declared
#: in their descriptors (``ros2 param describe`` shows them) and checked at start-up.
PARAMETER_BOUNDS = {
    "physics_dt": (1e-6, 0.1, "s"),
    "publish_rate": (0.1, 10_000.0, "Hz"),
    "real_time_factor": (0.0, 1000.0, ""),
}
#: What a failed start-up reports as a bad parameter (one line, no traceback).
STARTUP_ERRORS = (URDFError, ComponentError, CodegenError, SimulationError, ValueError, OSError)
#: Most physics steps in one publish period (the sim time one tick advances at factor 1): what
#: one call of the session advances at most.
MAX_PERIOD_STEPS = MAX_ADVANCE_STEPS

#: QoS of latched topics (/robot_description, /tf_static): late subscribers still get the message.
LATCHED_QOS = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)
#: QoS of /tf, as tf2's TransformBroadcaster.
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


class StartupError(RuntimeError):
    """The node cannot start with the parameters it was given."""


def _descriptor(description: str, numeric: bool = False, bounded: str | None = None) -> ParameterDescriptor:
    """Read-only (values are read once, at start-up); numbers accept integers too
    (``-p publish_rate:=100``); `bounded` names the entry of PARAMETER_BOUNDS to declare."""
    descriptor = ParameterDescriptor(description=description, dynamic_typing=numeric, read_only=True)
    if bounded is not None:
        low, high, _ = PARAMETER_BOUNDS[bounded]
        descriptor.floating_point_range = [FloatingPointRange(from_value=low, to_value=high, step=0.0)]
    return descriptor


def _repairable(source: str) -> bool:
    """Whether the loader accepts `source` without ``strict`` (then strict refused a repair)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parse_urdf(source)
    except (URDFError, ValueError, OSError):
        return False
    return True


class SimulationNode(Node):
    """Builds one :class:`Simulator` and its :class:`Session` from parameters, paces the session on
    a wall-clock timer and publishes its state; its services call the session's public API."""

    def __init__(self) -> None:
        super().__init__("mb_sim")
        self._description_topic: str | None = None  # resolved robot_description_topic, where the URDF came from
        self._read_parameters()
        self.urdf_text = self._load_simulator()
        self.robot = self.sim.robot
        self._set_initial_positions()
        self._declare_servo_gains()
        self._constraint_services = self._switch_constraints()
        self._tree = frame_tree(self.robot, self.world_frame, self.frame_prefix)
        if self.world_frame in {edge.child_frame for edge in [*self._tree.moving, *self._tree.static]}:
            raise StartupError(f"parameter world_frame: {self.world_frame!r} is also a link frame of the robot "
                               "(choose another world_frame or a frame_prefix)")
        twists = [(edge, base_twist_function(self.robot, edge.joint)) for edge in self._tree.odometry]
        self._messages = StateMessages(self.sim, self._tree, self.world_frame, twists)
        self._wrenches = self._loop_wrenches()

        self.period_steps = steps_per_period(self.dt, self.publish_rate)
        self._pacer = Pacer(self.dt, self.period_steps, self.real_time_factor)
        self._monitor = RateMonitor()
        self._ros2_control = self._ros2_control_systems()
        # in lockstep commands never go stale; ros2_control's hardware stops sending once there
        timeout = 0.0 if self.lockstep or self._ros2_control else self.command_timeout
        self._session = Session(self.sim, command_timeout=timeout, allow_partial=self.allow_partial,
                               start_paused=self.start_paused)
        self._session.subscribe(self._on_session)
        self._session.router.serve_ros2_control(
            {joint.name: joint.command_interfaces for system in self._ros2_control for joint in system.joints},
            {joint.name for system in self._ros2_control for joint in system.joints
             if joint.mimic is not None or joint.name in self._mimic_joints()})
        self._commands, self._voltages = self._session.router.efforts, self._session.router.voltages
        self._prismatic_motors = {motor for motor, joint in self.sim.motor_joints.items()
                                  if self.robot.joints[joint].joint_description.type == "prismatic"}
        self._last_cap = -math.inf
        self._tick_budget = tick_budget(1.0 / self.publish_rate)  # wall seconds a tick may advance
        self._step_cost = StepCost()
        self._period_left = self.period_steps  # physics steps to the next publish-period boundary
        self.cut_ticks = 0  # ticks that ran out of their wall budget
        self.merged_periods = 0  # publish periods that ended without a message of their own
        self._last_clock = -math.inf  # wall time /clock was last published while not running
        self._throttled_loggers: dict = {}  # (topic, kind of problem) -> logger

        self._create_interfaces()
        if self.record_file:
            try:
                self._start_recording(self.record_file)
            except RecordingError as err:  # the simulation runs without it (an ERROR in /diagnostics)
                self.get_logger().error(f"parameter record_file: {err}; running without recording")
        if self._description_pub is not None:  # None: the description came from that topic
            self._description_pub.publish(String(data=self.urdf_text))
        self._publish_static_transforms()
        self.publish_state()
        self._log_start()

    def _create_interfaces(self) -> None:
        self._joint_pub = counted_publisher(self, JointState, "joint_states", 10)  # in the node's namespace
        self._tf_pub = counted_publisher(self, TFMessage, "/tf", TF_QOS)
        self._tf_static_pub = self.create_publisher(TFMessage, "/tf_static", LATCHED_QOS)
        self._odom_pub = counted_publisher(self, Odometry, "odom", 10) if self._tree.odometry else None
        self._clock_pub = counted_publisher(self, ClockMessage, "/clock", 10) if self.publish_clock else None
        self._description_pub = (None if self._description_topic == self.resolve_topic_name("robot_description")
                                 else self.create_publisher(String, "robot_description", LATCHED_QOS))
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._wrench_pubs = [counted_publisher(self, WrenchStamped, wrench.topic, 10) for wrench in self._wrenches]
        self._springs_pub = (counted_publisher(self, MarkerArray, SPRINGS_TOPIC, 10) if self.robot.spring_dampers
                             else None)
        self._motor_states_pub = (counted_publisher(self, Float64MultiArray, MOTOR_STATES_TOPIC, 10) if self.sim.motors
                                  else None)
        self._contacts = self._contact_topics()
        self._imus = self._imu_topics()
        self._force_torques = self._force_torque_topics()

        message_types = {"effort_commands": Float64MultiArray, "joint_commands": JointState,
                         "voltage_commands": Float64MultiArray, "voltage_joint_commands": JointState,
                         "joint_trajectory": JointTrajectory}
        self._ros2_control_subs = [self.create_subscription(  # its publisher: QoS(1), reliable
            JointState, system.commands_topic, lambda message, system=system: self._on_ros2_control(system, message), 10)
            for system in self._ros2_control]
        self._ros2_control_topics = {system.name: sub.topic_name  # resolved (a relative name in a namespace)
                                     for system, sub in zip(self._ros2_control, self._ros2_control_subs)}
        # the hardware subscribes with SensorDataQoS: best effort, the latest few
        # one publisher per state topic: two elements reading one topic would get each message twice
        self._ros2_control_pubs = [counted_publisher(self, JointState, topic, qos_profile_sensor_data) for topic
                                   in dict.fromkeys(self.resolve_topic_name(s.states_topic) for s in self._ros2_control)]
        self._command_subs = {topic: self.create_subscription(
            message_types[topic], f"~/{topic}", lambda message, topic=topic: self._on_command(topic, message), 10)
            for topic in COMMAND_TOPICS}

        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_service(SetBool, "~/pause", self._on_pause)
        self.create_service(Trigger, "~/step", self._on_step)
        self.create_service(SetBool, "~/record", self._on_record)
        for constraint, service in self._constraint_services.items():
            self.create_service(SetBool, service,
                                lambda request, response, name=constraint: self._on_constraint(name, request, response))

        # Wall-clock timers: steady time, never /clock (which this node publishes).
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._tick_timer = self.create_timer(self._tick_period(), self._on_tick, clock=steady)
        self._diagnostics_timer = self.create_timer(DIAGNOSTICS_PERIOD, self._publish_diagnostics, clock=steady)
        self._simulation_interfaces = SimulationInterfacesServer(self, self._session, self.publish_state)

    # -- parameters --------------------------------------------------------------------------
    def _declare_parameters(self) -> None:
        self.declare_parameter("robot_description", "", _descriptor(
            "URDF text of the robot (xacro markup expanded with xacro_args); takes precedence over urdf_file."))
        self.declare_parameter("urdf_file", DEFAULT_ROBOT, _descriptor(
            "URDF or xacro (.xacro) path, or the name of a URDF shipped in share/mb_sim/urdf."))
        self.declare_parameter("xacro_args", "", _descriptor(
            "Arguments of a xacro urdf_file or robot_description, as on xacro's command line: \"a:=1 b:=2\"."))
        self.declare_parameter("robot_description_topic", "", _descriptor(
            "Take the URDF from this topic (std_msgs/String, transient local, as robot_state_publisher "
            "publishes it) instead of urdf_file; the node then does not publish its own there."))
        self.declare_parameter("robot_description_timeout", 30.0, _descriptor(
            "Seconds to wait for robot_description_topic before giving up.", numeric=True))
        self.declare_parameter("physics_dt", 0.001, _descriptor(
            "Physics step of the fixed-step RK4 integrator [s].", numeric=True, bounded="physics_dt"))
        self.declare_parameter("publish_rate", 100.0, _descriptor(
            "Rate of /joint_states, /tf, /odom and /clock [Hz of sim time]; one publish period of "
            "sim time is a whole number of physics steps, at most 1/physics_dt.", numeric=True,
            bounded="publish_rate"))
        self.declare_parameter("real_time_factor", 1.0, _descriptor(
            "Sim seconds per wall second; 0 runs as fast as possible.", numeric=True, bounded="real_time_factor"))
        self.declare_parameter("command_timeout", 0.5, _descriptor(
            "A joint's effort falls back to zero when its last command is older [s, wall]; 0: never.",
            numeric=True))
        self.declare_parameter("start_paused", False, _descriptor(
            "Start paused (~/pause with data: false, or ~/step, to go on)."))
        self.declare_parameter("frame_prefix", "", _descriptor(
            "Prepended to every link frame id (as robot_state_publisher's frame_prefix)."))
        self.declare_parameter("world_frame", "world", _descriptor(
            "Fixed frame the robot's root hangs from (odom for mobile bases)."))
        self.declare_parameter("disabled_constraints", Parameter.Type.STRING_ARRAY, _descriptor(
            "Names of constraints (mimic joints, loop joints...) to start disabled; "
            "~/constraints/<name>/enable switches them at run time."))
        self.declare_parameter("default_effort_limit", 0.0, _descriptor(
            "Effort limit [N m or N] for actuated joints whose URDF gives none; 0: such joints are not "
            "clamped (a warning names them).", numeric=True))
        self.declare_parameter("strict", False, _descriptor(
            "Refuse a URDF the loader would repair (inertias judged per moving body, rounding, a mimic on a fixed "
            "joint) instead of loading it with the repairs logged."))
        self.declare_parameter("floating_base", False, _descriptor(
            "Join the robot's root link to the world by a floating joint (6 DoF, root_joint) instead of fixing it "
            "to the world; for a root link that is not named world."))
        self.declare_parameter("ground", False, _descriptor(
            "Add the ground plane z = 0 (default contact parameters) where the URDF has no <mb_sim><ground>: the "
            "links' <collision> shapes touch it (load_urdf's ground)."))
        self.declare_parameter("record_file", "", _descriptor(
            "Record commands in and states out to this MCAP file from the start (mb-sim replay re-runs it); "
            "~/record starts and stops recordings at run time."))
        self.declare_parameter("publish_clock", True, _descriptor(
            "Publish /clock (sim time). With several simulation nodes in one system, let one of them publish it."))
        self.declare_parameter("lockstep", False, _descriptor(
            "Advance exactly one publish period each time a command arrives (on any command topic) and "
            "wait otherwise: the same controller gives the same trajectory on any machine and under any load."))
        self.declare_parameter("servo_frequency", 10.0, _descriptor(
            "Natural frequency [Hz] of the joint servos' default gains (critically damped about each joint's "
            "smallest effective inertia); gains.<joint>.p and .d override them.", numeric=True))
        self.declare_parameter("servo_feed_forward", Parameter.Type.BOOL, _descriptor(
            "Whether position, velocity and trajectory servos add the computed-torque feed-forward to their "
            "PD law (they then follow their references exactly within the effort limits); false: plain PD. Not "
            "set: off for a robot with contacts (it would cancel the ground's push at the joints)."))
        self.declare_parameter("allow_partial_joints_goal", False, _descriptor(
            "Accept ~/joint_trajectory messages that leave out joints (as joint_trajectory_controller's "
            "parameter); those joints keep what they follow."))
        self.declare_parameter("ros2_control_topics", True, _descriptor(
            "Serve the topic-based ros2_control hardware (joint_state_topic_hardware_interface/JointStateTopicSystem) "
            "of the URDF's <ros2_control> elements: its joint_commands_topic in, joint_states_topic out, no command "
            "timeout; false ignores <ros2_control>."))
        self.declare_parameter("spring_force_scale", 10.0, _descriptor(
            "Spring-damper force [N] from which ~/springs shows a spring fully red (tension) or blue "
            "(compression); grey at zero force.", numeric=True))

    def _read_parameters(self) -> None:
        try:
            self._declare_parameters()
        except ParameterException as err:  # "<problem>: <parameter>", e.g. a value of the wrong type
            problem, _, name = str(err).rpartition(": ")
            if name in PARAMETER_BOUNDS:  # out of its declared range
                self._bounded(name)
            raise StartupError(f"parameter {name}: {problem}") from None
        self.dt = self._bounded("physics_dt")
        self.publish_rate = self._bounded("publish_rate")
        self.real_time_factor = self._bounded("real_time_factor")
        self._check_period()
        self.command_timeout = self._number("command_timeout", lambda v: v >= 0,
                                            "must be zero (no timeout) or positive")
        self.start_paused = self.get_parameter("start_paused").value is True
        self.strict = self.get_parameter("strict").value is True
        self.floating_base = self.get_parameter("floating_base").value is True
        self.ground = self.get_parameter("ground").value is True
        try:
            self.xacro_args = parse_xacro_args(self._string("xacro_args", allow_empty=True))
        except ValueError as err:  # "xacro_args ...: <problem>"
            raise StartupError(f"parameter {err}") from None
        self.description_timeout = self._number("robot_description_timeout", lambda v: 0 < v <= 3600,
                                                "must be in (0, 3600] s")
        self.world_frame = self._string("world_frame")
        self.frame_prefix = self._string("frame_prefix", allow_empty=True)
        self.spring_force_scale = self._number("spring_force_scale", lambda v: v > 0, "must be positive")
        self.lockstep = self.get_parameter("lockstep").value is True
        self.publish_clock = self.get_parameter("publish_clock").value is not False
        self.record_file = self._string("record_file", allow_empty=True)
        self.allow_partial = self.get_parameter("allow_partial_joints_goal").value is True
        self.servo_frequency = self._number("servo_frequency", lambda v: 0 < v <= 1e4, "must be in (0, 10000] Hz")
        try:  # declared without a value: not set unless given
            self.servo_feed_forward = self.get_parameter("servo_feed_forward").value is not False
        except ParameterUninitializedException:
            self.servo_feed_forward = None

    def _bounded(self, name: str) -> float:
        """The value of a parameter of PARAMETER_BOUNDS (also before it could be declared)."""
        low, high, unit = PARAMETER_BOUNDS[name]
        overrides = getattr(self, "_parameter_overrides", {})
        value = overrides[name].value if name in overrides else self.get_parameter(name).value
        within = f"must be within [{low:g}, {high:g}]{' ' + unit if unit else ''}"
        return self._number(name, lambda v: low <= v <= high, within, value)

    def _check_period(self) -> None:
        """One publish period is a whole number of physics steps: at least one, at most
        MAX_PERIOD_STEPS (a tick must come back to the executor)."""
        steps = 1.0 / (self.publish_rate * self.dt)
        if steps < 1.0 - 1e-9:
            raise StartupError(f"parameter publish_rate: {self.publish_rate:g} Hz publishes more often than the "
                               f"physics steps (physics_dt {self.dt:g} s): at most {1.0 / self.dt:g} Hz")
        if steps > MAX_PERIOD_STEPS:
            raise StartupError(f"parameters physics_dt and publish_rate: a publish period of {1.0 / self.publish_rate:g} "
                               f"s is {steps:.3g} steps of {self.dt:g} s, more than {MAX_PERIOD_STEPS}: "
                               "raise physics_dt or publish_rate")

    def _number(self, name: str, valid, requirement: str, value=None) -> float:
        value = self.get_parameter(name).value if value is None else value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise StartupError(f"parameter {name}: must be a finite number, got {value!r}")
        if not valid(value):
            raise StartupError(f"parameter {name}: {requirement}, got {value!r}")
        return float(value)

    def _string(self, name: str, allow_empty: bool = False) -> str:
        value = self.get_parameter(name).value
        if not allow_empty and not value.strip():
            raise StartupError(f"parameter {name}: must not be empty")
        return value

    def _load_simulator(self) -> str:
        """Create ``self.sim``; return the URDF text."""
        parameter, source, text = self._robot_source()
        self.get_logger().info("loading the robot (a robot's first run derives and compiles its equations "
                               "of motion; later runs load them from the cache)")
        robot = self._load_robot(parameter, source)
        self._log_repairs(robot, parameter)
        self._initial_positions = {**self._ros2_control_start(robot, parameter, text),
                                   **self._initial_positions_given(robot)}
        try:
            with self._warnings_logged():  # cache, limits, assembly: to the log
                self.sim = Simulator(robot, dt=self.dt, backend=BACKEND, progress=self.get_logger().info,
                                     **self._simulator_options())
        except AssemblyError as err:  # the model is assembled from initial_positions
            raise StartupError(f"parameter {'initial_positions' if self._initial_positions else parameter}: "
                               f"{err}") from None
        except STARTUP_ERRORS as err:
            raise StartupError(f"parameter {parameter}: {err}") from None
        return text

    def _ros2_control_start(self, robot: Robot, parameter: str, text: str) -> dict[str, float]:
        """Where the URDF's ``<ros2_control>`` elements start their joints (a position state
        interface's ``initial_value``, as Gazebo's and the mock hardware do), for the joints
        ``initial_positions`` does not set; logged.  None with ros2_control_topics false.  The
        elements read are kept for :meth:`_ros2_control_systems`."""
        source = "<string>" if parameter == "robot_description" else str(self.get_parameter(parameter).value)
        self._ros2_control_read: tuple[str, str, list[Ros2ControlSystem]] = (parameter, source, [])
        if self.get_parameter("ros2_control_topics").value is False:
            return {}
        try:
            systems = ros2_control_systems(text, source)
        except URDFError as err:
            raise StartupError(f"parameter {parameter}: {err}") from None
        self._ros2_control_read = (parameter, source, systems)
        joints = {j.name for j in robot.joints.values() if len(j.q) == 1 and j.joint_description.mimic is None}
        start = ros2_control_initial_positions(systems, joints)
        if start:
            listed = ", ".join(f"{joint} {value:g}" for joint, value in start.items())
            self.get_logger().info(f"initial positions from <ros2_control> initial_value: {listed} "
                                   "(initial_positions.<joint> overrides them)")
        return start

    def _initial_positions_given(self, robot: Robot) -> dict[str, float]:
        """The ``initial_positions.<joint>`` values given (read before they can be declared: the
        simulator assembles the model from them), for one-DoF joints of `robot`; other names
        are refused by :meth:`_set_initial_positions`."""
        joints = {j.name for j in robot.joints.values() if len(j.q) == 1}
        overrides = getattr(self, "_parameter_overrides", {})
        within = f"must be within +-{STATE_MAGNITUDE:g} (rad or m: beyond, no robot's)"
        return {name.split(".", 1)[1]: self._number(name, lambda v: abs(v) <= STATE_MAGNITUDE, within,
                                                    overrides[name].value)
                for name in overrides if name.startswith("initial_positions.") and name.split(".", 1)[1] in joints}

    def _robot_source(self) -> tuple[str, str, str]:
        """(parameter naming the robot, path or URDF text for the loader, URDF text): from
        robot_description, else robot_description_topic, else urdf_file; a xacro file or text is
        expanded with xacro_args, and the loader gets the expanded text."""
        text = self.get_parameter("robot_description").value
        topic = self.get_parameter("robot_description_topic").value.strip()
        if text.strip() and topic:
            raise StartupError("parameters robot_description and robot_description_topic: both are given; "
                               "set one of them")
        if text.strip():
            _require_xml("robot_description", "the parameter", text)
            text = self._expanded("robot_description", text)
            return "robot_description", text, text
        if topic:
            text = self._received_description(topic)
            return "robot_description_topic", text, text
        robot = self.get_parameter("urdf_file").value
        try:
            source = str(robot_path(robot))
            if is_xacro(source):
                text = self._expanded("urdf_file", source)
                return "urdf_file", text, text
            return "urdf_file", source, Path(source).read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise StartupError(f"parameter urdf_file: {err}") from None

    def _expanded(self, parameter: str, source: str) -> str:
        """The URDF text of `source` (a path or URDF text): xacro expanded with xacro_args, else as
        it is; xacro's warnings to the log."""
        if not is_xacro(source):
            if self.xacro_args:
                self.get_logger().warning(f"parameter xacro_args: ignored, {parameter} is not a xacro")
            return source
        try:
            with self._warnings_logged():
                return expand_xacro_bounded(source, self.xacro_args)
        except URDFError as err:
            raise StartupError(f"parameter {parameter}: {err}") from None

    def _received_description(self, topic: str) -> str:
        """The URDF text published on `topic` (transient local, as robot_state_publisher does), waited
        for at most robot_description_timeout seconds; Ctrl-C ends the wait at once."""
        received: list[str] = []
        try:
            self._description_topic = self.resolve_topic_name(topic)
            subscription = self.create_subscription(String, topic, lambda message: self._on_description(
                message.data, received), LATCHED_QOS)
        except (NameValidationException, InvalidTopicNameException, _rclpy.RCLError) as err:
            problem = " ".join(str(err).split(", at ")[0].split())  # without rcl's C source location
            raise StartupError(f"parameter robot_description_topic: {topic!r}: {problem}") from None
        self.get_logger().info(f"waiting for {self._description_topic} (std_msgs/String, transient local)")
        try:
            arrived = spin_until(self, lambda: bool(received), self.description_timeout)
            if not arrived and not interrupted():  # on a loaded machine discovery may lag: let the graph
                # show a publisher that delivers nothing before saying there is none
                arrived = spin_until(self, lambda: bool(received) or self.count_publishers(self._description_topic) > 0,
                                     DISCOVERY_GRACE) and bool(received)
        except BaseException:
            self.destroy_subscription(subscription)
            raise
        if not arrived:  # kept otherwise: a later, different description is warned about
            self.destroy_subscription(subscription)
        if interrupted():
            raise KeyboardInterrupt
        if not arrived:
            raise StartupError(f"parameter robot_description_topic: nothing arrived on {self._description_topic} "
                               f"within {self.description_timeout:g} s (robot_description_timeout); "
                               + self._silent_publishers(self._description_topic))
        _require_xml("robot_description_topic", self._description_topic, received[0])
        if uses_xacro(received[0]):
            raise StartupError(f"parameter robot_description_topic: {self._description_topic} carries xacro "
                               "markup, not URDF: publish the expanded URDF (xacro FILE), or give the file "
                               "as urdf_file")
        return received[0]

    def _on_description(self, text: str, received: list[str]) -> None:
        """A message on robot_description_topic: the first is the robot; a different one later is
        ignored with a warning (the robot is built once, at start-up: it never changes silently)."""
        if not received:
            received.append(text)
        elif text != received[0]:
            self.get_logger().warning(
                f"parameter robot_description_topic: a different robot description arrived on {self._description_topic} "
                f"({len(text)} characters): ignored, the robot was built at start-up; restart the node to load it",
                throttle_duration_sec=WARNING_THROTTLE)

    def _silent_publishers(self, topic: str) -> str:
        """Why the publishers on `topic` delivered nothing (another message type, volatile
        durability), or a hint when there is none."""
        for info in self.get_publishers_info_by_topic(topic):
            who = f"{info.node_namespace.rstrip('/')}/{info.node_name}"
            if info.topic_type != "std_msgs/msg/String":
                return f"its publisher {who} publishes {info.topic_type}, not std_msgs/msg/String"
            if info.qos_profile.durability != DurabilityPolicy.TRANSIENT_LOCAL:
                return (f"its publisher {who} is {info.qos_profile.durability.name.lower()}, which a transient local "
                        "subscription does not match: publish it transient local, as robot_state_publisher does")
        return "is robot_state_publisher (or another node) publishing it, transient local?"

    def _load_robot(self, parameter: str, source: str) -> Robot:
        """The robot model, loaded with ``strict``; a URDF that strict refuses but the loader would
        repair is blamed on ``strict`` (the error names the link), any other bad URDF on `parameter`
        (a xacro file's by its name, though the loader read its expansion)."""
        try:
            with self._warnings_logged(skip=RepairWarning):  # repairs: listed by _log_repairs
                return load_urdf(source, strict=self.strict, floating_base=self.floating_base, ground=self.ground)
        except STARTUP_ERRORS as err:
            if isinstance(err, URDFError) and err.source == "<string>" and parameter == "urdf_file":
                err = URDFError(str(robot_path(self.get_parameter("urdf_file").value)), err.element, err.problem)
            if self.strict and isinstance(err, URDFError) and _repairable(source):
                raise StartupError(f"parameter strict: {err} (strict refuses what the loader would repair; "
                                   "strict:=false loads it and logs the repair)") from None
            raise StartupError(f"parameter {parameter}: {err}") from None

    def _log_repairs(self, robot: Robot, parameter: str) -> None:
        """One warning line saying how many repairs the loader made, then one per repair."""
        repairs = robot.repairs
        if not repairs:
            return
        log = self.get_logger()
        log.warning(f"robot '{robot.name}' ({parameter}): {len(repairs)} repair{'s' if len(repairs) > 1 else ''} "
                    "made while loading the URDF (strict:=true refuses them instead):")
        for repair in repairs:
            log.warning(f"repair: {repair}")

    @contextmanager
    def _warnings_logged(self, skip: type[Warning] | tuple = ()) -> Iterator[None]:
        """Warnings raised inside (except `skip`) go to the node's log, each message once."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield
            finally:
                kept = (str(w.message) for w in caught if not issubclass(w.category, skip))
                for message in dict.fromkeys(kept):
                    self.get_logger().warning(message)

    def _simulator_options(self) -> dict:
        """Simulator keyword arguments from parameters: ``default_effort_limit`` (0: none), the
        ``initial_positions`` given (a recording's replay assembles the model the same way), and how
        the URDF was loaded (``floating_base``, ``ground``: a replay loads the recorded URDF so)."""
        limit = self._number("default_effort_limit", lambda v: v >= 0, "must be zero (no limit) or positive")
        return {"default_effort_limit": limit or None, "servo_frequency": self.servo_frequency,
                "servo_feed_forward": self.servo_feed_forward, "initial_positions": dict(self._initial_positions),
                "floating_base": self.floating_base, "ground": self.ground}

    def _declare_servo_gains(self) -> None:
        """Declare ``gains.<joint>.p`` and ``.d`` for every servoed joint (defaults: the servo's) and
        apply them."""
        servos = self.sim.servos
        for joint in servos.joints:
            for name, value in zip(("p", "d"), servos.default_gains[joint]):
                self.declare_parameter(f"gains.{joint}.{name}", float(value), _descriptor(
                    f"Servo {'position' if name == 'p' else 'velocity'} gain of joint {joint} "
                    f"[N m/rad or N/m{', per s' if name == 'd' else ''}].", numeric=True))
            gains = [self._number(f"gains.{joint}.{n}", lambda v: v >= 0, "must not be negative") for n in "pd"]
            servos.set_gains(joint, *gains)

    def _set_initial_positions(self) -> None:
        """Declare ``initial_positions.<joint>`` for every independent one-DoF joint (one the
        constraints do not determine: not a mimic joint, not the coupler or rocker of a closed
        loop) and refuse the others; the simulator was assembled from the values given (the
        constraints determine the rest)."""
        joints = self.sim.independent_joints
        start = self.sim.initial_state[0]  # where each joint starts (inside its limits, assembled)
        for joint in joints:
            value = float(start[self.sim.joint_indices[joint][0]])
            self.declare_parameter(f"initial_positions.{joint}", value, _descriptor(
                f"Initial position of joint {joint} [rad or m].", numeric=True))
        overrides = getattr(self, "_parameter_overrides", {})
        rejected = sorted(name for name in overrides
                          if name.startswith("initial_positions.") and name.split(".", 1)[1] not in joints)
        if rejected:
            joint = rejected[0].split(".", 1)[1]
            listed = f"independent joints: {', '.join(joints) or 'none'}"
            if any(j.name == joint and len(j.q) == 1 for j in self.robot.joints.values()):
                raise StartupError(f"parameter {rejected[0]}: the constraints (closed loops, mimic joints) determine "
                                   f"joint {joint} from the independent joints; set those instead; {listed}")
            raise StartupError(f"parameter {rejected[0]}: no such one-DoF joint; {listed}")

    def _ros2_control_systems(self) -> list[Ros2ControlSystem]:
        """The URDF's ``<ros2_control>`` elements with the topic-based hardware, checked against the
        robot (none when ros2_control_topics is false)."""
        parameter, source, elements = self._ros2_control_read
        systems = [system for system in elements if system.topic_based]
        sim = self.sim
        try:
            check_systems(systems, source, list(sim.joint_indices), sim.actuated_joints, sim.servos.joints,
                          {joint: motor for motor, joint in sim.motor_joints.items()}, self._mimic_joints())
        except URDFError as err:
            raise StartupError(f"parameter {parameter}: {err}") from None
        for system in systems:
            self._check_topic_names(system, f"parameter {parameter}: {source}")
        return systems

    def _check_topic_names(self, system: Ros2ControlSystem, where: str) -> None:
        """Refuse a topic parameter of `system` that is no ROS topic name, in one line (rclpy's
        refusal, when the node creates the topic, was a traceback)."""
        for name, topic in (("joint_commands_topic", system.commands_topic), ("joint_states_topic", system.states_topic)):
            try:
                self.resolve_topic_name(topic)
            except (NameValidationException, InvalidTopicNameException, _rclpy.RCLError) as err:
                problem = " ".join(str(err).split(", at ")[0].split())  # without rcl's C source location
                raise StartupError(f'{where}: {system.label} <param name="{name}">: {topic!r}: {problem}') from None

    def _mimic_joints(self) -> set[str]:
        """The URDF's mimic joints (ros2_control lists them state only: their constraint moves them)."""
        return {name for name, joint in self.robot.joints.items() if joint.joint_description.mimic is not None}

    def _switch_constraints(self) -> dict[str, str]:
        """Apply ``disabled_constraints``; the SetBool service name of each constraint."""
        try:
            disabled = list(self.get_parameter("disabled_constraints").value)
        except ParameterUninitializedException:
            disabled = []
        try:
            services = constraint_service_names(self.sim.constraints)
            for name in disabled:
                self.sim.set_constraint_enabled(name, False)
        except ValueError as err:
            raise StartupError(f"parameter disabled_constraints: {err}") from None
        return services

    def _loop_wrenches(self) -> list:
        """The reaction wrench to publish for each loop joint that is a named constraint."""
        loops = [name for name in self.robot.loop_joints if name in self.sim.constraints]
        frames = {edge.child_link: edge.child_frame for edge in [*self._tree.moving, *self._tree.static]}
        if self.robot.root_link.name == ROBOT_WORLD_LINK:
            frames[ROBOT_WORLD_LINK] = self.world_frame
        return loop_wrenches(self.robot.loop_joints, constraint_wrench_topics(loops), frames)

    def _contact_topics(self) -> ContactTopics | None:
        """The contact wrench and marker publishers (:mod:`mb_sim.ros.contacts`), robots with
        ``<ground>`` only."""
        if not self.sim.model.contact_names:
            return None
        frames = {edge.child_link: edge.child_frame for edge in [*self._tree.moving, *self._tree.static]}
        links = self.sim.outputs(dynamics=False).contact_wrenches
        try:
            return ContactTopics(self, links, frames, self.world_frame, self.sim.model.contact_names)
        except ValueError as err:
            raise StartupError(f"robot '{self.robot.name}': {err}") from None

    def _imu_topics(self) -> ImuTopics | None:
        """The IMU publishers (:mod:`mb_sim.ros.imus`), robots with IMUs only."""
        if not self.robot.imus:
            return None
        frames = {edge.child_link: edge.child_frame for edge in [*self._tree.moving, *self._tree.static]}
        frames.setdefault(self.robot.root_link.name, self.world_frame)
        try:
            return ImuTopics(self, self.robot.imus, frames)
        except (ValueError, KeyError) as err:
            raise StartupError(f"robot '{self.robot.name}': IMUs: {err}") from None

    def _force_torque_topics(self) -> ForceTorqueTopics | None:
        """The force-torque publishers (:mod:`mb_sim.ros.force_torque`), robots with sensors only."""
        if not self.robot.force_torques:
            return None
        frames = {edge.child_link: edge.child_frame for edge in [*self._tree.moving, *self._tree.static]}
        frames.setdefault(self.robot.root_link.name, self.world_frame)
        try:
            return ForceTorqueTopics(self, self.robot.force_torques, self.robot.joints, frames)
        except (ValueError, KeyError) as err:
            raise StartupError(f"robot '{self.robot.name}': force-torque sensors: {err}") from None

    def _publish_sensors(self, kind: str, read, topics) -> None:
        """Sensor readings `read()` (the IMUs', the force-torque sensors': they need the forward
        dynamics, so only while someone subscribes) published by `topics`; a failing forward
        dynamics is a throttled warning naming the `kind`, not an end of the tick."""
        try:
            readings = read()
        except FactorizationError as err:
            self.get_logger().warning(f"no {kind} readings at sim time {self.sim.time:.6g} s: the forward "
                                      f"dynamics failed ({err})", throttle_duration_sec=WARNING_THROTTLE)
            return
        topics.publish(readings, stamp(self.sim.time))

    def _log_start(self) -> None:
        log = self.get_logger()
        actuated = self.sim.actuated_joints
        log.info(f"robot '{self.robot.name}': {len(self.sim.coordinate_names)} coordinates; actuated joints in "
                 f"~/effort_commands order: [{', '.join(actuated)}]" if actuated else
                 f"robot '{self.robot.name}': {len(self.sim.coordinate_names)} coordinates; no actuated joint "
                 "(~/effort_commands takes empty arrays)")
        if self.sim.servos.joints:
            log.info(f"~/joint_commands takes position, velocity and/or effort per joint, ~/joint_trajectory "
                     f"trajectories, for [{', '.join(self.sim.servos.joints)}] (servos at every physics step, "
                     f"gains.<joint>.p/.d, feed-forward {'on' if self.sim.servos.feed_forward else 'off'})")
        if self.lockstep:
            log.info("lockstep: each command advances one publish period; the simulation waits otherwise")
        self._log_ros2_control()
        if self.sim.motors:
            motors = ", ".join(f"{motor} (joint {joint}, +-{limit:g} V)" for (motor, joint), limit
                               in zip(self.sim.motor_joints.items(), self.sim.voltage_limits))
            log.info(f"DC motors in ~/voltage_commands order: [{motors}]; by motor or joint name on "
                     f"~/voltage_joint_commands (volts in effort); their states on {MOTOR_STATES_TOPIC}")
        else:
            log.info("~/voltage_commands: no joint has a motor, every voltage command will be rejected")
        for name, service in self._constraint_services.items():
            state = "enabled" if self.sim.constraint_enabled(name) else "disabled"
            log.info(f"constraint '{name}' ({state}): switch it with {service} (std_srvs/SetBool)")
        for wrench in self._wrenches:
            log.info(f"loop joint '{wrench.constraint}': reaction on link {wrench.child} published on "
                     f"{wrench.topic} (geometry_msgs/WrenchStamped in frame {wrench.frame})")
        for name in self.robot.loop_joints:
            if name not in self.sim.constraints:
                log.info(f"loop joint '{name}': no wrench topic (all its equations are redundant with the "
                         "other constraints)")
        if self.robot.spring_dampers:
            log.info(f"spring-dampers [{', '.join(self.robot.spring_dampers)}] on {SPRINGS_TOPIC} "
                     f"(visualization_msgs/MarkerArray, frame {self.world_frame}; fully red/blue from "
                     f"{self.spring_force_scale:g} N of tension/compression)")
        if self._contacts is not None:
            log.info(self._contacts.description())
        if self._imus is not None:
            log.info(self._imus.description())
        if self._force_torques is not None:
            log.info(self._force_torques.description())
        if abs(self.period_steps * self.dt * self.publish_rate - 1.0) > 1e-6:
            log.warning(f"1/publish_rate is not a multiple of physics_dt: a publish period of sim time is "
                        f"{self.period_steps} steps ({self.period_steps * self.dt:g} s)")
        pace = ("as fast as possible" if self._pacer.as_fast_as_possible
                else f"real-time factor {self.real_time_factor:g}")
        log.info(f"physics dt {self.dt:g} s, publishing at {self.publish_rate:g} Hz, {pace}"
                 + (", paused (call ~/pause with data: false or ~/step)" if self._session.paused else ""))

    def _log_ros2_control(self) -> None:
        """What each served ros2_control hardware commands, where; in lockstep, a warning when the
        hardware sends only on change (the simulation would wait once the robot reaches its goal)."""
        log = self.get_logger()
        for system in self._ros2_control:
            joints = ", ".join(f"{j.name} ({'/'.join(j.command_interfaces) or 'state only'}"
                               f"{', mimic' if j.mimic else ''})" for j in system.joints)
            log.info(f"{system.label} ({system.plugin}): commands on {system.commands_topic}, state on "
                     f"{system.states_topic} (best effort) for [{joints}]; commands hold until the next one "
                     "(no command_timeout)")
            if self.lockstep and not system.threshold < 0:
                log.warning(f"lockstep with {system.label}: its hardware sends a command only when it differs from "
                            "the state, and the simulation waits for commands; set <param name="
                            "\"trigger_joint_command_threshold\">-1</param> in its <hardware> to send every "
                            "controller period")

    # -- commands ----------------------------------------------------------------------------
    def _reject(self, topic: str, error: CommandError) -> None:
        """A throttled warning per topic and kind of problem."""
        key = (topic, error.kind)
        if key not in self._throttled_loggers:
            self._throttled_loggers[key] = rclpy.logging.get_logger(self.get_logger().name)
        self._throttled_loggers[key].warning(f"{topic}: command rejected: {error}",
                                             throttle_duration_sec=WARNING_THROTTLE)

    def _on_command(self, topic: str, message) -> None:
        """A message on command topic ``~/<topic>``: applied whole, or rejected with a warning."""
        try:
            self._session.command(topic, message)
        except CommandError as err:
            self._reject(self._command_subs[topic].topic_name, err)
            return
        if self._session.recording is not None:
            self._session.write(self._command_subs[topic].topic_name, COMMAND_TOPICS[topic],
                                serialize_message(message))
        self._step_locked()

    def _on_ros2_control(self, system: Ros2ControlSystem, message: JointState) -> None:
        """A command of the topic-based ros2_control hardware `system`: applied whole, or rejected
        with a warning; in lockstep it advances one publish period (one controller period)."""
        try:
            self._session.command(ROS2_CONTROL_TOPIC, message)
        except CommandError as err:
            self._reject(self._ros2_control_topics[system.name], err)
            return
        if self._session.recording is not None:
            self._session.write(self._ros2_control_topics[system.name], "sensor_msgs/msg/JointState",
                                serialize_message(message))
        self._step_locked()

    def _step_locked(self) -> None:
        """In lockstep: a command arrived, so advance one publish period (unless not running) and
        publish the state reached."""
        if self.lockstep and self.running and self._session.advance(self.period_steps,
                                                                   self._session.current_inputs()):
            self.publish_state()

    def _on_session(self, event: str, **details) -> None:
        """What the node does on the session's events (:data:`mb_sim.session.session.EVENTS`):
        retime the tick timer, restart pacing, log."""
        if event in ("started", "reset"):
            self._restart_pacing()
        if event == "reset":
            self._period_left = self.period_steps  # publish periods count from sim time 0 again
        if event == "diverged":
            self.get_logger().error(f"simulation diverged at {details['reason']}; paused, call ~/reset to start again")
        elif event == "stale":
            self._log_stale(details["joints"], details["motors"])
        elif event == "recording_failed":
            self.get_logger().error(f"{details['reason']}; recording stopped, the simulation goes on")
        self._retime()

    def _log_stale(self, joints: list[str], motors: list[str]) -> None:
        """Commands that timed out (logged once, when they do)."""
        if joints:
            self.get_logger().warning(
                f"no command for {self.command_timeout:g} s: effort of {', '.join(joints)} set to zero")
        if motors:
            self.get_logger().warning(
                f"no command for {self.command_timeout:g} s: voltage of {', '.join(motors)} set to zero")

    # -- simulation --------------------------------------------------------------------------
    @property
    def session(self) -> Session:
        """The simulation run this node is an adapter over."""
        return self._session

    @property
    def running(self) -> bool:
        """Advancing on the timer: neither paused nor diverged."""
        return self._session.running

    def _tick_period(self) -> float:
        """Wall seconds between ticks: a publish period, or FAST_TIMER_PERIOD while running as fast
        as possible (paused, the node only publishes /clock, once per publish period)."""
        fast = self._pacer.as_fast_as_possible and self.running and not self.lockstep
        return FAST_TIMER_PERIOD if fast else 1.0 / self.publish_rate

    def _retime(self) -> None:
        """After the simulation started or stopped running: the tick timer's period."""
        period = round(self._tick_period() * 1e9)
        if self._tick_timer.timer_period_ns != period:
            self._tick_timer.timer_period_ns = period

    def _on_tick(self) -> None:
        now = time.monotonic()
        inputs = self._session.current_inputs(now)
        if not self.running or self.lockstep:  # in lockstep only commands advance
            self._publish_paused_clock(now)
            return
        if self._pacer.as_fast_as_possible:  # period after period, each published, for a few ms
            self._advance_publishing(sys.maxsize, inputs, now + FAST_TICK_BUDGET, each_period=True,
                                     unread=not self._periods_read())
            self._monitor.add(time.monotonic(), self.sim.time)
            return
        slipped = self._pacer.slipped
        advance = self._pacer.next_advance(now, self.sim.time)
        if advance.capped:
            self._last_cap = now
            self.get_logger().warning(
                f"the simulation fell more than {MAX_CATCH_UP_PERIODS} publish periods behind real time: "
                f"{self._pacer.slipped - slipped:.3f} s of sim time dropped ({self._pacer.slipped:.3f} s so far)",
                throttle_duration_sec=WARNING_THROTTLE)
        if advance.steps:  # at real time or slower a late tick publishes each period it owes
            done = self._advance_publishing(advance.steps, inputs, now + self._tick_budget,
                                            each_period=self.real_time_factor <= 1.0)
            if done is not None and done < advance.steps:
                self._cut_tick(now, done, advance.steps)
        self._monitor.add(now, self.sim.time)  # lagging is judged (and logged) with /diagnostics

    def _advance_publishing(self, steps: int, inputs, deadline: float, each_period: bool,
                            unread: bool = False) -> int | None:
        """Advance up to `steps` physics steps until wall time `deadline`, in chunks that end at
        publish-period boundaries; publish at each boundary (`each_period`) or once at the end.
        Boundaries passed without a message of their own are counted (``merged_periods``), but
        where nobody reads a period's messages (`unread`): then the chunks ignore the boundaries
        and the state is published once at the end.  The steps done; None on divergence (nothing
        published then: the session reports it)."""
        done, pending = 0, 0
        while done < steps:
            n = steps - done if unread else min(self._period_left, steps - done)
            applied, inputs = inputs, None  # commands only change between ticks: applied once
            got, ok = advance_within(lambda k: self._session.advance(k, applied), n, deadline, self._step_cost,
                                     MAX_ADVANCE_STEPS, at_least_one=done == 0)  # each tick makes progress
            if not ok:
                return None
            passed, self._period_left = periods_passed(self._period_left, got, self.period_steps)
            done, pending = done + got, pending + passed
            if passed and each_period and not unread:
                self.publish_state()
                pending = 0
            if got < n:  # out of wall time
                break
        if pending:  # faster than real time or unread: the state reached, once
            if not unread:
                self.merged_periods += pending - 1
            self.publish_state()
        return done

    def _periods_read(self) -> bool:
        """Whether someone reads what each publish period publishes (/clock, /joint_states, /tf,
        /odom, ros2_control's state, wrenches, springs, motors, contacts, sensors, a recording)."""
        groups = (self._contacts, self._imus, self._force_torques)
        return (self._session.recording is not None
                or any(map(_listened, (self._clock_pub, self._joint_pub, self._tf_pub, self._odom_pub,
                                       self._springs_pub, self._motor_states_pub)))
                or any(map(_listened, self._ros2_control_pubs)) or any(map(_listened, self._wrench_pubs))
                or any(group is not None and group.listened() for group in groups))

    def _cut_tick(self, now: float, done: int, due: int) -> None:
        """A tick ran out of its wall budget: the steps left stay due (lag), counted and warned."""
        self.cut_ticks += 1
        self._last_cap = now  # lagging: WARN in /diagnostics
        self.get_logger().warning(
            f"a tick used its {self._tick_budget * 1e3:.3g} ms of wall time after {done} of the {due} physics steps "
            f"due: the simulation lags real time ({self.cut_ticks} ticks cut so far)",
            throttle_duration_sec=WARNING_THROTTLE)

    def _publish_paused_clock(self, now: float) -> None:
        """/clock keeps the paused (or diverged) sim time, once per publish period, as Gazebo does:
        nodes on sim time see time standing still rather than no time at all."""
        if self._clock_pub is not None and now - self._last_clock >= 0.999 / self.publish_rate:
            self._last_clock = now
            self._clock_pub.publish(self._messages.clock())

    def _restart_pacing(self) -> None:
        self._pacer.stop()
        self._monitor.reset()
        self._last_cap = -math.inf

    # -- services ----------------------------------------------------------------------------
    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        recovered = self._session.reset()
        self.publish_state()
        response.success = True
        response.message = "back to the initial state at sim time 0" + (" (recovered from divergence)"
                                                                       if recovered else "")
        self.get_logger().info(f"~/reset: {response.message}")
        return response

    def _on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        try:
            if request.data:
                self._session.pause()
                message = f"paused at sim time {self.sim.time:.6g} s"
            else:
                self._session.resume()
                message = f"running from sim time {self.sim.time:.6g} s"
        except SessionError as err:
            response.success, response.message = False, str(err)
        else:
            response.success, response.message = True, message
        _log_outcome(self.get_logger(), response.success, f"~/pause: {response.message}")
        return response

    def _on_step(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        session = self._session
        try:
            if self.lockstep and session.running:  # in lockstep ~/step advances without a pause
                stepped = session.advance(self.period_steps, session.current_inputs())
            else:
                stepped = session.step(self.period_steps)
        except SessionError as err:
            response.success, response.message = False, str(err)
            return response
        if stepped:
            self.publish_state()
            response.success = True
            response.message = f"stepped {self.period_steps * self.dt:g} s to sim time {self.sim.time:.6g} s"
        else:
            response.success, response.message = False, f"the simulation diverged ({session.failure})"
        return response

    def _on_constraint(self, name: str, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        """Enable (data: true) or disable constraint `name`; enabling projects the state onto it."""
        try:
            self._session.set_constraint_enabled(name, bool(request.data))
        except (ValueError, SimulationError) as err:
            response.success, response.message = False, str(err)
        else:
            state = "enabled" if request.data else "disabled"
            response.success = True
            response.message = f"constraint '{name}' {state} at sim time {self.sim.time:.6g} s"
            if request.data:
                self.publish_state()  # the projection may have moved the state
        _log_outcome(self.get_logger(), response.success, f"{self._constraint_services[name]}: {response.message}")
        return response

    def _on_record(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        """Start (data: true; to record_file, else a time-stamped file in the working directory) or
        stop recording.  Starting while recording is refused and leaves the recording alone; a
        file is never overwritten: a name taken gets a suffix (run.mcap, run_2.mcap...), which the
        response names."""
        session = self._session
        if request.data and session.recording is not None:
            response.success, response.message = False, f"already recording to {session.recording}"
        elif request.data:
            path = self.record_file or f"mb_sim_{datetime.datetime.now():%Y%m%d_%H%M%S}.mcap"
            try:
                self._start_recording(path)
            except RecordingError as err:
                response.success, response.message = False, str(err)
            else:
                response.success = True
                response.message = f"recording to {session.recording} from sim time {self.sim.time:.6g} s"
        elif session.recording is None:
            response.success, response.message = False, "not recording"
        else:
            try:
                path = session.stop_recording()
            except RecordingError as err:
                response.success, response.message = False, str(err)
            else:
                response.success = True
                response.message = f"recording {path} closed at sim time {self.sim.time:.6g} s"
        _log_outcome(self.get_logger(), response.success, f"~/record: {response.message}")
        return response

    def _start_recording(self, path: str) -> None:
        """Open a recording (mb_sim.session.recorder) starting from the current state."""
        settings = {"node": self.get_fully_qualified_name(), "physics_dt": self.dt,
                    "period_steps": self.period_steps, "lockstep": self.lockstep,
                    "command_timeout": 0.0 if self.lockstep else self.command_timeout,
                    "allow_partial_joints_goal": self.allow_partial,
                    "simulator": self._simulator_options(),
                    "command_topics": {**{sub.topic_name: topic for topic, sub in self._command_subs.items()},
                                       **{sub.topic_name: ROS2_CONTROL_TOPIC for sub in self._ros2_control_subs}},
                    "ros2_control": {"interfaces": {joint: list(interfaces) for joint, interfaces
                                                    in self._session.router.ros2_control.items()},
                                     "ignored": sorted(self._session.router.ros2_control_ignored)},
                    "joint_states_topic": self._joint_pub.topic_name}
        self._session.start_recording(path, settings, serialize_message(String(data=self.urdf_text)),
                                     lambda text: serialize_message(String(data=text)))
        self.get_logger().info(f"recording commands and states to {self._session.recording}")

    def destroy_node(self) -> None:
        # Also after a constructor that failed part way (a bad URDF): what exists is torn down.
        session = getattr(self, "_session", None)
        try:
            if session is not None:
                session.stop_recording()  # a complete file also after Ctrl-C
        except RecordingError as err:
            self.get_logger().error(str(err))
        # rclpy's destroy_node leaves waitables (the SimulateSteps action server) alive, and the
        # node with them: its participant never said goodbye and peers listed /mb_sim for ~20 s.
        interfaces = getattr(self, "_simulation_interfaces", None)
        if interfaces is not None:
            interfaces.destroy()
        super().destroy_node()

    # -- publishing ---------------------------------------------------------------------------
    def _publish_static_transforms(self) -> None:
        poses = self.sim.outputs(dynamics=False).link_poses
        self._tf_static_pub.publish(_transforms(self._tree.static, poses, stamp(0.0)))

    def _state_outputs(self, wrenches: bool):
        """The outputs to publish: without forward dynamics unless loop-joint reactions are wanted."""
        if wrenches:
            try:
                return self.sim.outputs()
            except FactorizationError as err:
                self.get_logger().warning(f"no loop-joint wrenches at sim time {self.sim.time:.6g} s: the "
                                          f"forward dynamics failed ({err})", throttle_duration_sec=WARNING_THROTTLE)
        return self.sim.outputs(dynamics=False)  # positions, velocities, efforts, poses and springs only

    def publish_state(self) -> None:
        """/joint_states, /tf, /odom (serialized once, patched: :mod:`mb_sim.ros.state_messages`),
        the wrenches, springs and motor states of robots that have them, then /clock.  A topic
        nobody subscribes to is not computed (what lets a headless run go faster); the subscriber
        counts follow the middleware's matched events (:mod:`mb_sim.ros.subscribers`)."""
        wrenches = any(_listened(pub) for pub in self._wrench_pubs)
        out = (self._state_outputs(wrenches) if wrenches or _listened(self._springs_pub)
               or _listened(self._motor_states_pub) or (self._contacts is not None and self._contacts.listened())
               else None)
        recording = self._session.recording is not None
        state = self._messages.render(
            evaluated=out is not None,
            joint_states=recording or _listened(self._joint_pub) or any(map(_listened, self._ros2_control_pubs)),
            tf=_listened(self._tf_pub), odometry=_listened(self._odom_pub))
        if state.joint_states is not None:
            self._joint_pub.publish(state.joint_states)
            for publisher in self._ros2_control_pubs:
                publisher.publish(state.joint_states)
            if recording:
                self._session.write(self._joint_pub.topic_name, "sensor_msgs/msg/JointState", state.joint_states)
        if state.tf is not None:
            self._tf_pub.publish(state.tf)
        for message in state.odometry:
            self._odom_pub.publish(message)
        if out is not None:
            self._publish_extras(out)
        if self._imus is not None and self._imus.listened():
            self._publish_sensors("IMU", self.sim.imus, self._imus)
        if self._force_torques is not None and self._force_torques.listened():
            self._publish_sensors("force-torque", self.sim.force_torques, self._force_torques)
        if self._clock_pub is not None:
            self._clock_pub.publish(state.clock)
        self._last_clock = time.monotonic()

    def _publish_extras(self, out) -> None:
        """Loop-joint wrenches, spring markers and motor states of `out`, stamped with its time."""
        now, poses = stamp(out.time), out.link_poses
        if out.reactions:
            for wrench, publisher in zip(self._wrenches, self._wrench_pubs):
                if not _listened(publisher):
                    continue
                reaction = out.reactions[wrench.constraint]
                if self.sim.constraint_enabled(wrench.constraint):
                    force, torque = wrench.in_child_frame(reaction.force, reaction.torque, poses)
                else:
                    force = torque = np.zeros(3)  # a released loop exerts nothing
                publisher.publish(wrench_stamped(wrench.frame, force, torque, now))
        if _listened(self._springs_pub):
            self._springs_pub.publish(spring_markers(out.springs, self.world_frame, now, self.spring_force_scale))
        if _listened(self._motor_states_pub):
            self._motor_states_pub.publish(motor_states_message(out.motors))
        if self._contacts is not None:
            self._contacts.publish(out, now)

    def _publish_diagnostics(self) -> None:
        now = time.monotonic()
        self._session.flush_recording()  # what a quiet spell left in memory reaches the file
        achieved = self._monitor.factor() if self.running else None
        lagging = self.running and is_lagging(self.real_time_factor, achieved, now - self._last_cap < RATE_WINDOW)
        if lagging:
            self.get_logger().warning(lag_warning(self.real_time_factor, achieved),
                                      throttle_duration_sec=WARNING_THROTTLE)
        values = {
            "state": "diverged" if self._session.failure else "paused" if self._session.paused else "running",
            "sim time [s]": f"{self.sim.time:.6f}",
            "target real-time factor": ("0 (as fast as possible)" if self._pacer.as_fast_as_possible
                                        else f"{self.real_time_factor:g}"),
            "achieved real-time factor": "n/a" if achieved is None else f"{achieved:.3f}",
            "sim time dropped to keep up [s]": f"{self._pacer.slipped:.3f}",
            "publish periods dropped to keep up": f"{self._pacer.slipped * self.publish_rate:.0f}",
            "publish periods merged into the next message": str(self.merged_periods),
            "ticks cut at their wall budget": str(self.cut_ticks),
            "physics dt [s]": f"{self.dt:g}",
            "publish rate [Hz]": f"{self.publish_rate:g}",
        }
        try:
            out = self.sim.outputs()
            values |= {"constraint position error": f"{out.position_error:.3g}",
                       "constraint velocity error": f"{out.velocity_error:.3g}",
                       "total energy [J]": f"{out.energy:.9g}"}
        except FactorizationError as err:
            out = self.sim.outputs(dynamics=False)
            values["outputs"] = f"unavailable: {err}"
        values |= {f"constraint {name}": "enabled" if self.sim.constraint_enabled(name) else "disabled"
                   for name in self.sim.constraints}
        if self._wrenches:  # enabled or not: a released loop shows how far it has come apart
            errors = self.sim.constraint_errors()
            values |= {f"constraint {w.constraint} position error": f"{_largest(errors[w.constraint].position):.3g}"
                       for w in self._wrenches}
        for name, spring in out.springs.items():
            values[f"spring {name} force [N]"] = f"{spring.force:.9g}"
            values[f"spring {name} length [m]"] = f"{spring.distance:.9g}"
        values |= motor_diagnostics(out.motors, self._prismatic_motors)
        beyond = self.sim.beyond_limits()  # what the stops did not hold: never reported OK
        values |= {f"joint {name} beyond its limit [rad or m]": f"{excess:.3g}" for name, excess in beyond.items()}
        command_now = self._session.command_time(now)
        ages = [age for age in (self._commands.age(command_now), self._voltages.age(command_now)) if age is not None]
        values["command age [s]"] = f"{min(ages):.3f}" if ages else "no command yet"
        values["backend"] = f"{BACKEND} ({type(self.sim.model).__name__}, rk4)"
        values["recording"] = self._session.recording or (
            f"failed: {self._session.recording_failure}" if self._session.recording_failure else "off")
        if self._session.failure is not None:
            level, message = DiagnosticStatus.ERROR, f"diverged at {self._session.failure}; call ~/reset"
        elif self._session.recording_failure is not None:
            level = DiagnosticStatus.ERROR
            message = f"{self._session.recording_failure}; not recording (~/record data: true starts a new one)"
        elif beyond:
            level = DiagnosticStatus.WARN
            message = "beyond the position limit: " + ", ".join(
                f"joint {name} by {abs(excess):.3g} rad or m" for name, excess in beyond.items())
        elif lagging:
            level = DiagnosticStatus.WARN
            message = f"cannot keep up: real-time factor {values['achieved real-time factor']} " \
                      f"of {self.real_time_factor:g}"
        elif self._commands.stale or self._voltages.stale:
            level, message = DiagnosticStatus.WARN, f"commands stale (older than {self.command_timeout:g} s)"
        else:
            level, message = DiagnosticStatus.OK, values["state"]
        status = DiagnosticStatus(level=level, name=f"{self.get_fully_qualified_name().lstrip('/')}: {self.robot.name}", message=message,
                                  hardware_id=self.robot.name,
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics_pub.publish(array)


def _require_xml(parameter: str, where: str, text: str) -> None:
    """Robot description text must be XML: never read as a path (the loader reads a file for text
    not starting with '<'), so a stray string cannot make the node open a file."""
    if not text.lstrip("\ufeff \t\r\n").startswith("<"):
        shown = repr(text[:60]) + ("..." if len(text) > 60 else "")
        raise StartupError(f"parameter {parameter}: {where} holds {shown}, not URDF text (XML starting with '<'); "
                           "a path goes in urdf_file")


def _log_outcome(logger, success: bool, message: str) -> None:
    """`message` at INFO when `success`, else WARN.  Two call sites on purpose: rclpy refuses one call
    site that logs with two severities ("Logger severity cannot be changed between calls")."""
    if success:
        logger.info(message)
    else:
        logger.warning(message)


def _largest(values: np.ndarray) -> float:
    """Largest absolute value (0 for none)."""
    return float(np.abs(values).max()) if len(values) else 0.0


def _transforms(edges: list, world_poses: dict[str, np.ndarray], when) -> TFMessage:
    """A TFMessage with the pose of each edge's child in its parent frame, stamped `when`."""
    return TFMessage(transforms=[transform_stamped(edge.parent_frame, edge.child_frame, pose, when)
                                 for edge, pose in edge_poses(edges, world_poses)])

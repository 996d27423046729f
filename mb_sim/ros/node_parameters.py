"""The ``mb_sim`` node's parameters: declared up front with descriptions (read-only: read once, at
start-up), checked (bounds, types, the publish period) and gathered into :class:`NodeParameters`;
the per-robot ones (``initial_positions.<joint>``, ``gains.<joint>.p/.d``) once the robot is
known.  A bad value is a :class:`StartupError` naming the parameter, in one line.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.exceptions import ParameterException, ParameterUninitializedException
from rclpy.parameter import Parameter

from mb_sim.session import MAX_ADVANCE_STEPS
from mb_sim.sim.state import STATE_MAGNITUDE
from mb_sim.urdf import URDFError
from mb_sim.urdf.xacro_expansion import parse_xacro_args

__all__ = ["DEFAULT_ROBOT", "MAX_PERIOD_STEPS", "NodeParameters", "PARAMETER_BOUNDS", "StartupError",
           "declare_initial_positions", "declare_servo_gains", "descriptor", "initial_positions_given",
           "number", "read_parameters"]

DEFAULT_ROBOT = "pendulum"
#: Bounds of the numeric parameters that set the pace: name -> (lowest, highest, unit).  Declared
#: in their descriptors (``ros2 param describe`` shows them) and checked at start-up.
PARAMETER_BOUNDS = {
    "physics_dt": (1e-6, 0.1, "s"),
    "publish_rate": (0.1, 10_000.0, "Hz"),
    "real_time_factor": (0.0, 1000.0, ""),
}
#: Most physics steps in one publish period (the sim time one tick advances at factor 1): what
#: one call of the session advances at most.
MAX_PERIOD_STEPS = MAX_ADVANCE_STEPS


class StartupError(RuntimeError):
    """The node cannot start with the parameters it was given."""


@dataclass(frozen=True)
class NodeParameters:
    """The values of the node's parameters, checked (see ``config/mb_sim.yaml``)."""

    dt: float
    publish_rate: float
    real_time_factor: float
    command_timeout: float
    start_paused: bool
    strict: bool
    floating_base: bool
    ground: bool
    xacro_args: dict
    description_timeout: float
    world_frame: str
    frame_prefix: str
    spring_force_scale: float
    lockstep: bool
    publish_clock: bool
    record_file: str
    allow_partial: bool
    servo_frequency: float
    servo_feed_forward: bool | None
    default_effort_limit: float | None
    ros2_control_topics: bool
    disabled_constraints: tuple
    objects: tuple = ()
    wrench_links: tuple = ()


def descriptor(description: str, numeric: bool = False, bounded: str | None = None) -> ParameterDescriptor:
    """Read-only (values are read once, at start-up); numbers accept integers too
    (``-p publish_rate:=100``); `bounded` names the entry of PARAMETER_BOUNDS to declare."""
    result = ParameterDescriptor(description=description, dynamic_typing=numeric, read_only=True)
    if bounded is not None:
        low, high, _ = PARAMETER_BOUNDS[bounded]
        result.floating_point_range = [FloatingPointRange(from_value=low, to_value=high, step=0.0)]
    return result


#: name -> (default, description, numeric, bounded); a Parameter.Type default: declared without a value.
_DECLARED = {
    "robot_description": ("", "URDF text of the robot (xacro markup expanded with xacro_args); takes precedence "
                              "over urdf_file.", False, None),
    "urdf_file": (DEFAULT_ROBOT, "URDF or xacro (.xacro) path, or the name of a URDF shipped in share/mb_sim/urdf.",
                  False, None),
    "xacro_args": ("", "Arguments of a xacro urdf_file or robot_description, as on xacro's command line: "
                       "\"a:=1 b:=2\".", False, None),
    "robot_description_topic": ("", "Take the URDF from this topic (std_msgs/String, transient local, as "
                                    "robot_state_publisher publishes it) instead of urdf_file; the node then does not "
                                    "publish its own there.", False, None),
    "robot_description_timeout": (30.0, "Seconds to wait for robot_description_topic before giving up.", True, None),
    "physics_dt": (0.001, "Physics step of the fixed-step RK4 integrator [s].", True, "physics_dt"),
    "publish_rate": (100.0, "Rate of /joint_states, /tf, /odom and /clock [Hz of sim time]; one publish period of "
                            "sim time is a whole number of physics steps, at most 1/physics_dt.", True, "publish_rate"),
    "real_time_factor": (1.0, "Sim seconds per wall second; 0 runs as fast as possible.", True, "real_time_factor"),
    "command_timeout": (0.5, "A joint's effort falls back to zero when its last command is older [s, wall]; 0: never.",
                        True, None),
    "start_paused": (False, "Start paused (~/pause with data: false, or ~/step, to go on).", False, None),
    "frame_prefix": ("", "Prepended to every link frame id (as robot_state_publisher's frame_prefix).", False, None),
    "world_frame": ("world", "Fixed frame the robot's root hangs from (odom for mobile bases).", False, None),
    "disabled_constraints": (Parameter.Type.STRING_ARRAY, "Names of constraints (mimic joints, loop joints...) to "
                             "start disabled; ~/constraints/<name>/enable switches them at run time.", False, None),
    "default_effort_limit": (0.0, "Effort limit [N m or N] for actuated joints whose URDF gives none; 0: such joints "
                                  "are not clamped (a warning names them).", True, None),
    "strict": (False, "Refuse a URDF the loader would repair (inertias judged per moving body, rounding, a mimic on a "
                      "fixed joint) instead of loading it with the repairs logged.", False, None),
    "floating_base": (False, "Join the robot's root link to the world by a floating joint (6 DoF, root_joint) instead "
                             "of fixing it to the world; for a root link that is not named world.", False, None),
    "ground": (False, "Add the ground plane z = 0 (default contact parameters) where the URDF has no "
                      "<mb_sim><ground>: the links' <collision> shapes touch it (load_urdf's ground).", False, None),
    "objects": (Parameter.Type.STRING_ARRAY, "Objects beside the robot, one string each: key=value pairs, e.g. "
                "'name=cube shape=box size=0.05,0.05,0.05 mass=0.1 xyz=0.5,0,0.025' or 'name=cup urdf=/path/cup.urdf "
                "xyz=0.4,0,0.8' (keys: name shape size mass xyz rpy urdf fixed friction rgba). They join the robot "
                "description (TF, RViz) and touch the robot, each other and the ground.", False, None),
    "wrench_links": (Parameter.Type.STRING_ARRAY, "Links that take pushes: each gets ~/apply_wrench/<link> "
                     "(geometry_msgs/WrenchStamped: force at the link's origin and torque, in the world's frame or the "
                     "link's, held until the next message; a zero wrench ends it), as <mb_sim><external_wrench "
                     "link> declares.", False, None),
    "record_file": ("", "Record commands in and states out to this MCAP file from the start (mb-sim replay re-runs "
                        "it); ~/record starts and stops recordings at run time.", False, None),
    "publish_clock": (True, "Publish /clock (sim time). With several simulation nodes in one system, let one of them "
                            "publish it.", False, None),
    "lockstep": (False, "Advance exactly one publish period each time a command arrives (on any command topic) and "
                        "wait otherwise: the same controller gives the same trajectory on any machine and under any "
                        "load.", False, None),
    "servo_frequency": (10.0, "Natural frequency [Hz] of the joint servos' default gains (critically damped about "
                              "each joint's smallest effective inertia); gains.<joint>.p and .d override them.", True,
                        None),
    "servo_feed_forward": (Parameter.Type.BOOL, "Whether position, velocity and trajectory servos add the "
                           "computed-torque feed-forward to their PD law (they then follow their references exactly "
                           "within the effort limits); false: plain PD. Not set: off for a robot with contacts (it "
                           "would cancel the ground's push at the joints).", False, None),
    "allow_partial_joints_goal": (False, "Accept ~/joint_trajectory messages that leave out joints (as "
                                         "joint_trajectory_controller's parameter); those joints keep what they "
                                         "follow.", False, None),
    "ros2_control_topics": (True, "Serve the topic-based ros2_control hardware "
                                  "(joint_state_topic_hardware_interface/JointStateTopicSystem) of the URDF's "
                                  "<ros2_control> elements: its joint_commands_topic in, joint_states_topic out, no "
                                  "command timeout; false ignores <ros2_control>.", False, None),
    "spring_force_scale": (10.0, "Spring-damper force [N] from which ~/springs shows a spring fully red (tension) or "
                                 "blue (compression); grey at zero force.", True, None),
}


def read_parameters(node) -> NodeParameters:
    """Declare the node's parameters and read them, checked (StartupError naming the first bad one)."""
    try:
        for name, (default, description, numeric, bounded) in _DECLARED.items():
            node.declare_parameter(name, default, descriptor(description, numeric, bounded))
    except ParameterException as err:  # "<problem>: <parameter>", e.g. a value of the wrong type
        problem, _, name = str(err).rpartition(": ")
        if name in PARAMETER_BOUNDS:  # out of its declared range
            _bounded(node, name)
        raise StartupError(f"parameter {name}: {problem}") from None
    value = lambda name: node.get_parameter(name).value  # noqa: E731
    dt, rate, factor = (_bounded(node, name) for name in ("physics_dt", "publish_rate", "real_time_factor"))
    _check_period(dt, rate)
    try:
        xacro_args = parse_xacro_args(_string(node, "xacro_args", allow_empty=True))
    except ValueError as err:  # "xacro_args ...: <problem>"
        raise StartupError(f"parameter {err}") from None
    return NodeParameters(
        dt=dt, publish_rate=rate, real_time_factor=factor,
        command_timeout=number(node, "command_timeout", lambda v: v >= 0, "must be zero (no timeout) or positive"),
        start_paused=value("start_paused") is True, strict=value("strict") is True,
        floating_base=value("floating_base") is True, ground=value("ground") is True, xacro_args=xacro_args,
        description_timeout=number(node, "robot_description_timeout", lambda v: 0 < v <= 3600,
                                   "must be in (0, 3600] s"),
        world_frame=_string(node, "world_frame"), frame_prefix=_string(node, "frame_prefix", allow_empty=True),
        spring_force_scale=number(node, "spring_force_scale", lambda v: v > 0, "must be positive"),
        lockstep=value("lockstep") is True, publish_clock=value("publish_clock") is not False,
        record_file=_string(node, "record_file", allow_empty=True),
        allow_partial=value("allow_partial_joints_goal") is True,
        servo_frequency=number(node, "servo_frequency", lambda v: 0 < v <= 1e4, "must be in (0, 10000] Hz"),
        servo_feed_forward=_unset_or(node, "servo_feed_forward", lambda v: v is not False),
        default_effort_limit=number(node, "default_effort_limit", lambda v: v >= 0,
                                    "must be zero (no limit) or positive") or None,
        ros2_control_topics=value("ros2_control_topics") is not False,
        disabled_constraints=tuple(_unset_or(node, "disabled_constraints", list) or ()),
        objects=_objects(node),
        wrench_links=tuple(_unset_or(node, "wrench_links", list) or ()),
    )


def _objects(node) -> tuple:
    """The ``objects`` parameter's scene objects (StartupError naming the bad one)."""
    from mb_sim.urdf.scene import parse_object

    texts = _unset_or(node, "objects", list) or ()
    try:
        return tuple(parse_object(text) for text in texts)
    except URDFError as err:
        raise StartupError(f"parameter objects: {err.element}: {err.problem}") from None


def _unset_or(node, name: str, convert: Callable):
    """`convert` of a parameter declared without a value, None while it is not set."""
    try:
        return convert(node.get_parameter(name).value)
    except ParameterUninitializedException:
        return None


def _bounded(node, name: str) -> float:
    """The value of a parameter of PARAMETER_BOUNDS (also before it could be declared)."""
    low, high, unit = PARAMETER_BOUNDS[name]
    overrides = getattr(node, "_parameter_overrides", {})
    value = overrides[name].value if name in overrides else node.get_parameter(name).value
    within = f"must be within [{low:g}, {high:g}]{' ' + unit if unit else ''}"
    return number(node, name, lambda v: low <= v <= high, within, value)


def _check_period(dt: float, publish_rate: float) -> None:
    """One publish period is a whole number of physics steps: at least one, at most
    MAX_PERIOD_STEPS (a tick must come back to the executor)."""
    steps = 1.0 / (publish_rate * dt)
    if steps < 1.0 - 1e-9:
        raise StartupError(f"parameter publish_rate: {publish_rate:g} Hz publishes more often than the "
                           f"physics steps (physics_dt {dt:g} s): at most {1.0 / dt:g} Hz")
    if steps > MAX_PERIOD_STEPS:
        raise StartupError(f"parameters physics_dt and publish_rate: a publish period of {1.0 / publish_rate:g} "
                           f"s is {steps:.3g} steps of {dt:g} s, more than {MAX_PERIOD_STEPS}: "
                           "raise physics_dt or publish_rate")


def number(node, name: str, valid: Callable[[float], bool], requirement: str, value=None) -> float:
    """Parameter `name` (or `value`) as a finite number meeting `valid`, else StartupError."""
    value = node.get_parameter(name).value if value is None else value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise StartupError(f"parameter {name}: must be a finite number, got {value!r}")
    if not valid(value):
        raise StartupError(f"parameter {name}: {requirement}, got {value!r}")
    return float(value)


def _string(node, name: str, allow_empty: bool = False) -> str:
    value = node.get_parameter(name).value
    if not allow_empty and not value.strip():
        raise StartupError(f"parameter {name}: must not be empty")
    return value


# -- per robot -----------------------------------------------------------------------------------
def initial_positions_given(node, joints: set[str]) -> dict[str, float]:
    """The ``initial_positions.<joint>`` values given for the one-DoF `joints` (read before they
    can be declared: the simulator assembles the model from them); other names are refused by
    :func:`declare_initial_positions`."""
    overrides = getattr(node, "_parameter_overrides", {})
    within = f"must be within +-{STATE_MAGNITUDE:g} (rad or m: beyond, no robot's)"
    return {name.split(".", 1)[1]: number(node, name, lambda v: abs(v) <= STATE_MAGNITUDE, within,
                                          overrides[name].value)
            for name in overrides if name.startswith("initial_positions.") and name.split(".", 1)[1] in joints}


def declare_initial_positions(node, sim, one_dof_joints: set[str]) -> None:
    """Declare ``initial_positions.<joint>`` for every independent one-DoF joint of `sim` (one the
    constraints do not determine: not a mimic joint, not the coupler or rocker of a closed loop)
    and refuse the others (`one_dof_joints`: all of them); the simulator was assembled from the
    values given (the constraints determine the rest)."""
    joints = sim.independent_joints
    start = sim.initial_state[0]  # where each joint starts (inside its limits, assembled)
    for joint in joints:
        value = float(start[sim.joint_indices[joint][0]])
        node.declare_parameter(f"initial_positions.{joint}", value, descriptor(
            f"Initial position of joint {joint} [rad or m].", numeric=True))
    overrides = getattr(node, "_parameter_overrides", {})
    rejected = sorted(name for name in overrides
                      if name.startswith("initial_positions.") and name.split(".", 1)[1] not in joints)
    if rejected:
        joint = rejected[0].split(".", 1)[1]
        listed = f"independent joints: {', '.join(joints) or 'none'}"
        if joint in one_dof_joints:
            raise StartupError(f"parameter {rejected[0]}: the constraints (closed loops, mimic joints) determine "
                               f"joint {joint} from the independent joints; set those instead; {listed}")
        raise StartupError(f"parameter {rejected[0]}: no such one-DoF joint; {listed}")


def declare_servo_gains(node, servos) -> None:
    """Declare ``gains.<joint>.p`` and ``.d`` for every servoed joint (defaults: the servo's) and
    apply them."""
    for joint in servos.joints:
        for name, value in zip(("p", "d"), servos.default_gains[joint]):
            node.declare_parameter(f"gains.{joint}.{name}", float(value), descriptor(
                f"Servo {'position' if name == 'p' else 'velocity'} gain of joint {joint} "
                f"[N m/rad or N/m{', per s' if name == 'd' else ''}].", numeric=True))
        gains = [number(node, f"gains.{joint}.{n}", lambda v: v >= 0, "must not be negative") for n in "pd"]
        servos.set_gains(joint, *gains)

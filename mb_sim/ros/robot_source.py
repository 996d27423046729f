"""Where the ``mb_sim`` node's robot comes from: the ``robot_description`` parameter (URDF text),
the ``robot_description_topic`` (as robot_state_publisher publishes it: transient local), or
``urdf_file`` (a path or a URDF shipped with mb_sim); xacro expanded with ``xacro_args``.  Then the
robot is loaded (``strict`` refusing what the loader would repair, the repairs logged) and its
:class:`~mb_sim.sim.Simulator` built.  Every failure is a :class:`StartupError` naming the
parameter, never a traceback; the library's warnings go to the node's log, each once.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rclpy.exceptions import InvalidTopicNameException, NameValidationException
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.qos import DurabilityPolicy
from std_msgs.msg import String

from mb_sim.codegen import CodegenError
from mb_sim.model import ComponentError, Robot, load_urdf
from mb_sim.resources import robot_path
from mb_sim.ros.node_parameters import NodeParameters, StartupError
from mb_sim.ros.qos import LATCHED_QOS
from mb_sim.ros.teardown import interrupted, spin_until
from mb_sim.sim import AssemblyError, SimulationError, Simulator
from mb_sim.urdf import RepairWarning, URDFError, parse_urdf
from mb_sim.urdf.scene import SceneObject, compose_scene
from mb_sim.urdf.xacro_expansion import expand_xacro_bounded, is_xacro, uses_xacro

__all__ = ["BACKEND", "RobotSource", "STARTUP_ERRORS", "build_simulator", "load_robot", "read_own_source",
           "read_robot_source", "scene_source", "simulator_options", "load_options", "build_options",
           "warnings_logged"]

#: Compiled C models (the real-time backend).
BACKEND = "c"
#: Seconds more to wait, after robot_description_timeout passed with nothing, for the graph to show a
#: publisher on the topic (what makes the error name it: another type, volatile) on a loaded machine.
DISCOVERY_GRACE = 2.0
#: Seconds between two warnings about a different robot description arriving.
WARNING_THROTTLE = 2.0
#: What a failed start-up reports as a bad parameter (one line, no traceback).
STARTUP_ERRORS = (URDFError, ComponentError, CodegenError, SimulationError, ValueError, OSError)


@dataclass(frozen=True)
class RobotSource:
    """The robot's description: the parameter naming it, the path or URDF text the loader reads,
    the URDF text (a xacro's expansion), and the resolved topic it came from (or None)."""

    parameter: str
    source: str
    text: str
    topic: str | None = None


def read_robot_source(node, params: NodeParameters, own: RobotSource | None = None) -> RobotSource:
    """From robot_description, else robot_description_topic, else urdf_file; a xacro file or text is
    expanded with xacro_args, and the loader gets the expanded text; with ``objects`` the scene's
    (:mod:`mb_sim.urdf.scene`: the robot with them, what /robot_description then publishes).
    `own`: the robot's own source, read already."""
    robot = own or read_own_source(node, params)
    try:
        return scene_source(robot, list(params.objects), params.floating_base)
    except URDFError as err:
        raise StartupError(f"parameter objects: {err.element}: {err.problem}") from None


def scene_source(robot: RobotSource, objects: list[SceneObject], floating_base: bool) -> RobotSource:
    """The source of `robot` with `objects` (`robot` itself without any); URDFError naming the
    object that cannot be added."""
    if not objects:
        return robot
    text = compose_scene(robot.source, objects, floating_base)
    return RobotSource(robot.parameter, text, text, robot.topic)


def read_own_source(node, params: NodeParameters) -> RobotSource:
    """The robot's own source, without the objects (see :func:`read_robot_source`)."""
    text = node.get_parameter("robot_description").value
    topic = node.get_parameter("robot_description_topic").value.strip()
    if text.strip() and topic:
        raise StartupError("parameters robot_description and robot_description_topic: both are given; "
                           "set one of them")
    if text.strip():
        require_xml("robot_description", "the parameter", text)
        text = _expanded(node, params, "robot_description", text)
        return RobotSource("robot_description", text, text)
    if topic:
        resolved, text = _received_description(node, params, topic)
        return RobotSource("robot_description_topic", text, text, resolved)
    robot = node.get_parameter("urdf_file").value
    try:
        source = str(robot_path(robot))
        if is_xacro(source):
            text = _expanded(node, params, "urdf_file", source)
            return RobotSource("urdf_file", text, text)
        return RobotSource("urdf_file", source, Path(source).read_text())
    except (OSError, UnicodeDecodeError) as err:
        raise StartupError(f"parameter urdf_file: {err}") from None


def _expanded(node, params: NodeParameters, parameter: str, source: str) -> str:
    """The URDF text of `source` (a path or URDF text): xacro expanded with xacro_args, else as
    it is; xacro's warnings to the log."""
    if not is_xacro(source):
        if params.xacro_args:
            node.get_logger().warning(f"parameter xacro_args: ignored, {parameter} is not a xacro")
        return source
    try:
        with warnings_logged(node.get_logger()):
            return expand_xacro_bounded(source, params.xacro_args)
    except URDFError as err:
        raise StartupError(f"parameter {parameter}: {err}") from None


def _received_description(node, params: NodeParameters, topic: str) -> tuple[str, str]:
    """The resolved `topic` and the URDF text published on it (transient local, as
    robot_state_publisher does), waited for at most robot_description_timeout seconds; Ctrl-C
    ends the wait at once."""
    received: list[str] = []
    try:
        resolved = node.resolve_topic_name(topic)
        subscription = node.create_subscription(String, topic, lambda message: _on_description(
            node, resolved, message.data, received), LATCHED_QOS)
    except (NameValidationException, InvalidTopicNameException, _rclpy.RCLError) as err:
        raise StartupError(f"parameter robot_description_topic: {topic!r}: {rcl_problem(err)}") from None
    node.get_logger().info(f"waiting for {resolved} (std_msgs/String, transient local)")
    try:
        arrived = spin_until(node, lambda: bool(received), params.description_timeout)
        if not arrived and not interrupted():  # on a loaded machine discovery may lag: let the graph
            # show a publisher that delivers nothing before saying there is none
            arrived = spin_until(node, lambda: bool(received) or node.count_publishers(resolved) > 0,
                                 DISCOVERY_GRACE) and bool(received)
    except BaseException:
        node.destroy_subscription(subscription)
        raise
    if not arrived:  # kept otherwise: a later, different description is warned about
        node.destroy_subscription(subscription)
    if interrupted():
        raise KeyboardInterrupt
    if not arrived:
        raise StartupError(f"parameter robot_description_topic: nothing arrived on {resolved} "
                           f"within {params.description_timeout:g} s (robot_description_timeout); "
                           + _silent_publishers(node, resolved))
    require_xml("robot_description_topic", resolved, received[0])
    if uses_xacro(received[0]):
        raise StartupError(f"parameter robot_description_topic: {resolved} carries xacro "
                           "markup, not URDF: publish the expanded URDF (xacro FILE), or give the file "
                           "as urdf_file")
    return resolved, received[0]


def _on_description(node, topic: str, text: str, received: list[str]) -> None:
    """A message on robot_description_topic: the first is the robot; a different one later is
    ignored with a warning (the robot is built once, at start-up: it never changes silently)."""
    if not received:
        received.append(text)
    elif text != received[0]:
        node.get_logger().warning(
            f"parameter robot_description_topic: a different robot description arrived on {topic} "
            f"({len(text)} characters): ignored, the robot was built at start-up; restart the node to load it",
            throttle_duration_sec=WARNING_THROTTLE)


def _silent_publishers(node, topic: str) -> str:
    """Why the publishers on `topic` delivered nothing (another message type, volatile
    durability), or a hint when there is none."""
    for info in node.get_publishers_info_by_topic(topic):
        who = f"{info.node_namespace.rstrip('/')}/{info.node_name}"
        if info.topic_type != "std_msgs/msg/String":
            return f"its publisher {who} publishes {info.topic_type}, not std_msgs/msg/String"
        if info.qos_profile.durability != DurabilityPolicy.TRANSIENT_LOCAL:
            return (f"its publisher {who} is {info.qos_profile.durability.name.lower()}, which a transient local "
                    "subscription does not match: publish it transient local, as robot_state_publisher does")
    return "is robot_state_publisher (or another node) publishing it, transient local?"


def rcl_problem(err: Exception) -> str:
    """rcl's refusal of a name in one line, without its C source location."""
    return " ".join(str(err).split(", at ")[0].split())


def require_xml(parameter: str, where: str, text: str) -> None:
    """Robot description text must be XML: never read as a path (the loader reads a file for text
    not starting with '<'), so a stray string cannot make the node open a file."""
    if not text.lstrip("\ufeff \t\r\n").startswith("<"):
        shown = repr(text[:60]) + ("..." if len(text) > 60 else "")
        raise StartupError(f"parameter {parameter}: {where} holds {shown}, not URDF text (XML starting with '<'); "
                           "a path goes in urdf_file")


# -- loading -----------------------------------------------------------------------------------
def load_robot(node, params: NodeParameters, robot: RobotSource, scene: bool | None = None) -> Robot:
    """The robot model, loaded with ``strict``; a URDF that strict refuses but the loader would
    repair is blamed on ``strict`` (the error names the link), any other bad URDF on the source's
    parameter (a xacro file's by its name, though the loader read its expansion).  The repairs
    made are logged.  `scene`: the source is a composed scene (None: ``objects`` were given)."""
    try:
        with warnings_logged(node.get_logger(), skip=RepairWarning):  # repairs: listed below
            model = load_urdf(robot.source, **load_options(params, scene))
    except STARTUP_ERRORS as err:
        if isinstance(err, URDFError) and err.source == "<string>" and robot.parameter == "urdf_file":
            err = URDFError(str(robot_path(node.get_parameter("urdf_file").value)), err.element, err.problem)
        if params.strict and isinstance(err, URDFError) and _repairable(robot.source):
            raise StartupError(f"parameter strict: {err} (strict refuses what the loader would repair; "
                               "strict:=false loads it and logs the repair)") from None
        raise StartupError(f"parameter {robot.parameter}: {err}") from None
    _log_repairs(node.get_logger(), model, robot.parameter)
    return model


def _repairable(source: str) -> bool:
    """Whether the loader accepts `source` without ``strict`` (then strict refused a repair)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parse_urdf(source)
    except (URDFError, ValueError, OSError):
        return False
    return True


def _log_repairs(log, robot: Robot, parameter: str) -> None:
    """One warning line saying how many repairs the loader made, then one per repair."""
    repairs = robot.repairs
    if not repairs:
        return
    log.warning(f"robot '{robot.name}' ({parameter}): {len(repairs)} repair{'s' if len(repairs) > 1 else ''} "
                "made while loading the URDF (strict:=true refuses them instead):")
    for repair in repairs:
        log.warning(f"repair: {repair}")


def load_options(params: NodeParameters, scene: bool | None = None) -> dict:
    """load_urdf's keywords: ``strict``, ``ground``, ``wrench_links``, and ``floating_base`` unless the source is a
    composed scene (`scene`; None: ``objects`` were given), whose robot got its joint there."""
    scene = bool(params.objects) if scene is None else scene
    return {"strict": params.strict, "ground": params.ground, "floating_base": params.floating_base and not scene,
            "wrench_links": list(params.wrench_links)}


def simulator_options(params: NodeParameters, initial_positions: dict[str, float], scene: bool | None = None) -> dict:
    """Simulator keyword arguments from parameters: ``default_effort_limit``, the
    ``initial_positions`` given (a recording's replay assembles the model the same way), and how
    the URDF was loaded (``floating_base``, ``ground``, ``wrench_links``: a replay loads the recorded URDF so)."""
    load = load_options(params, scene)
    return {"default_effort_limit": params.default_effort_limit, "servo_frequency": params.servo_frequency,
            "servo_feed_forward": params.servo_feed_forward, "initial_positions": dict(initial_positions),
            "floating_base": load["floating_base"], "ground": params.ground, "wrench_links": load["wrench_links"]}


def build_options(params: NodeParameters, initial_positions: dict[str, float], scene: bool | None = None) -> dict:
    """The keywords the node builds its Simulator with (but ``progress``); its robot model has the
    wrench links already (``load_options``)."""
    options = simulator_options(params, initial_positions, scene)
    del options["wrench_links"]
    return {"dt": params.dt, "backend": BACKEND, **options}


def build_simulator(node, params: NodeParameters, robot: Robot, parameter: str,
                    initial_positions: dict[str, float], scene: bool | None = None) -> Simulator:
    """The simulator of `robot`, assembled from `initial_positions`; its warnings (cache, limits,
    assembly) to the log, its errors one line naming the parameter."""
    try:
        with warnings_logged(node.get_logger()):
            return Simulator(robot, progress=node.get_logger().info,
                             **build_options(params, initial_positions, scene))
    except AssemblyError as err:  # the model is assembled from initial_positions
        raise StartupError(f"parameter {'initial_positions' if initial_positions else parameter}: {err}") from None
    except STARTUP_ERRORS as err:
        raise StartupError(f"parameter {parameter}: {err}") from None


@contextmanager
def warnings_logged(log, skip: type[Warning] | tuple = ()) -> Iterator[None]:
    """Warnings raised inside (except `skip`) go to `log` as warnings, each message once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            kept = (str(w.message) for w in caught if not issubclass(w.category, skip))
            for message in dict.fromkeys(kept):
                log.warning(message)

"""Launch arguments a ROS user expects, turned into what a launch_ros ``Node`` needs (no launch,
no rclpy: testable without either).

The launch files in ``launch/`` declare the arguments of :data:`ARGUMENTS` and, in an
``OpaqueFunction``, hand ``context.launch_configurations`` (a dict of strings) to
:func:`simulation_node` and :func:`helper_node`; a bad value raises :class:`LaunchArgumentError`,
one line naming the argument, which ``ros2 launch`` prints before any process starts.

Node-parameter arguments default to "" (not given): the ``params_file``'s value applies, else the
node's default.  An argument given on the command line always wins over ``params_file``.
"""
from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from ament_index_python.packages import PackageNotFoundError, get_package_prefix

__all__ = ["ARGUMENTS", "LaunchArgumentError", "NodeLaunch", "declarations", "flag", "helper_node",
           "initial_positions", "namespaced_remappings", "parameter_files", "require_rviz", "rviz_node",
           "simulation_node"]

#: Name of the simulation node (launch files start it as ``mb_sim``).
SIMULATION_NODE = "mb_sim"
LOG_LEVELS = ("debug", "info", "warn", "warning", "error", "fatal")
TRUE, FALSE = ("true", "1"), ("false", "0")
NAMESPACE = re.compile(r"/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*")
JOINT_ASSIGNMENT = re.compile(r"(?P<name>[^\s:=]+):=(?P<value>\S+)")
#: How an argument's value is quoted in an error line: a few items and characters, never the whole
#: of a 10 MB string or of a YAML alias bomb (whose full repr would take hours and gigabytes).
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 2, 60, 60
_SHOWN.maxlist = _SHOWN.maxdict = _SHOWN.maxtuple = 4

#: name -> (default, description): the arguments every launch file offers unless it fixes the value.
ARGUMENTS: dict[str, tuple[str, str]] = {
    "namespace": ("", "Namespace of the nodes (r1: /r1/mb_sim, /r1/joint_states); /tf, /tf_static, /clock "
                      "and /diagnostics stay global. Default: none"),
    "use_sim_time": ("", "true/false: the controllers and RViz follow /clock (the simulation's time; the "
                         "simulation node publishes it and keeps wall time itself). Default: true"),
    "robot": ("", "URDF or xacro file: a name shipped in share/mb_sim/urdf or a path (node parameter urdf_file); "
                  "empty: params_file's urdf_file, else pendulum"),
    "urdf_file": ("", "Alias of robot; wins over robot when both are given"),
    "robot_description": ("", "URDF text of the robot; wins over robot_description_topic, urdf_file and robot"),
    "robot_description_topic": ("", "Topic to read the URDF from (std_msgs/String, transient local, as "
                                    "robot_state_publisher publishes it); wins over urdf_file and robot"),
    "xacro_args": ("", "Arguments of a .xacro robot, as on xacro's command line: \"a:=1 b:=2\""),
    "start_paused": ("", "true: start paused (~/pause with data: false, or ~/step, to go on). "
                         "Default: params_file's, else false"),
    "initial_positions": ("", "Initial joint positions [rad or m]: \"hinge:=0.5 elbow:=1\" or \"{hinge: 0.5}\" "
                              "(node parameters initial_positions.<joint>). Default: params_file's, else 0"),
    "publish_rate": ("", "Rate of /joint_states, /tf, /clock [Hz of sim time]. Default: params_file's, else 100"),
    "physics_dt": ("", "Physics step [s]. Default: params_file's, else 0.001"),
    "real_time_factor": ("", "Simulated seconds per wall-clock second; 0 runs as fast as possible. "
                             "Default: params_file's, else 1.0"),
    "lockstep": ("", "true: advance one publish period per command, wait otherwise. "
                     "Default: params_file's, else false"),
    "strict": ("", "true: refuse a URDF the loader would repair instead of loading it with the repairs logged. "
                   "Default: params_file's, else false"),
    "floating_base": ("", "true: join the root link to the world by a floating joint instead of fixing it. "
                          "Default: params_file's, else false"),
    "objects": ("", "Objects beside the robot, separated by ';': \"name=box shape=box size=0.1,0.1,0.1 "
                    "xyz=0.5,0,0.05; name=ball shape=sphere size=0.05 xyz=0.5,0.3,0.05\" (node parameter "
                    "objects; keys name shape size mass xyz rpy urdf fixed friction rgba touches). Default: "
                    "params_file's, else none"),
    "log_level": ("info", "Log level of the mb_sim nodes (--ros-args --log-level): debug, info, warn, error, fatal"),
    "params_file": ("", "YAML file with mb_sim_node parameters (its key mb_sim applies in any namespace); "
                        "arguments given here win over it"),
    "rviz": ("false", "true: also start RViz (needs the rviz2 package)"),
}
#: Arguments that set a node parameter of the same name: name -> kind.
NODE_PARAMETERS = {"start_paused": bool, "lockstep": bool, "strict": bool, "floating_base": bool,
                   "publish_rate": float, "physics_dt": float, "real_time_factor": float}


def shown(value: Any) -> str:
    """`value` quoted for an error line, cut short (see _SHOWN), at most 80 characters."""
    text = _SHOWN.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _cut(text: str) -> str:
    """`text` as it is (a joint's name), cut to 60 characters."""
    return text if len(text) <= 60 else text[:57] + "..."


class LaunchArgumentError(ValueError):
    """A launch argument's value is unusable; the message is one line naming the argument."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"launch argument {name}: {problem}")
        self.argument = name


@dataclass
class NodeLaunch:
    """What a launch_ros ``Node`` takes: namespace (None: the root), parameters (paths and dicts, in
    the order they apply), ros_arguments, remappings."""
    namespace: str | None = None
    parameters: list = field(default_factory=list)
    ros_arguments: list[str] = field(default_factory=list)
    remappings: list[tuple[str, str]] = field(default_factory=list)

    def options(self, executable: str, name: str, package: str = "mb_sim") -> dict[str, Any]:
        """The keyword arguments of launch_ros's ``Node`` for this node (output on the screen)."""
        options = {"package": package, "executable": executable, "name": name, "namespace": self.namespace,
                   "output": "screen", "parameters": self.parameters, "ros_arguments": self.ros_arguments}
        if self.remappings:
            options["remappings"] = self.remappings
        return options


def declarations(names: list[str] | tuple[str, ...], **defaults: Any) -> list[tuple[str, Any, str]]:
    """(name, default, description) of each argument in `names`, for DeclareLaunchArgument; a
    launch file's own defaults (`defaults`, e.g. robot="arm6", a params_file substitution) win."""
    return [(name, defaults.get(name, ARGUMENTS[name][0]), ARGUMENTS[name][1]) for name in names]


def require_rviz(configurations: Mapping[str, str]) -> bool:
    """Whether RViz is wanted (``rviz``); with rviz:=true and no rviz2 installed, refuse before any
    process has started (launch would otherwise start the processes listed before RViz, fail on its
    package, exit with status 1 and leave them running, orphaned)."""
    wanted = flag(configurations, "rviz")
    if wanted:
        try:
            get_package_prefix("rviz2")
        except PackageNotFoundError:
            raise LaunchArgumentError("rviz", "true but the package rviz2 is not installed: install it "
                                              "(ros-<distro>-rviz2) or pass rviz:=false") from None
    return wanted


# -- single values ------------------------------------------------------------------------------
def flag(configurations: Mapping[str, str], name: str, default: bool = False) -> bool:
    """A true/false argument ("" or absent: `default`), as launch's IfCondition reads it."""
    text = str(configurations.get(name, "")).strip().lower()
    if not text:
        return default
    if text in TRUE or text in FALSE:
        return text in TRUE
    raise LaunchArgumentError(name, f"{shown(configurations[name])} is not true or false")


def number(configurations: Mapping[str, str], name: str) -> float | None:
    """A finite number argument, or None when not given."""
    text = str(configurations.get(name, "")).strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise LaunchArgumentError(name, f"{shown(text)} is not a number")
    return value


def namespace(configurations: Mapping[str, str]) -> str | None:
    """The ``namespace`` argument without a trailing /, or None for the root."""
    text = str(configurations.get("namespace", "")).strip().rstrip("/")
    if not text:
        return None
    if not NAMESPACE.fullmatch(text):
        raise LaunchArgumentError("namespace", f"{shown(text)} is not a ROS namespace (names of letters, digits and _, "
                                               "not starting with a digit, separated by /)")
    return text


def log_level(configurations: Mapping[str, str]) -> list[str]:
    """``--log-level <level>`` for the node's ros_arguments."""
    text = str(configurations.get("log_level", "")).strip().lower()
    if not text:
        return []
    if text not in LOG_LEVELS:
        raise LaunchArgumentError("log_level", f"{shown(configurations['log_level'])} is not one of "
                                               f"{', '.join(LOG_LEVELS)}")
    return ["--log-level", text]


def initial_positions(text: str, name: str = "initial_positions") -> dict[str, float]:
    """``{"initial_positions.<joint>": value}`` from "hinge:=0.5 elbow:=1" or a YAML mapping
    "{hinge: 0.5}" (read with yaml.safe_load: no code runs); `name` is the argument's name."""
    text = text.strip()
    if not text:
        return {}
    pairs = _yaml_pairs(text, name) if text.startswith("{") else _assignment_pairs(text, name)
    positions: dict[str, float] = {}
    for joint, value in pairs:
        if not joint or any(c.isspace() for c in joint) or joint in positions:
            raise LaunchArgumentError(name, f"joint {shown(joint)} is {'given twice' if joint in positions else 'no name'}")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise LaunchArgumentError(name, f"joint {_cut(joint)}: {shown(value)} is not a number")
        try:
            position = float(value)
        except ValueError:
            position = math.nan
        if not math.isfinite(position):
            raise LaunchArgumentError(name, f"joint {_cut(joint)}: {shown(value)} is not a number")
        positions[joint] = position
    return {f"initial_positions.{joint}": value for joint, value in positions.items()}


def _assignment_pairs(text: str, name: str) -> list[tuple[str, str]]:
    pairs = []
    for token in text.split():
        match = JOINT_ASSIGNMENT.fullmatch(token)
        if match is None:
            raise LaunchArgumentError(name, f"{shown(token)} is not joint:=position (e.g. {name}:=\"hinge:=0.5 "
                                            f"elbow:=1\" or {name}:=\"{{hinge: 0.5}}\")")
        pairs.append((match["name"], match["value"]))
    return pairs


def _yaml_pairs(text: str, name: str) -> list[tuple[str, Any]]:
    mapping = _yaml(text, name)
    if not isinstance(mapping, dict):
        raise LaunchArgumentError(name, f"{shown(text)} is not a mapping joint: position")
    return [(str(joint), value) for joint, value in mapping.items()]


def _yaml(text: str, name: str) -> Any:
    """`text` read with yaml.safe_load (no code runs); malformed or nested past Python's recursion
    limit (PyYAML composes recursively): one line naming argument `name`."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise LaunchArgumentError(name, f"not a YAML mapping: {str(err).splitlines()[0]}") from None
    except RecursionError:
        raise LaunchArgumentError(name, "YAML nested too deeply to read") from None


def xacro_args(configurations: Mapping[str, str], name: str = "xacro_args") -> str | None:
    """The xacro arguments string as given ("a:=1 b:=2", values may be quoted), or None; checked
    by the node's own parser (:func:`mb_sim.urdf.xacro_expansion.parse_xacro_args`)."""
    from mb_sim.urdf.xacro_expansion import parse_xacro_args  # the URDF package: only when given

    text = str(configurations.get(name, "")).strip()
    if not text:
        return None
    try:
        parse_xacro_args(text)
    except ValueError as err:  # "xacro_args[ '<text>']: <problem>"
        raise LaunchArgumentError(name, str(err).partition(": ")[2] or str(err)) from None
    return text


# -- parameters files ------------------------------------------------------------------------------
def parameter_files(configurations: Mapping[str, str], node_name: str, node_namespace: str | None,
                    name: str = "params_file") -> list:
    """The parameters a params-file argument gives a node: the file's path, and when the node is
    namespaced, its root-only section (key ``node_name`` or ``/node_name``, which rcl applies only
    to the node at the root) as a dict after it, as nav2's RewrittenYaml does."""
    text = str(configurations.get(name, "")).strip()
    if not text:
        return []
    path = Path(text).expanduser()
    if not path.is_file():
        raise LaunchArgumentError(name, f"{'a directory, not a file' if path.is_dir() else 'no such file'}: {text}")
    try:
        content = yaml.safe_load(path.read_text())
    except OSError as err:
        raise LaunchArgumentError(name, f"cannot read {text}: {err.strerror}") from None
    except (UnicodeDecodeError, yaml.YAMLError) as err:
        raise LaunchArgumentError(name, f"{text} is not a YAML file: {' '.join(str(err).split())}") from None
    except RecursionError:
        raise LaunchArgumentError(name, f"{text}: YAML nested too deeply to read") from None
    if content is not None and not isinstance(content, dict):
        raise LaunchArgumentError(name, f"{text} is not a parameters file (node name: ros__parameters: ...)")
    parameters: list = [str(path)]
    if node_namespace:
        for key in (node_name, f"/{node_name}"):
            section = (content or {}).get(key)
            if isinstance(section, dict) and isinstance(section.get("ros__parameters"), dict):
                parameters.append(section["ros__parameters"])
    return parameters


# -- nodes --------------------------------------------------------------------------------------
def robot_source(configurations: Mapping[str, str]) -> dict[str, Any]:
    """The node parameters naming the robot: robot_description > robot_description_topic >
    urdf_file > robot (the first given wins; the others are cleared so that no params_file entry
    shadows it); {} when none is given (params_file's, else the node's default robot)."""
    description = str(configurations.get("robot_description", ""))
    topic = str(configurations.get("robot_description_topic", "")).strip()
    if description.strip() and topic:
        raise LaunchArgumentError("robot_description", "given together with robot_description_topic: give one")
    urdf_file = str(configurations.get("urdf_file", "")).strip() or str(configurations.get("robot", "")).strip()
    if description.strip():
        return {"robot_description": description, "robot_description_topic": ""}
    if topic:
        return {"robot_description_topic": topic, "robot_description": ""}
    if urdf_file:
        return {"urdf_file": urdf_file, "robot_description": "", "robot_description_topic": ""}
    return {}


def simulation_parameters(configurations: Mapping[str, str]) -> dict[str, Any]:
    """The node parameters the arguments given set (those not given are left out)."""
    overrides = robot_source(configurations)
    xacro = xacro_args(configurations)
    if xacro is not None:
        overrides["xacro_args"] = xacro
    for name, kind in NODE_PARAMETERS.items():
        if name in configurations:
            value = flag(configurations, name, None) if kind is bool else number(configurations, name)
            if value is not None:
                overrides[name] = value
    overrides.update(initial_positions(str(configurations.get("initial_positions", ""))))
    scene = objects(str(configurations.get("objects", "")))
    if scene:
        overrides["objects"] = scene
    return overrides


def objects(text: str) -> list[str]:
    """The ``objects`` argument's objects (``;``-separated), each checked as the node will read it
    (:func:`mb_sim.urdf.scene.parse_object`: a bad one stops the launch naming it)."""
    from mb_sim.urdf import URDFError
    from mb_sim.urdf.scene import parse_object

    found = [part.strip() for part in text.split(";") if part.strip()]
    for part in found:
        try:
            parse_object(part)
        except URDFError as err:
            raise LaunchArgumentError("objects", f"{err.element}: {err.problem}") from None
    return found


def simulation_node(configurations: Mapping[str, str], fixed: Mapping[str, Any] | None = None) -> NodeLaunch:
    """The simulation node's namespace, parameters (params_file, then the arguments given, then the
    launch file's `fixed` values) and ros_arguments."""
    node_namespace = namespace(configurations)
    parameters = parameter_files(configurations, SIMULATION_NODE, node_namespace)
    overrides = {**simulation_parameters(configurations), **(fixed or {})}
    if overrides:
        parameters.append(overrides)
    return NodeLaunch(node_namespace, parameters, log_level(configurations))


def helper_node(configurations: Mapping[str, str], node_name: str, params_file: str = "controller_params_file",
                overrides: Mapping[str, Any] | None = None) -> NodeLaunch:
    """A controller beside the simulation: same namespace and log level, its params file, then
    use_sim_time when given and the launch file's `overrides`."""
    node_namespace = namespace(configurations)
    parameters = parameter_files(configurations, node_name, node_namespace, params_file)
    given = {"use_sim_time": flag(configurations, "use_sim_time", True)} if configurations.get("use_sim_time") else {}
    if given or overrides:
        parameters.append({**given, **(overrides or {})})
    return NodeLaunch(node_namespace, parameters, log_level(configurations))


def rviz_node(configurations: Mapping[str, str], rviz_config: Any, topics: list[str] | tuple[str, ...] = ()
              ) -> dict[str, Any]:
    """The keyword arguments of launch_ros's ``Node`` for RViz with `rviz_config`: on sim time
    unless use_sim_time is false (TF is stamped with sim time, so RViz must look it up on /clock),
    the config's absolute `topics` remapped into the namespace."""
    options = {"package": "rviz2", "executable": "rviz2", "name": "rviz2", "output": "screen",
               "arguments": ["-d", rviz_config],
               "parameters": [{"use_sim_time": flag(configurations, "use_sim_time", True)}]}
    if topics:
        options["remappings"] = namespaced_remappings(configurations, topics)
    return options


def namespaced_remappings(configurations: Mapping[str, str], topics: list[str] | tuple[str, ...]
                          ) -> list[tuple[str, str]]:
    """RViz's remappings of its config's absolute `topics` into the namespace (none at the root)."""
    node_namespace = namespace(configurations)
    if node_namespace is None:
        return []
    prefix = "/" + node_namespace.strip("/")
    return [(topic, prefix + topic) for topic in topics]


# -- robots the launch files make their descriptions from ----------------------------------------
def example_robot_data(relative: str, argument: str) -> Path:
    """The file `relative` of example-robot-data, where mb_sim looks for package://example-robot-data
    (LaunchArgumentError naming `argument`, the one giving another file, if it is not installed)."""
    from mb_sim.urdf.meshes import mesh_search_paths

    for share in mesh_search_paths("example-robot-data", None):
        if (share / relative).is_file():
            return share / relative
    name = relative.rsplit("/", 1)[-1]
    raise LaunchArgumentError(argument, f"example-robot-data's {name} not found "
                                        f"(pip install example-robot-data, or give {argument}:=<path>)")


def position_hold(name: str, positions: Mapping[str, float]) -> str:
    """A topic-based ``<ros2_control>`` element giving each joint of `positions` a position
    interface whose ``initial_value`` is its position: the node's servos hold them from the start."""
    joints = "".join(f'<joint name="{joint}"><command_interface name="position"/><state_interface name="position">'
                     f'<param name="initial_value">{value!r}</param></state_interface></joint>'
                     for joint, value in positions.items())
    return (f'<ros2_control name="{name}" type="system"><hardware><plugin>joint_state_topic_hardware_interface/'
            f'JointStateTopicSystem</plugin></hardware>{joints}</ros2_control>')

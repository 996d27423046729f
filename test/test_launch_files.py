"""Launch files are valid Python declaring the documented arguments and referring only to package files
that exist and are installed; the RViz config shows the robot (launch_ros and RViz are not installable
here; where launch_ros is, the launch description is also built).  two_robots.launch.py is also built
with stand-ins for launch and launch_ros, so its nodes, namespaces and parameters are checked here."""
from __future__ import annotations

import ast
import fnmatch
import importlib.util
import re
import sys
import types

import pytest
import yaml

LAUNCH_ARGUMENTS = {
    "sim.launch.py": {"robot", "rviz", "real_time_factor", "strict", "floating_base", "params_file"},
    "demo.launch.py": {"robot", "rviz", "real_time_factor", "strict", "floating_base", "params_file",
                       "controller_params_file"},
    "diff_drive.launch.py": {"rviz", "real_time_factor", "strict", "params_file", "controller_params_file"},
    "two_robots.launch.py": {"robot1", "robot2", "rviz", "real_time_factor", "controller_params_file"},
    "cart_pole_lqr.launch.py": {"initial_angle", "rviz", "real_time_factor", "params_file", "controller_params_file"},
}
#: Package files each launch file refers to (under share/mb_sim once installed).
REFERENCED_FILES = {
    "sim.launch.py": {"config/mb_sim.yaml", "config/mb_sim.rviz"},
    "demo.launch.py": {"config/mb_sim.yaml", "config/demo_controller.yaml", "launch/sim.launch.py"},
    "diff_drive.launch.py": {"config/mb_sim.yaml", "config/diff_drive_controller.yaml", "config/diff_drive.rviz"},
    "two_robots.launch.py": {"config/demo_controller.yaml", "config/two_robots.rviz"},
    "cart_pole_lqr.launch.py": {"config/mb_sim.yaml", "config/lqr_controller.yaml", "config/mb_sim.rviz"},
}
FILE_NAME = re.compile(r"[\w.-]+\.(yaml|rviz|py|urdf)")


def _declared_arguments(source: str) -> set[str]:
    """Names given to DeclareLaunchArgument(...) calls in a launch file."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "DeclareLaunchArgument":
            names.add(ast.literal_eval(node.args[0]))
    return names


def _file_names(source: str) -> set[str]:
    """String literals of a source file that are file names."""
    return {node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and FILE_NAME.fullmatch(node.value)}


def _installed_patterns(repo) -> list[str]:
    """The glob patterns of setup.py's data_files: what lands in share/mb_sim."""
    tree = ast.parse((repo / "setup.py").read_text())
    return [ast.literal_eval(node.args[0]) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "glob"]


@pytest.mark.parametrize("name", sorted(LAUNCH_ARGUMENTS))
def test_launch_file_compiles_and_declares_arguments(repo, name):
    source = (repo / "launch" / name).read_text()
    compile(source, name, "exec")
    assert "def generate_launch_description" in source
    assert _declared_arguments(source) == LAUNCH_ARGUMENTS[name]
    docstring = ast.get_docstring(ast.parse(source))
    documented = set(re.findall(r"^  (\w+)  ", docstring, re.MULTILINE))  # "  <argument>  <what it does>"
    assert documented == LAUNCH_ARGUMENTS[name]


@pytest.mark.parametrize("name", sorted(REFERENCED_FILES))
def test_launch_file_refers_to_installed_package_files(repo, name):
    source = (repo / "launch" / name).read_text()
    referenced = REFERENCED_FILES[name]
    assert _file_names(source) == {path.rsplit("/", 1)[1] for path in referenced}
    assert "FindPackageShare(\"mb_sim\")" in source  # never a path relative to the working directory
    patterns = _installed_patterns(repo)
    for path in referenced:
        assert (repo / path).is_file(), path
        assert any(fnmatch.fnmatch(path, pattern) for pattern in patterns), f"{path} is not installed by setup.py"


def _node_parameter_dicts(source: str) -> list[ast.Dict]:
    """The dict literals in ``parameters=[...]`` of the Node(...) calls starting mb_sim_node."""
    dicts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Node":
            keywords = {k.arg: k.value for k in node.keywords}
            if ast.literal_eval(keywords["executable"]) == "mb_sim_node":
                dicts += [item for item in keywords["parameters"].elts if isinstance(item, ast.Dict)]
    return dicts


@pytest.mark.parametrize("name", ["sim.launch.py", "diff_drive.launch.py"])
def test_launch_files_forward_their_arguments_as_documented_node_parameters(repo, name):
    """Every parameter a launch file sets is one config/mb_sim.yaml documents; strict is passed as a bool."""
    documented = set(yaml.safe_load((repo / "config" / "mb_sim.yaml").read_text())["mb_sim"]["ros__parameters"])
    (parameters,) = _node_parameter_dicts((repo / "launch" / name).read_text())
    values = {ast.literal_eval(key): value for key, value in zip(parameters.keys, parameters.values)}
    assert set(values) <= documented, set(values) - documented
    assert ast.unparse(values["strict"]) == "ParameterValue(LaunchConfiguration('strict'), value_type=bool)"


def test_cart_pole_lqr_starts_the_cart_pole_tipped_and_the_controller_with_its_parameters(repo):
    source = (repo / "launch" / "cart_pole_lqr.launch.py").read_text()
    (parameters,) = _node_parameter_dicts(source)
    values = {ast.literal_eval(key): ast.unparse(value) for key, value in zip(parameters.keys, parameters.values)}
    assert values["urdf_file"] == "'cart_pole'"
    assert values["initial_positions.pole_joint"] == \
        "ParameterValue(LaunchConfiguration('initial_angle'), value_type=float)"
    assert "executable=\"mb_sim_lqr_controller\"" in source and (repo / "config" / "lqr_controller.yaml").is_file()
    # paused until the controller is up (it resumes the node): the pole fell in half the launches
    assert values["start_paused"] == "True"
    (controller,) = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
                     and getattr(node.func, "id", None) == "Node"
                     and any(k.arg == "executable" and ast.literal_eval(k.value) == "mb_sim_lqr_controller"
                             for k in node.keywords)]
    parameters = next(k.value for k in controller.keywords if k.arg == "parameters")
    overrides = [ast.literal_eval(item) for item in parameters.elts if isinstance(item, ast.Dict)]
    assert {"resume_simulation": True} in overrides, ast.unparse(parameters)
    joints = yaml.safe_load((repo / "config" / "lqr_controller.yaml").read_text())
    assert joints["mb_sim_lqr_controller"]["ros__parameters"]["inputs"] == ["cart_joint"]


def test_demo_forwards_every_argument_of_the_simulation_launch_file(repo):
    tree = ast.parse((repo / "launch" / "demo.launch.py").read_text())
    (forwarded,) = [ast.literal_eval(node.value) for node in tree.body
                    if isinstance(node, ast.Assign) and node.targets[0].id == "SIM_ARGUMENTS"]
    assert set(forwarded) == LAUNCH_ARGUMENTS["sim.launch.py"]


def test_rviz_config_shows_the_robot_from_its_description_topic_in_world(repo):
    config = yaml.safe_load((repo / "config" / "mb_sim.rviz").read_text())
    assert {panel["Class"] for panel in config["Panels"]} >= {"rviz_common/Displays", "rviz_common/Views"}
    manager = config["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "world"
    displays = {display["Class"]: display for display in manager["Displays"]}
    assert set(displays) == {"rviz_default_plugins/Grid", "rviz_default_plugins/RobotModel",
                             "rviz_default_plugins/TF", "rviz_default_plugins/MarkerArray"}
    assert displays["rviz_default_plugins/MarkerArray"]["Topic"]["Value"] == "/mb_sim/springs"  # the node's ~/springs
    assert all(display["Enabled"] for display in displays.values())
    robot = displays["rviz_default_plugins/RobotModel"]
    assert robot["Description Source"] == "Topic"
    assert robot["Description Topic"]["Value"] == "/robot_description"
    assert robot["Description Topic"]["Durability Policy"] == "Transient Local"  # as the node publishes it
    assert manager["Views"]["Current"]["Class"] == "rviz_default_plugins/Orbit"


def test_diff_drive_rviz_config_shows_both_odometries_in_odom(repo):
    config = yaml.safe_load((repo / "config" / "diff_drive.rviz").read_text())
    manager = config["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "odom"  # the node's world_frame in diff_drive.launch.py
    displays = manager["Displays"]
    assert all(display["Enabled"] for display in displays)
    robot = next(d for d in displays if d["Class"] == "rviz_default_plugins/RobotModel")
    assert robot["Description Topic"]["Value"] == "/robot_description"
    assert robot["Description Topic"]["Durability Policy"] == "Transient Local"
    odometry = {d["Topic"]["Value"] for d in displays if d["Class"] == "rviz_default_plugins/Odometry"}
    assert odometry == {"/odom", "/mb_sim_diff_drive_controller/odom"}  # ground truth and the controller's ~/odom
    assert {d["Class"] for d in displays} >= {"rviz_default_plugins/Grid", "rviz_default_plugins/TF"}


@pytest.mark.skipif(importlib.util.find_spec("launch_ros") is None, reason="launch_ros not installed")
@pytest.mark.parametrize("name", sorted(LAUNCH_ARGUMENTS))
def test_launch_description_builds(repo, name):
    spec = importlib.util.spec_from_file_location("launch_file", repo / "launch" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.generate_launch_description().entities


def _top_level_calls(source: str) -> list[str]:
    """Names of the calls listed in generate_launch_description's LaunchDescription([...]), in order."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "LaunchDescription":
            return [getattr(item.func, "id", None) for item in node.args[0].elts if isinstance(item, ast.Call)]
    raise AssertionError("no LaunchDescription([...])")


@pytest.mark.parametrize("name", ["sim.launch.py", "diff_drive.launch.py", "cart_pole_lqr.launch.py"])
def test_rviz_is_checked_before_any_process_starts(repo, name):
    """Launch would start the processes listed before a missing RViz, fail, and leave them running."""
    calls = _top_level_calls((repo / "launch" / name).read_text())
    first_process = min(calls.index(kind) for kind in ("Node", "IncludeLaunchDescription") if kind in calls)
    assert calls.index("OpaqueFunction") < first_process, calls


def test_demo_starts_its_controller_after_the_simulation_launch_file_checked_rviz(repo):
    calls = _top_level_calls((repo / "launch" / "demo.launch.py").read_text())
    assert calls.index("IncludeLaunchDescription") < calls.index("Node"), calls


@pytest.mark.skipif(importlib.util.find_spec("launch_ros") is None, reason="launch_ros not installed")
@pytest.mark.parametrize("name", ["sim.launch.py", "diff_drive.launch.py", "two_robots.launch.py",
                                  "cart_pole_lqr.launch.py"])
def test_rviz_true_without_rviz2_is_refused_with_a_hint(repo, name, monkeypatch):
    from ament_index_python.packages import PackageNotFoundError
    from launch import LaunchContext

    spec = importlib.util.spec_from_file_location("launch_file", repo / "launch" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def missing(package):
        raise PackageNotFoundError(package)

    monkeypatch.setattr(module, "get_package_prefix", missing)
    context = LaunchContext()
    context.launch_configurations["rviz"] = "false"
    assert module._require_rviz(context) == []
    context.launch_configurations["rviz"] = "true"
    with pytest.raises(RuntimeError, match="rviz:=false"):
        module._require_rviz(context)


# -- two_robots.launch.py: built with stand-ins for launch and launch_ros --------------------------
class _Recorded:
    """Stand-in for a launch/launch_ros class: records what it was constructed with."""

    def __init__(self, *args, **kwargs) -> None:
        self.args, self.kwargs = args, kwargs

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.args}"


class _StandInModule(types.ModuleType):
    """Any name imported from it is a _Recorded subclass of that name."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        cls = type(name, (_Recorded,), {})
        setattr(self, name, cls)
        return cls


def _built_with_stand_ins(repo, name: str, monkeypatch) -> list:
    """The entities of the launch file's LaunchDescription, built without launch installed."""
    for module in ("launch", "launch.actions", "launch.conditions", "launch.launch_description_sources",
                   "launch.substitutions", "launch_ros", "launch_ros.actions",
                   "launch_ros.parameter_descriptions", "launch_ros.substitutions"):
        monkeypatch.setitem(sys.modules, module, _StandInModule(module))
    spec = importlib.util.spec_from_file_location("launch_file_with_stand_ins", repo / "launch" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    assert type(description).__name__ == "LaunchDescription"
    (entities,) = description.args
    return entities


def _kind(entity) -> str:
    return type(entity).__name__


def _configuration(value) -> str:
    """The launch argument a ParameterValue(LaunchConfiguration(name), ...) or LaunchConfiguration reads."""
    if _kind(value) == "ParameterValue":
        value = value.args[0]
    assert _kind(value) == "LaunchConfiguration", value
    return value.args[0]


def _nodes(entities, executable: str) -> list:
    return [e for e in entities if _kind(e) == "Node" and e.kwargs["executable"] == executable]


@pytest.fixture
def two_robots(repo, monkeypatch) -> list:
    return _built_with_stand_ins(repo, "two_robots.launch.py", monkeypatch)


def test_two_robots_checks_rviz_before_any_process_starts(two_robots):
    kinds = [_kind(entity) for entity in two_robots]
    assert kinds.index("OpaqueFunction") < kinds.index("Node"), kinds
    assert all(_kind(entity) == "DeclareLaunchArgument" for entity in two_robots[:kinds.index("OpaqueFunction")])
    defaults = {e.args[0]: e.kwargs["default_value"] for e in two_robots if _kind(e) == "DeclareLaunchArgument"}
    assert (defaults["robot1"], defaults["robot2"], defaults["rviz"]) == ("arm6", "double_pendulum", "true")


def test_two_robots_simulates_each_robot_in_its_namespace_with_its_frames(repo, two_robots):
    documented = set(yaml.safe_load((repo / "config" / "mb_sim.yaml").read_text())["mb_sim"]["ros__parameters"])
    simulations = {}
    for node in _nodes(two_robots, "mb_sim_node"):
        assert node.kwargs["package"] == "mb_sim" and node.kwargs["name"] == "mb_sim"
        (parameters,) = node.kwargs["parameters"]
        assert set(parameters) <= documented, set(parameters) - documented
        simulations[node.kwargs["namespace"]] = parameters
    assert set(simulations) == {"robot1", "robot2"}
    for namespace, parameters in simulations.items():
        assert _configuration(parameters["urdf_file"]) == namespace  # robot1:=..., robot2:=...
        assert _configuration(parameters["real_time_factor"]) == "real_time_factor"
        assert parameters["frame_prefix"] == f"{namespace}/"
        assert parameters["world_frame"] == f"{namespace}/world"
    assert [simulations[ns]["publish_clock"] for ns in ("robot1", "robot2")] == [True, False]  # one /clock


def test_two_robots_runs_a_controller_beside_each_simulation(two_robots):
    controllers = _nodes(two_robots, "mb_sim_demo_controller")
    assert sorted(node.kwargs["namespace"] for node in controllers) == ["robot1", "robot2"]
    for node in controllers:
        assert node.kwargs["name"] == "mb_sim_demo_controller"  # the key of config/demo_controller.yaml
        (parameters,) = node.kwargs["parameters"]
        assert _configuration(parameters) == "controller_params_file"


def _option(arguments: list[str], flag: str) -> str:
    return arguments[arguments.index(flag) + 1]


def test_two_robots_places_the_world_frames_1_m_apart(two_robots):
    """static_transform_publisher's (tf2_ros, Kilted) named arguments, world -> robotN/world."""
    publishers = _nodes(two_robots, "static_transform_publisher")
    kilted_flags = {"--x", "--y", "--z", "--qx", "--qy", "--qz", "--qw", "--roll", "--pitch", "--yaw",
                    "--frame-id", "--child-frame-id"}
    positions = {}
    for node in publishers:
        assert node.kwargs["package"] == "tf2_ros"
        arguments = node.kwargs["arguments"]
        assert all(isinstance(a, str) for a in arguments) and set(arguments[::2]) <= kilted_flags, arguments
        assert _option(arguments, "--frame-id") == "world"
        positions[_option(arguments, "--child-frame-id")] = [float(_option(arguments, f"--{axis}"))
                                                             for axis in "xyz"]
    assert set(positions) == {"robot1/world", "robot2/world"}
    distance = sum((a - b) ** 2 for a, b in zip(positions["robot1/world"], positions["robot2/world"])) ** 0.5
    assert distance == pytest.approx(1.0)


def test_two_robots_rviz_is_optional_and_on_sim_time(two_robots):
    (rviz,) = _nodes(two_robots, "rviz2")
    assert _kind(rviz.kwargs["condition"]) == "IfCondition"
    assert _configuration(rviz.kwargs["condition"].args[0]) == "rviz"
    assert rviz.kwargs["arguments"][0] == "-d"
    assert rviz.kwargs["arguments"][1].args[0][-1] == "two_robots.rviz"
    assert rviz.kwargs["parameters"] == [{"use_sim_time": True}]


def test_two_robots_rviz_config_shows_both_robots_by_their_prefixed_frames(repo):
    """RViz's RobotModel looks links up as '<TF Prefix>/<link>': the prefix without the node's '/'."""
    manager = yaml.safe_load((repo / "config" / "two_robots.rviz").read_text())["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "world"
    displays = manager["Displays"]
    assert all(display["Enabled"] for display in displays)
    robots = {d["Description Topic"]["Value"]: d for d in displays if d["Class"] == "rviz_default_plugins/RobotModel"}
    assert set(robots) == {"/robot1/robot_description", "/robot2/robot_description"}
    for topic, display in robots.items():
        assert display["Description Source"] == "Topic"
        assert display["Description Topic"]["Durability Policy"] == "Transient Local"
        assert display["TF Prefix"] == topic.split("/")[1]
    assert {d["Class"] for d in displays} >= {"rviz_default_plugins/Grid", "rviz_default_plugins/TF"}


@pytest.mark.parametrize("namespace", ["", "/robot1"])
def test_demo_controller_gains_apply_in_any_namespace(repo, namespace):
    """A params file's plain node-name key matches only the node at the root: the controller's
    per-joint gains must reach /robot1/mb_sim_demo_controller too (arm6's, and the defaults for
    the double pendulum's joints)."""
    import rclpy

    from mb_sim.ros.controller import DemoController, Gains

    params = yaml.safe_load((repo / "config" / "demo_controller.yaml").read_text())
    (key,) = params
    gains = params[key]["ros__parameters"]["gains"]
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        remap = ["-r", f"__ns:={namespace}"] if namespace else []
        params_file = str(repo / "config" / "demo_controller.yaml")
        node = DemoController(context=context, use_global_arguments=False,
                              cli_args=["--ros-args", *remap, "--params-file", params_file])
        try:
            assert node.get_fully_qualified_name() == f"{namespace}/mb_sim_demo_controller"
            assert node._gains_of("wrist_3_joint") == Gains(**gains["wrist_3_joint"])
            assert node._gains_of("elbow") == Gains(30.0, 3.0)  # double_pendulum: the common kp, kd
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown(context=context)

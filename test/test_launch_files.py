"""Launch files are valid Python declaring the documented arguments and referring only to package files
that exist and are installed; the RViz config shows the robot (launch_ros and RViz are not installable
here; where launch_ros is, the launch description is also built)."""
from __future__ import annotations

import ast
import fnmatch
import importlib.util
import re

import pytest
import yaml

LAUNCH_ARGUMENTS = {
    "sim.launch.py": {"robot", "rviz", "real_time_factor", "strict", "params_file"},
    "demo.launch.py": {"robot", "rviz", "real_time_factor", "strict", "params_file", "controller_params_file"},
    "diff_drive.launch.py": {"rviz", "real_time_factor", "strict", "params_file", "controller_params_file"},
}
#: Package files each launch file refers to (under share/mb_sim once installed).
REFERENCED_FILES = {
    "sim.launch.py": {"config/mb_sim.yaml", "config/mb_sim.rviz"},
    "demo.launch.py": {"config/mb_sim.yaml", "config/demo_controller.yaml", "launch/sim.launch.py"},
    "diff_drive.launch.py": {"config/mb_sim.yaml", "config/diff_drive_controller.yaml", "config/diff_drive.rviz"},
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


@pytest.mark.parametrize("name", ["sim.launch.py", "diff_drive.launch.py"])
def test_rviz_is_checked_before_any_process_starts(repo, name):
    """Launch would start the processes listed before a missing RViz, fail, and leave them running."""
    calls = _top_level_calls((repo / "launch" / name).read_text())
    first_process = min(calls.index(kind) for kind in ("Node", "IncludeLaunchDescription") if kind in calls)
    assert calls.index("OpaqueFunction") < first_process, calls


def test_demo_starts_its_controller_after_the_simulation_launch_file_checked_rviz(repo):
    calls = _top_level_calls((repo / "launch" / "demo.launch.py").read_text())
    assert calls.index("IncludeLaunchDescription") < calls.index("Node"), calls


@pytest.mark.skipif(importlib.util.find_spec("launch_ros") is None, reason="launch_ros not installed")
@pytest.mark.parametrize("name", ["sim.launch.py", "diff_drive.launch.py"])
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

"""Launch files are valid Python declaring the documented arguments and referring only to package files
that exist and are installed; the RViz config shows the robot (launch_ros and RViz are not installable
here; where launch_ros is, the launch description is also built).  Every launch file is also built
with stand-ins for launch and launch_ros and its OpaqueFunctions run on a stand-in context, so the
nodes each starts, their namespaces, parameters and ros_arguments are checked here."""
from __future__ import annotations

import ast
import fnmatch
import importlib.util
import re
import sys
import types

import pytest
import yaml

#: What a ROS user expects of every launch file (issue 25), unless the file fixes the value (and
#: its docstring says so).
COMMON = {"namespace", "use_sim_time", "start_paused", "publish_rate", "physics_dt", "real_time_factor", "lockstep",
          "strict", "log_level", "params_file", "rviz"}
ROBOT = {"robot", "urdf_file", "robot_description", "robot_description_topic", "xacro_args", "initial_positions",
         "floating_base"}
LAUNCH_ARGUMENTS = {
    "sim.launch.py": COMMON | ROBOT | {"objects"},
    "demo.launch.py": COMMON | ROBOT | {"controller_params_file", "objects"},
    "diff_drive.launch.py": COMMON | {"robot", "initial_positions", "controller_params_file"},
    "two_robots.launch.py": COMMON - {"namespace"} | {"robot1", "robot2", "robot1_xacro_args", "robot2_xacro_args",
                                                     "robot1_initial_positions", "robot2_initial_positions",
                                                     "controller_params_file"},
    "cart_pole_lqr.launch.py": COMMON | {"initial_angle", "initial_positions", "controller_params_file"},
    "ros2_control.launch.py": COMMON | ROBOT | {"controllers_file", "controllers"},
    "quadruped.launch.py": COMMON | {"urdf", "height"},
    "pick_and_place.launch.py": COMMON | {"urdf"},
}
#: What each launch file fixes instead of offering an argument: said in its docstring.
FIXED_IN_DOCSTRING = {
    "diff_drive.launch.py": ("urdf_file", "robot_description", "xacro_args", "world_frame odom"),
    "two_robots.launch.py": ("namespaces robot1 and robot2", "robot_description"),
    "cart_pole_lqr.launch.py": ("robot", "urdf_file", "robot_description", "xacro_args", "start_paused"),
    "pick_and_place.launch.py": ("robot_description", "the objects", "servo_feed_forward false"),
}
#: Package files each launch file refers to (under share/mb_sim once installed).
REFERENCED_FILES = {
    "sim.launch.py": {"config/mb_sim.yaml", "config/mb_sim.rviz"},
    "demo.launch.py": {"config/mb_sim.yaml", "config/demo_controller.yaml", "launch/sim.launch.py"},
    "diff_drive.launch.py": {"config/mb_sim.yaml", "config/diff_drive_controller.yaml", "config/diff_drive.rviz"},
    "two_robots.launch.py": {"config/mb_sim.yaml", "config/demo_controller.yaml", "config/two_robots.rviz"},
    "cart_pole_lqr.launch.py": {"config/mb_sim.yaml", "config/lqr_controller.yaml", "config/mb_sim.rviz"},
    "ros2_control.launch.py": {"config/mb_sim.yaml", "config/arm6_ros2_control.yaml", "config/mb_sim.rviz"},
    "quadruped.launch.py": {"config/mb_sim.yaml", "config/mb_sim.rviz"},
    "pick_and_place.launch.py": {"config/mb_sim.yaml", "config/mb_sim.rviz"},
}
FILE_NAME = re.compile(r"[\w.-]+\.(yaml|rviz|py|urdf)")


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
def test_launch_file_compiles_and_declares_arguments(repo, name, monkeypatch):
    source = (repo / "launch" / name).read_text()
    compile(source, name, "exec")
    assert "def generate_launch_description" in source
    entities = _built_with_stand_ins(repo, name, monkeypatch)
    declared = [e.args[0] for e in entities if _kind(e) == "DeclareLaunchArgument"]
    assert sorted(declared) == sorted(LAUNCH_ARGUMENTS[name])  # each once
    docstring = ast.get_docstring(ast.parse(source))
    documented = set(re.findall(r"^  (\w+)  ", docstring, re.MULTILINE))  # "  <argument>  <what it does>"
    assert documented == LAUNCH_ARGUMENTS[name]
    for fixed in FIXED_IN_DOCSTRING.get(name, ()):
        assert fixed in docstring[:docstring.index("Arguments")], (name, fixed)


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
    markers = {d["Topic"]["Value"] for d in manager["Displays"] if d["Class"] == "rviz_default_plugins/MarkerArray"}
    assert markers == {"/mb_sim/springs", "/mb_sim/contact_markers"}  # the node's ~/springs and ~/contact_markers
    assert all(display["Enabled"] for display in manager["Displays"])
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


# -- every launch file: built with stand-ins for launch and launch_ros, its OpaqueFunctions run ------
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
        if not isinstance(sys.modules.get(module), _StandInModule):
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


def _path(value, repo) -> str:
    """A PathJoinSubstitution([FindPackageShare("mb_sim"), ...]) stand-in as the source tree's path
    (share/mb_sim holds config/ and launch/ as the repository does)."""
    if isinstance(value, str):
        return value
    if _kind(value) == "FindPackageShare":
        assert value.args == ("mb_sim",)
        return str(repo)
    assert _kind(value) == "PathJoinSubstitution", value
    return "/".join(_path(part, repo) for part in value.args[0])


def _launched(repo, name: str, monkeypatch, **given: str) -> list:
    """The Node stand-ins `ros2 launch mb_sim <name> <given>` would start: the arguments'
    defaults filled in as DeclareLaunchArgument does, each OpaqueFunction run on a context
    holding them, an included launch file launched with the arguments passed to it."""
    entities = _built_with_stand_ins(repo, name, monkeypatch)
    configurations = dict(given)
    for entity in entities:
        if _kind(entity) == "DeclareLaunchArgument" and entity.args[0] not in given:
            configurations[entity.args[0]] = _path(entity.kwargs["default_value"], repo)
    context = types.SimpleNamespace(launch_configurations=configurations)
    nodes = []
    for entity in entities:
        if _kind(entity) == "OpaqueFunction":
            nodes += entity.kwargs["function"](context, *entity.kwargs.get("args", ()))
        elif _kind(entity) == "IncludeLaunchDescription":
            (source,) = entity.args
            included = _path(source.args[0], repo).rsplit("/", 1)[1]
            passed = {key: configurations[value.args[0]] for key, value in entity.kwargs["launch_arguments"]}
            nodes += _launched(repo, included, monkeypatch, **passed)
        elif _kind(entity) == "Node":
            nodes.append(entity)
    return nodes


def _nodes(entities, executable: str) -> list:
    return [e for e in entities if _kind(e) == "Node" and e.kwargs["executable"] == executable]


def _node(nodes, executable: str):
    (node,) = _nodes(nodes, executable)
    return node


def _overrides(node) -> dict:
    """The parameters a Node gets from the launch file itself: its last dict (after the files)."""
    dicts = [p for p in node.kwargs["parameters"] if isinstance(p, dict)]
    return dicts[-1] if dicts else {}


#: The controller each launch file starts beside the simulation (none: sim.launch.py).
CONTROLLERS = {"demo.launch.py": "mb_sim_demo_controller", "diff_drive.launch.py": "mb_sim_diff_drive_controller",
               "cart_pole_lqr.launch.py": "mb_sim_lqr_controller", "two_robots.launch.py": "mb_sim_demo_controller",
               "pick_and_place.launch.py": "mb_sim_pick_and_place"}
#: A joint of each launch file's robot (initial_positions).
JOINTS = {"sim.launch.py": "hinge", "demo.launch.py": "elbow_joint", "diff_drive.launch.py": "left_wheel_joint",
          "cart_pole_lqr.launch.py": "cart_joint", "ros2_control.launch.py": "elbow_joint"}
#: Node parameters given as launch arguments: argument -> (value given, parameter value).
GIVEN = {"start_paused": ("true", True), "publish_rate": ("50", 50.0), "physics_dt": ("0.002", 0.002),
         "real_time_factor": ("2", 2.0), "lockstep": ("true", True), "strict": ("true", True),
         "floating_base": ("true", True)}


def _undocumented(parameters, repo) -> set[str]:
    """Names of `parameters` config/mb_sim.yaml does not document (initial_positions.<joint> it
    documents in a comment: it has no default entry; a parameter whose default depends on the
    robot, such as servo_feed_forward, is a commented-out key)."""
    text = (repo / "config" / "mb_sim.yaml").read_text()
    documented = set(yaml.safe_load(text)["mb_sim"]["ros__parameters"])
    documented |= set(re.findall(r"^ {4}# ([a-z_]+): \S+$", text, re.MULTILINE))
    return {name for name in parameters if name not in documented and not name.startswith("initial_positions.")}


@pytest.mark.parametrize("name", sorted(LAUNCH_ARGUMENTS))
def test_without_arguments_the_params_file_decides(repo, name, monkeypatch):
    """An argument not given sets nothing: what the params file says applies (the launch file's
    own choices, such as diff_drive's robot, excepted)."""
    nodes = _launched(repo, name, monkeypatch, rviz="false")
    for simulation in _nodes(nodes, "mb_sim_node"):
        assert simulation.kwargs["parameters"][0] == str(repo / "config" / "mb_sim.yaml")
        overrides = _overrides(simulation)
        assert not _undocumented(overrides, repo), _undocumented(overrides, repo)
        fixed = {"start_paused"} if name == "cart_pole_lqr.launch.py" else set()  # until the controller is up
        assert not set(overrides) & {"publish_rate", "physics_dt", "real_time_factor", "start_paused", "lockstep",
                                     "strict", "floating_base"} - fixed, overrides
        assert simulation.kwargs["ros_arguments"] == ["--log-level", "info"]
    if name == "sim.launch.py":
        assert _node(nodes, "mb_sim_node").kwargs["parameters"] == [str(repo / "config" / "mb_sim.yaml")]


@pytest.mark.parametrize("name", sorted(LAUNCH_ARGUMENTS))
def test_each_argument_given_reaches_the_nodes(repo, name, monkeypatch):
    """namespace -> the nodes' namespace; node-parameter arguments -> parameters after the params
    file; log_level -> ros_arguments; use_sim_time -> the controllers and RViz."""
    declared = LAUNCH_ARGUMENTS[name]
    given = {argument: text for argument, (text, _) in GIVEN.items() if argument in declared}
    if "namespace" in declared:
        given["namespace"] = "r1"
    if name in JOINTS:
        given["initial_positions"] = f"{JOINTS[name]}:=0.5"
    nodes = _launched(repo, name, monkeypatch, rviz="false", log_level="debug", use_sim_time="false", **given)
    simulations = _nodes(nodes, "mb_sim_node")
    assert simulations
    for simulation in simulations:
        overrides = _overrides(simulation)
        for argument, (_, value) in GIVEN.items():
            if argument in declared and not (name == "cart_pole_lqr.launch.py" and argument == "start_paused"):
                assert overrides[argument] == value, argument
        if name in JOINTS:
            assert overrides[f"initial_positions.{JOINTS[name]}"] == 0.5
        assert simulation.kwargs["ros_arguments"] == ["--log-level", "debug"]
        if "namespace" in declared:
            assert simulation.kwargs["namespace"] == "r1"
        assert "use_sim_time" not in overrides  # the simulation publishes /clock: it keeps wall time
    controllers = _nodes(nodes, CONTROLLERS.get(name, "none"))
    assert len(controllers) == len(simulations) if name in CONTROLLERS else not controllers
    for controller in controllers:
        assert _overrides(controller)["use_sim_time"] is False
        assert controller.kwargs["ros_arguments"] == ["--log-level", "debug"]
        if "namespace" in declared:
            assert controller.kwargs["namespace"] == "r1"


@pytest.mark.parametrize("name", sorted(LAUNCH_ARGUMENTS))
def test_a_bad_argument_stops_the_launch_before_any_process_with_one_line(repo, name, monkeypatch):
    from mb_sim.launch_arguments import LaunchArgumentError

    with pytest.raises(LaunchArgumentError, match="^launch argument publish_rate: 'fast' is not a number$"):
        _launched(repo, name, monkeypatch, rviz="false", publish_rate="fast")


@pytest.mark.parametrize(("arguments", "expected"), [
    ({}, {}),
    ({"robot": "arm6"}, {"urdf_file": "arm6", "robot_description": "", "robot_description_topic": ""}),
    ({"urdf_file": "arm6"}, {"urdf_file": "arm6", "robot_description": "", "robot_description_topic": ""}),
    ({"robot_description": "<robot name='r'/>"}, {"robot_description": "<robot name='r'/>",
                                                  "robot_description_topic": ""}),
    ({"robot_description_topic": "/robot_description"}, {"robot_description_topic": "/robot_description",
                                                         "robot_description": ""}),
    ({"robot": "my.urdf.xacro", "xacro_args": "prefix:=left_"},
     {"urdf_file": "my.urdf.xacro", "robot_description": "", "robot_description_topic": "",
      "xacro_args": "prefix:=left_"}),
], ids=["params file's", "robot", "urdf_file", "robot_description", "robot_description_topic", "xacro"])
def test_sim_passes_the_robot_source_given(repo, monkeypatch, arguments, expected):
    simulation = _node(_launched(repo, "sim.launch.py", monkeypatch, **arguments), "mb_sim_node")
    assert _overrides(simulation) == expected


def test_demo_passes_its_robot_and_the_arguments_to_the_simulation_launch_file(repo, monkeypatch):
    nodes = _launched(repo, "demo.launch.py", monkeypatch, rviz="false", namespace="r1", start_paused="true")
    simulation = _node(nodes, "mb_sim_node")
    assert _overrides(simulation)["urdf_file"] == "arm6" and _overrides(simulation)["start_paused"] is True
    assert simulation.kwargs["namespace"] == _node(nodes, "mb_sim_demo_controller").kwargs["namespace"] == "r1"
    nodes = _launched(repo, "demo.launch.py", monkeypatch, rviz="false", robot="double_pendulum")
    assert _overrides(_node(nodes, "mb_sim_node"))["urdf_file"] == "double_pendulum"


def test_in_a_namespace_the_params_files_still_apply(repo, monkeypatch):
    """rcl applies a key `mb_sim` only to /mb_sim: namespaced, its section is passed again."""
    nodes = _launched(repo, "diff_drive.launch.py", monkeypatch, rviz="false", namespace="r1")
    simulation, controller = _node(nodes, "mb_sim_node"), _node(nodes, "mb_sim_diff_drive_controller")
    mb_sim = yaml.safe_load((repo / "config" / "mb_sim.yaml").read_text())["mb_sim"]["ros__parameters"]
    assert simulation.kwargs["parameters"][:2] == [str(repo / "config" / "mb_sim.yaml"), mb_sim]
    drive = yaml.safe_load((repo / "config" / "diff_drive_controller.yaml").read_text())
    assert controller.kwargs["parameters"] == [str(repo / "config" / "diff_drive_controller.yaml"),
                                               drive["mb_sim_diff_drive_controller"]["ros__parameters"]]


@pytest.mark.parametrize(("name", "fixed"), [
    ("diff_drive.launch.py", {"world_frame": "odom"}),  # (its robot is an argument: robot:=wheeled_base)
    ("cart_pole_lqr.launch.py", {"urdf_file": "cart_pole", "start_paused": True}),
])
def test_what_a_launch_file_fixes_wins(repo, monkeypatch, name, fixed):
    overrides = _overrides(_node(_launched(repo, name, monkeypatch, rviz="false", robot="arm6", urdf_file="arm6",
                                           start_paused="false"), "mb_sim_node"))
    assert {key: overrides[key] for key in fixed} == fixed


@pytest.mark.parametrize(("given", "pole", "resume"), [({}, 0.1, True), ({"initial_angle": "0.2"}, 0.2, True),
                                                       ({"start_paused": "true"}, 0.1, False)])
def test_cart_pole_lqr_starts_the_cart_pole_tipped_and_paused_until_the_controller_resumes_it(
        repo, monkeypatch, given, pole, resume):
    """Paused until the controller is up (it resumes the node): the pole fell in half the launches;
    start_paused:=true tells the controller not to resume it."""
    nodes = _launched(repo, "cart_pole_lqr.launch.py", monkeypatch, rviz="false", **given)
    overrides = _overrides(_node(nodes, "mb_sim_node"))
    assert (overrides["urdf_file"], overrides["start_paused"]) == ("cart_pole", True)
    assert overrides["initial_positions.pole_joint"] == pole
    controller = _node(nodes, "mb_sim_lqr_controller")
    assert controller.kwargs["parameters"][0] == str(repo / "config" / "lqr_controller.yaml")
    assert _overrides(controller) == {"resume_simulation": resume}
    joints = yaml.safe_load((repo / "config" / "lqr_controller.yaml").read_text())
    assert joints["mb_sim_lqr_controller"]["ros__parameters"]["inputs"] == ["cart_joint"]
    from mb_sim.launch_arguments import LaunchArgumentError

    with pytest.raises(LaunchArgumentError, match="initial_positions: pole_joint is set by initial_angle"):
        _launched(repo, "cart_pole_lqr.launch.py", monkeypatch, rviz="false", initial_positions="pole_joint:=1")


@pytest.mark.parametrize(("name", "config"), [("sim.launch.py", "mb_sim.rviz"), ("demo.launch.py", "mb_sim.rviz"),
                                              ("diff_drive.launch.py", "diff_drive.rviz"),
                                              ("cart_pole_lqr.launch.py", "mb_sim.rviz")])
def test_rviz_follows_the_namespace_and_sim_time(repo, monkeypatch, name, config):
    """Every absolute topic of the RViz config (but the global /tf, /tf_static) is remapped into
    the namespace."""
    import mb_sim.launch_arguments

    monkeypatch.setattr(mb_sim.launch_arguments, "get_package_prefix", lambda package: "/opt/ros/kilted")
    rviz = _node(_launched(repo, name, monkeypatch, rviz="true", namespace="r1", use_sim_time="false"), "rviz2")
    assert rviz.kwargs["arguments"][0] == "-d" and _path(rviz.kwargs["arguments"][1], repo).endswith(config)
    assert rviz.kwargs["parameters"] == [{"use_sim_time": False}]
    text = (repo / "config" / config).read_text()
    topics = set(re.findall(r"^\s+Value: (/[\w/]+)$", text, re.MULTILINE)) - {"/tf", "/tf_static"}
    assert topics and dict(rviz.kwargs["remappings"]) == {topic: f"/r1{topic}" for topic in topics}
    rviz = _node(_launched(repo, name, monkeypatch, rviz="true"), "rviz2")
    assert rviz.kwargs["remappings"] == [] and rviz.kwargs["parameters"] == [{"use_sim_time": True}]


@pytest.mark.parametrize("name", sorted(LAUNCH_ARGUMENTS))
def test_rviz_true_without_rviz2_is_refused_before_any_process_starts(repo, name, monkeypatch):
    """Launch would start the processes listed before a missing RViz, fail, and leave them
    running: the check comes first, in the function that makes the processes."""
    import mb_sim.launch_arguments
    from ament_index_python.packages import PackageNotFoundError
    from mb_sim.launch_arguments import LaunchArgumentError

    def missing(package):
        raise PackageNotFoundError(package)

    monkeypatch.setattr(mb_sim.launch_arguments, "get_package_prefix", missing)
    entities = _built_with_stand_ins(repo, name, monkeypatch)
    kinds = [_kind(entity) for entity in entities]
    assert "Node" not in kinds  # every process comes from an OpaqueFunction (or the included file's)
    with pytest.raises(LaunchArgumentError, match="rviz: true but the package rviz2 is not installed: .*rviz:=false"):
        _launched(repo, name, monkeypatch, rviz="true")


def test_demo_starts_its_controller_after_the_simulation_launch_file_checked_its_arguments(repo, monkeypatch):
    kinds = [_kind(entity) for entity in _built_with_stand_ins(repo, "demo.launch.py", monkeypatch)]
    assert kinds.index("IncludeLaunchDescription") < kinds.index("OpaqueFunction"), kinds


@pytest.fixture
def two_robots(repo, monkeypatch) -> list:
    return _launched(repo, "two_robots.launch.py", monkeypatch, rviz="true")


@pytest.fixture(autouse=True)
def _rviz_installed_for_two_robots(request, monkeypatch):
    """The two_robots fixture launches RViz: as if rviz2 were installed."""
    if "two_robots" in request.fixturenames:
        import mb_sim.launch_arguments

        monkeypatch.setattr(mb_sim.launch_arguments, "get_package_prefix", lambda package: "/opt/ros/kilted")


def test_two_robots_defaults(repo, monkeypatch):
    entities = _built_with_stand_ins(repo, "two_robots.launch.py", monkeypatch)
    defaults = {e.args[0]: e.kwargs["default_value"] for e in entities if _kind(e) == "DeclareLaunchArgument"}
    assert (defaults["robot1"], defaults["robot2"], defaults["rviz"]) == ("arm6", "double_pendulum", "true")


def test_two_robots_simulates_each_robot_in_its_namespace_with_its_frames(repo, two_robots):
    simulations = {}
    for node in _nodes(two_robots, "mb_sim_node"):
        assert node.kwargs["package"] == "mb_sim" and node.kwargs["name"] == "mb_sim"
        parameters = _overrides(node)
        assert not _undocumented(parameters, repo), _undocumented(parameters, repo)
        simulations[node.kwargs["namespace"]] = parameters
    assert set(simulations) == {"robot1", "robot2"}
    assert simulations["robot1"]["urdf_file"] == "arm6" and simulations["robot2"]["urdf_file"] == "double_pendulum"
    for namespace, parameters in simulations.items():
        assert parameters["frame_prefix"] == f"{namespace}/"
        assert parameters["world_frame"] == f"{namespace}/world"
    assert [simulations[ns]["publish_clock"] for ns in ("robot1", "robot2")] == [True, False]  # one /clock


def test_two_robots_gives_each_robot_its_own_urdf_xacro_args_and_initial_positions(repo, monkeypatch):
    from mb_sim.launch_arguments import LaunchArgumentError

    nodes = _launched(repo, "two_robots.launch.py", monkeypatch, rviz="false", robot2="my.urdf.xacro",
                      robot2_xacro_args="prefix:=b_", robot1_initial_positions="elbow_joint:=1",
                      robot2_initial_positions="{elbow: -1}")
    simulations = {node.kwargs["namespace"]: _overrides(node) for node in _nodes(nodes, "mb_sim_node")}
    assert simulations["robot1"]["initial_positions.elbow_joint"] == 1.0
    assert "initial_positions.elbow" not in simulations["robot1"] and "xacro_args" not in simulations["robot1"]
    assert simulations["robot2"]["initial_positions.elbow"] == -1.0
    assert (simulations["robot2"]["urdf_file"], simulations["robot2"]["xacro_args"]) == ("my.urdf.xacro", "prefix:=b_")
    with pytest.raises(LaunchArgumentError, match="^launch argument robot2_initial_positions: 'elbow' is not"):
        _launched(repo, "two_robots.launch.py", monkeypatch, rviz="false", robot2_initial_positions="elbow")


def test_two_robots_runs_a_controller_beside_each_simulation(repo, two_robots):
    controllers = _nodes(two_robots, "mb_sim_demo_controller")
    assert sorted(node.kwargs["namespace"] for node in controllers) == ["robot1", "robot2"]
    for node in controllers:
        assert node.kwargs["name"] == "mb_sim_demo_controller"  # the key of config/demo_controller.yaml
        assert node.kwargs["parameters"] == [str(repo / "config" / "demo_controller.yaml")]


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


def test_two_robots_rviz_is_optional_and_on_sim_time(repo, two_robots, monkeypatch):
    (rviz,) = _nodes(two_robots, "rviz2")
    assert rviz.kwargs["arguments"][0] == "-d"
    assert _path(rviz.kwargs["arguments"][1], repo).endswith("/config/two_robots.rviz")
    assert rviz.kwargs["parameters"] == [{"use_sim_time": True}]
    assert not _nodes(_launched(repo, "two_robots.launch.py", monkeypatch, rviz="false"), "rviz2")


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


# -- ros2_control.launch.py ----------------------------------------------------------------------
def test_ros2_control_starts_the_controller_manager_on_the_simulations_hardware(repo, monkeypatch):
    """With controller_manager installed: ros2_control_node (the URDF from mb_sim_node's
    robot_description topic, no robot_state_publisher) and a spawner per controller of the
    shipped YAML, which drive the joints of the shipped URDF's topic-based <ros2_control>."""
    import ament_index_python.packages as packages

    from mb_sim.urdf.ros2_control import ros2_control_systems

    monkeypatch.setattr(packages, "get_package_prefix", lambda package: f"/opt/ros/kilted/{package}")
    nodes = _launched(repo, "ros2_control.launch.py", monkeypatch, rviz="false", namespace="r1")
    assert _overrides(_node(nodes, "mb_sim_node")) == {"urdf_file": "arm6_ros2_control", "robot_description": "",
                                                        "robot_description_topic": ""}  # the launch file's robot
    manager = _node(nodes, "ros2_control_node")
    controllers_file = str(repo / "config" / "arm6_ros2_control.yaml")
    assert manager.kwargs["package"] == "controller_manager" and manager.kwargs["namespace"] == "r1"
    assert manager.kwargs["parameters"] == [controllers_file, {"use_sim_time": True}]
    assert not _nodes(nodes, "robot_state_publisher")
    spawned = [node.kwargs["arguments"] for node in _nodes(nodes, "spawner")]
    assert spawned == [[name, "--param-file", controllers_file]
                       for name in ("joint_state_broadcaster", "joint_trajectory_controller")]
    assert all(node.kwargs["namespace"] == "r1" for node in _nodes(nodes, "spawner"))
    controllers = yaml.safe_load((repo / "config" / "arm6_ros2_control.yaml").read_text())
    (system,) = ros2_control_systems((repo / "urdf" / "arm6_ros2_control.urdf").read_text())
    trajectory = controllers["joint_trajectory_controller"]["ros__parameters"]
    assert trajectory["joints"] == list(system.interfaces)
    assert all(set(trajectory["command_interfaces"]) <= set(interfaces) for interfaces in system.interfaces.values())
    defaults = {e.args[0]: e.kwargs["default_value"] for e in _built_with_stand_ins(repo, "ros2_control.launch.py",
                                                                                     monkeypatch)
                if _kind(e) == "DeclareLaunchArgument"}
    assert defaults["robot"] == "arm6_ros2_control" and (repo / "urdf" / "arm6_ros2_control.urdf").is_file()


def test_ros2_control_without_controller_manager_runs_the_simulation_and_says_so(repo, monkeypatch):
    import ament_index_python.packages as packages

    def missing(package):
        raise packages.PackageNotFoundError(package)

    monkeypatch.setattr(packages, "get_package_prefix", missing)
    launched = _launched(repo, "ros2_control.launch.py", monkeypatch, rviz="false")
    assert [_kind(e) for e in launched] == ["Node", "LogInfo"]
    assert "controller_manager package is not installed" in launched[1].kwargs["msg"]


def test_objects_reach_the_node_and_a_bad_one_stops_the_launch(repo, monkeypatch):
    from mb_sim.launch_arguments import LaunchArgumentError

    given = "name=box shape=box size=0.1,0.1,0.1 xyz=0.5,0,0.05; name=ball shape=sphere size=0.05 xyz=0.5,0.3,0.05"
    simulation = _node(_launched(repo, "sim.launch.py", monkeypatch, objects=given), "mb_sim_node")
    assert _overrides(simulation)["objects"] == ["name=box shape=box size=0.1,0.1,0.1 xyz=0.5,0,0.05",
                                                 "name=ball shape=sphere size=0.05 xyz=0.5,0.3,0.05"]
    with pytest.raises(LaunchArgumentError, match="^launch argument objects: object 'ball': unknown shape 'cone'"):
        _launched(repo, "sim.launch.py", monkeypatch, objects="name=ball shape=cone")

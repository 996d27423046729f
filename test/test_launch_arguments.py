"""mb_sim.launch_arguments: launch-configuration strings to the simulation node's parameters,
namespace and ros_arguments, with one-line errors naming the argument (no launch needed)."""
from __future__ import annotations

import pytest
import yaml

from mb_sim import launch_arguments
from mb_sim.launch_arguments import LaunchArgumentError, helper_node, initial_positions, simulation_node


def _given(**arguments: str) -> dict[str, str]:
    """Launch configurations as launch holds them: every declared argument, "" where not given."""
    configurations = {name: default for name, (default, _) in launch_arguments.ARGUMENTS.items()}
    return {**configurations, **arguments}


def test_arguments_not_given_set_nothing_so_the_params_file_applies(repo):
    path = str(repo / "config" / "mb_sim.yaml")
    launch = simulation_node(_given(params_file=path))
    assert launch.namespace is None
    assert launch.parameters == [path]  # no override: the file (and the node's defaults) decide
    assert launch.ros_arguments == ["--log-level", "info"]


def test_given_arguments_come_after_the_params_file_and_win(repo):
    path = str(repo / "config" / "mb_sim.yaml")
    launch = simulation_node(_given(params_file=path, start_paused="true", publish_rate="50", physics_dt="0.002",
                                    real_time_factor="0", lockstep="True", strict="false", floating_base="1",
                                    initial_positions="hinge:=0.5 elbow:=-1"))
    assert launch.parameters[0] == path
    assert launch.parameters[-1] == {
        "start_paused": True, "publish_rate": 50.0, "physics_dt": 0.002, "real_time_factor": 0.0, "lockstep": True,
        "strict": False, "floating_base": True, "initial_positions.hinge": 0.5, "initial_positions.elbow": -1.0}


def test_the_shipped_params_file_leaves_servo_feed_forward_to_the_robot(repo):
    """Not set, the node turns the servos' feed-forward off for a robot with contacts (it would
    cancel the ground's push at the joints): the params file every launch file loads must not set it."""
    parameters = yaml.safe_load((repo / "config" / "mb_sim.yaml").read_text())["mb_sim"]["ros__parameters"]
    assert "servo_feed_forward" not in parameters
    assert "servo_frequency" in parameters  # (the file does hold the servo section)


def test_a_launch_file_fixed_value_wins_over_everything():
    launch = simulation_node(_given(robot="arm6"), {"urdf_file": "diff_drive", "world_frame": "odom"})
    assert launch.parameters[-1]["urdf_file"] == "diff_drive" and launch.parameters[-1]["world_frame"] == "odom"


@pytest.mark.parametrize(("arguments", "expected"), [
    ({"robot": "arm6"}, {"urdf_file": "arm6", "robot_description": "", "robot_description_topic": ""}),
    ({"robot": "arm6", "urdf_file": "pendulum"},
     {"urdf_file": "pendulum", "robot_description": "", "robot_description_topic": ""}),
    ({"robot": "arm6", "robot_description": "<robot name='r'/>"},
     {"robot_description": "<robot name='r'/>", "robot_description_topic": ""}),
    ({"robot": "arm6", "robot_description_topic": "/robot_description"},
     {"robot_description_topic": "/robot_description", "robot_description": ""}),
    ({"robot": "my.urdf.xacro", "xacro_args": "prefix:=left_ 'name:=a b'"},
     {"urdf_file": "my.urdf.xacro", "robot_description": "", "robot_description_topic": "",
      "xacro_args": "prefix:=left_ 'name:=a b'"}),
], ids=["robot", "urdf_file alias wins", "description wins", "topic wins", "xacro"])
def test_the_robot_comes_from_the_first_source_given_and_clears_the_others(arguments, expected):
    (overrides,) = simulation_node(_given(**arguments)).parameters
    assert overrides == expected


def test_initial_positions_take_assignments_or_a_yaml_mapping():
    assert initial_positions("hinge:=0.5  elbow:=1") == {"initial_positions.hinge": 0.5,
                                                         "initial_positions.elbow": 1.0}
    assert initial_positions("{hinge: 0.5, elbow: -2}") == {"initial_positions.hinge": 0.5,
                                                            "initial_positions.elbow": -2.0}
    assert initial_positions("  ") == {}


@pytest.mark.parametrize(("arguments", "message"), [
    ({"publish_rate": "fast"}, "launch argument publish_rate: 'fast' is not a number"),
    ({"physics_dt": "nan"}, "launch argument physics_dt: 'nan' is not a number"),
    ({"start_paused": "yes"}, "launch argument start_paused: 'yes' is not true or false"),
    ({"lockstep": "on"}, "launch argument lockstep: 'on' is not true or false"),
    ({"initial_positions": "hinge=0.5"}, "launch argument initial_positions: 'hinge=0.5' is not joint:=position "
                                         "(e.g. initial_positions:=\"hinge:=0.5 elbow:=1\" or "
                                         "initial_positions:=\"{hinge: 0.5}\")"),
    ({"initial_positions": "hinge:=up"}, "launch argument initial_positions: joint hinge: 'up' is not a number"),
    ({"initial_positions": "hinge:=1 hinge:=2"}, "launch argument initial_positions: joint 'hinge' is given twice"),
    ({"initial_positions": "{hinge: [1]}"}, "launch argument initial_positions: joint hinge: [1] is not a number"),
    ({"initial_positions": "{hinge: 1"}, "launch argument initial_positions: not a YAML mapping"),
    ({"namespace": "r 1"}, "launch argument namespace: 'r 1' is not a ROS namespace"),
    ({"namespace": "1r"}, "launch argument namespace: '1r' is not a ROS namespace"),
    ({"log_level": "loud"}, "launch argument log_level: 'loud' is not one of debug, info"),
    ({"xacro_args": "a=1"}, "launch argument xacro_args: 'a=1' is not name:=value"),
    ({"xacro_args": "a:='1"}, "launch argument xacro_args: no closing quotation"),
    ({"robot_description": "<robot/>", "robot_description_topic": "/d"},
     "launch argument robot_description: given together with robot_description_topic"),
    ({"params_file": "/nonexistent/params.yaml"}, "launch argument params_file: no such file: /nonexistent"),
])
def test_a_bad_argument_is_one_line_naming_it(arguments, message):
    with pytest.raises(LaunchArgumentError) as error:
        simulation_node(_given(**arguments))
    assert str(error.value).startswith(message), str(error.value)
    assert "\n" not in str(error.value)
    assert error.value.argument == next(iter(arguments))


def test_a_params_file_that_is_not_yaml_is_named(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("mb_sim: [\n")
    with pytest.raises(LaunchArgumentError, match=f"launch argument params_file: {bad} is not a YAML file: "):
        simulation_node(_given(params_file=str(bad)))
    bad.write_text("- a\n- b\n")
    with pytest.raises(LaunchArgumentError, match="is not a parameters file"):
        simulation_node(_given(params_file=str(bad)))


def test_in_a_namespace_the_params_file_root_section_still_applies(tmp_path):
    """rcl applies a key `mb_sim` (or `/mb_sim`) to the node at the root only: in a namespace its
    parameters are passed again, after the file, as nav2's RewrittenYaml does; `/**` keys apply
    anyway and are left to rcl."""
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"mb_sim": {"ros__parameters": {"publish_rate": 50.0,
                                                                     "initial_positions": {"hinge": 0.5}}},
                                      "/**": {"ros__parameters": {"strict": True}}}))
    launch = simulation_node(_given(params_file=str(params), namespace="/r1/", lockstep="true"))
    assert launch.namespace == "/r1"
    assert launch.parameters == [str(params), {"publish_rate": 50.0, "initial_positions": {"hinge": 0.5}},
                                 {"lockstep": True}]
    assert simulation_node(_given(params_file=str(params))).parameters == [str(params)]  # at the root: rcl's


def test_controllers_share_namespace_log_level_and_take_use_sim_time_only_when_given(repo):
    path = str(repo / "config" / "diff_drive_controller.yaml")
    configurations = _given(namespace="r1", log_level="DEBUG", controller_params_file=path)
    launch = helper_node(configurations, "mb_sim_diff_drive_controller")
    assert (launch.namespace, launch.ros_arguments) == ("r1", ["--log-level", "debug"])
    section = yaml.safe_load((repo / "config" / "diff_drive_controller.yaml").read_text())
    assert launch.parameters == [path, section["mb_sim_diff_drive_controller"]["ros__parameters"]]
    configurations.update(use_sim_time="false", namespace="")
    launch = helper_node(configurations, "mb_sim_diff_drive_controller", overrides={"resume_simulation": False})
    assert launch.parameters == [path, {"use_sim_time": False, "resume_simulation": False}]


def test_rviz_follows_the_namespace_by_remapping_its_absolute_topics():
    topics = ("/robot_description", "/mb_sim/springs")
    assert launch_arguments.namespaced_remappings(_given(), topics) == []
    assert launch_arguments.namespaced_remappings(_given(namespace="/r1"), topics) == [
        ("/robot_description", "/r1/robot_description"), ("/mb_sim/springs", "/r1/mb_sim/springs")]


def test_rviz_true_without_rviz2_is_refused_with_a_hint(monkeypatch):
    from ament_index_python.packages import PackageNotFoundError

    def missing(package):
        raise PackageNotFoundError(package)

    monkeypatch.setattr(launch_arguments, "get_package_prefix", missing)
    assert launch_arguments.require_rviz(_given(rviz="false")) is False
    with pytest.raises(LaunchArgumentError, match="launch argument rviz: true but the package rviz2 is not "
                                                  "installed: .* or pass rviz:=false"):
        launch_arguments.require_rviz(_given(rviz="true"))
    monkeypatch.setattr(launch_arguments, "get_package_prefix", lambda package: "/opt/ros")
    assert launch_arguments.require_rviz(_given(rviz="true")) is True

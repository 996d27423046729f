"""Hostile input to what issue 25 added (robot_description from a parameter or a topic, xacro_args,
ros2_control's topic-based hardware, the launch arguments), one test per class of defect the audit
found, so they never come back.  Nodes are real processes, as in :mod:`test_node`; the pure
modules are called directly, in a subprocess where the defect was a hang (the test then fails at
the subprocess's liveness timeout instead of hanging the suite).
"""
from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import time

import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Int32, String

from mb_sim.launch_arguments import LaunchArgumentError, initial_positions, parameter_files
from mb_sim.ros.simulation_node import LATCHED_QOS
from mb_sim.session.commands import CommandError, ros2_control_commands
from mb_sim.urdf import URDFError
from mb_sim.urdf.xacro_expansion import expand_xacro, parse_xacro_args

from test_node import NodeProcess, node_env, nodes, peer, shared_peer, wait_for_output  # noqa: F401

#: hostile robot sources and hardware topics against real node processes: make test-slow
pytestmark = pytest.mark.slow

#: A YAML "billion laughs": each alias level nine times the one before, 9**12 items in all.
ALIAS_BOMB = "{hinge: [&a0 [x, x, x, x, x, x, x, x, x]" + "".join(
    f", &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 13)) + "]}"
NESTED = "[" * 5000 + "]" * 5000


def run_python(code: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter; liveness: it must end within `timeout` s."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout)


def exits_with_one_line(process: NodeProcess, timeout: float = 120.0) -> str:
    """The node's last line, after it exited with status 1 and no traceback."""
    process.proc.wait(timeout=timeout)
    process._reader.join(timeout=5)
    assert process.proc.returncode == 1, process.output
    assert "Traceback" not in process.output, process.output
    return process.output.strip().splitlines()[-1]


# -- launch arguments --------------------------------------------------------------------------
def test_an_alias_bomb_in_initial_positions_is_one_short_line():
    # The error line quoted the value whole: repr of 9**12 items never ended.
    done = run_python(f"""
        from mb_sim.launch_arguments import LaunchArgumentError, initial_positions
        try:
            initial_positions({ALIAS_BOMB!r})
        except LaunchArgumentError as err:
            print(err)
        """)
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith("launch argument initial_positions: joint hinge: [") and len(line) < 200, line


def test_a_huge_value_is_quoted_in_part():
    with pytest.raises(LaunchArgumentError) as caught:
        initial_positions("{hinge: '" + "x" * 1_000_000 + "'}")
    assert "is not a number" in str(caught.value) and len(str(caught.value)) < 200


def test_yaml_nested_past_the_recursion_limit_is_one_line(tmp_path):
    # PyYAML composes recursively: a RecursionError (a traceback from ros2 launch), not a YAMLError.
    with pytest.raises(LaunchArgumentError, match="initial_positions: YAML nested too deeply"):
        initial_positions("{hinge: " + NESTED + "}")
    params = tmp_path / "deep.yaml"
    params.write_text("mb_sim: " + NESTED)
    with pytest.raises(LaunchArgumentError, match="params_file: .*deep.yaml: YAML nested too deeply"):
        parameter_files({"params_file": str(params)}, "mb_sim", "r1")


def test_a_params_file_that_is_a_directory_is_named_so(tmp_path):
    with pytest.raises(LaunchArgumentError, match="params_file: a directory, not a file"):
        parameter_files({"params_file": str(tmp_path)}, "mb_sim", None)


# -- xacro ----------------------------------------------------------------------------------------
def test_huge_xacro_args_are_refused_in_one_line():
    # shlex's split is quadratic in a word's length: 1 MB took 19 s, 50 MB hung the start-up.
    with pytest.raises(ValueError, match=r"xacro_args: 1000003 characters, at most \d+") as caught:
        parse_xacro_args("a:=" + "x" * 1_000_000)
    assert len(str(caught.value)) < 200
    assert len(parse_xacro_args(" ".join(f"a{i}:={i}" for i in range(10_000)))) == 10_000


def test_a_runaway_xacro_expansion_is_one_line(tmp_path, node_env, nodes):  # noqa: F811
    # ${'a'*10**8} made 100 MB of URDF, which the node loaded and published as its description
    # (10**9 held it for minutes); the expansion's size is bounded.
    robot = tmp_path / "runaway.urdf.xacro"
    robot.write_text('<robot name="runaway" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                     "<xacro:property name=\"s\" value=\"${'a'*10**8}\"/>"
                     '<link name="base"><visual><geometry><mesh filename="${s}"/></geometry></visual></link></robot>')
    with pytest.raises(URDFError, match="runaway.urdf.xacro: xacro: expands to 100000"):
        expand_xacro(robot)
    nodes.close()
    line = exits_with_one_line(NodeProcess(node_env, "-p", f"urdf_file:={robot}"))
    assert line.startswith(f"mb_sim_node: parameter urdf_file: {robot}: xacro: expands to"), line


# -- robot_description ------------------------------------------------------------------------
def test_description_text_is_never_read_as_a_path(node_env, nodes, peer):  # noqa: F811
    # Text not starting with '<' went to the loader as a path: "hello world: file not found", and
    # robot_description:=/etc/passwd opened that file.
    nodes.close()
    line = exits_with_one_line(NodeProcess(node_env, "-p", "robot_description:=/etc/passwd"))
    assert line == ("mb_sim_node: parameter robot_description: the parameter holds '/etc/passwd', not URDF text "
                    "(XML starting with '<'); a path goes in urdf_file"), line
    publisher = peer.node.create_publisher(String, "/robot_description", LATCHED_QOS)
    peer._entities.append(publisher)
    publisher.publish(String(data="hello world"))
    line = exits_with_one_line(NodeProcess(node_env, "-p", "robot_description_topic:=/robot_description"))
    assert line.startswith("mb_sim_node: parameter robot_description_topic: /robot_description holds "
                           "'hello world', not URDF text"), line


@pytest.mark.parametrize("message_type, qos, why", [
    (Int32, LATCHED_QOS, "its publisher /mb_sim_test_peer publishes std_msgs/msg/Int32, not std_msgs/msg/String"),
    (String, QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE),
     "its publisher /mb_sim_test_peer is volatile, which a transient local subscription does not match"),
])
def test_a_publisher_the_node_cannot_hear_is_named(node_env, nodes, peer, message_type, qos, why):  # noqa: F811
    # Before: "is robot_state_publisher (or another node) publishing it, transient local?" while one was.
    nodes.close()
    publisher = peer.node.create_publisher(message_type, "/robot_description", qos)
    peer._entities.append(publisher)
    publisher.publish(message_type(data=5) if message_type is Int32 else String(data="<robot/>"))
    process = NodeProcess(node_env, "-p", "robot_description_topic:=/robot_description",
                          "-p", "robot_description_timeout:=3.0")
    peer.spin_until(lambda: not process.running(), 60)  # the peer's publisher stays discoverable
    line = exits_with_one_line(process)
    assert line.startswith("mb_sim_node: parameter robot_description_topic: nothing arrived on /robot_description "
                           f"within 3 s (robot_description_timeout); {why}"), line


def test_a_later_description_of_another_robot_is_ignored_with_a_warning(repo, nodes, peer):  # noqa: F811
    # Before: the subscription was gone after start-up, and a new robot went unremarked.
    publisher = peer.node.create_publisher(String, "/robot_description", LATCHED_QOS)
    peer._entities.append(publisher)
    pendulum = (repo / "urdf" / "pendulum.urdf").read_text()
    publisher.publish(String(data=pendulum))
    process = nodes.get("-p", "robot_description_topic:=/robot_description")
    assert wait_for_output(peer, process, "physics dt", timeout=60), process.output
    mark = len(process.lines)
    publisher.publish(String(data=pendulum))  # the same again: nothing to say
    publisher.publish(String(data=pendulum.replace('name="pendulum"', 'name="other"')))
    assert wait_for_output(peer, process, "a different robot description arrived on /robot_description "
                                          r"\(\d+ characters\): ignored", start=mark), process.output
    assert sum("robot description arrived" in line for line in process.lines[mark:]) == 1
    states = peer.collect(JointState, "/joint_states")
    assert peer.spin_until(lambda: states, 10) and list(states[-1].name) == ["hinge"]
    assert process.running(), process.output


# -- ros2_control ---------------------------------------------------------------------------------
def test_a_value_on_an_interface_the_joint_lacks_is_refused():
    # A full-length effort array put an effort on a position-only joint: its servo let go.
    interfaces = {"a": ("position",), "d": ("effort",)}
    with pytest.raises(CommandError) as caught:
        ros2_control_commands(["a", "d"], [], [], [5.0, 1.0], interfaces)
    assert caught.value.kind == "no_interface" and "joint(s) 'a' have no effort command interface" in str(caught.value)
    names, position, _, effort = ros2_control_commands(["a", "d"], [0.5, math.nan], [], [math.nan, 1.0], interfaces)
    assert names == ["a", "d"] and position[0] == 0.5 and effort[1] == 1.0


def test_two_elements_on_one_state_topic_publish_each_state_once(repo, tmp_path, nodes, peer):  # noqa: F811
    # Each element had a publisher of its own on the shared topic: every state arrived twice.
    text = (repo / "urdf" / "arm6_ros2_control.urdf").read_text()
    split = '<joint name="wrist_1_joint">\n      <command_interface'
    assert text.count(split) == 1
    text = text.replace(split, '</ros2_control>\n  <ros2_control name="arm6_wrist" type="system"><hardware>'
                               "<plugin>joint_state_topic_hardware_interface/JointStateTopicSystem</plugin>"
                               '<param name="joint_commands_topic">/arm6/wrist_commands</param>'
                               '<param name="joint_states_topic">/arm6/joint_states</param></hardware>\n' + split)
    urdf = tmp_path / "arm6_two.urdf"
    urdf.write_text(text)
    process = nodes.get("-p", f"urdf_file:={urdf}")
    states = peer.collect(JointState, "/arm6/joint_states", QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT))
    assert peer.spin_until(lambda: len(states) >= 50, 30), process.output
    stamps = [(m.header.stamp.sec, m.header.stamp.nanosec) for m in states]
    assert len(set(stamps)) == len(stamps), "a state arrived twice"
    assert process.running(), process.output


def test_a_topic_name_rclpy_refuses_in_ros2_control_is_one_line(repo, tmp_path, node_env, nodes):  # noqa: F811
    # rclpy's refusal when the node created the state publisher was a traceback.
    text = (repo / "urdf" / "arm6_ros2_control.urdf").read_text()
    urdf = tmp_path / "arm6_bad_topic.urdf"
    urdf.write_text(text.replace("/arm6/joint_states</param>", "bad topic!</param>"))
    nodes.close()
    line = exits_with_one_line(NodeProcess(node_env, "-p", f"urdf_file:={urdf}"))
    assert line.startswith(f'mb_sim_node: parameter urdf_file: {urdf}: <ros2_control name="arm6_topics"> '
                           "<param name=\"joint_states_topic\">: 'bad topic!': failed to resolve name"), line


def test_a_xacro_that_never_ends_expanding_is_one_line_and_ctrl_c_still_works(tmp_path, node_env, nodes):  # noqa: F811
    # ${10**10**8} is one long C operation inside xacro: the node hung for good without a line.
    robot = tmp_path / "endless.urdf.xacro"
    robot.write_text('<robot name="endless" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                     '<xacro:property name="n" value="${10**10**8}"/><link name="l${n}"/></robot>')
    nodes.close()
    line = exits_with_one_line(NodeProcess(node_env, "-p", f"urdf_file:={robot}"), timeout=90)
    assert line == (f"mb_sim_node: parameter urdf_file: {robot}: xacro: the expansion took more than 20 s "
                    "(EXPANSION_TIMEOUT): a property or loop runs away"), line
    process = NodeProcess(node_env, "-p", f"urdf_file:={robot}")
    time.sleep(3.0)  # expanding
    code, elapsed = process.stop()
    assert code == 0 and "Traceback" not in process.output, process.output
    assert elapsed < 2.0, f"took {elapsed:.2f} s to stop after Ctrl-C"

"""Where the node takes its robot from (issue 25): a xacro ``urdf_file`` with ``xacro_args``, a
``robot_description_topic`` published by another node (transient local, as robot_state_publisher
does), and bad input of each kind as one line.  Real node processes and a real rclpy peer, as in
:mod:`test_node`.
"""
from __future__ import annotations

import subprocess

import pytest
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from mb_sim.ros.simulation_node import LATCHED_QOS
from test_node import (  # noqa: F401
    NODE_EXE, START_TIMEOUT, NodeProcess, node_env, nodes, peer, shared_peer, wait_for_output,
)
from test_xacro import ARM_BY_HAND, ARM_XACRO

#: The arm's joints, in /joint_states order.
ARM_JOINTS = ["shoulder", "elbow"]


def stopped_cleanly(process: NodeProcess) -> None:
    """Ctrl-C ends it with status 0 and no traceback (liveness: within the stop's 10 s)."""
    code, _ = process.stop()
    assert code == 0, process.output
    assert "Traceback" not in process.output, process.output


def joint_states_arrive(peer, process: NodeProcess) -> list:
    """/joint_states messages once the node (compiling on its first run) publishes them."""
    states = peer.collect(JointState, "/joint_states")
    assert peer.spin_until(lambda: states or not process.running(), START_TIMEOUT), process.output
    assert process.running(), process.output
    return states


def test_a_xacro_robot_runs_through_the_node(nodes, peer, node_env):
    # Before: "not a number" (the .xacro read as URDF) and no xacro_args parameter.
    nodes.close()
    descriptions = peer.collect(String, "/robot_description", LATCHED_QOS)
    process = NodeProcess(node_env, "-p", f"urdf_file:={ARM_XACRO}",
                          "-p", "xacro_args:=link_length:=0.4 with_tip:=false")
    try:
        states = joint_states_arrive(peer, process)
        assert list(states[-1].name) == ARM_JOINTS
        assert peer.spin_until(lambda: descriptions, 10), process.output
        published = descriptions[-1].data  # the expansion, not the xacro
        assert "xacro:" not in published and 'xyz="0 0 -0.4"' in published and 'name="tip"' not in published
    finally:
        stopped_cleanly(process)


def publish_description(peer, text: str):
    """A transient-local publisher of `text` on /robot_description, as robot_state_publisher's."""
    publisher = peer.node.create_publisher(String, "/robot_description", LATCHED_QOS)
    peer._entities.append(publisher)
    publisher.publish(String(data=text))
    return publisher


@pytest.mark.parametrize("order", ["published_before", "published_after"])
def test_the_robot_description_from_a_topic(order, nodes, peer, node_env):
    nodes.close()
    if order == "published_before":
        publish_description(peer, ARM_BY_HAND.read_text())
    process = NodeProcess(node_env, "-p", "robot_description_topic:=/robot_description")
    try:
        assert wait_for_output(peer, process, r"waiting for /robot_description \(std_msgs/String, transient local\)",
                               timeout=START_TIMEOUT), process.output
        if order == "published_after":
            peer.spin_for(1.0)  # the node waits meanwhile
            assert process.running(), process.output
            publish_description(peer, ARM_BY_HAND.read_text())
        states = joint_states_arrive(peer, process)
        assert list(states[-1].name) == ARM_JOINTS
        # the node does not publish its own description on the topic it read it from
        assert peer.node.count_publishers("/robot_description") == 1
        assert sum("waiting for /robot_description" in line for line in process.lines) == 1
    finally:
        stopped_cleanly(process)


def test_ctrl_c_while_waiting_for_the_topic_ends_the_node_at_once(nodes, peer, node_env):
    nodes.close()
    process = NodeProcess(node_env, "-p", "robot_description_topic:=/no_description_here")
    assert wait_for_output(peer, process, "waiting for /no_description_here", timeout=START_TIMEOUT), process.output
    stopped_cleanly(process)


def failed_start(node_env, *arguments: str, timeout: float = 120.0) -> str:
    """The last line of a node that refuses to start (status 1, no traceback)."""
    done = subprocess.run([str(NODE_EXE), "--ros-args", *arguments], capture_output=True, text=True,
                          timeout=timeout, env=node_env)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr.strip().splitlines()[-1]


def test_nothing_on_the_topic_is_one_line_after_the_timeout(node_env):
    last = failed_start(node_env, "-p", "robot_description_topic:=/nobody_publishes_this",
                        "-p", "robot_description_timeout:=1.0")
    assert last == ("mb_sim_node: parameter robot_description_topic: nothing arrived on /nobody_publishes_this "
                    "within 1 s (robot_description_timeout); is robot_state_publisher (or another node) "
                    "publishing it, transient local?")


def test_bad_robot_sources_are_one_line_each(node_env, tmp_path):
    broken = tmp_path / "broken.urdf"  # a comment with ': ' in it: not a plain YAML value
    broken.write_text('<?xml version="1.0"?>\n<robot name="broken">\n  <!-- note: unfinished -->\n'
                      '  <link name="a">\n</robot>\n')
    undefined = tmp_path / "undefined.urdf.xacro"
    undefined.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                         '<link name="a"><inertial><mass value="${mass}"/></inertial></link>\n</robot>\n')
    cases = {
        # before: a traceback from rclpy.init (rcl cannot parse the value as YAML)
        "robot_description": (["-p", f"robot_description:={broken.read_text()}"],
                              "mb_sim_node: cannot parse the --ros-args parameter override '-p robot_description:="),
        "xacro_args": (["-p", "xacro_args:=link_length", "-p", f"urdf_file:={ARM_XACRO}"],
                       "mb_sim_node: parameter xacro_args: 'link_length' is not name:=value"),
        "undefined": (["-p", f"urdf_file:={undefined}"],
                      f"mb_sim_node: parameter urdf_file: {undefined}: xacro: undefined property: name 'mass'"),
        "both": (["-p", "robot_description_topic:=/robot_description", "-p",
                  f"robot_description:={ARM_BY_HAND.read_text().split('-->', 1)[1]}"],
                 "mb_sim_node: parameters robot_description and robot_description_topic: both are given"),
        "bad_topic": (["-p", "robot_description_topic:=not a topic!"],
                      "mb_sim_node: parameter robot_description_topic: "),
    }
    procs = {name: subprocess.Popen([str(NODE_EXE), "--ros-args", *arguments], env=node_env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for name, (arguments, _) in cases.items()}
    for name, proc in procs.items():
        _, errors = proc.communicate(timeout=120)
        assert proc.returncode == 1, (name, errors)
        assert "Traceback" not in errors, errors
        last = errors.strip().splitlines()[-1]
        assert last.startswith(cases[name][1]), (name, errors)
    # the URDF given as a -p value that YAML reads: its fault in one line, naming the parameter
    assert failed_start(node_env, "-p", f"robot_description:={broken.read_text().replace(': ', ' ')}").startswith(
        "mb_sim_node: parameter robot_description: <string>: malformed XML: mismatched tag")

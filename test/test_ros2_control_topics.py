"""mb_sim_node as the far end of ros2_control's topic-based hardware (issue 25): the URDF's
``<ros2_control>`` element says which joints take which commands on which topics, a client
process behaving as ``joint_state_topic_hardware_interface/JointStateTopicSystem`` does
(:mod:`ros2_control_client`: publishes only on change, reads the state best effort, fields
shorter than ``name``) drives arm6 through the real node; bad elements and bad commands get one
line each.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger

from mb_sim.ros.conversions import seconds
from mb_sim.session.commands import CommandError, ros2_control_commands
from mb_sim.urdf import URDFError
from mb_sim.urdf.ros2_control import initial_positions, ros2_control_systems
from pinocchio_reference import example_robot_data_dir
from test_replay import MB_SIM, largest
from test_node import NODE_EXE, node_env, nodes, peer, shared_peer, wait_for_output  # noqa: F401

CLIENT = Path(__file__).parent / "ros2_control_client.py"
JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
          "wrist_3_joint"]
GOALS = {"shoulder_pan_joint": 0.3, "shoulder_lift_joint": -0.4, "elbow_joint": 0.8, "wrist_1_joint": -0.5,
         "wrist_2_joint": 0.4, "wrist_3_joint": 0.1}
#: Seconds a client runs: long enough to reach its goals and then go quiet for a while.
CLIENT_SECONDS = 8.0


def shipped(repo) -> str:
    return (repo / "urdf" / "arm6_ros2_control.urdf").read_text()


def variant(repo, tmp_path, old: str, new: str, count: int = 1) -> Path:
    """The shipped URDF with `old` replaced by `new` (`count` times), written to a file."""
    text = shipped(repo)
    assert text.count(old) >= count, old
    path = tmp_path / "arm6_variant.urdf"
    path.write_text(text.replace(old, new, count))
    return path


def drive(node_env, urdf: Path, goals: dict) -> dict:
    """Run the client against the node; its summary."""
    done = subprocess.run([sys.executable, str(CLIENT), str(urdf), json.dumps(goals), str(CLIENT_SECONDS)],
                          env=node_env, capture_output=True, text=True, timeout=CLIENT_SECONDS + 60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the <ros2_control> element ------------------------------------------------------------------
def test_third_party_ros2_control_elements_are_read():
    """Real URDFs (example-robot-data): xarm7's and TIAGo Pro's hardware is not the topic-based
    one, so they are read as they are (command interfaces with <param> children, several elements)."""
    robots = example_robot_data_dir()
    (xarm,) = ros2_control_systems((robots / "xarm_description/urdf/xarm7.urdf").read_text())
    assert xarm.plugin == "uf_robot_hardware/UFRobotSystemHardware" and not xarm.topic_based
    assert [j.name for j in xarm.joints] == [f"joint{k}" for k in range(1, 8)]
    assert xarm.joints[0].command_interfaces == ("position", "velocity")
    assert xarm.parameters["dof"] == "7"
    tiago = ros2_control_systems((robots / "tiago_pro_description/robots/tiago_pro.urdf").read_text())
    assert [s.name for s in tiago] == ["ros2_control_tiago_pro_system_can", "ros2_control_tiago_pro_system_dynamixel",
                                       "ros2_control_tiago_pro_system_ethercat"]
    assert tiago[2].interfaces["arm_left_1_joint"] == ("position", "velocity", "effort")


def test_the_shipped_urdf_uses_the_topic_based_hardware(repo):
    (system,) = ros2_control_systems(shipped(repo))
    assert system.topic_based and system.plugin == "joint_state_topic_hardware_interface/JointStateTopicSystem"
    assert (system.commands_topic, system.states_topic) == ("/arm6/joint_commands", "/arm6/joint_states")
    assert system.interfaces == dict.fromkeys(JOINTS, ("position", "velocity"))


def test_the_plugins_defaults_apply_without_params():
    """The plugin's source: /robot_joint_commands (its README says /robot_joint_command), 1e-5."""
    text = ('<robot name="r"><ros2_control name="s" type="system"><hardware><plugin>'
            'topic_based_ros2_control/TopicBasedSystem</plugin></hardware><joint name="j">'
            '<command_interface name="effort"/></joint></ros2_control></robot>')
    (system,) = ros2_control_systems(text)
    assert system.topic_based  # the deprecated name
    assert (system.commands_topic, system.states_topic, system.threshold) == \
        ("/robot_joint_commands", "/robot_joint_states", 1e-5)


def test_an_interface_a_joint_state_cannot_carry_is_named():
    text = ('<robot name="r"><ros2_control name="s" type="system"><hardware><plugin>'
            'joint_state_topic_hardware_interface/JointStateTopicSystem</plugin></hardware><joint name="j">'
            '<command_interface name="acceleration"/></joint></ros2_control></robot>')
    with pytest.raises(URDFError, match='<ros2_control name="s"> <joint name="j"> '
                                        '<command_interface name="acceleration">: mb_sim serves'):
        ros2_control_systems(text)


# -- short command arrays ---------------------------------------------------------------------
INTERFACES = {"a": ("position",), "b": ("velocity",), "c": ("position", "velocity"), "d": ("effort",)}


def test_fields_shorter_than_the_names_are_matched_by_interface():
    """The plugin pushes one value per joint having the interface: position [a, c], velocity [b, c]."""
    names, position, velocity, effort = ros2_control_commands(
        ["a", "b", "c", "d"], [1.0, 3.0], [2.0, 4.0], [5.0], INTERFACES)
    assert names == ["a", "b", "c", "d"]
    assert position[0] == 1.0 and math.isnan(position[1]) and position[2] == 3.0 and math.isnan(position[3])
    assert math.isnan(velocity[0]) and velocity[1:3] == [2.0, 4.0]
    assert all(math.isnan(v) for v in effort[:3])
    assert effort[3] == 5.0


def test_joints_without_a_command_yet_are_left_out():
    """Before a controller claims a joint its command is NaN (and the plugin sends it: NaN never
    compares below the threshold)."""
    names, position, velocity, effort = ros2_control_commands(
        ["a", "b", "c", "d"], [math.nan, 3.0], [math.nan, math.nan], [math.nan], INTERFACES)
    assert names == ["c"] and position == [3.0] and math.isnan(velocity[0]) and math.isnan(effort[0])
    assert ros2_control_commands(["a"], [math.nan], [], [], INTERFACES)[0] == []


@pytest.mark.parametrize("names, position, kind, words", [
    (["a", "x"], [1.0], "unknown_joint", "'x' not in the URDF's <ros2_control>"),
    (["a", "a"], [1.0, 2.0], "duplicate_joint", "'a'"),
    (["a", "c"], [1.0, 2.0, 3.0], "length", "3 values in position: expected one per named joint with a position"),
    ([], [], "empty", "names no joint"),
])
def test_bad_commands_are_one_clear_error(names, position, kind, words):
    with pytest.raises(CommandError) as caught:
        ros2_control_commands(names, position, [], [], INTERFACES)
    assert caught.value.kind == kind and words in str(caught.value), str(caught.value)


# -- through the node -------------------------------------------------------------------------
def test_position_commands_reach_their_goals_and_hold_after_the_hardware_goes_quiet(repo, nodes, peer, node_env):
    node = nodes.get("-p", f"urdf_file:={repo / 'urdf' / 'arm6_ros2_control.urdf'}")
    summary = drive(node_env, repo / "urdf" / "arm6_ros2_control.urdf",
                    {joint: {"position": goal, "velocity": 0.0} for joint, goal in GOALS.items()})
    assert summary["names"] == sorted(JOINTS)  # the state carries every joint by name
    assert summary["quiet"] is not None and summary["quiet"] > 2.0, summary  # sent only on change, then quiet
    for joint, goal in GOALS.items():  # held since (no command timeout)
        assert summary["state"][joint][0] == pytest.approx(goal, abs=1e-4), (joint, summary)
    assert "command rejected" not in node.output, node.output  # NaN commands before the controller: no noise


def test_the_state_topic_is_best_effort(repo, nodes, peer):
    nodes.get("-p", f"urdf_file:={repo / 'urdf' / 'arm6_ros2_control.urdf'}")
    assert peer.spin_until(lambda: peer.node.get_publishers_info_by_topic("/arm6/joint_states"), 10)
    (publisher,) = peer.node.get_publishers_info_by_topic("/arm6/joint_states")
    assert publisher.node_name == "mb_sim"
    assert publisher.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
    (subscription,) = peer.node.get_subscriptions_info_by_topic("/arm6/joint_commands")
    assert subscription.node_name == "mb_sim"


def test_velocity_commands_in_short_arrays_hold_their_speed(repo, nodes, peer, node_env, tmp_path):
    """wrist_3 velocity only, the others position only: position has five values, velocity one;
    once the speed is reached the hardware stops sending and the wrist keeps turning."""
    urdf = variant(repo, tmp_path, '<command_interface name="velocity"/>\n', "", 5)
    text = urdf.read_text()
    start = text.index('<joint name="wrist_3_joint">\n      <command_interface name="position"/>')
    urdf.write_text(text[:start] + text[start:].replace('<command_interface name="position"/>\n      ', "", 1))
    interfaces = ros2_control_systems(urdf.read_text())[0].interfaces
    assert interfaces["wrist_3_joint"] == ("velocity",) and interfaces["elbow_joint"] == ("position",)
    nodes.get("-p", f"urdf_file:={urdf}")
    goals = {joint: {"position": goal} for joint, goal in GOALS.items() if joint != "wrist_3_joint"}
    summary = drive(node_env, urdf, {**goals, "wrist_3_joint": {"velocity": 0.5}})
    assert summary["quiet"] is not None and summary["quiet"] > 1.0, summary
    assert summary["state"]["wrist_3_joint"][1] == pytest.approx(0.5, abs=1e-4), summary
    for joint, goal in goals.items():
        assert summary["state"][joint][0] == pytest.approx(goal["position"], abs=1e-4), (joint, summary)


def test_bad_commands_on_the_hardware_topic_get_one_warning_and_the_node_goes_on(repo, nodes, peer):
    node = nodes.get("-p", f"urdf_file:={repo / 'urdf' / 'arm6_ros2_control.urdf'}")
    publisher = peer.publisher(JointState, "/arm6/joint_commands")
    for message, words in [(JointState(name=["nope"], position=[1.0]), "'nope' not in the URDF's <ros2_control>"),
                           (JointState(name=JOINTS, position=[0.1] * 4), "4 values in position"),
                           (JointState(name=["elbow_joint"], position=[math.inf]), "infinite position")]:
        mark = len(node.lines)
        publisher.publish(message)
        assert wait_for_output(peer, node, f"/arm6/joint_commands: command rejected: .*{words}", start=mark), \
            node.output[-3000:]
    assert node.running() and "Traceback" not in node.output


def test_the_hardware_topics_are_served_unless_ros2_control_topics_is_false(repo, nodes, peer):
    urdf = f"urdf_file:={repo / 'urdf' / 'arm6_ros2_control.urdf'}"
    nodes.get("-p", urdf)
    assert peer.spin_until(lambda: peer.node.get_subscriptions_info_by_topic("/arm6/joint_commands"), 10)
    nodes.get("-p", urdf, "-p", "ros2_control_topics:=false")
    peer.spin_for(2.0)  # the first node's subscription is gone from the graph
    assert not peer.node.get_subscriptions_info_by_topic("/arm6/joint_commands")
    assert not peer.node.get_publishers_info_by_topic("/arm6/joint_states")


def test_lockstep_warns_when_the_hardware_sends_only_on_change(repo, nodes, peer):
    node = nodes.get("-p", f"urdf_file:={repo / 'urdf' / 'arm6_ros2_control.urdf'}", "-p", "lockstep:=true")
    assert wait_for_output(peer, node, "trigger_joint_command_threshold\">-1"), node.output


@pytest.mark.parametrize("old, new, culprit", [
    ('<joint name="elbow_joint">\n      <command', '<joint name="no_such_joint">\n      <command',
     '<ros2_control name="arm6_topics"> <joint name="no_such_joint">: the robot has no such moving joint'),
    ('<command_interface name="velocity"/>', '<command_interface name="acceleration"/>',
     '<joint name="shoulder_pan_joint"> <command_interface name="acceleration">: mb_sim serves'),
])
def test_a_ros2_control_element_mb_sim_cannot_serve_is_one_line(repo, nodes, node_env, tmp_path, old, new, culprit):
    nodes.close()
    urdf = variant(repo, tmp_path, old, new)
    done = subprocess.run([str(NODE_EXE), "--ros-args", "-p", f"urdf_file:={urdf}"], env=node_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if culprit in line]
    assert len(lines) == 1 and "parameter urdf_file" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_in_lockstep_each_controller_period_is_one_publish_period_and_replays(repo, nodes, peer, node_env, tmp_path):
    """With trigger_joint_command_threshold -1 the hardware sends every update; in lockstep each
    command advances exactly one publish period (10 steps of 1 ms) and nothing else does; the
    recording (the hardware's commands in) replays to rounding."""
    states = '<param name="joint_states_topic">/arm6/joint_states</param>'
    urdf = variant(repo, tmp_path, states, states + '\n      <param name="trigger_joint_command_threshold">-1</param>')
    recording = tmp_path / "ros2_control.mcap"
    nodes.get("-p", f"urdf_file:={urdf}", "-p", "lockstep:=true", "-p", f"record_file:={recording}")
    clock = peer.collect(Clock, "/clock")
    summary = drive(node_env, urdf, {joint: {"position": goal, "velocity": 0.0} for joint, goal in GOALS.items()})
    assert summary["quiet"] is not None and summary["quiet"] < 0.5, summary  # sent to the end
    assert summary["matched"] > 100, summary  # the node subscribes to the hardware's commands
    peer.spin_for(1.0)  # what queued up while the client ran (the peer did not spin)
    clock.clear()
    assert peer.spin_until(lambda: clock, 10)
    reached = seconds(clock[-1].clock)
    assert reached == pytest.approx(0.01 * round(reached / 0.01), abs=1e-9)  # whole publish periods
    # never more than one period per command; a few commands may be lost on the way (keep-last QoS)
    assert 0.009 * summary["matched"] <= reached <= 0.01 * summary["matched"] + 1e-9, (reached, summary)
    peer.spin_for(1.0)  # no command, no time
    assert seconds(clock[-1].clock) == reached, [seconds(c.clock) for c in clock]
    for joint, goal in GOALS.items():
        assert summary["state"][joint][0] == pytest.approx(goal, abs=1e-3), (joint, summary)
    assert peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=False)).success
    result = subprocess.run([str(MB_SIM), "replay", str(recording), "--quiet", "--tolerance", "1e-12"], env=node_env,
                            text=True, capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr + result.stdout
    replayed = int(re.search(r"replayed (\d+) commands", result.stdout)[1])
    assert replayed >= summary["matched"] * 0.9 and "rejected" not in result.stdout, (result.stdout, summary)
    assert largest(result.stdout) <= 1e-12, result.stdout



def test_in_lockstep_a_rate_physics_dt_does_not_divide_is_warned_and_the_period_is_whole_steps(repo, nodes, peer):
    """publish_rate 300 Hz at 1 ms: the controller period cannot be 3.33 steps; the node says so
    and each lockstep period is exactly 3 steps (the rounded period, as the warning gives it)."""
    node = nodes.get("-p", f"urdf_file:={repo / 'urdf' / 'arm6_ros2_control.urdf'}", "-p", "lockstep:=true",
                     "-p", "publish_rate:=300.0")
    assert wait_for_output(peer, node, r"1/publish_rate is not a multiple of physics_dt: a publish period of sim "
                                       r"time is 3 steps \(0.003 s\)"), node.output[-3000:]
    clock = peer.collect(Clock, "/clock")
    for _ in range(4):
        assert peer.call(Trigger, "/mb_sim/step", Trigger.Request()).success
    assert peer.spin_until(lambda: clock and seconds(clock[-1].clock) >= 0.012 - 1e-9, 10), clock[-1:]
    peer.spin_for(0.5)  # nothing more: no command, no time
    assert seconds(clock[-1].clock) == pytest.approx(0.012, abs=1e-12)


# -- initial_value: where ros2_control's simulated hardware starts a joint ------------------------
INITIAL_VALUE = ('<joint name="elbow_joint">\n      <command_interface name="position"/>\n      <command_interface '
                 'name="velocity"/>\n      <state_interface name="position"/>',
                 '<joint name="elbow_joint">\n      <command_interface name="position"/>\n      <command_interface '
                 'name="velocity"/>\n      <state_interface name="position">\n        <param name="initial_value">'
                 '{}</param>\n      </state_interface>')


def test_initial_value_is_read_as_where_the_joint_starts(repo, tmp_path):
    """Gazebo's and the mock hardware start a joint at its position state interface's
    initial_value; TIAGo Pro (example-robot-data) starts its grippers at 0.15 m that way."""
    urdf = variant(repo, tmp_path, INITIAL_VALUE[0], INITIAL_VALUE[1].format("0.8"))
    (system,) = ros2_control_systems(urdf.read_text())
    assert initial_positions([system], JOINTS) == {"elbow_joint": 0.8}
    assert initial_positions([system], ["shoulder_pan_joint"]) == {}  # only the robot's independent joints
    tiago = ros2_control_systems((example_robot_data_dir() / "tiago_pro_description/robots/tiago_pro.urdf").read_text())
    assert initial_positions(tiago, {"gripper_left_finger_joint", "gripper_right_finger_joint"}) == \
        {"gripper_left_finger_joint": 0.15, "gripper_right_finger_joint": 0.15}
    bad = variant(repo, tmp_path, INITIAL_VALUE[0], INITIAL_VALUE[1].format("${elbow_start}"))
    with pytest.raises(URDFError, match=r'<joint name="elbow_joint"> <state_interface name="position">: '
                                        r"initial_value '\$\{elbow_start\}' is not a finite number"):
        ros2_control_systems(bad.read_text())


@pytest.mark.parametrize("override, start", [((), 0.8), (("-p", "initial_positions.elbow_joint:=0.2"), 0.2)])
def test_the_node_starts_a_joint_at_its_initial_value_unless_initial_positions_says(repo, nodes, peer, tmp_path,
                                                                                   override, start):
    urdf = variant(repo, tmp_path, INITIAL_VALUE[0], INITIAL_VALUE[1].format("0.8"))
    node = nodes.get("-p", f"urdf_file:={urdf}", *override)
    states = peer.collect(JointState, "/joint_states")  # this node's (the one before it has ended)
    assert peer.spin_until(lambda: len(states) > 20, 60), node.output[-3000:]
    for state in (states[0], states[-1]):  # starts there, and holds it (position joints hold their start)
        assert dict(zip(state.name, state.position))["elbow_joint"] == pytest.approx(start, abs=1e-3), node.output[-3000:]
    assert ("initial positions from <ros2_control> initial_value: elbow_joint 0.8" in node.output) is True

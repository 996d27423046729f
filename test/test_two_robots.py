"""Two ``mb_sim_node`` processes side by side in one DDS domain, as ``launch/two_robots.launch.py``
runs them (the helpers of :mod:`test_node`): /robot1 simulates arm6 with ``frame_prefix:=robot1/``,
/robot2 the double pendulum with ``frame_prefix:=robot2/`` and ``publish_clock:=false``.  Each
publishes its own joint states and URDF in its namespace and only its own prefixed frames on the
global /tf and /tf_static; a command to /robot1 moves robot1 alone; /clock has one publisher."""
from __future__ import annotations

import time

import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from mb_sim.model import load_urdf
from mb_sim.ros.simulation_node import LATCHED_QOS
from test_node import RELIABLE, START_TIMEOUT, NodeProcess, Peer, node_env, peer, shared_peer, stop_node  # noqa: F401

#: As tf2_ros's static listener subscribes: each latched /tf_static publisher delivers its message to
#: a late joiner at once, and a depth of 1 would keep only one of the two robots' messages.
STATIC_LISTENER_QOS = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                 reliability=ReliabilityPolicy.RELIABLE)
#: Namespace -> URDF and the node's arguments beyond it.
ROBOTS = {
    "robot1": ("arm6", []),
    "robot2": ("double_pendulum", ["-p", "publish_clock:=false"]),
}
ARM6_JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
               "wrist_3_joint"]
PAN_EFFORT = 3.0  # [N m] on robot1's shoulder_pan_joint (vertical axis: gravity has no torque about it)
REFRESH = 0.05  # republishing period of the effort command (command_timeout is 0.5 s)


def _arguments(namespace: str) -> list[str]:
    robot, extra = ROBOTS[namespace]
    return ["-r", f"__ns:=/{namespace}", "-p", f"urdf_file:={robot}", "-p", f"frame_prefix:={namespace}/",
            "-p", f"world_frame:={namespace}/world", *extra]


@pytest.fixture(scope="module")
def robots(node_env):
    """Both nodes, started together (they compile in parallel), once each has published its URDF."""
    processes = {namespace: NodeProcess(node_env, *_arguments(namespace)) for namespace in ROBOTS}
    probe = Peer("mb_sim_test_two_robots_probe")
    try:
        descriptions = {ns: probe.collect(String, f"/{ns}/robot_description", LATCHED_QOS) for ns in ROBOTS}
        ready = probe.spin_until(lambda: all(descriptions.values())
                                 or not all(p.running() for p in processes.values()), START_TIMEOUT)
    finally:
        probe.close()
    if not ready or not all(p.running() for p in processes.values()):
        outputs = "\n".join(f"--- {ns}:\n{p.output}" for ns, p in processes.items())
        for process in processes.values():
            process.stop()
        pytest.fail(f"the two nodes did not start:\n{outputs}")
    yield processes
    for process in processes.values():
        stop_node(process)


def _robot_frames(repo, namespace: str) -> set[str]:
    """The frames robotN publishes: its world frame and its links, prefixed."""
    robot = load_urdf(repo / "urdf" / f"{ROBOTS[namespace][0]}.urdf")
    return {f"{namespace}/world"} | {f"{namespace}/{link}" for link in robot.links}


def test_each_node_publishes_its_own_robot_in_its_namespace(repo, robots, peer):
    descriptions = {ns: peer.collect(String, f"/{ns}/robot_description", LATCHED_QOS) for ns in ROBOTS}
    states = {ns: peer.collect(JointState, f"/{ns}/joint_states") for ns in ROBOTS}
    at_root = peer.collect(JointState, "/joint_states")
    assert peer.spin_until(lambda: all(descriptions.values()) and all(len(s) >= 5 for s in states.values()), 20)
    for namespace, (robot, _) in ROBOTS.items():
        assert descriptions[namespace][0].data == (repo / "urdf" / f"{robot}.urdf").read_text(), namespace
    assert all(list(state.name) == ARM6_JOINTS for state in states["robot1"])
    assert all(list(state.name) == ["shoulder", "elbow"] for state in states["robot2"])
    assert not at_root  # nothing at the root any more: no node publishes /joint_states


def test_tf_carries_each_robot_under_its_own_prefix_only(repo, robots, peer):
    frames = {ns: _robot_frames(repo, ns) for ns in ROBOTS}
    assert not frames["robot1"] & frames["robot2"]
    received: list[tuple[TFMessage, dict]] = []
    for topic, qos in (("/tf", RELIABLE), ("/tf_static", STATIC_LISTENER_QOS)):
        peer._entities.append(peer.node.create_subscription(
            TFMessage, topic, lambda message, info: received.append((message, info)), qos))
    seen = lambda: {t.child_frame_id for message, _ in received for t in message.transforms}  # noqa: E731
    assert peer.spin_until(lambda: seen() >= (frames["robot1"] | frames["robot2"]) - {"robot1/world", "robot2/world"},
                           20), sorted((frames["robot1"] | frames["robot2"]) - seen())
    # Which node sent each message: the publishers' gids as the graph lists them.
    publisher_of = {}
    for topic in ("/tf", "/tf_static"):
        for endpoint in peer.node.get_publishers_info_by_topic(topic):
            publisher_of[bytes(endpoint.endpoint_gid)] = endpoint.node_namespace.strip("/")
    for message, info in received:
        gid = bytes(info["publisher_gid"]["data"])
        namespace = next((ns for prefix, ns in publisher_of.items() if gid.startswith(prefix)
                          or prefix.startswith(gid)), None)
        assert namespace in ROBOTS, (gid, publisher_of)
        for transform in message.transforms:
            assert {transform.header.frame_id, transform.child_frame_id} <= frames[namespace], (namespace, transform)
    assert {namespace for namespace in publisher_of.values()} == set(ROBOTS)


def _until_both_have(peer, states: dict, count: int) -> None:
    start = {ns: len(received) for ns, received in states.items()}
    assert peer.spin_until(lambda: all(len(states[ns]) >= start[ns] + count for ns in states), 20)


def _velocities(state: JointState) -> dict[str, float]:
    return dict(zip(state.name, state.velocity))


def test_a_command_to_robot1_moves_robot1_and_leaves_robot2_hanging_at_rest(robots, peer):
    """robot1 is first held still by its position servos, then its vertical pan joint is driven by an
    effort alone (the others keep holding).  The double pendulum hanging straight down is an exact
    equilibrium: its joints stay at exactly 0 unless something (a command meant for robot1) reaches it."""
    states = {ns: peer.collect(JointState, f"/{ns}/joint_states") for ns in ROBOTS}
    publisher = peer.publisher(JointState, "/robot1/mb_sim/joint_commands")
    assert peer.node.count_subscribers("/robot2/mb_sim/joint_commands") == 1  # robot2 listens on its own
    publisher.publish(JointState(name=ARM6_JOINTS, position=[0.0] * len(ARM6_JOINTS)))  # references hold
    still = lambda: states["robot1"] and max(map(abs, states["robot1"][-1].velocity)) < 1e-3  # noqa: E731
    assert peer.spin_until(still, 20), states["robot1"][-1:]
    command = JointState(name=["shoulder_pan_joint"], effort=[PAN_EFFORT])
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        publisher.publish(command)
        peer.spin_for(REFRESH)
    _until_both_have(peer, states, 5)
    last = states["robot1"][-1]
    assert dict(zip(last.name, last.effort))["shoulder_pan_joint"] == PAN_EFFORT  # applied, as commanded
    velocities = _velocities(last)
    assert velocities.pop("shoulder_pan_joint") > 0.3, last  # ~1 s at 3 N m / at most 3.4 kg m^2
    assert max(map(abs, velocities.values())) < 0.05, last  # the others still held
    assert len(states["robot2"]) > 100  # robot2 ran all along (100 Hz)
    for state in states["robot2"]:
        assert list(state.position) == [0.0, 0.0] and list(state.velocity) == [0.0, 0.0], state
        assert list(state.effort) == [0.0, 0.0], state
    # Had robot1's command reached robot2, it would have refused it, naming the joint.
    assert "shoulder_pan_joint" not in robots["robot2"].output, robots["robot2"].output


def test_only_robot1_publishes_clock(robots, peer):
    ticks = peer.collect(Clock, "/clock")
    assert peer.spin_until(lambda: len(ticks) >= 5, 20)
    (clock,) = peer.node.get_publishers_info_by_topic("/clock")
    assert (clock.node_namespace, clock.node_name) == ("/robot1", "mb_sim")
    assert len(peer.node.get_publishers_info_by_topic("/tf")) == 2  # both discovered, yet one /clock

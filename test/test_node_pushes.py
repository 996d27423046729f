"""Pushes through the node (issue 39, item 3): ``wrench_links`` gives ~/apply_wrench/<link>
(geometry_msgs/WrenchStamped), over real DDS with the node in its own process, in lockstep so a
push lasts exactly the periods it is held.  The body's pose must be the library's for the same
push (the node is a shell over the Simulator); a frame_id neither the world's nor the link's is
refused and pushes nothing."""
from __future__ import annotations

import re

import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool
from tf2_msgs.msg import TFMessage

from mb_sim.sim import Simulator
from test_node import node_env, nodes, peer, reset, shared_peer, stamp_of  # noqa: F401
from test_node_commands import lockstep_run
from test_replay import largest, replay

PERIOD = 0.01  # the default publish rate, 100 Hz
FORCE = np.array([3.0, -2.0, 30.0])


@pytest.fixture
def free_body(nodes, repo):
    return nodes.get("-p", f"urdf_file:={repo / 'urdf' / 'free_body.urdf'}", "-p", "lockstep:=true",
                     "-p", "wrench_links:=[body]")


def push(frame_id: str, force=(0.0, 0.0, 0.0), torque=(0.0, 0.0, 0.0)) -> WrenchStamped:
    message = WrenchStamped()
    message.header.frame_id = frame_id
    message.wrench.force.x, message.wrench.force.y, message.wrench.force.z = (float(v) for v in force)
    message.wrench.torque.x, message.wrench.torque.y, message.wrench.torque.z = (float(v) for v in torque)
    return message


def body_translation(peer, tf: list, time: float) -> np.ndarray:
    """The body's translation in the /tf message stamped `time`."""
    def found():
        return [t for m in tf for t in m.transforms if t.child_frame_id == "body" and abs(stamp_of(t) - time) < 1e-9]
    assert peer.spin_until(found, 20.0), f"no /tf of the body at t = {time}"
    v = found()[0].transform.translation
    return np.array([v.x, v.y, v.z])


def library_run(repo, model_cache, force, frame: str = "world") -> np.ndarray:
    """The same push in plain Python: one period held, then another without."""
    sim = Simulator(repo / "urdf" / "free_body.urdf", wrench_links=["body"], cache_dir=model_cache)
    sim.apply_wrench("body", force=force, frame=frame, duration=PERIOD)
    sim.advance(2 * PERIOD)
    return sim.outputs(dynamics=False).link_poses["body"][:3, 3]


def test_a_push_held_one_period_moves_the_body_as_the_library_does(free_body, peer, repo, model_cache):
    tf = peer.collect(TFMessage, "/tf")
    pushes = peer.publisher(WrenchStamped, "/mb_sim/apply_wrench/body")
    reset(peer)
    pushes.publish(push("world", FORCE))  # from t = 0, one period (lockstep)
    body_translation(peer, tf, PERIOD)
    pushes.publish(push("", ))  # a zero wrench ends it; one period more
    node = body_translation(peer, tf, 2 * PERIOD)
    expected = library_run(repo, model_cache, FORCE)
    assert np.allclose(node, expected, rtol=0, atol=1e-12)
    falling = library_run(repo, model_cache, (0.0, 0.0, 0.0))
    assert abs(node[2] - falling[2]) > 0.5 * 30.0 / 2.0 * PERIOD**2  # the push did move it

    reset(peer)
    pushes.publish(push("body", FORCE))  # in the link's frame (level at the start: the same push)
    body_translation(peer, tf, PERIOD)
    pushes.publish(push("world"))
    assert np.allclose(body_translation(peer, tf, 2 * PERIOD), library_run(repo, model_cache, FORCE, "body"),
                       rtol=0, atol=1e-12)


def test_hostile_pushes_are_refused_and_named(free_body, peer, repo, model_cache):
    tf = peer.collect(TFMessage, "/tf")
    pushes = peer.publisher(WrenchStamped, "/mb_sim/apply_wrench/body")
    reset(peer)
    pushes.publish(push("camera_mount", FORCE))  # refused: no advance in lockstep
    pushes.publish(push("world", (float("nan"), 0.0, 0.0)))
    pushes.publish(push("world", (0.0, 0.0, 1e9)))  # refused too (its warning throttled with the NaN's)
    pushes.publish(push("world", (0.0, 0.0, 0.0)))
    body_translation(peer, tf, PERIOD)
    pushes.publish(push("world", (0.0, 0.0, 0.0)))
    node = body_translation(peer, tf, 2 * PERIOD)
    assert np.allclose(node, library_run(repo, model_cache, (0.0, 0.0, 0.0)), rtol=0, atol=1e-12)
    assert "push on link 'body': frame_id 'camera_mount' is neither the world's nor the link's" in free_body.output
    assert "push on link 'body': force is not finite: [nan, 0.0, 0.0]" in free_body.output


def test_a_recording_with_pushes_replays_to_rounding(nodes, node_env, peer, tmp_path):
    """arm6 pushed at its tool frame (world and tool frames, changing every period) for 1 s in
    lockstep, recorded; ``mb-sim replay`` loads the robot with the same wrench links and frames."""
    path = tmp_path / "pushes.mcap"
    nodes.get("-p", "urdf_file:=arm6", "-p", "lockstep:=true", "-p", f"record_file:={path}",
              "-p", "wrench_links:=[tool0, wrist_2_link]")
    states = peer.collect(JointState, "/joint_states")
    tool = peer.publisher(WrenchStamped, "/mb_sim/apply_wrench/tool0")
    wrist = peer.publisher(WrenchStamped, "/mb_sim/apply_wrench/wrist_2_link")
    count = [0]

    def command(state) -> None:
        k = count[0] = count[0] + 1
        if k % 2:
            tool.publish(push("tool0" if k % 4 == 1 else "world", (20.0 * np.sin(0.1 * k), 5.0, -10.0), (0, 1.0, 0)))
        else:
            wrist.publish(push("world", (0.0, 0.0, 15.0 if k < 60 else 0.0)))

    reset(peer)
    lockstep_run(peer, states, command, 100)
    moved = max(abs(p) for p in states[-1].position)
    assert peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=False)).success
    result = replay(path, node_env, "--tolerance", "1e-12")
    assert result.returncode == 0, result.stderr + result.stdout
    assert re.search(r"replayed 100 commands", result.stdout), result.stdout
    assert largest(result.stdout) <= 1e-12
    assert moved > 0.01

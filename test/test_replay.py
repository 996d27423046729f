"""Record and replay over real DDS: a node process records a controller's commands and its states
to MCAP (from the start with ``record_file``, or by ``~/record``), then ``mb-sim replay`` re-runs
the recording offline in its own process and reports the largest difference from the states."""
from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

from builtin_interfaces.msg import Duration
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from test_node import node_env, nodes, peer, reset, shared_peer  # noqa: F401
from test_node_commands import lockstep_run
from test_servos import ARM6

MB_SIM = Path(sys.executable).parent / "mb-sim"


def replay(path: Path, env: dict, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(MB_SIM), "replay", str(path), "--quiet", *options], env=env, text=True,
                          capture_output=True, timeout=300)


def largest(output: str) -> float:
    """The largest of the three differences `mb-sim replay` prints."""
    values = re.findall(r"(position|velocity|effort) ([0-9.e+-]+|inf|nan)", output)
    assert len(values) == 3, output
    return max(float(v) for _, v in values)


def test_a_ten_second_lockstep_recording_replays_to_rounding(nodes, node_env, peer, tmp_path):
    path = tmp_path / "lockstep.mcap"
    nodes.get("-p", "urdf_file:=arm6", "-p", "lockstep:=true", "-p", f"record_file:={path}")
    states = peer.collect(JointState, "/joint_states")
    commands = peer.publisher(JointState, "/mb_sim/joint_commands")
    efforts = peer.publisher(Float64MultiArray, "/mb_sim/effort_commands")
    trajectories = peer.publisher(JointTrajectory, "/mb_sim/joint_trajectory")
    nan, count = math.nan, [0]

    def command(state) -> None:
        k = count[0] = count[0] + 1
        if k == 400:  # a trajectory for every joint, then position/velocity/effort mixes
            points = [JointTrajectoryPoint(positions=[0.2 * (i + 1) * s for i in range(6)], velocities=[0.0] * 6,
                                           time_from_start=Duration(sec=s)) for s in (1, 2)]
            trajectories.publish(JointTrajectory(joint_names=ARM6, points=points))
        elif k % 3 == 0 or k > 700:
            efforts.publish(Float64MultiArray(data=[5.0 * (0.3 - p) - 1.0 * v for p, v in zip(state.position, state.velocity)]))
        elif k < 400:
            commands.publish(JointState(name=ARM6, position=[0.4, nan, -0.3, nan, nan, nan],
                                        velocity=[nan, 0.5, nan, nan, nan, nan],
                                        effort=[0.0, 0.0, 0.0, 1.0, -1.0, 0.5]))
        else:
            trajectories.publish(JointTrajectory())  # no message type change: an empty trajectory holds all joints

    reset(peer)
    lockstep_run(peer, states, command, 1000)
    assert peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=False)).success
    result = replay(path, node_env, "--tolerance", "1e-12")
    assert result.returncode == 0, result.stderr + result.stdout
    assert re.search(r"replayed 1000 commands and 1 events over 10 s", result.stdout), result.stdout
    assert int(re.search(r"compared (\d+) joint states", result.stdout)[1]) >= 1001
    assert largest(result.stdout) <= 1e-12


def test_a_recording_started_by_the_service_in_real_time_replays(nodes, node_env, peer, tmp_path):
    path = tmp_path / "service.mcap"
    nodes.get("-p", "urdf_file:=pendulum", "-p", "command_timeout:=0.0", "-p", f"record_file:={path}")
    peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=False))  # the one from the start: not wanted
    states = peer.collect(JointState, "/joint_states")
    commands = peer.publisher(JointState, "/mb_sim/joint_commands")
    assert peer.spin_until(lambda: len(states) > 5, 10.0)
    response = peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=True))
    assert response.success and str(path) in response.message
    for k in range(8):  # arrive between ticks, whenever they do
        commands.publish(JointState(name=["hinge"], effort=[2.0 * math.sin(k)]))
        peer.spin_for(0.05)
    reset(peer)
    commands.publish(JointState(name=["hinge"], position=[0.5]))
    peer.spin_for(0.3)
    assert peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=False)).success
    result = replay(path, node_env)
    assert result.returncode == 0, result.stderr
    assert re.search(r"replayed 9 commands and 1 events", result.stdout), result.stdout
    assert largest(result.stdout) <= 1e-12


def test_replaying_a_file_that_is_not_a_recording_says_so_in_one_line(tmp_path, node_env):
    path = tmp_path / "not.mcap"
    path.write_bytes(b"hello")
    result = replay(path, node_env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert re.fullmatch(r"mb-sim: .*not\.mcap: not a readable MCAP recording.*\n", result.stderr), result.stderr
    assert replay(tmp_path / "missing.mcap", node_env).stderr == f"mb-sim: {tmp_path / 'missing.mcap'}: no such file\n"

"""Identification through the node, as on a real robot: ``mb-sim excite``'s trajectory published on
~/joint_trajectory (a real rclpy publisher, the node in its own process), /joint_states received by
a subscriber and written as a recording, and a wrongly massed URDF corrected from it; the node's
own recording (``record_file``) of the run gives the same fit."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from builtin_interfaces.msg import Duration
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from mb_sim.identify.identification import identify
from mb_sim.identify.rehearsal import write_joint_states
from mb_sim.identify.signals import read_joint_states
from mb_sim.identify.validation import replay_error
from test_node import node_env, nodes, peer, shared_peer, stamp_of  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
PLANAR = REPO / "urdf" / "planar_arm3.urdf"
MB_SIM = Path(sys.executable).parent / "mb-sim"
DURATION = 12.0


def _trajectory(tmp_path: Path) -> JointTrajectory:
    out = tmp_path / "excitation.json"
    result = subprocess.run([str(MB_SIM), "excite", str(PLANAR), "--duration", str(DURATION), "--period", "6",
                             "--rate", "50", "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    message = json.loads(out.read_text())
    points = [JointTrajectoryPoint(positions=p["positions"], velocities=p["velocities"],
                                   accelerations=p["accelerations"],
                                   time_from_start=Duration(**p["time_from_start"])) for p in message["points"]]
    return JointTrajectory(joint_names=message["joint_names"], points=points)


def test_an_excitation_run_through_the_node_corrects_a_wrong_urdf(nodes, peer, tmp_path):
    trajectory = _trajectory(tmp_path)
    node_recording = tmp_path / "node.mcap"
    nodes.get("-p", f"urdf_file:={PLANAR}", "-p", "start_paused:=true", "-p", "real_time_factor:=1.0",
              "-p", "publish_rate:=100.0", "-p", f"record_file:={node_recording}")
    states = peer.collect(JointState, "/joint_states")
    publisher = peer.publisher(JointTrajectory, "/mb_sim/joint_trajectory")
    assert peer.spin_until(lambda: publisher.get_subscription_count() > 0, 10.0)
    publisher.publish(trajectory)  # stamp zero: starts on arrival, at the paused time 0
    peer.spin_until(lambda: False, 1.0)  # delivered (reliable) before the node resumes
    assert peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=False)).success
    assert peer.spin_until(lambda: states and stamp_of(states[-1]) >= DURATION, 60.0)
    run = sorted({stamp_of(s): s for s in states if stamp_of(s) <= DURATION}.items())
    times = np.array([t for t, _ in run])
    assert np.allclose(np.diff(times), 0.01), np.diff(times)
    names = list(run[0][1].name)
    recording = write_joint_states(tmp_path / "run.mcap", times, names,
                                   *(np.array([getattr(s, field) for _, s in run]) for field in
                                     ("position", "velocity", "effort")))

    heavy = tmp_path / "heavy.urdf"
    heavy.write_text(re.sub(r'<mass value="([0-9.]+)"/>', lambda m: f'<mass value="{1.3 * float(m.group(1)):g}"/>',
                            PLANAR.read_text()))
    result = identify(heavy, recording, window=0.05)
    corrected = tmp_path / "corrected.urdf"
    corrected.write_text(result.urdf_text)
    signals = read_joint_states(recording)
    before, after = replay_error(heavy, signals), replay_error(corrected, signals)
    assert before.total > 10 * after.total, (before.total, after.total)
    truth = result.base.of(_urdf_parameters(PLANAR, result))
    assert np.all(np.abs(result.fit.values - truth) <= 0.02 * np.abs(truth).max())

    # the node's own recording of the same run (its recorder writes every /joint_states it published)
    assert peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=False)).success  # closes the file
    from_node = identify(heavy, node_recording, window=0.05)
    np.testing.assert_allclose(from_node.fit.values, result.fit.values, rtol=0.02,
                               atol=0.01 * np.abs(result.fit.values).max())


def _urdf_parameters(path: Path, result) -> np.ndarray:
    from mb_sim.identify.parameters import prior_parameters
    from mb_sim.identify.regressor import NumericRegressor
    from mb_sim.model import load_urdf

    robot = load_urdf(path)
    return prior_parameters(robot, NumericRegressor(robot).symbolic)

"""``mb-sim identify`` and ``mb-sim excite`` run as a user would, and bad input named in one line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from identify_recordings import inverse_dynamics_recording, write
from mb_sim.identify.signals import read_joint_states
from mb_sim.session.trajectory_commands import TrajectoryPoint, trajectory_waypoints

MB_SIM = Path(sys.executable).parent / "mb-sim"
REPO = Path(__file__).resolve().parent.parent
PLANAR = REPO / "urdf" / "planar_arm3.urdf"

pytestmark = pytest.mark.process


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(MB_SIM), *map(str, args)], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    return inverse_dynamics_recording(PLANAR, tmp_path_factory.mktemp("rec") / "planar.mcap", duration=8.0)


def test_identify_writes_the_corrected_urdf_json_and_plot(recording, tmp_path):
    heavy = tmp_path / "planar_arm3.urdf"
    heavy.write_text(PLANAR.read_text().replace('<mass value="1.5"/>', '<mass value="2.5"/>'))
    out, report, plot = tmp_path / "fixed.urdf", tmp_path / "report.json", tmp_path / "replay.png"
    result = run("identify", heavy, recording, "-o", out, "--json", report, "--validate", "--plot", plot,
                 "--window", "0.01")
    assert result.returncode == 0, result.stderr
    assert "15 base parameters of 36" in result.stdout
    assert "link 'link2' mass 2.5 ->" in result.stdout
    summary = json.loads(report.read_text())
    assert summary["replay"]["corrected"] < summary["replay"]["urdf"] / 10
    assert plot.stat().st_size > 10_000 and out.read_text().startswith("<?xml")
    assert any(abs(row["value"] - row["urdf"]) > 0.1 for row in summary["base_parameters"])


def test_excite_writes_a_trajectory_the_node_accepts(tmp_path):
    out = tmp_path / "excite.yaml"
    result = run("excite", PLANAR, "--duration", "6", "--period", "3", "--harmonics", "3", "--rate", "20", "-o", out)
    assert result.returncode == 0, result.stderr
    message = yaml.safe_load(out.read_text())
    assert message["joint_names"] == ["joint1", "joint2", "joint3"]
    points = [TrajectoryPoint(p["time_from_start"]["sec"] + 1e-9 * p["time_from_start"]["nanosec"],
                              p["positions"], p["velocities"], p["accelerations"]) for p in message["points"]]
    waypoints = trajectory_waypoints(message["joint_names"], points, 0.0, message["joint_names"])
    assert len(waypoints["joint1"]) == 121
    positions = np.array([p.positions for p in points])
    assert np.abs(positions[0]).max() == 0 and np.abs(positions[-1]).max() < 1e-12  # starts and ends at rest
    assert np.all(np.abs(positions) <= 0.9 * np.array([3.1416, 2.8, 2.8]))
    assert "condition number" in result.stdout


def _one_line(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 1, result.stdout
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr and lines[-1].startswith("mb-sim:"), result.stderr
    for word in words:
        assert word in lines[-1], lines[-1]


def test_bad_recordings_are_named_in_one_line(recording, tmp_path):
    signals = read_joint_states(recording)
    no_efforts = write(tmp_path / "no_efforts.mcap", signals.times, signals.joint_names, signals.positions,
                       signals.velocities, np.full_like(signals.positions, np.nan))
    _one_line(run("identify", PLANAR, no_efforts), "no_efforts.mcap", "no efforts")
    renamed = write(tmp_path / "renamed.mcap", signals.times, ["joint1", "joint2", "wrist"], signals.positions,
                    signals.velocities, signals.efforts)
    _one_line(run("identify", PLANAR, renamed), "renamed.mcap", "not in the URDF", "wrist")
    short = write(tmp_path / "short.mcap", signals.times[:50], signals.joint_names, signals.positions[:50],
                  signals.velocities[:50], signals.efforts[:50])
    _one_line(run("identify", PLANAR, short), "short.mcap", "too few", "record longer")
    still = signals.positions.copy()
    still[:, 2] = 0.3  # the last joint never moves: its friction is not excited (its link is, by its effort)
    flat = write(tmp_path / "still.mcap", signals.times, signals.joint_names, still,
                 np.column_stack([signals.velocities[:, :2], np.zeros(len(still))]), signals.efforts)
    _one_line(run("identify", PLANAR, flat), "still.mcap", "not exciting enough", "joint3.friction")
    garbage = tmp_path / "garbage.mcap"
    garbage.write_bytes(b"\x89MCAP0\r\n" + bytes(range(256)) * 4)
    _one_line(run("identify", PLANAR, garbage), "garbage.mcap", "not a readable MCAP")
    _one_line(run("identify", PLANAR, tmp_path / "missing.mcap"), "missing.mcap")
    _one_line(run("identify", PLANAR, recording, "--topic", "/nothing"), "no JointState messages on topic /nothing")


def test_robots_the_regressor_does_not_cover_are_refused_by_name(recording):
    _one_line(run("identify", REPO / "urdf" / "four_bar.urdf", recording), "four_bar", "constraint rows")
    _one_line(run("identify", REPO / "urdf" / "diff_drive.urdf", recording), "diff_drive")

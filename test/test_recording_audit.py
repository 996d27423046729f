"""Recordings that cannot be written, and recordings cut short (issue 24), one test each, so they
never come back.  Each node is a real process (as in :mod:`test_node`) writing real files: a
recording that fails says so in one line and as an ERROR in /diagnostics, stops, and the
simulation goes on; a killed node leaves a file ``mb-sim replay`` reads up to where it ends;
no recording overwrites a file.
"""
from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool

from mb_sim.resources import robot_path
from mb_sim.ros.simulation_node import LATCHED_QOS
from mb_sim.sim import Simulator

from test_node import NODE_EXE, START_TIMEOUT, NodeProcess, Peer, node_env, nodes, peer, shared_peer  # noqa: F401
from test_node import stamp_of, stop_node, wait_for_output
from test_replay import replay

#: recordings of real node processes failing every way: make test-slow
pytestmark = pytest.mark.slow


class OwnNode(NodeProcess):
    """A node process started in `cwd` (where ~/record puts its time-stamped files), with files it
    writes limited to `file_size` bytes when given (the kernel refuses writes beyond: EFBIG)."""

    def __init__(self, env: dict[str, str], cwd: Path, *arguments: str, file_size: int | None = None) -> None:
        def limit() -> None:
            if file_size is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

        self.proc = subprocess.Popen([str(NODE_EXE), "--ros-args", *arguments], env=env, text=True, cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=limit)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()


@pytest.fixture
def own_node(nodes, node_env, peer):
    """Start an :class:`OwnNode` (the pool's node stopped first: they share names); stopped at the end."""
    started: list[OwnNode] = []

    def start(cwd: Path, *arguments: str, file_size: int | None = None) -> OwnNode:
        nodes.close()
        process = OwnNode(node_env, cwd, *arguments, file_size=file_size)
        started.append(process)
        probe = Peer("mb_sim_test_probe")
        try:
            description = probe.collect(String, "/robot_description", LATCHED_QOS)
            assert probe.spin_until(lambda: description or not process.running(), START_TIMEOUT), process.output
        finally:
            probe.close()
        states = peer.collect(JointState, "/joint_states")  # the new node discovered (not the last one's
        assert peer.spin_until(lambda: states, 20.0), process.output  # lingering services)
        return process

    yield start
    for process in started:
        if process.proc.returncode is None:
            stop_node(process)


def record(peer, data: bool) -> SetBool.Response:
    return peer.call(SetBool, "/mb_sim/record", SetBool.Request(data=data))


def recording_error(peer, text: str, timeout: float = 10.0) -> DiagnosticStatus | None:
    """The first /diagnostics status at ERROR whose message contains `text`, within `timeout` s."""
    diagnostics = peer.collect(DiagnosticArray, "/diagnostics")
    found = lambda: [s for d in diagnostics for s in d.status  # noqa: E731
                     if s.level == DiagnosticStatus.ERROR and text in s.message]
    return found()[0] if peer.spin_until(found, timeout) else None


def advancing(peer, seconds: float = 5.0) -> bool:
    """Whether the simulation runs on: /joint_states stamps advance."""
    states = peer.collect(JointState, "/joint_states")
    return peer.spin_until(lambda: len(states) > 2 and stamp_of(states[-1]) > stamp_of(states[0]), seconds)


def starts_without_recording(own_node, peer, tmp_path: Path, record_file: str, reason: str) -> None:
    """A node given an unwritable record_file: one line naming it and why, an ERROR in /diagnostics,
    and the simulation runs."""
    node = own_node(tmp_path, "-p", f"record_file:={record_file}")
    assert node.running(), node.output
    lines = [line for line in node.lines if record_file in line]
    assert len(lines) == 1 and re.search(f"ERROR.*parameter record_file: cannot record to {re.escape(record_file)}"
                                         f"[^ ]*: {reason}", lines[0]), node.output
    status = recording_error(peer, record_file)
    assert status is not None, node.output
    assert advancing(peer), node.output
    assert "Traceback" not in node.output


def test_record_file_a_directory(own_node, peer, tmp_path):
    # open(directory, "wb") raised in the node's constructor: the node did not start.
    starts_without_recording(own_node, peer, tmp_path, str(tmp_path), "it is a directory")


def test_record_file_in_a_missing_directory(own_node, peer, tmp_path):
    starts_without_recording(own_node, peer, tmp_path, str(tmp_path / "missing" / "run.mcap"),
                             "No such file or directory")


def test_record_file_read_only(own_node, peer, tmp_path):
    if os.geteuid() == 0:  # root writes into a read-only directory: sysfs refuses everyone
        path = "/sys/mb_sim_audit.mcap"
    else:
        (tmp_path / "ro").mkdir(mode=0o555)
        path = str(tmp_path / "ro" / "run.mcap")
    starts_without_recording(own_node, peer, tmp_path, path, "Permission denied")


def test_record_file_dev_full(own_node, peer, tmp_path):
    # The full device accepted the buffered header; the first full chunk (1 MiB later) raised in
    # a timer callback and killed the node, and /diagnostics said OK until then.
    node = own_node(tmp_path, "-p", "record_file:=/dev/full")
    assert node.running(), node.output
    assert re.search(r"ERROR.*/dev/full: cannot write: No space left on device", node.output), node.output
    assert recording_error(peer, "No space left on device") is not None, node.output
    assert advancing(peer), node.output


def test_record_service_into_a_missing_directory_reports_in_diagnostics(own_node, peer, tmp_path):
    node = own_node(tmp_path, "-p", f"record_file:={tmp_path / 'gone' / 'run.mcap'}")
    response = record(peer, True)
    assert not response.success and "No such file or directory" in response.message, response.message
    assert recording_error(peer, "gone/run.mcap") is not None, node.output
    assert advancing(peer) and node.running(), node.output


def test_a_write_failing_mid_recording_stops_the_recording_not_the_node(own_node, peer, tmp_path, node_env):
    # Files limited to 200 kB: after a few seconds of 1 kHz states the kernel refuses the write
    # (EFBIG), as a full disk would.  Before, the OSError escaped a callback and killed the node.
    path = tmp_path / "limited.mcap"
    Simulator(robot_path("pendulum"), cache_dir=node_env["MB_SIM_CACHE_DIR"])  # compiled before the limit
    node = own_node(tmp_path, "-p", "publish_rate:=1000.0", "-p", f"record_file:={path}", file_size=200_000)
    assert wait_for_output(peer, node, r"ERROR.*limited\.mcap: cannot write: File too large; recording stopped",
                           timeout=60.0), node.output
    assert recording_error(peer, "File too large") is not None, node.output
    assert advancing(peer) and node.running(), node.output
    assert not record(peer, False).success  # the recording is over
    result = replay(path, node_env)
    assert result.returncode == 0, result.stderr
    assert int(re.search(r"compared (\d+) joint states", result.stdout)[1]) > 100, result.stdout
    assert re.fullmatch(r"mb-sim: note: .*limited\.mcap (ends|is damaged) at byte .*\n", result.stderr), result.stderr


def test_a_killed_node_loses_at_most_the_last_second(own_node, peer, tmp_path, node_env):
    # mcap's Writer kept 1 MiB chunks in memory: after SIGKILL a 10 s recording at 100 Hz was
    # magic and a header only.  Now chunks are small and flushed every 0.5 s of wall time.
    path = tmp_path / "killed.mcap"
    node = own_node(tmp_path, "-p", "publish_rate:=100.0", "-p", f"record_file:={path}")
    states = peer.collect(JointState, "/joint_states")
    assert peer.spin_until(lambda: states and stamp_of(states[-1]) > 3.0, 30.0), node.output
    last = stamp_of(states[-1])
    node.proc.send_signal(signal.SIGKILL)
    node.proc.wait()
    result = replay(path, node_env)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"mb-sim: note: .*killed\.mcap ends at byte \d+ .*truncated.*replayed up to there\n",
                        result.stderr), result.stderr
    replayed = float(re.search(r"over ([0-9.e+-]+) s of sim time", result.stdout)[1])
    assert replayed >= last - 1.0, (replayed, last, result.stdout)
    assert float(re.search(r"position ([0-9.e+-]+)", result.stdout)[1]) <= 1e-12, result.stdout


def test_restarting_the_recording_never_truncates_the_earlier_file(own_node, peer, tmp_path, node_env):
    # ~/record true after false reopened record_file with "wb": the first recording was lost.
    path = tmp_path / "run.mcap"
    node = own_node(tmp_path, "-p", f"record_file:={path}")
    assert advancing(peer)
    assert record(peer, False).success
    first = path.read_bytes()
    started = record(peer, True)
    assert started.success and f"recording to {tmp_path / 'run_2.mcap'}" in started.message, started.message
    assert advancing(peer)
    assert record(peer, False).success
    assert path.read_bytes() == first and (tmp_path / "run_2.mcap").stat().st_size > 0
    for recording in (path, tmp_path / "run_2.mcap"):
        result = replay(recording, node_env)
        assert result.returncode == 0 and result.stderr == "", result.stderr
    assert node.running(), node.output


def test_recordings_started_within_a_second_get_distinct_files(own_node, peer, tmp_path):
    # Names were mb_sim_<date>_<time>.mcap to the second: the second recording truncated the first.
    node = own_node(tmp_path)
    paths = []
    for _ in range(3):
        started = record(peer, True)
        assert started.success, started.message
        paths.append(re.search(r"recording to (\S+\.mcap)", started.message)[1])
        assert record(peer, False).success
    assert len(set(paths)) == 3, paths
    assert all((tmp_path / Path(p).name).stat().st_size > 0 for p in paths), paths
    assert node.running(), node.output

"""The simulation :class:`~mb_sim.session.Session` without ROS: a real Simulator on the pendulum
URDF (compiled into a temporary cache), driven through the session's public API only.  Nothing
here starts DDS; the last test checks that nothing imported rclpy.

The wall clock is a plain list the test moves by hand, so what the command clock does across a
pause is exact rather than timed.
"""
from __future__ import annotations

import subprocess
import sys

import pytest
from mcap.reader import make_reader
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from mb_sim.resources import robot_path
from mb_sim.session import MAX_ADVANCE_STEPS, Session, SessionError
from mb_sim.session.pacing import is_lagging, lag_warning
from mb_sim.sim import Simulator

DT = 1e-3
pytestmark = pytest.mark.filterwarnings("ignore:.*has no effort limit")


@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


@pytest.fixture
def wall() -> list[float]:
    """The wall clock [s] the session reads: ``wall[0]``, moved by the test."""
    return [100.0]


@pytest.fixture
def session(cache_dir, wall) -> Session:
    sim = Simulator(str(robot_path("pendulum")), dt=DT, cache_dir=cache_dir)
    return Session(sim, command_timeout=0.5, clock=lambda: wall[0])


class Heard:
    """The events a session announced, in order."""

    def __init__(self, session: Session) -> None:
        self.events: list[tuple[str, dict]] = []
        session.subscribe(lambda event, **details: self.events.append((event, details)))

    @property
    def names(self) -> list[str]:
        return [event for event, _ in self.events]


def test_pause_step_resume_and_reset(session):
    heard = Heard(session)
    assert session.running and not session.paused and session.failure is None
    with pytest.raises(SessionError, match="not paused"):
        session.step(1)
    session.pause()
    session.pause()  # a no-op: already paused
    assert session.step(10) and session.time == pytest.approx(10 * DT)
    session.resume()
    assert session.running
    assert session.reset() is False and session.time == 0.0
    assert heard.names == ["stopped", "started", "reset"]


def test_a_pause_stops_the_command_clock(session, wall):
    session.command("effort_commands", Float64MultiArray(data=[2.0]), now=wall[0])
    session.pause()
    wall[0] += 10.0  # paused far longer than the command timeout
    assert session.current_inputs()[0][0] == 2.0
    session.resume()
    wall[0] += 0.4
    assert session.current_inputs()[0][0] == 2.0
    wall[0] += 0.2  # 0.6 s of running since the command: stale
    assert session.current_inputs()[0][0] == 0.0


def test_stale_commands_are_announced_once(session, wall):
    heard = Heard(session)
    session.command("effort_commands", Float64MultiArray(data=[1.0]))
    wall[0] += 1.0
    session.current_inputs()
    session.current_inputs()
    assert heard.events == [("stale", {"joints": list(session.sim.actuated_joints), "motors": []})]


def test_position_commands_hold_and_only_a_given_feed_forward_goes_stale(session, wall):
    """README: effort commands expire after command_timeout, positions hold until the next command.
    A position without an effort never times out (nothing to announce: the servo holds); one with a
    feed-forward effort does, that effort falling to zero."""
    heard = Heard(session)
    joint = session.sim.actuated_joints[0]
    session.command("joint_commands", JointState(name=[joint], position=[0.3]), now=wall[0])
    wall[0] += 5.0
    session.current_inputs()
    assert heard.events == [] and not session.router.efforts.stale
    assert session.sim.servos.mode(joint) == "position"
    session.command("joint_commands", JointState(name=[joint], position=[0.3], effort=[0.7]), now=wall[0])
    assert session.current_inputs()[0][0] == 0.7
    wall[0] += 0.6
    assert session.current_inputs()[0][0] == 0.0
    assert heard.events == [("stale", {"joints": [joint], "motors": []})]
    assert session.sim.servos.mode(joint) == "position"  # the reference still holds


def test_divergence_stops_the_run_until_a_reset(session):
    heard = Heard(session)
    session.command("effort_commands", Float64MultiArray(data=[1e308]))  # finite, but the state overflows
    assert not session.advance(100, session.current_inputs())
    assert session.failure and not session.running
    with pytest.raises(SessionError, match="diverged"):
        session.resume()
    with pytest.raises(SessionError, match="diverged"):
        session.step(1)
    assert session.reset() is True
    assert session.running and session.failure is None and session.time == 0.0
    assert session.current_inputs()[0][0] == 0.0  # the commands were cleared
    assert heard.names == ["diverged", "stopped", "started", "reset"]


def _string(text: str) -> bytes:
    """A std_msgs/String as CDR bytes, without rclpy: little-endian header, length, text, NUL."""
    data = text.encode() + b"\0"
    return b"\0\1\0\0" + len(data).to_bytes(4, "little") + data


def test_a_second_start_while_recording_is_refused_and_keeps_the_first(session, tmp_path):
    first, second = tmp_path / "first.mcap", tmp_path / "second.mcap"
    session.start_recording(str(first), {"physics_dt": DT}, _string("<robot/>"), _string)
    assert session.recording == str(first)
    with pytest.raises(SessionError, match=f"already recording to {first}"):
        session.start_recording(str(second), {}, _string("<robot/>"), _string)
    with pytest.raises(SessionError):
        session.start_recording(str(first), {}, _string("<robot/>"), _string)  # the same file: not truncated
    assert not second.exists() and session.recording == str(first)
    session.pause()
    session.step(5)
    session.reset()
    assert session.stop_recording() == str(first) and session.recording is None
    with first.open("rb") as stream:
        topics = [channel.topic for _, channel, _ in make_reader(stream).iter_messages()]
    assert topics == ["/mb_sim/recording", "/robot_description", "/mb_sim/events"]


def test_the_lag_warning_without_a_measured_factor():
    # Within half a window of a reset or resume only the catch-up cap says the run lags.
    assert is_lagging(1.0, None, capped_recently=True)
    assert "not measured yet" in lag_warning(1.0, None)
    assert "achieved real-time factor 0.50" in lag_warning(1.0, 0.5)
    # Judged lagging by a cut tick while the rate is on target: not "cannot keep up" at 1.00.
    assert "cannot keep up" not in lag_warning(1.0, 1.0) and "for a moment" in lag_warning(1.0, 1.0)


def test_the_session_imports_no_rclpy():
    code = "import sys, mb_sim.session, mb_sim.session.session; sys.exit('rclpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_one_advance_is_a_bounded_unit_of_work(session):
    session.pause()
    with pytest.raises(SessionError, match=f"0 to {MAX_ADVANCE_STEPS}"):
        session.advance(MAX_ADVANCE_STEPS + 1)
    with pytest.raises(SessionError, match=f"1 to {MAX_ADVANCE_STEPS}"):
        session.step(MAX_ADVANCE_STEPS + 1)
    assert session.time == 0.0  # refused before any step
    assert session.advance(1000) and session.time == pytest.approx(1.0)

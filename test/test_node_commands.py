"""The node's command interfaces for controller tests, over real DDS with the node in its own
process: position commands on ~/joint_commands (the servo's second-order step response, the effort
clamp seen in /joint_states), ~/joint_trajectory through its waypoints, and lockstep giving
identical /joint_states with and without a CPU hog."""
from __future__ import annotations

import math
import subprocess
import sys

import pinocchio as pin
import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from test_node import node_env, nodes, peer, reset, shared_peer, stamp_of  # noqa: F401
from test_servos import ARM6, second_order_step

KP, ZETA = 400.0, 0.4
PERIOD = 0.01  # the default publish rate, 100 Hz


@pytest.fixture(scope="module")
def pan_inertia(repo) -> float:
    """Pinocchio's mass-matrix entry of the pan joint at the zero pose (about the vertical axis)."""
    model = pin.buildModelFromUrdf(str(repo / "urdf" / "arm6.urdf"))
    return pin.crba(model, model.createData(), np.zeros(model.nq))[0, 0]


@pytest.fixture
def lockstep_arm6(nodes, pan_inertia):
    kd = 2.0 * ZETA * math.sqrt(KP * pan_inertia)
    return nodes.get("-p", "urdf_file:=arm6", "-p", "lockstep:=true", "-p", f"gains.shoulder_pan_joint.p:={KP}",
                     "-p", f"gains.shoulder_pan_joint.d:={kd}")


def lockstep_run(peer, states: list, command, periods: int) -> None:
    """Answer each /joint_states message with `command(state)` until `periods` were received."""
    answered = 0
    while answered < periods:
        assert peer.spin_until(lambda: len(states) > answered, 20.0), f"no state after {answered} periods"
        command(states[answered])
        answered += 1
    assert peer.spin_until(lambda: len(states) > periods, 20.0)


def test_a_position_step_gives_the_servo_response_and_joint_states_show_the_clamped_effort(
        lockstep_arm6, peer, pan_inertia):
    states = peer.collect(JointState, "/joint_states")
    commands = peer.publisher(JointState, "/mb_sim/joint_commands")
    target = [0.3, 0.0, 0.0, 0.0, 0.0, 0.0]
    reset(peer)  # publishes the state at t = 0, which the loop answers
    lockstep_run(peer, states, lambda _: commands.publish(JointState(name=ARM6, position=target)), 100)
    omega = math.sqrt(KP / pan_inertia)
    run = [s for s in states if stamp_of(s) > 0][:100]
    assert [round(stamp_of(s) / PERIOD) for s in run] == list(range(1, 101))  # one period per command
    errors = [abs(s.position[0] - second_order_step(0.3, omega, ZETA, stamp_of(s))) for s in run]
    assert max(errors) < 1e-3 * 0.3
    peak = max(s.position[0] for s in run)
    assert peak == pytest.approx(0.3 * (1 + math.exp(-ZETA * math.pi / math.sqrt(1 - ZETA**2))), rel=1e-2)

    del states[:]
    limit = 150.0  # shoulder_pan_joint's <limit effort> in arm6.urdf
    far = JointState(name=ARM6, position=[2.5, 0, 0, 0, 0, 0])
    commands.publish(far)  # advances one period
    lockstep_run(peer, states, lambda _: commands.publish(far), 2)
    assert [s.effort[0] for s in states[:3]] == [limit] * 3  # kp * 2.2 rad is far beyond the limit


def test_a_trajectory_is_followed_through_its_waypoints(lockstep_arm6, peer):
    states = peer.collect(JointState, "/joint_states")
    trajectories = peer.publisher(JointTrajectory, "/mb_sim/joint_trajectory")
    reset(peer)
    assert peer.spin_until(lambda: states, 10.0)
    waypoints = {0.5: [0.3, -0.5, 0.6, -0.4, 0.3, 0.2], 1.0: [0.6, -0.9, 1.0, -0.2, 0.5, 0.4],
                 1.5: [0.4, -0.7, 0.8, -0.5, 0.2, 0.1]}
    points = [JointTrajectoryPoint(positions=p, velocities=[0.0] * 6, time_from_start=Duration(sec=int(t), nanosec=round(t % 1 * 1e9)))
              for t, p in waypoints.items()]
    trajectories.publish(JointTrajectory(joint_names=ARM6, points=points))  # starts at t = 0, advances one period
    assert peer.spin_until(lambda: any(stamp_of(s) > 0 for s in states), 10.0)  # before any step
    for _ in range(160):
        response = peer.call(Trigger, "/mb_sim/step", Trigger.Request())
        assert response.success, response.message
    assert peer.spin_until(lambda: any(stamp_of(s) >= 1.6 - 1e-9 for s in states), 10.0)
    by_time = {round(stamp_of(s) / PERIOD): s for s in states}
    for t, positions in waypoints.items():
        reached = np.array(by_time[round(t / PERIOD)].position)
        assert np.max(np.abs(reached - positions)) < 1e-3, (t, reached)


def _controlled_run(peer, publisher, states: list) -> list:
    """A PD effort controller in lockstep for 150 periods from the reset state: the states seen."""
    def command(state) -> None:
        efforts = [40.0 * (0.5 - p) - 8.0 * v for p, v in zip(state.position, state.velocity)]
        publisher.publish(Float64MultiArray(data=efforts))

    del states[:]
    reset(peer)
    lockstep_run(peer, states, command, 150)
    return [(stamp_of(s), tuple(s.position), tuple(s.velocity), tuple(s.effort)) for s in states[:151]]


def test_lockstep_gives_identical_joint_states_under_a_cpu_hog(lockstep_arm6, peer):
    states = peer.collect(JointState, "/joint_states")
    efforts = peer.publisher(Float64MultiArray, "/mb_sim/effort_commands")
    quiet = _controlled_run(peer, efforts, states)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    try:
        loaded = _controlled_run(peer, efforts, states)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert len(quiet) == 151 and quiet[-1][0] == pytest.approx(1.5)
    assert loaded == quiet  # bit for bit
    assert quiet[-1][1] != quiet[0][1]  # the controller did move the arm

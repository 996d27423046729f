"""Joint servos and trajectories in the simulator (plain Python, real generated C): the step
response against the analytic second-order one with Pinocchio's joint inertia, a plain PD's
steady-state sag against the static balance, the effort limit, the two backends against each
other, trajectories through their waypoints, and the command parsing of the node's topics."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pinocchio as pin
import pytest
from scipy.optimize import brentq

from mb_sim.session.commands import CommandError, joint_commands
from mb_sim.session.trajectory_commands import TrajectoryPoint, trajectory_waypoints
from mb_sim.sim import Simulator
from mb_sim.sim.trajectory import TrajectoryError, Waypoint, joint_segments, spline

ARM6 = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]


@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


def simulator(repo, cache_dir, name: str, **options) -> Simulator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # effort limits missing from the test URDFs
        return Simulator(repo / "urdf" / f"{name}.urdf", cache_dir=cache_dir, **options)


def second_order_step(step: float, omega: float, zeta: float, t: float) -> float:
    """Response of x'' + 2 zeta omega x' + omega^2 x = omega^2 step from rest at 0 (zeta < 1)."""
    root = math.sqrt(1.0 - zeta * zeta)
    decay = math.exp(-zeta * omega * t)
    return step * (1.0 - decay * (math.cos(omega * root * t) + zeta / root * math.sin(omega * root * t)))


def test_a_position_step_follows_the_second_order_response_of_the_gains_and_the_joint_inertia(repo, cache_dir):
    sim = simulator(repo, cache_dir, "arm6")
    model = pin.buildModelFromUrdf(str(repo / "urdf" / "arm6.urdf"))
    inertia = pin.crba(model, model.createData(), np.zeros(model.nq))[0, 0]  # about the vertical pan axis
    kp, zeta = 400.0, 0.4
    sim.servos.set_gains("shoulder_pan_joint", kp, 2.0 * zeta * math.sqrt(kp * inertia))
    for joint in ARM6:
        sim.servos.hold_position(joint, 0.0)
    sim.servos.hold_position("shoulder_pan_joint", 0.3, 0.0, sim.time)
    omega, worst = math.sqrt(kp / inertia), 0.0
    for _ in range(150):
        sim.advance(0.01)
        expected = second_order_step(0.3, omega, zeta, sim.time)
        worst = max(worst, abs(sim.q[0] - expected))
    assert worst < 1e-3 * 0.3  # the other joints held (not rigid): 2e-4 of the step measured


def test_a_plain_pd_sags_under_gravity_to_the_static_balance(repo, cache_dir):
    sim = simulator(repo, cache_dir, "pendulum", servo_feed_forward=False)
    kp, target = 30.0, 0.5
    sim.servos.set_gains("hinge", kp, 8.0)
    sim.servos.hold_position("hinge", target)
    sim.advance(5.0)
    # 1 kg at 1 m: kp (target - q) = m g l sin(q); the sign: +q about y lifts the bob toward +x.
    balance = brentq(lambda q: kp * (target - q) - 9.81 * math.sin(q), -1.0, 1.0)
    assert sim.q[0] == pytest.approx(balance, abs=1e-6)
    assert sim.efforts[0] == pytest.approx(kp * (target - balance), rel=1e-5)


def test_the_feed_forward_removes_the_sag(repo, cache_dir):
    sim = simulator(repo, cache_dir, "pendulum")
    sim.servos.set_gains("hinge", 30.0, 8.0)
    sim.servos.hold_position("hinge", 0.5)
    sim.advance(5.0)
    assert sim.q[0] == pytest.approx(0.5, abs=1e-9)
    assert sim.efforts[0] == pytest.approx(9.81 * math.sin(0.5), rel=1e-6)  # holding the bob up


def test_the_servo_effort_is_clamped_to_the_effort_limit(repo, cache_dir):
    sim = simulator(repo, cache_dir, "arm6")
    limit = sim.effort_limits[0]
    for joint in ARM6:
        sim.servos.hold_position(joint, 0.0)
    sim.servos.hold_position("shoulder_pan_joint", 2.5)
    sim.advance(0.01)
    assert sim.efforts[0] == limit


def test_the_numpy_backend_applies_the_servos_as_the_c_code(repo, cache_dir):
    c, numpy_ = (simulator(repo, cache_dir, "double_pendulum", backend=backend) for backend in ("c", "numpy"))
    for sim in (c, numpy_):
        sim.set_state(positions={"shoulder": 0.3, "elbow": -0.2}, velocities={"shoulder": 0.1})
        sim.set_efforts([0.5, -0.25])
        sim.servos.hold_position("shoulder", 1.0, 0.2)
        sim.servos.hold_velocity("elbow", -0.5)
        sim.advance(0.05)
    assert np.allclose(c.q, numpy_.q, atol=1e-12) and np.allclose(c.u, numpy_.u, atol=1e-12)
    assert np.allclose(c.efforts, numpy_.efforts, rtol=1e-12)


def test_a_cubic_trajectory_is_followed_through_its_waypoints(repo, cache_dir):
    sim = simulator(repo, cache_dir, "arm6")
    for joint in ARM6:
        sim.servos.hold_position(joint, 0.0)
    sim.advance(0.2)
    start, indices = sim.time, sim.joint_indices
    points = [(0.5, [0.3, -0.5, 0.6, -0.4, 0.3, 0.2]), (1.0, [0.6, -0.9, 1.0, -0.2, 0.5, 0.4]),
              (1.5, [0.4, -0.7, 0.8, -0.5, 0.2, 0.1])]
    for k, joint in enumerate(ARM6):
        waypoints = [Waypoint(start + t, p[k], 0.0) for t, p in points]
        coordinate, speed = indices[joint]
        sim.servos.follow(joint, joint_segments(sim.time, sim.q[coordinate], sim.u[speed], waypoints))
    for t, positions in points:
        sim.advance(round(start + t - sim.time, 9))
        reached = sim.q[[indices[j][0] for j in ARM6]]
        assert np.max(np.abs(reached - positions)) < 1e-6


def test_splines_meet_their_end_conditions():
    for degree, start, end in ((3, (0.2, -1.0, 0.0), (1.1, 0.5, 0.0)), (5, (0.2, -1.0, 3.0), (1.1, 0.5, -2.0))):
        c = np.array(spline(start, end, 0.7, degree))
        derivatives = [np.polynomial.polynomial.polyder(c, m) for m in range(3)]
        at_end = [np.polynomial.polynomial.polyval(0.7, d) for d in derivatives]
        assert at_end[:degree // 2 + 1] == pytest.approx(end[:degree // 2 + 1], abs=1e-12)
        assert [d[0] if len(d) else 0.0 for d in derivatives][:degree // 2 + 1] == pytest.approx(start[:degree // 2 + 1])


def test_waypoints_in_the_past_are_dropped_and_a_trajectory_ending_in_the_past_is_refused():
    segments = joint_segments(2.0, 0.0, 0.0, [Waypoint(1.0, 5.0), Waypoint(3.0, 1.0)])
    assert [s.begin for s in segments] == [2.0, 3.0] and segments[0].sample(3.0)[0] == pytest.approx(1.0)
    with pytest.raises(TrajectoryError, match="in the past"):
        joint_segments(2.0, 0.0, 0.0, [Waypoint(1.0, 5.0)])


def test_joint_state_fields_select_each_joints_interface():
    nan = math.nan
    commands = joint_commands(["a", "b", "c"], [1.0, nan, nan], [0.5, 2.0, nan], [0.0, 0.0, 3.0],
                              ["a", "b", "c"], ["a", "b", "c"])
    assert [(c.mode, c.position, c.velocity, c.effort) for c in commands.values()] == [
        ("position", 1.0, 0.5, 0.0), ("velocity", 0.0, 2.0, 0.0), ("effort", 0.0, 0.0, 3.0)]


@pytest.mark.parametrize("fields, kind", [
    (([1.0, 2.0], [], []), "length"),  # 1 name, 2 positions
    (([math.nan], [math.nan], []), "no_value"),
    (([math.inf], [], []), "not_finite"),
])
def test_contradictory_joint_states_are_refused(fields, kind):
    with pytest.raises(CommandError) as err:
        joint_commands(["a"], *fields, ["a"], ["a"])
    assert err.value.kind == kind


def test_a_position_for_a_joint_without_a_servo_is_refused_naming_it():
    with pytest.raises(CommandError, match="'b' take efforts only") as err:
        joint_commands(["b"], [1.0], [], [], ["a", "b"], ["a"])
    assert err.value.kind == "no_servo"


def test_trajectories_are_validated_as_joint_trajectory_controller_does():
    point = TrajectoryPoint(1.0, [0.1, 0.2])
    waypoints = trajectory_waypoints(["a", "b"], [point], 10.0, ["a", "b"])
    assert waypoints["b"] == [Waypoint(11.0, 0.2)]
    with pytest.raises(CommandError, match="leaves out joint") as err:
        trajectory_waypoints(["a"], [TrajectoryPoint(1.0, [0.1])], 0.0, ["a", "b"])
    assert err.value.kind == "partial"
    assert trajectory_waypoints(["a"], [TrajectoryPoint(1.0, [0.1])], 0.0, ["a", "b"], allow_partial=True)
    with pytest.raises(CommandError, match="after the previous point") as err:
        trajectory_waypoints(["a", "b"], [point, point], 0.0, ["a", "b"])
    with pytest.raises(CommandError, match="velocities"):
        trajectory_waypoints(["a", "b"], [TrajectoryPoint(1.0, [0.1, 0.2], [1.0])], 0.0, ["a", "b"])
    assert trajectory_waypoints([], [], 0.0, ["a", "b"]) == {"a": [], "b": []}  # stop: hold all


def test_the_energy_watch_stands_aside_while_a_servo_acts(repo, cache_dir):
    sim = simulator(repo, cache_dir, "pendulum")
    assert sim.runaway.energy_unwatched is None
    sim.servos.hold_velocity("hinge", 1.0)
    assert sim.runaway.energy_unwatched == "joint servos are active"
    sim.advance(0.5)  # energy rises, fed by the servo: no runaway
    sim.reset()
    assert sim.runaway.energy_unwatched is None and not sim.servos.active


def test_a_long_trajectory_finds_each_segment_as_a_scan_would(repo, cache_dir):
    """20,000 waypoints (20 s at 1 kHz): the segment in force and the next boundary, found by
    bisection, are those a scan of the whole plan gives, at boundaries and between them."""
    sim = simulator(repo, cache_dir, "arm6")
    waypoints = [Waypoint(1e-3 * (k + 1), 0.3 * np.sin(1e-3 * k)) for k in range(20_000)]
    plan = joint_segments(0.0, 0.0, 0.0, waypoints)
    sim.servos.follow("elbow_joint", plan)
    rng = np.random.default_rng(24)
    for time in [0.0, 1e-3, 5.0, 19.999, 20.0, 25.0, *rng.uniform(0.0, 21.0, 200)]:
        scanned = [s for s in plan if s.begin <= time + 1e-12][-1] if plan[0].begin <= time + 1e-12 else plan[0]
        assert sim.servos.segment("elbow_joint", time) is scanned
        later = [s.begin for s in plan if s.begin > time + 1e-12]
        assert sim.servos.refresh(time) == (min(later) if later else math.inf)


def test_a_trajectory_message_beyond_the_point_limit_is_refused(repo, cache_dir):
    """More than MAX_TRAJECTORY_POINTS points in one ~/joint_trajectory message: one CommandError
    naming the count before any segment is built; the joint keeps what it followed."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from mb_sim.session.command_router import MAX_TRAJECTORY_POINTS, CommandRouter

    sim = simulator(repo, cache_dir, "arm6")
    sim.servos.hold_position("elbow_joint", 0.1)
    held = sim.servos.plan("elbow_joint")
    router = CommandRouter(sim, 0.0, True)
    message = JointTrajectory(joint_names=["elbow_joint"])
    message.points = [JointTrajectoryPoint(positions=[0.0])] * (MAX_TRAJECTORY_POINTS + 1)
    with pytest.raises(CommandError, match=f"{MAX_TRAJECTORY_POINTS + 1} trajectory points: at most"):
        router.handle("joint_trajectory", message, 0.0)
    assert sim.servos.plan("elbow_joint") == held

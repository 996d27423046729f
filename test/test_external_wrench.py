"""Pushes on links (issue 39, item 3): ``wrench_links`` / ``<external_wrench>`` add six inputs per
link, ``Simulator.apply_wrench`` holds a wrench for a duration.  Checked against the laws of
impulse on a free body (its momentum changes by exactly force times time, its angular momentum
by torque times time) and against a joint effort on a pendulum."""
from __future__ import annotations

import numpy as np
import pytest

from mb_sim.sim import Simulator
from mb_sim.sim.wrenches import MAX_WRENCH
from mb_sim.urdf import URDFError

#: The free body's mass properties (urdf/free_body.urdf): mass, centre of mass, inertia about it.
MASS, COM, INERTIA = 2.0, np.array([0.01, 0.0, 0.005]), np.diag([0.008333, 0.028333, 0.033333])
SPIN = {"base_joint_wx": 3.0, "base_joint_wy": -2.0, "base_joint_wz": 5.0, "base_joint_vx": 0.3}


@pytest.fixture(scope="module")
def free_body(repo, model_cache):
    def make(integrator: str = "rk4") -> Simulator:
        sim = Simulator(repo / "urdf" / "free_body.urdf", wrench_links=["body"], cache_dir=model_cache,
                        integrator=integrator)
        sim.set_parameters({"gravity_g": 0.0})
        sim.set_state(velocities=SPIN)
        return sim
    return make


def momenta(sim: Simulator) -> tuple[np.ndarray, np.ndarray]:
    """Linear momentum and angular momentum about the world origin of the free body, from its
    state (origin position and velocity in world axes, angular velocity in body axes)."""
    q, u = sim.q, sim.u
    rotation = sim.outputs(dynamics=False).link_poses["body"][:3, :3]
    com_velocity = u[:3] + rotation @ np.cross(u[3:], COM)
    com = q[:3] + rotation @ COM
    return MASS * com_velocity, MASS * np.cross(com, com_velocity) + rotation @ INERTIA @ u[3:]


@pytest.mark.parametrize("integrator, tolerance", [("rk4", 1e-9), ("DOP853", 1e-11)])
def test_a_push_changes_a_spinning_body_s_momentum_by_its_impulse(free_body, integrator, tolerance):
    """A force at the origin (off the centre of mass) for 37.5 ms, not a whole number of 1 ms
    steps: the last step takes its part only; then a torque for 50 ms."""
    sim = free_body(integrator)
    force, duration = np.array([4.0, -1.5, 2.5]), 0.0375
    p0, _ = momenta(sim)
    sim.apply_wrench("body", force=force, duration=duration)
    sim.advance(0.1)
    p1, h1 = momenta(sim)
    assert np.linalg.norm(p1 - p0 - force * duration) <= tolerance * np.linalg.norm(force * duration)
    assert not np.any(sim.model.buffers.inputs), "the push is over: its inputs are zero"
    torque = np.array([0.2, 0.1, -0.3])
    sim.apply_wrench("body", torque=torque, duration=0.05)
    sim.advance(0.1)
    p2, h2 = momenta(sim)
    assert np.linalg.norm(h2 - h1 - torque * 0.05) <= tolerance * np.linalg.norm(torque * 0.05)
    assert np.linalg.norm(p2 - p1) <= tolerance * np.linalg.norm(force * duration)


def test_pushes_add_and_a_push_in_the_link_frame_is_turned_once(free_body):
    """Two pushes at once add; components in the link's frame become world components with the
    link's orientation when the push is given (the same as the world push they equal)."""
    world, local = free_body(), free_body()
    for sim in (world, local):
        sim.advance(0.05)  # turned away from the world's axes
    rotation = local.outputs(dynamics=False).link_poses["body"][:3, :3]
    force, before = np.array([1.0, 2.0, -0.5]), momenta(world)[0]
    local.apply_wrench("body", force=force, frame="body", duration=0.02)
    local.apply_wrench("body", force=force, frame="body", duration=0.02)
    world.apply_wrench("body", force=2 * rotation @ force, duration=0.02)
    local.advance(0.05)
    world.advance(0.05)
    assert np.allclose(local.q, world.q, rtol=0, atol=1e-13) and np.allclose(local.u, world.u, rtol=0, atol=1e-12)
    assert np.linalg.norm(momenta(world)[0] - before - 0.04 * rotation @ force) < 1e-9


def test_until_cleared_and_reset(free_body):
    sim = free_body()
    sim.apply_wrench("body", force=[0.0, 0.0, 1.0])
    sim.advance(0.01)
    assert sim.wrenches.active and sim.model.buffers.inputs[2] == 1.0
    sim.clear_wrenches("body")
    assert not sim.wrenches.active and not np.any(sim.model.buffers.inputs)
    sim.apply_wrench("body", force=[0.0, 0.0, 1.0])
    sim.reset()
    assert not sim.wrenches.active and not np.any(sim.model.buffers.inputs)


def test_a_push_replaced_at_once_and_a_refused_replacement_leaves_the_last(free_body):
    # The node's topic holds each message's push until the next: a replacement is one call, and
    # one that is refused (NaN) leaves the push before it acting, not none.
    sim = free_body()
    sim.apply_wrench("body", force=[0.0, 0.0, 1.0])
    sim.apply_wrench("body", force=[2.0, 0.0, 0.0], replace=True)
    assert sim.model.buffers.inputs[:6].tolist() == [2.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="not finite"):
        sim.apply_wrench("body", force=[float("nan"), 0.0, 0.0], replace=True)
    assert len(sim.wrenches.pushes) == 1 and sim.model.buffers.inputs[0] == 2.0
    sim.apply_wrench("body", replace=True)  # a zero wrench ends it
    assert not sim.wrenches.active and not np.any(sim.model.buffers.inputs)


def test_a_torque_on_a_link_is_the_joint_effort_about_its_axis(repo, model_cache):
    """The pendulum turns about y: a world torque (0, 2, 0) on the rod moves it as an effort of 2 N m."""
    pushed = Simulator(repo / "urdf" / "pendulum.urdf", wrench_links="rod", cache_dir=model_cache,
                       default_effort_limit=10.0)
    driven = Simulator(repo / "urdf" / "pendulum.urdf", cache_dir=model_cache, default_effort_limit=10.0)
    pushed.apply_wrench("rod", torque=[0.0, 2.0, 0.0], duration=0.2)
    driven.set_efforts({"hinge": 2.0})
    pushed.advance(0.2)
    driven.advance(0.2)
    assert driven.q[0] > 0.01
    assert pushed.q[0] == pytest.approx(driven.q[0], abs=1e-14)
    assert pushed.model.n_inputs == driven.model.n_inputs + 6


def test_loaded_again_from_the_cache_and_declared_in_the_urdf(repo, model_cache, tmp_path):
    with pytest.raises(URDFError, match="wrench_links 'world': the world frame cannot be pushed"):
        Simulator(repo / "urdf" / "free_body.urdf", wrench_links=["world"], cache_dir=model_cache)
    text = (repo / "urdf" / "pendulum.urdf").read_text().replace(
        "</robot>", '<mb_sim><external_wrench link="rod"/></mb_sim></robot>')
    for _ in range(2):  # the second from the cache entry
        sim = Simulator(text, cache_dir=tmp_path, default_effort_limit=10.0)
        sim.set_parameters({"gravity_g": 0.0})
        assert sim.wrench_links == ["rod"]
        sim.apply_wrench("rod", torque=[0.0, 1.0, 0.0], duration=0.01)
        sim.advance(0.02)
        assert sim.u[0] == pytest.approx(0.01 / (1.0 + 0.001), rel=1e-12)  # angular impulse / inertia


@pytest.mark.parametrize("call, message", [
    (dict(link="camera_mount", force=[1, 0, 0]), "link 'camera_mount' takes no external wrench (links taking one: body)"),
    (dict(link="nope", force=[1, 0, 0]), "link 'nope' takes no external wrench"),
    (dict(link="body", force=[np.nan, 0, 0]), "push on link 'body': force is not finite"),
    (dict(link="body", torque=[0, 2 * MAX_WRENCH, 0]), "push on link 'body': torque 2e+07 is beyond 1e+07"),
    (dict(link="body", force=[1, 0]), "push on link 'body': force must be three numbers, got 2"),
    (dict(link="body", force="up"), "push on link 'body': force must be three numbers"),
    (dict(link="body", force=[1, 0, 0], duration=-1.0), "duration must be a finite time >= 0 s, got -1.0"),
    (dict(link="body", force=[1, 0, 0], duration=float("inf")), "duration must be a finite time"),
    (dict(link="body", force=[1, 0, 0], frame="camera_mount"), "frame 'camera_mount' is neither 'world' nor"),
])
def test_bad_pushes_are_refused_by_name(free_body, call, message):
    sim = free_body()
    before = sim.model.buffers.inputs.copy()
    with pytest.raises(ValueError) as err:
        sim.apply_wrench(**call)
    assert message in str(err.value)
    assert np.array_equal(sim.model.buffers.inputs, before) and not sim.wrenches.active


def test_bad_wrench_links_are_refused_by_name(repo, model_cache):
    with pytest.raises(URDFError, match="wrench_links 'tip': no such link \\(links: base, rod\\)"):
        Simulator(repo / "urdf" / "pendulum.urdf", wrench_links=["tip"], cache_dir=model_cache)
    text = (repo / "urdf" / "pendulum.urdf").read_text().replace(
        "</robot>", '<mb_sim><external_wrench link="tip"/></mb_sim></robot>')
    with pytest.raises(URDFError, match="mb_sim external_wrench link=\"tip\".*link 'tip' does not exist"):
        Simulator(text, cache_dir=model_cache)
    text = text.replace('link="tip"', 'link="rod" force="3"')
    with pytest.raises(URDFError, match="unknown attribute\\(s\\) force"):
        Simulator(text, cache_dir=model_cache)

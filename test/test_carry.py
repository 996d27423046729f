"""Carrying a run into another scene of the same robot (mb_sim.sim.carry, Session.replace_simulator):
what a spawn or a delete does to the running simulation, without ROS.  A cube sliding and spinning
on the ground goes on exactly as it would have when a second cube appears far away (the same
equations for it, to 1e-9); the held commands and servo plans come along; the session refuses to
swap while it records."""
from __future__ import annotations

import numpy as np
import pytest

from mb_sim.session import Session, SessionError
from mb_sim.sim import Simulator
from mb_sim.sim.carry import carry_state
from mb_sim.urdf.scene import SceneObject
from object_scenes import cube_scene

REPO_URDF = "urdf/gripper_lift.urdf"


@pytest.fixture
def cache(model_cache):
    return model_cache


def sliding_cube(sim: Simulator) -> None:
    """cube0 resting on the ground, thrown along x at 0.5 m/s and spun at 2 rad/s about z."""
    sim.set_state(velocities={"cube0_joint_vx": 0.5, "cube0_joint_wz": 2.0}, as_initial=False)


def test_a_cube_goes_on_exactly_when_another_appears_far_away(cache):
    alone = cube_scene([0.05], cache)
    sliding_cube(alone)
    alone.advance(0.2)
    with_another = cube_scene([0.05, 0.05], cache, xs=[0.0, 3.0])
    carry_state(alone, with_another)
    assert with_another.time == alone.time
    shared = [with_another.coordinate_names.index(n) for n in alone.coordinate_names]
    assert np.array_equal(with_another.q[shared], alone.q)  # bit for bit
    far = with_another.outputs(dynamics=False).link_poses["cube1"]
    assert far[0, 3] == pytest.approx(3.0) and far[2, 3] == pytest.approx(0.05, abs=1e-3)  # its start
    alone.advance(0.3)
    with_another.advance(0.3)
    pose = alone.outputs(dynamics=False).link_poses["cube0"]
    assert np.abs(with_another.outputs(dynamics=False).link_poses["cube0"] - pose).max() < 1e-9
    assert pose[0, 3] > 0.005  # it did slide (friction 1 stops it within 13 mm)
    with_another.reset()  # back to the new scene's start: both cubes at rest where they began
    assert with_another.time == 0.0 and np.allclose(with_another.u, 0.0)


def test_servo_plans_inputs_and_switched_constraints_come_along(cache):
    box = SceneObject("box", "box", (0.02,) * 3, 0.05, xyz=(0.0, 0.0, 0.01))
    cube = SceneObject("cube", "box", (0.05,) * 3, 0.2, xyz=(0.4, 0.0, 0.025))
    old = Simulator(REPO_URDF, objects=[box], cache_dir=cache)
    old.servos.hold_position("lift_joint", 0.05, now=0.0)
    old.servos.set_gains("lift_joint", 2.0e4, 300.0)
    old.set_efforts({"driver_joint": -3.0})
    old.advance(0.1)
    new = Simulator(REPO_URDF, objects=[box, cube], cache_dir=cache)
    carry_state(old, new)
    assert new.servos.mode("lift_joint") == "position" and new.servos.plan("lift_joint") == old.servos.plan("lift_joint")
    assert new.servos.gains["lift_joint"] == (2.0e4, 300.0)
    k = new.actuated_joints.index("driver_joint")
    assert new.model.buffers.inputs[k] == -3.0
    old.advance(0.1)
    new.advance(0.1)
    lift = new.joint_indices["lift_joint"][0]
    assert new.q[lift] == pytest.approx(old.q[old.joint_indices["lift_joint"][0]], abs=1e-6)


def test_the_session_swaps_only_the_same_robot_and_not_while_recording(cache, tmp_path):
    session = Session(cube_scene([0.05], cache), start_paused=True)
    other = Simulator(REPO_URDF, cache_dir=cache)
    with pytest.raises(SessionError, match="actuated joints or motors differ"):
        session.replace_simulator(other)
    session.start_recording(str(tmp_path / "run.mcap"), {}, b"", lambda text: text.encode())
    with pytest.raises(SessionError, match="a recording is running"):
        session.replace_simulator(cube_scene([0.05, 0.05], cache, xs=[0.0, 3.0]))
    session.stop_recording()
    replacement = cube_scene([0.05, 0.05], cache, xs=[0.0, 3.0])
    session.replace_simulator(replacement)
    assert session.sim is replacement and session.router.sim is replacement

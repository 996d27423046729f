"""An arm picks a box from a table and places it 20 cm away: example-robot-data's Panda (its
collision meshes and finger boxes), a fixed table, a 4 cm, 100 g box (mu 1); the plan is straight
lines of the tool point solved by mb_sim's inverse kinematics (checked against Pinocchio's forward
kinematics).  Once in Python with the simulator's servos, once through the node's topics and
services with the ``mb_sim_pick_and_place`` client as a separate process."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from mb_sim.model import load_urdf
from mb_sim.model.inverse_kinematics import IKError, InverseKinematics
from mb_sim.sim import Simulator
from mb_sim.sim.pick_place import PANDA, plan_pick_and_place
from mb_sim.urdf.rotations import rpy_to_matrix
from mb_sim.urdf.scene import SceneObject
from test_node import NODE_EXE, node_env, peer, shared_peer  # noqa: F401

PANDA_URDF = Path(np.__file__).parents[1] / "cmeel.prefix/share/example-robot-data/robots/panda_description/urdf/panda.urdf"
CLIENT_EXE = Path(sys.executable).parent / "mb_sim_pick_and_place"
TABLE = SceneObject("table", "box", (0.6, 0.8, 0.4), xyz=(0.55, 0.0, 0.2), fixed=True)
BOX = SceneObject("box", "box", (0.04, 0.04, 0.04), 0.1, xyz=(0.5, -0.1, 0.42), friction=1.0,
                  touches=("panda_hand", "panda_leftfinger", "panda_rightfinger"))
OBJECT_ARGS = ["name=table shape=box size=0.6,0.8,0.4 xyz=0.55,0,0.2 fixed",
               "name=box shape=box size=0.04,0.04,0.04 mass=0.1 xyz=0.5,-0.1,0.42 friction=1 "
               "touches=panda_hand,panda_leftfinger,panda_rightfinger"]
ARM = PANDA.arm_joints

pytestmark = pytest.mark.skipif(not PANDA_URDF.is_file(), reason="example-robot-data's Panda is not installed")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_inverse_kinematics_agrees_with_pinocchio():
    """The tool point reaches its targets to 1e-9 m with the asked orientation, measured with
    Pinocchio's forward kinematics of the same URDF; an unreachable target is an IKError."""
    pin = pytest.importorskip("pinocchio")
    robot = load_urdf(PANDA_URDF)
    ik = InverseKinematics(robot, PANDA.hand_link, ARM, PANDA.tool)
    rotation = rpy_to_matrix(np.array(PANDA.tool_rpy))
    model = pin.buildModelFromUrdf(str(PANDA_URDF))
    data = model.createData()
    home = {f"{joint}_q": value for joint, value in zip(ARM, PANDA.home)}
    for target in ([0.5, -0.1, 0.55], [0.4, 0.2, 0.3], [0.6, 0.0, 0.45]):
        solved = ik.solve(target, rotation, home)
        q = np.array([solved[joint] for joint in ARM] + [0.0, 0.0])
        pin.forwardKinematics(model, data, q)
        pin.updateFramePlacements(model, data)
        hand = data.oMf[model.getFrameId(PANDA.hand_link)]
        np.testing.assert_allclose(hand.translation + hand.rotation @ PANDA.tool, target, atol=1e-9)
        np.testing.assert_allclose(hand.rotation, rotation, atol=1e-8)
    with pytest.raises(IKError, match="cannot reach"):
        ik.solve([2.0, 0.0, 0.5], rotation, home)


@pytest.mark.slow
def test_the_panda_picks_the_box_and_places_it_20_cm_away(model_cache):
    """The simulator's servos follow the plan point by point: the box rises with the grip, is
    carried and set down within 1 cm of its place, upright, and left at rest."""
    sim = Simulator(PANDA_URDF, objects=[TABLE, BOX], cache_dir=model_cache, servo_frequency=20.0)
    sim.set_state(positions={**dict(zip(ARM, PANDA.home)), "panda_finger_joint1": PANDA.gripper_open})
    start = sim.outputs(dynamics=False).link_poses["box"][:3, 3].copy()
    names, points = plan_pick_and_place(sim.robot, start, start + [0.0, 0.2, 0.0])
    highest, last = start[2], 0.0
    for t, positions in points:
        for joint, value in zip(names, positions):
            sim.servos.hold_position(joint, value, now=sim.time)
        sim.advance(round((t - last) / sim.dt) * sim.dt)
        last = t
        highest = max(highest, sim.outputs(dynamics=False).link_poses["box"][2, 3])
    sim.advance(1.0)
    pose = sim.outputs(dynamics=False).link_poses["box"]
    miss = np.linalg.norm(pose[:3, 3] - (start + [0.0, 0.2, 0.0]))
    print(f"box lifted to {highest - start[2]:.4f} m above its start, placed {miss * 1e3:.2f} mm from the place")
    assert highest - start[2] > 0.1  # carried, not pushed
    assert miss < 0.01
    assert pose[2, 2] > np.cos(np.radians(2.0))  # upright
    box = slice(sim.speed_names.index("box_joint_vx"), sim.speed_names.index("box_joint_vx") + 6)
    assert np.abs(sim.u[box]).max() < 1e-3


@pytest.mark.slow
def test_pick_and_place_through_the_node_with_a_client_process(node_env, peer):
    """mb_sim_node runs the scene (objects parameter, as fast as it can), starting paused at the
    arm's home pose; mb_sim_pick_and_place (a separate process) reads the description and the
    box's entity state, sends one joint trajectory, waits in sim time and judges where the box
    ended: within 2 cm of 20 cm away (exit 0)."""
    from std_srvs.srv import SetBool

    arguments = ["--ros-args", "-p", f"urdf_file:={PANDA_URDF}", "-p", "servo_frequency:=20.0",
                 "-p", "start_paused:=true", "-p", "real_time_factor:=0.0",
                 "-p", "objects:=[" + ", ".join(f"'{a}'" for a in OBJECT_ARGS) + "]",
                 *[item for joint, value in zip(ARM, PANDA.home) for item in ("-p", f"initial_positions.{joint}:={value}")],
                 "-p", f"initial_positions.panda_finger_joint1:={PANDA.gripper_open}"]
    node = subprocess.Popen([str(NODE_EXE), *arguments], env=node_env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    client = subprocess.Popen([str(CLIENT_EXE)], env=node_env, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 300
        while not any("picking 'box'" in line for line in lines) and time.monotonic() < deadline:
            line = client.stdout.readline()
            if not line and client.poll() is not None:
                break
            lines.append(line)
        assert any("picking 'box'" in line for line in lines), "".join(lines)
        time.sleep(1.0)  # (the trajectory on its way)
        answer = peer.call(SetBool, "/mb_sim/pause", SetBool.Request(data=False))
        assert answer.success, answer.message
        out, _ = client.communicate(timeout=600)
        output = "".join(lines) + out
        assert client.returncode == 0, output
        miss = float(re.search(r"ended at .*: ([0-9.]+) mm from the place", output).group(1))
        print(f"through the node: the box ended {miss:.1f} mm from its place")
        assert miss < 20.0
    finally:
        for process in (client, node):
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=30)

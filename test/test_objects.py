"""Objects in a scene and contact between any two shapes (coal's manifolds in the contact slots),
side by side with MuJoCo on the same scenes (test/object_scenes.py), and the errors a scene's bad
input gets."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mb_sim.sim import Simulator
from mb_sim.urdf import URDFError
from mb_sim.urdf.scene import SceneObject, compose_scene

from object_scenes import (CUBE, EMPTY, cube_heights, cube_scene, grip_and_lift, gripper_scene, mujoco_cubes,
                           mujoco_grip_and_lift, mujoco_gripper, mujoco_heights)

mujoco = pytest.importorskip("mujoco")


@pytest.fixture(scope="module")
def cache(model_cache):
    return model_cache


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_a_cube_dropped_on_a_cube_rests_on_it_as_in_mujoco(cache):
    """The issue's case: a 0.1 m cube dropped from 0.25 m onto another (both free, the upper 1 cm
    off centre) fell through it; now it rests on it at 0.15 m +- 1 mm, flat, as in MuJoCo."""
    start = [CUBE / 2, 0.25]
    sim = cube_scene(start, cache, xs=[0.0, 0.01])
    sim.advance(2.0)
    ours = cube_heights(sim)
    model, data = mujoco_cubes(start, xs=[0.0, 0.01])
    mujoco.mj_step(model, data, 2000)
    theirs = mujoco_heights(model, data)
    print(f"upper cube at rest: mb_sim {ours[1]:.5f} m, MuJoCo {theirs[1]:.5f} m; lower {ours[0]:.5f} / {theirs[0]:.5f}")
    assert ours[1] == pytest.approx(0.15, abs=1e-3) and theirs[1] == pytest.approx(0.15, abs=1e-3)
    assert abs(ours[1] - theirs[1]) < 1e-3
    upper = sim.outputs(dynamics=False).link_poses["cube1"][:3, :3]
    assert upper[2, 2] > math.cos(math.radians(0.5))  # flat on it
    assert np.abs(sim.u).max() < 1e-6  # at rest, not rattling


def test_a_sphere_rests_on_a_box_face_and_a_cylinder_lies_on_a_box(cache):
    """Shapes the closed form never paired: a sphere on the middle of a fixed box's face (it fell
    through, only corners were checked) and a cylinder on its side on it (a line of contact)."""
    table = SceneObject("table", "box", (0.4, 0.4, 0.1), xyz=(0.0, 0.0, 0.05), fixed=True)
    ball = SceneObject("ball", "sphere", (0.05,), 0.5, xyz=(0.1, 0.0, 0.16))
    roll = SceneObject("roll", "cylinder", (0.03, 0.1), 0.3, xyz=(-0.1, 0.0, 0.14), rpy=(math.pi / 2, 0.0, 0.0))
    sim = Simulator(EMPTY, objects=[table, ball, roll], cache_dir=cache)
    sim.advance(1.5)
    poses = sim.outputs(dynamics=False).link_poses
    sink = 0.5 * 9.81 / sim.parameter("contact_table_ball_stiffness")  # one point: m g = k d
    print(f"ball centre {poses['ball'][2, 3]:.6f} m (0.15 less m g / k = {0.15 - sink:.6f}), "
          f"roll axis {poses['roll'][2, 3]:.5f} m (0.13)")
    assert poses["ball"][2, 3] == pytest.approx(0.15 - sink, abs=1e-6)
    assert poses["roll"][2, 3] == pytest.approx(0.13, abs=1e-3)
    assert np.abs(sim.u).max() < 1e-3


@pytest.mark.slow  # (its first load derives 10 link pairs of slots: about a minute)
def test_five_cubes_stand_ten_seconds_as_in_mujoco(cache):
    """A tower of five 0.1 m cubes set down touching: after 0.5 s of settling its top cube moves
    less than 1 mm in 10 s (both), and stands where MuJoCo's does to 1 mm."""
    start = [CUBE / 2 + CUBE * k for k in range(5)]
    sim = cube_scene(start, cache)
    sim.advance(0.5)
    settled = sim.outputs(dynamics=False).link_poses["cube4"][:3, 3].copy()
    sim.advance(10.0)
    drift = np.linalg.norm(sim.outputs(dynamics=False).link_poses["cube4"][:3, 3] - settled)
    model, data = mujoco_cubes(start)
    mujoco.mj_step(model, data, 500)
    theirs_settled = data.xpos[model.body("cube4").id].copy()
    mujoco.mj_step(model, data, 10000)
    theirs_drift = np.linalg.norm(data.xpos[model.body("cube4").id] - theirs_settled)
    ours, theirs = cube_heights(sim), mujoco_heights(model, data)
    print(f"top cube: drift {drift * 1e3:.4f} mm (MuJoCo {theirs_drift * 1e3:.4f} mm), height {ours[4]:.5f} m "
          f"(MuJoCo {theirs[4]:.5f} m)")
    assert drift < 1e-3
    assert abs(ours[4] - theirs[4]) < 1.5e-3  # (the two contact laws compress the stack differently)


def test_the_gripper_lifts_a_box_and_holds_it(cache):
    """urdf/gripper_lift.urdf closes on a 20 mm, 50 g box (mu 1), lifts it 5 cm and holds it 5 s:
    the box rises with the slide and slips less than 1 mm in the grip."""
    result = grip_and_lift(gripper_scene(cache))
    print(f"rise {result['rise'] * 1e3:.3f} mm, slip {result['slip'] * 1e3:.6f} mm, grip {result['grip']:.3f} N")
    assert result["rise"] == pytest.approx(0.05, abs=2e-3)
    assert abs(result["slip"]) < 1e-3
    assert result["grip"] > 2 * 0.05 * 9.81  # friction (mu 1) must carry the weight


def test_the_gripper_lifts_and_holds_the_box_as_in_mujoco(cache):
    """The same grasp in MuJoCo (object_scenes.mujoco_gripper: the same frames, masses and pads, the
    loop pins as stiff equalities, elliptic cones, impratio 10, noslip; the same commands): both
    raise the box 5 cm, within 1 mm of each other, and neither lets it slip 1 mm in the 5 s hold."""
    sim = gripper_scene(cache)
    model, data = mujoco_gripper()
    mujoco.mj_kinematics(model, data)
    poses = sim.outputs(dynamics=False).link_poses
    for link in ("carriage", "driver", "left_link", "right_link", "left_finger", "right_finger", "box"):
        body = model.body(link).id  # the same frames at the start (the transcription)
        assert np.allclose(poses[link][:3], np.column_stack((data.xmat[body].reshape(3, 3), data.xpos[body])),
                           atol=1e-12), link
    ours, theirs = grip_and_lift(sim), mujoco_grip_and_lift(model, data)
    print(f"rise {ours['rise'] * 1e3:.3f} mm (MuJoCo {theirs['rise'] * 1e3:.3f}), slip {ours['slip'] * 1e3:.6f} mm "
          f"({theirs['slip'] * 1e3:.6f}), grip {ours['grip']:.3f} N ({theirs['grip']:.3f})")
    for result in (ours, theirs):
        assert result["rise"] == pytest.approx(0.05, abs=2e-3)
        assert abs(result["slip"]) < 1e-3
    assert abs(ours["rise"] - theirs["rise"]) < 1e-3


def test_replaying_a_scene_is_bit_identical(cache):
    """Two runs of one scene from one start give the same bits (the manifold depends on the state
    and the last step's slots only)."""
    runs = []
    for _ in range(2):
        sim = cube_scene([CUBE / 2, 0.2], cache, xs=[0.0, 0.02])
        sim.advance(0.4)
        runs.append(np.concatenate([sim.q, sim.u, sim.z]))
    assert np.array_equal(runs[0], runs[1])


@pytest.mark.parametrize("item, message", [
    (SceneObject("b", "box", (0.1, float("nan"), 0.1)), "object 'b'.*size must be 3 finite numbers"),
    (SceneObject("b", "box", (0.1, -0.1, 0.1)), "object 'b'.*size must be positive"),
    (SceneObject("b", "box", (0.1, 0.1)), "object 'b'.*size must be 3 finite numbers"),
    (SceneObject("b", "cone", (0.1,)), "object 'b'.*unknown shape 'cone'"),
    (SceneObject("b", "sphere", (0.1,), mass=-1.0), "object 'b'.*mass must be a positive"),
    (SceneObject("b", "sphere", (0.1,), friction=float("nan")), "object 'b'.*friction must be"),
    (SceneObject("b", "sphere", (0.1,), xyz=(0.0, float("nan"), 0.0)), "object 'b'.*xyz must be 3 finite"),
    (SceneObject("b b", "sphere", (0.1,)), "object 'b b'.*without spaces"),
    (SceneObject("b", urdf="<robot><link"), "object 'b'.*does not parse"),
    (SceneObject("b", urdf="/nowhere/cup.urdf"), "object 'b'.*not found"),
])
def test_bad_objects_are_refused_naming_them(item, message):
    with pytest.raises(URDFError, match=message):
        compose_scene(EMPTY, [item])


def test_a_name_taken_twice_is_refused():
    with pytest.raises(URDFError, match="object 'a'.*taken"):
        compose_scene(EMPTY, [SceneObject("a"), SceneObject("a")])
    with pytest.raises(URDFError, match="object 'world'.*already a link or joint"):
        compose_scene(EMPTY, [SceneObject("world")])


def test_objects_in_text_form_are_read_without_evaluating():
    """The CLI's --object and the node's objects: key=value pairs, numbers by commas, never evaluated."""
    from mb_sim.urdf.scene import parse_object

    item = parse_object("name=cup shape=cylinder size=0.04,0.1 mass=0.2 xyz=0.5,0,0.05 rpy=0,0,1 fixed "
                        "friction=0.7 touches=a,b")
    assert (item.name, item.shape, item.size, item.mass, item.xyz, item.rpy, item.fixed, item.friction,
            item.touches) == ("cup", "cylinder", (0.04, 0.1), 0.2, (0.5, 0.0, 0.05), (0.0, 0.0, 1.0), True, 0.7,
                              ("a", "b"))
    for text, message in [("shape=box", "needs name="), ("name=a mass=__import__('os')", "mass must be numbers"),
                          ("name=a colour=red", "unknown key 'colour'"), ("name=a name=b", "'name' is given twice"),
                          ("name=a xyz=1,2", "xyz takes 3 number"), ("name=a fixed=maybe", "fixed takes true")]:
        with pytest.raises(URDFError, match=message):
            parse_object(text)


def test_a_contact_pair_that_can_never_touch_is_refused():
    from mb_sim.model import load_urdf

    body = ('<joint name="{0}_joint" type="floating"><parent link="world"/><child link="{0}"/></joint>'
            '<link name="{0}"><inertial><mass value="1"/><inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" '
            'iyz="0"/></inertial>{1}</link>')
    text = ('<robot name="p"><link name="world"/>' + body.format("a", "")
            + body.format("b", '<collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>')
            + '<mb_sim><contact_pair link1="a" link2="b"/></mb_sim></robot>')
    with pytest.raises(URDFError, match="contact_pair name=\"contact_a_b\".*link 'a' has no <collision> shape"):
        load_urdf(text)


def test_the_cli_takes_objects(capsys):
    """Every mb-sim command takes --object: info lists the object's joint and its contact pairs."""
    from pathlib import Path

    from mb_sim import cli

    gripper = Path(__file__).resolve().parent.parent / "urdf" / "gripper_lift.urdf"
    assert cli.main(["info", str(gripper), "--object", "name=box shape=box size=0.02,0.02,0.02 mass=0.05 "
                                                       "xyz=0,0,0.01"]) == 0
    text = capsys.readouterr().out
    assert "box_joint" in text and "box <-> left_finger: 0 point-shape checks, 4 contact slots" in text
    assert cli.main(["info", str(gripper), "--object", "name=box shape=cone"]) == 1
    assert "object 'box': unknown shape 'cone'" in capsys.readouterr().err

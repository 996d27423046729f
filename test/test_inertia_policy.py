"""The inertia policy: real URDFs load, every repair is said once per link and kept on the model,
strict loading refuses as before, and the dynamics stay Pinocchio's (or differ exactly by the
documented repair).

Example-robot-data files are parsed (fast); only three small robots are derived and compiled.
"""
from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pinocchio as pin
import pytest

from mb_sim import load_urdf
from mb_sim.cli import main
from mb_sim.codegen import compile_model
from mb_sim.symbolic import derive_equations
from mb_sim.urdf import InertiaRepairWarning, Repair, RepairWarning, URDFError, URDFWarning, parse_urdf
from mb_sim.urdf.inertia import ROUNDING
from pinocchio_reference import (
    example_robot_data_dir, pinocchio_configuration, random_coordinates, velocity_map, with_floating_base,
)

ROBOTS = example_robot_data_dir()

#: The refusals issue 15 lists: (file, link, what the per-link check said).
LISTED = [
    ("go1_description/urdf/go1.urdf", "base", "inertia is not positive definite"),
    ("tiago_description/robots/tiago.urdf", "base_antenna_left_link", "inertia is not positive definite"),
    ("baxter_description/urdf/baxter.urdf", "left_gripper", "inertia is not positive definite"),
    ("talos_data/robots/talos_reduced.urdf", "rgbd_optical_frame", "inertia is not positive definite"),
    ("allegro_hand_description/urdf/allegro_right_hand.urdf", "link_3.0", "breaks the triangle inequality"),
    ("anymal_c_simple_description/urdf/anymal.urdf", "depth_camera_front_camera", "breaks the triangle inequality"),
    ("bolt_description/robots/bolt.urdf", "FL_FOOT", "zero mass with a non-zero inertia tensor"),
    ("finger_edu_description/robots/finger_edu.urdf", "finger_lower_link", "inertia is not positive definite"),
]


def parse_recording(source, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        description = parse_urdf(source, **options)
    return description, [w for w in caught if issubclass(w.category, RepairWarning)]


@pytest.mark.parametrize("path, link, problem", LISTED, ids=[p.split("/")[0] for p, _, _ in LISTED])
def test_the_listed_refusals_load_with_one_warning_per_repaired_link(path, link, problem):
    description, caught = parse_recording(ROBOTS / path)
    repairs = {r.name: r for r in description.repairs}
    assert problem in repairs[link].problem and "kept as given" in repairs[link].action, repairs[link]
    assert not repairs[link].changes_dynamics
    # Once per link and element, each warning naming the file and the link, and the same list as
    # the description's.
    assert Counter((r.element, r.name) for r in description.repairs).most_common(1)[0][1] == 1
    assert [str(w.message) for w in caught] == [f"{ROBOTS / path}: {r}" for r in description.repairs]
    assert any(f"link '{link}'" in str(w.message) and issubclass(w.category, InertiaRepairWarning) for w in caught)


@pytest.mark.parametrize("path, link, problem", LISTED, ids=[p.split("/")[0] for p, _, _ in LISTED])
def test_strict_loading_refuses_them_as_before(path, link, problem):
    with pytest.raises(URDFError) as raised:
        parse_urdf(ROBOTS / path, strict=True)
    assert f"link '{link}' <inertial>: " in str(raised.value) or "<inertial>" in str(raised.value), raised.value
    assert str(raised.value).startswith(str(ROBOTS / path))


def test_links_fixed_to_a_floating_base_are_judged_with_it():
    """go1's dummy 'base' (principal moments [-0, 0, 3e-6]) is fixed to 'trunk': with a floating
    base their merged body is what moves, and it is physical."""
    xml = with_floating_base((ROBOTS / "go1_description/urdf/go1.urdf").read_text(), "base")
    description, _ = parse_recording(xml)
    (repair,) = description.repairs
    assert repair.name == "base" and "judged as part of its body (link 'base' and the" in repair.action


def test_the_robot_model_keeps_the_repairs():
    robot = load_urdf(ROBOTS / "finger_edu_description/robots/finger_edu.urdf")
    assert [(r.element, r.name) for r in robot.repairs] == [("link", "finger_lower_link")]
    assert isinstance(robot.repairs[0], Repair) and str(robot.repairs[0]).startswith("link 'finger_lower_link': ")
    assert load_urdf(ROBOTS / "ur_description/urdf/ur5_robot.urdf").repairs == []


def test_reduced_talos_ignores_the_mimic_of_its_frozen_joints():
    description, caught = parse_recording(ROBOTS / "talos_data/robots/talos_reduced.urdf")
    mimics = [r for r in description.repairs if r.element == "joint"]
    assert len(mimics) == 12 and all("on a fixed joint" in r.problem and "ignored" in r.action for r in mimics)
    assert all(description.joint(r.name).mimic is None for r in mimics)
    assert all(issubclass(w.category, RepairWarning) for w in caught)
    frozen = arm(inertial(1, 0.1, 0.1, 0.1, xyz="0 0 -0.5"),
                 '<link name="f">' + inertial(0.1, 0.01, 0.01, 0.01) + '</link><joint name="frozen" type="fixed">'
                 '<parent link="b"/><child link="f"/><mimic joint="j" multiplier="-1"/></joint>')
    (repair,) = parse_recording(frozen)[0].repairs
    assert str(repair) == ("joint 'frozen': <mimic joint=\"j\"> on a fixed joint; ignored: a fixed joint has no "
                           "coordinate to tie (no effect on the motion)")
    with pytest.raises(URDFError, match="joint 'frozen' <mimic>: joint 'frozen' is fixed; mimic needs one-DoF joints"):
        parse_urdf(frozen, strict=True)


def test_icub_texture_without_filename_is_not_read():
    for name in ("icub.urdf", "icub_reduced.urdf"):
        parse_recording(ROBOTS / "icub_description/robots" / name)  # refused before: <texture> without filename
    xml = ('<robot name="r"><material name="m"><texture/></material><link name="a"><inertial><mass value="1"/>'
           '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial><visual><origin xyz="nan 0 0"/>'
           '<geometry><mesh/></geometry><material name="m"><texture/></material></visual>'
           '<collision><geometry><box size="x"/></geometry></collision></link></robot>')
    assert parse_urdf(xml).links["a"].inertial.mass == 1.0


# --- Hand-written bodies: each rule of the policy ----------------------------------------------

def inertial(mass, ixx, iyy, izz, ixy=0.0, xyz="0 0 0"):
    return (f'<inertial><origin xyz="{xyz}"/><mass value="{mass}"/><inertia ixx="{ixx}" ixy="{ixy}" ixz="0" '
            f'iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>')


def arm(b_inertial: str, extra: str = "") -> str:
    """base -(revolute y)- b, with `extra` links/joints."""
    return (f'<robot name="r"><link name="base"/><link name="b">{b_inertial}</link>'
            '<joint name="j" type="revolute"><parent link="base"/><child link="b"/><axis xyz="0 1 0"/></joint>'
            f'{extra}</robot>')


def test_rounding_level_negative_moment_is_raised_to_zero():
    # a rod printed with rounding: principal moments -1e-7, 1 (izz) and 1 + 1e-7
    description, caught = parse_recording(arm(inertial(1, 0.5, 0.5, 1, ixy=0.5000001, xyz="0 0 -0.5")))
    (repair,) = description.repairs
    assert "rounding-level negative principal moment" in repair.problem and "raised them to 0" in repair.action
    assert 0 < repair.relative_change <= ROUNDING and "rounding-level" in repair.action
    moments = np.linalg.eigvalsh(description.links["b"].inertial.inertia)  # then 0 + 1 < 1 + 1e-7: raised too
    assert 0 <= moments[0] <= 2e-7 and moments[0] + moments[1] >= moments[2] - 1e-15 and len(caught) == 1


def test_strongly_negative_moment_is_refused_naming_file_and_link():
    with pytest.raises(URDFError, match=r"^<string>: link 'b' <inertial>: inertia is not positive definite "
                                        r"\(principal moments \[-0.1, 1, 2.1\]"):
        parse_urdf(arm(inertial(1, 1, 1, 1, ixy=1.1)))


def test_triangle_violation_raises_the_smallest_moment_and_says_the_dynamics_change():
    description, _ = parse_recording(arm(inertial(1, 0.1, 0.1, 0.5, xyz="0 0 -0.5")))
    (repair,) = description.repairs
    assert repair.changes_dynamics and "CHANGES THE DYNAMICS" in repair.action
    assert repair.relative_change == pytest.approx(0.3 / 0.5)
    np.testing.assert_allclose(np.diag(description.links["b"].inertial.inertia), [0.4, 0.1, 0.5], atol=1e-15)
    np.testing.assert_allclose(repair.inertia_change, np.diag([0.3, 0, 0]), atol=1e-15)


def test_rounding_level_triangle_violation_is_rounding():
    description, _ = parse_recording(arm(inertial(1, 0.1, 0.1, 0.2000001, xyz="0 0 -0.5")))
    (repair,) = description.repairs
    assert not repair.changes_dynamics and "rounding-level" in repair.action


def test_point_mass_off_its_axis_is_kept_on_its_axis_refused():
    description, _ = parse_recording(arm(inertial(1, 0, 0, 0, xyz="0 0 -0.5")))
    assert "a point mass or a rod is a physical limit" in description.repairs[0].action
    with pytest.raises(URDFError, match=r"joint 'j': the mass matrix would be singular.* link\(s\) 'b'"):
        parse_urdf(arm(inertial(1, 0, 0, 0, xyz="0 -0.5 0")))  # on the axis y
    with pytest.raises(URDFError, match="mimic|singular") as raised:  # a free point mass cannot be turned
        parse_urdf('<robot name="r"><link name="world"/><link name="b">' + inertial(1, 0, 0, 0) + '</link><joint '
                   'name="free" type="floating"><parent link="world"/><child link="b"/></joint></robot>')
    assert "joint 'free'" in str(raised.value)


def test_zero_mass_link_with_inertia_is_kept():
    # a rotor without mass on a massive link: judged with it; alone on a joint: kept (it resists rotation)
    description, _ = parse_recording(arm(inertial(1, 0.1, 0.1, 0.1, xyz="0 0 -0.5"),
                                         '<link name="rotor">' + inertial(0, 0.01, 0.01, 0.02) + '</link><joint '
                                         'name="fix" type="fixed"><parent link="b"/><child link="rotor"/></joint>'))
    (repair,) = description.repairs
    assert repair.name == "rotor" and "zero mass with a non-zero inertia tensor" in repair.problem
    assert "judged as part of its body (link 'b' and the 1 link fixed to it" in repair.action
    description, _ = parse_recording(arm(inertial(0, 0.01, 0.01, 0.02)))
    assert "resists rotation but has no mass" in description.repairs[0].action
    assert description.links["b"].inertial.mass == 0.0


def test_a_link_fixed_to_the_world_is_not_judged():
    description, _ = parse_recording(arm(inertial(1, 0.1, 0.1, 0.1, xyz="0 0 -0.5"),
                                         '<link name="cam">' + inertial(0.1, 0.001, 0.001, 0.01) + '</link><joint '
                                         'name="c" type="fixed"><parent link="base"/><child link="cam"/></joint>'))
    assert "fixed to the world" in description.repairs[0].action


def test_merged_body_repaired_on_its_heaviest_link():
    """Two links fixed together whose combined inertia breaks the triangle inequality: repaired once,
    on the heavier link, and the other link reported as judged with it."""
    extra = ('<link name="tip">' + inertial(0.5, 0, 0, 0, xyz="0 0 -1") + '</link>'
             '<joint name="t" type="fixed"><parent link="b"/><child link="tip"/></joint>')
    description, caught = parse_recording(arm(inertial(1, 0.01, 0.01, 0.2, xyz="0 0 -0.5"), extra))
    repairs = {r.name: r for r in description.repairs}
    assert set(repairs) == {"b", "tip"} and len(caught) == 2
    assert "merged: link 'b' and the links fixed to it ('tip')" in repairs["b"].problem
    assert "repaired at link 'b'" in repairs["tip"].action


def test_strict_option_refuses_every_repair():
    for xml in (arm(inertial(1, 0.1, 0.1, 0.5)), arm(inertial(1, 0.5, 0.5, 1, ixy=0.5000001)),
                arm(inertial(0, 1, 1, 1))):
        parse_recording(xml)
        with pytest.raises(URDFError, match="<string>: link 'b' <inertial>: "):
            load_urdf(xml, strict=True)


def test_repair_warnings_are_urdf_warnings_attributed_to_the_caller():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_urdf(arm(inertial(1, 0.1, 0.1, 0.5, xyz="0 0 -0.5")))
    (warning,) = [w for w in caught if issubclass(w.category, URDFWarning)]
    assert warning.category is InertiaRepairWarning and warning.filename == __file__


# --- The command line -----------------------------------------------------------------------------

def test_info_lists_the_repairs_and_strict_refuses_in_one_line(tmp_path, capsys):
    path = tmp_path / "r.urdf"
    path.write_text(arm(inertial(1, 0.1, 0.1, 0.5, xyz="0 0 -0.5")))
    assert main(["info", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "Repairs made while loading (1; --strict refuses them):\n  link 'b': " in out
    assert "1 repair(s) made while loading" in err and "Traceback" not in err
    for command in ("info", "describe", "derive", "eom"):
        assert main([command, "--strict", str(path)]) == 1
        out, err = capsys.readouterr()
        assert err == f"mb-sim: {path}: link 'b' <inertial>: inertia breaks the triangle inequality: principal " \
                      "moments 0.1 + 0.1 < 0.5\n", err


# --- Dynamics against Pinocchio ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


REPAIRED_ARM = (
    '<robot name="repaired"><link name="base"/>'
    f'<link name="b">{inertial(1, 0.01, 0.01, 0.5, xyz="0.1 0 -0.5")}</link>'
    f'<link name="rotor">{inertial(0, 0.01, 0.01, 0.02)}</link>'
    f'<link name="tip">{inertial(0.2, 0, 0, 0, xyz="0 0 -0.6")}</link>'
    f'<link name="c">{inertial(0.7, 0.01, 0.01, 0.02, ixy=0.0100000005, xyz="0 0.05 -0.3")}</link>'
    '<joint name="j1" type="revolute"><parent link="base"/><child link="b"/><axis xyz="0 1 0"/>'
    '<limit lower="-3" upper="3" effort="10" velocity="1"/></joint>'
    '<joint name="fix" type="fixed"><parent link="b"/><child link="rotor"/><origin rpy="0.3 0 0"/></joint>'
    '<joint name="t" type="fixed"><parent link="b"/><child link="tip"/><origin xyz="0 0.1 0"/></joint>'
    '<joint name="j2" type="continuous"><parent link="b"/><child link="c"/><origin xyz="0 0 -1" rpy="0 0.2 0"/>'
    '<axis xyz="1 0 0"/></joint></robot>')


@pytest.mark.parametrize("name", ["finger_edu", "bolt", "repaired_arm"])
def test_mass_matrix_matches_pinocchio(name, cache_dir):
    """M at random configurations equals Pinocchio's crba (Pinocchio builds its model from the
    original URDF) to 1e-9 relative; where mb_sim changed an inertia, Pinocchio's joint inertia
    gets the documented change (Repair.inertia_change in the frame of Repair.body)."""
    if name == "finger_edu":
        xml = (ROBOTS / "finger_edu_description/robots/finger_edu.urdf").read_text()
    elif name == "bolt":
        xml = with_floating_base((ROBOTS / "bolt_description/robots/bolt.urdf").read_text(), "base_link")
    else:
        xml = REPAIRED_ARM
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        robot = load_urdf(xml)
    changes = [r for r in robot.repairs if r.inertia_change is not None]
    if name == "repaired_arm":  # one visible repair (b with rotor and tip), one rounding-level one (c, a rod)
        assert sorted((r.name, r.changes_dynamics) for r in changes) == [("b", True), ("c", False)]
    else:
        assert robot.repairs and not changes
    eom = derive_equations(robot)
    compiled = compile_model(eom, backend="c", cache_dir=cache_dir)
    model = pin.buildModelFromXML(xml)
    parent_joint = {j.joint_description.child: j.name for j in robot.joints.values()}
    for repair in changes:
        index = model.getJointId(parent_joint[repair.body])
        inertia = model.inertias[index]
        model.inertias[index] = pin.Inertia(inertia.mass, inertia.lever, inertia.inertia + repair.inertia_change)
    data = model.createData()
    rng = np.random.default_rng(15)
    params = np.array(eom.parameter_values)
    for _ in range(5):
        q = random_coordinates(robot, rng)
        v = rng.normal(size=model.nv)
        G, _ = velocity_map(robot, model, q, v)
        M_pin = pin.crba(model, data, pinocchio_configuration(robot, model, q))
        expected = G @ (np.triu(M_pin) + np.triu(M_pin, 1).T) @ G.T
        ours = compiled.evaluate(q, G @ v, np.zeros(len(eom.inputs)), params)["mass_matrix"]
        assert np.abs(ours - expected).max() <= 1e-9 * np.abs(expected).max(), (ours, expected)

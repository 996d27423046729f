"""The <mb_sim> extension elements: read as written, and every malformed variant refused with one
URDFError line naming the file, the element and what is wrong (never a traceback from SymPy)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from mb_sim import load_urdf
from mb_sim.symbolic.constraints import ConstraintError
from mb_sim.urdf import URDFError, parse_urdf

INERTIA = '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>'


def link(name: str) -> str:
    return f'<link name="{name}"><inertial><mass value="1"/>{INERTIA}</inertial></link>'


def joint(name: str, parent: str, child: str, kind: str = "revolute", xyz: str = "0 0 0") -> str:
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}"/><axis xyz="0 1 0"/></joint>')


#: ground -> a -> b (two pins along y, b 1 m out along x), plus c fixed to b.
TREE = ('<link name="ground"/>' + link("a") + link("b") + link("c") + joint("ja", "ground", "a")
        + joint("jb", "a", "b", xyz="1 0 0") + joint("jc", "b", "c", kind="fixed"))


def robot(extension: str) -> str:
    return f'<robot name="r">{TREE}<mb_sim>{extension}</mb_sim></robot>'


LOOP = '<loop_joint name="l" type="revolute" parent="ground" child="b"><origin xyz="2 0 0"/>{}</loop_joint>'
SPRING = '<spring_damper name="s" stiffness="10" {}><marker link="ground"/><marker link="b" xyz="1 0 0"/></spring_damper>'

BAD = {
    "loop without a name": ('<loop_joint type="fixed" parent="ground" child="b"/>',
                            "mb_sim loop_joint: needs a 'name' attribute"),
    "loop of unknown type": ('<loop_joint name="l" type="ball" parent="ground" child="b"/>',
                             "mb_sim loop_joint 'l': unsupported loop joint type 'ball' (supported: revolute"),
    "loop without a child": ('<loop_joint name="l" type="fixed" parent="ground"/>',
                             "mb_sim loop_joint 'l': needs a 'child' attribute"),
    "loop to an unknown link": ('<loop_joint name="l" type="fixed" parent="ground" child="ghost"/>',
                                "mb_sim loop_joint 'l': child link 'ghost' does not exist"),
    "loop between a link and itself": ('<loop_joint name="l" type="fixed" parent="b" child="b"/>',
                                       "mb_sim loop_joint 'l': closes a loop between link 'b' and itself"),
    "loop with a zero axis": (LOOP.format('<axis xyz="0 0 0"/>'), "mb_sim loop_joint 'l' <axis>: axis is zero"),
    "loop with NaN": (LOOP.format('<child_origin xyz="0 nan 0"/>'),
                      "mb_sim loop_joint 'l' <child_origin xyz=\"0 nan 0\">: NaN or infinite value"),
    "loop origin of two numbers": ('<loop_joint name="l" type="fixed" parent="ground" child="b">'
                                   '<origin rpy="0 1"/></loop_joint>',
                                   "mb_sim loop_joint 'l' <origin rpy=\"0 1\">: expected 3 number(s), got 2"),
    "loop with a misspelt attribute": ('<loop_joint name="l" type="fixed" parent="ground" child="b" chlid="a"/>',
                                       "mb_sim loop_joint 'l': unknown attribute(s) chlid (allowed: name, type, "
                                       "parent, child)"),
    "loop with a limit": (LOOP.format('<limit effort="1"/>'),
                          "mb_sim loop_joint 'l': unknown element <limit> (allowed: <origin>, <child_origin>, <axis>)"),
    "loop with two origins": (LOOP.format('<origin xyz="1 0 0"/>'), "mb_sim loop_joint 'l': has 2 <origin> elements"),
    "loop named like a joint": ('<loop_joint name="jb" type="fixed" parent="ground" child="b"/>',
                                "mb_sim loop_joint 'jb': has the name of a joint"),
    "loop named like a spring": (LOOP.format("") + SPRING.format("").replace('name="s"', 'name="l"'),
                                 "mb_sim spring_damper 'l': the name is also used by an <loop_joint>"),
    "coordinate constraint to an unknown joint": (
        '<coordinate_constraint name="g" joint="ja" reference="jz"/>',
        "mb_sim coordinate_constraint 'g': reference joint 'jz' does not exist"),
    "coordinate constraint on a fixed joint": (
        '<coordinate_constraint name="g" joint="jc" reference="ja"/>',
        "mb_sim coordinate_constraint 'g': joint 'jc' is fixed; it needs a one-DoF joint"),
    "coordinate constraint on itself": ('<coordinate_constraint name="g" joint="ja" reference="ja"/>',
                                        "mb_sim coordinate_constraint 'g': ties joint 'ja' to itself"),
    "coordinate constraint ratio not a number": (
        '<coordinate_constraint name="g" joint="ja" reference="jb" ratio="two"/>',
        "mb_sim coordinate_constraint 'g' <coordinate_constraint ratio=\"two\">: not a number"),
    "coordinate constraint with an infinite offset": (
        '<coordinate_constraint name="g" joint="ja" reference="jb" offset="inf"/>',
        "mb_sim coordinate_constraint 'g' <coordinate_constraint offset=\"inf\">: NaN or infinite value"),
    "spring with one marker": ('<spring_damper name="s"><marker link="a"/></spring_damper>',
                               "mb_sim spring_damper 's': needs exactly two <marker link=... xyz=...> elements, has 1"),
    "spring with a marker without link": ('<spring_damper name="s"><marker link="a"/><marker xyz="1 0 0"/>'
                                          '</spring_damper>', "mb_sim spring_damper 's' <marker>: needs a 'link'"),
    "spring to an unknown link": ('<spring_damper name="s"><marker link="a"/><marker link="ghost"/></spring_damper>',
                                  "mb_sim spring_damper 's': marker 1 link 'ghost' does not exist"),
    "spring with both markers on one link": (
        '<spring_damper name="s"><marker link="a"/><marker link="a" xyz="1 0 0"/></spring_damper>',
        "mb_sim spring_damper 's': both markers are on link 'a': the spring's length could never change"),
    "spring with a negative stiffness": (SPRING.format('damping="1"').replace('"10"', '"-10"'),
                                         "mb_sim spring_damper 's': stiffness must not be below 0, got -10"),
    "spring with NaN damping": (SPRING.format('damping="nan"'),
                                "mb_sim spring_damper 's' <spring_damper damping=\"nan\">: NaN or infinite value"),
    "spring marker with NaN": ('<spring_damper name="s"><marker link="a" xyz="0 nan 0"/><marker link="b"/>'
                               '</spring_damper>', "mb_sim spring_damper 's' <marker xyz=\"0 nan 0\">: NaN"),
    "spring active maybe": (SPRING.format('active="maybe"'),
                            "mb_sim spring_damper 's': active must be true or false, got 'maybe'"),
    "spring law with a bad name": (SPRING.format('law="import os"'),
                                   "mb_sim spring_damper 's': law 'import os' must start with a letter"),
    "spring with a misspelt attribute": (SPRING.format('stifness="3"'),
                                         "mb_sim spring_damper 's': unknown attribute(s) stifness"),
    "joint spring on a fixed joint": ('<joint_spring joint="jc" stiffness="1"/>',
                                      "mb_sim joint_spring 'jc_spring': joint 'jc' is fixed"),
    "joint spring on an unknown joint": ('<joint_spring joint="jq" stiffness="1"/>',
                                         "mb_sim joint_spring 'jq_spring': joint 'jq' does not exist"),
    "joint spring with negative damping": ('<joint_spring joint="ja" damping="-1"/>',
                                           "mb_sim joint_spring: damping must not be below 0, got -1"),
    "gravity twice": ('<gravity xyz="0 0 0"/><gravity xyz="0 0 -1"/>', "mb_sim gravity: given 2 times"),
    "gravity of two numbers": ('<gravity xyz="0 0"/>', "mb_sim gravity <gravity xyz=\"0 0\">: expected 3 number(s)"),
    "gravity without xyz": ('<gravity/>', "mb_sim gravity: needs an 'xyz' attribute"),
    "unknown extension element": ('<magic/>', "mb_sim: unknown element <magic> (known: <loop_joint>"),
    "motor without a joint": ('<dc_motor name="m" torque_constant="1" resistance="1"/>',
                              "mb_sim dc_motor 'm': needs a 'joint' attribute"),
    "motor without resistance": ('<dc_motor name="m" joint="ja" torque_constant="1"/>',
                                 "mb_sim dc_motor 'm': needs a 'resistance' attribute"),
    "motor of zero resistance": ('<dc_motor name="m" joint="ja" torque_constant="1" resistance="0"/>',
                                 "mb_sim dc_motor 'm': resistance must be positive, got 0"),
    "motor with negative inductance": (
        '<dc_motor name="m" joint="ja" torque_constant="1" resistance="1" inductance="-1e-4"/>',
        "mb_sim dc_motor 'm': inductance must not be below 0, got -0.0001"),
    "motor with a zero gear": ('<dc_motor name="m" joint="ja" torque_constant="1" resistance="1" gear_ratio="0"/>',
                               "mb_sim dc_motor 'm': gear_ratio must not be zero"),
    "motor with NaN constant": ('<dc_motor name="m" joint="ja" torque_constant="nan" resistance="1"/>',
                                "mb_sim dc_motor 'm' <dc_motor torque_constant=\"nan\">: NaN or infinite value"),
    "motor on a fixed joint": ('<dc_motor name="m" joint="jc" torque_constant="1" resistance="1"/>',
                               "mb_sim dc_motor 'm': joint 'jc' is fixed; it needs a one-DoF joint"),
    "two motors on a joint": ('<dc_motor name="m" joint="ja" torque_constant="1" resistance="1"/>'
                              '<dc_motor name="n" joint="ja" torque_constant="1" resistance="1"/>',
                              "mb_sim dc_motor 'n': joint 'ja' already has the motor 'm'"),
    "motor with a misspelt attribute": ('<dc_motor name="m" joint="ja" torque_constant="1" resistance="1" '
                                        'inductence="1"/>', "mb_sim dc_motor 'm': unknown attribute(s) inductence"),
    "wheel without radius": ('<rolling_wheel name="w" link="a"/>', "mb_sim rolling_wheel 'w': needs a 'radius'"),
    "wheel of negative radius": ('<rolling_wheel name="w" link="a" radius="-0.1"/>',
                                 "mb_sim rolling_wheel 'w': radius must be positive, got -0.1"),
    "wheel on an unknown link": ('<rolling_wheel name="w" link="ghost" radius="0.1"/>',
                                 "mb_sim rolling_wheel 'w': wheel link 'ghost' does not exist"),
    "wheel with a zero axis": ('<rolling_wheel name="w" link="a" radius="0.1"><axis xyz="0 0 0"/></rolling_wheel>',
                               "mb_sim rolling_wheel 'w' <axis>: axis is zero"),
    "wheel on a fixed link without axis": ('<rolling_wheel name="w" link="c" radius="0.1"/>',
                                           "mb_sim rolling_wheel 'w': link 'c' is not moved by a revolute"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_extension_is_one_line_naming_the_element(case):
    extension, expected = BAD[case]
    with pytest.raises(URDFError) as raised:
        load_urdf(robot(extension))
    message = str(raised.value)
    assert message.startswith("<string>: "), message
    assert expected in message, message
    assert "\n" not in message


def test_an_extension_attribute_on_mb_sim_itself_is_refused():
    with pytest.raises(URDFError, match="<string>: mb_sim: unknown attribute"):
        load_urdf(f'<robot name="r">{TREE}<mb_sim version="2"/></robot>')


def test_elements_are_read_as_written_with_exudyn_defaults():
    extension = (LOOP.format('<child_origin xyz="1 0 0" rpy="0 0.5 0"/><axis xyz="0 2 0"/>')
                 + '<spring_damper name="s"><marker link="ground"/><marker link="b" xyz="1 2 3"/></spring_damper>'
                 + '<coordinate_constraint name="g" joint="jb" reference="ja" ratio="-2" offset="0.1"/>'
                 + '<joint_spring joint="ja" stiffness="5" reference="0.2"/><gravity xyz="0 -9.81 0"/>')
    description = parse_urdf(robot(extension))
    extensions = description.extensions
    (loop,), (spring,), (gear,), (joint_spring,) = (extensions.loop_joints, extensions.spring_dampers,
                                                     extensions.coordinate_constraints, extensions.joint_springs)
    assert (loop.type, loop.parent, loop.child) == ("revolute", "ground", "b")
    np.testing.assert_array_equal(loop.origin_xyz, [2, 0, 0])
    np.testing.assert_array_equal(loop.child_origin_rpy, [0, 0.5, 0])
    np.testing.assert_array_equal(loop.axis, [0, 1, 0])  # normalized
    # Exudyn's defaults: everything zero, active, the linear law.
    assert (spring.stiffness, spring.damping, spring.reference_length, spring.force, spring.velocity_offset,
            spring.active, spring.law) == (0.0, 0.0, 0.0, 0.0, 0.0, True, None)
    np.testing.assert_array_equal(spring.markers[1].xyz, [1, 2, 3])
    assert (gear.joint, gear.reference, gear.ratio, gear.offset) == ("jb", "ja", -2.0, 0.1)
    assert (joint_spring.name, joint_spring.stiffness, joint_spring.reference, joint_spring.damping) == (
        "ja_spring", 5.0, 0.2, 0.0)
    np.testing.assert_array_equal(description.gravity, [0, -9.81, 0])
    np.testing.assert_array_equal(parse_urdf(f'<robot name="r">{TREE}</robot>').gravity, [0, 0, -9.81])


def test_a_loop_that_can_never_close_is_named():
    """Both links of the loop lie in the plane y = 0; a loop joint at y = 0.3 can never close.
    The condition is independent of the coordinates: caught before any code is generated."""
    from mb_sim.symbolic import derive_equations

    robot_model = load_urdf(robot('<loop_joint name="l" type="spherical" parent="ground" child="b">'
                                  '<origin xyz="2 0.3 0"/></loop_joint>'))
    with pytest.raises(ConstraintError, match=r"loop joint 'l': position along y is -0\.3 whatever the coordinates: "
                                              "it can never hold"):
        derive_equations(robot_model)


def test_cli_reports_bad_extensions_in_one_line(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text(robot('<spring_damper name="s"><marker link="a"/></spring_damper>'))
    far = tmp_path / "far.urdf"
    far.write_text(robot('<loop_joint name="l" type="spherical" parent="ground" child="b">'
                         '<origin xyz="2 0.3 0"/></loop_joint>'))
    for file, expected in ((path, "mb_sim spring_damper 's': needs exactly two"),
                           (far, "loop joint 'l': position along y is -0.3")):
        result = subprocess.run([sys.executable, "-m", "mb_sim.cli", "info", str(file)], capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 1
        assert result.stderr.count("\n") == 1 and expected in result.stderr, result.stderr
        assert "Traceback" not in result.stderr

"""URDF leniency as urdfdom's (issue 23, items 4 and 5), one test per oddity and per floating-base path.

What XML refuses but urdfdom, Pinocchio and MuJoCo read (a blank line before ``<?xml``, a namespace
prefix never declared), and pybullet's ``<limit lower > upper>`` ("no limit"), load with one
RepairWarning each (``strict`` refuses them); what stays ambiguous is still refused.  A robot's
root link not named ``world`` stays fixed to the world, said once for robots that look mobile,
and ``floating_base`` floats it from Python, ``mb-sim`` and the node.  Real parts: the library,
the installed ``mb-sim`` and a ``mb_sim_node`` process over DDS.
"""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from nav_msgs.msg import Odometry

from mb_sim.model import load_urdf
from mb_sim.sim import Simulator
from mb_sim.urdf import FixedBaseWarning, RepairWarning, URDFError, parse_urdf
from test_node import node_env, nodes, peer, shared_peer, wait_for_output  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
MB_SIM = Path(sys.executable).parent / "mb-sim"
INERTIAL = ('<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>'
            '</inertial>')

#: The first lines of pybullet_data/differential/diff_ring.urdf (pybullet 3.2.7, zlib licence): the
#: file starts with an empty line, then the XML declaration.  The links below are written here.
DIFF_RING_HEAD = '\n<?xml version="1.0" ?>\n<robot name="husky_robot" xmlns:xacro="http://ros.org/wiki/xacro">\n'

#: A joint of pybullet_data/cube_no_rotation.urdf (pybullet 3.2.7, zlib licence), verbatim but for
#: the indentation: lower 1 above upper -1 is pybullet's "no limit" (the cube slides freely).
CUBE_NO_ROTATION_JOINT = '''
  <joint name="x_to_world" type="prismatic">
    <parent link="world"/>
    <child link="x_prismatic"/>
    <axis xyz="1 0 0"/>
    <limit effort="0.0" lower="1" upper="-1" velocity="1000.0"/>
    <origin rpy="0 0 0" xyz="0 0 0"/>
  </joint>'''


def _two_links(joint_extra: str = "", top_extra: str = "", head: str = '<robot name="r">') -> str:
    """A base and an arm on a revolute joint, with `joint_extra` inside the joint and `top_extra` at
    the top level."""
    return (f'{head}<link name="base"/><link name="arm">{INERTIAL}</link>'
            f'<joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/>'
            f'<limit lower="-1" upper="1" effort="1" velocity="1"/>{joint_extra}</joint>{top_extra}</robot>')


def _loaded(text: str, **options):
    """The robot and the messages of the warnings its loading issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        robot = load_urdf(text, **options)
    return robot, [(w.category, str(w.message)) for w in caught]


def _mb_sim(*arguments: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MB_SIM_CACHE_DIR": str(cache)}
    return subprocess.run([str(MB_SIM), *arguments], capture_output=True, text=True, timeout=300, env=env)


# --- item 4: XML and limits as urdfdom reads them --------------------------------------------------------

def test_a_blank_line_before_the_xml_declaration_is_skipped_with_one_repair(tmp_path):
    path = tmp_path / "diff_ring_head.urdf"
    path.write_text(DIFF_RING_HEAD + _two_links().removeprefix('<robot name="r">'))
    robot, messages = _loaded(path)
    assert robot.name == "husky_robot" and set(robot.joints) == {"hinge"}
    oddities = [m for c, m in messages if issubclass(c, RepairWarning) and "before <?xml" in m]
    assert len(oddities) == 1 and str(path) in oddities[0], messages
    assert [r.element for r in robot.repairs] == ["robot"]
    with pytest.raises(URDFError, match="malformed XML"):
        load_urdf(path, strict=True)


def test_a_byte_order_mark_and_blank_lines_before_the_declaration_load_from_text():
    robot, _ = _loaded("\ufeff" + DIFF_RING_HEAD + _two_links().removeprefix('<robot name="r">'))
    assert robot.name == "husky_robot"


def test_a_file_ending_in_a_nul_byte_loads_as_urdfdom_reads_it_with_one_repair(tmp_path):
    # pybullet's humanoid.urdf ends in a NUL byte: urdfdom reads a C string, which ends there;
    # XML refuses the byte ("not well-formed").  What follows it is named, never silently lost.
    path = tmp_path / "humanoid_tail.urdf"
    path.write_text(_two_links() + "\n\x00")
    robot, messages = _loaded(path)
    assert set(robot.joints) == {"hinge"}
    oddities = [m for c, m in messages if issubclass(c, RepairWarning) and "NUL byte" in m]
    assert len(oddities) == 1 and str(path) in oddities[0] and "all NUL" in oddities[0], messages
    with pytest.raises(URDFError, match="malformed XML"):
        load_urdf(path, strict=True)
    _, messages = _loaded(_two_links() + "\x00<link name='lost'/>")  # content after it: said so
    assert any("not all NUL" in m for _, m in messages), messages


def test_an_undeclared_namespace_prefix_is_ignored_with_one_repair_naming_it():
    """Drake's extensions as a Robotiq 2F-85 description uses them, without xmlns:drake: a
    ``drake:`` attribute on a joint, a ``<drake:...>`` element inside it and at the top level."""
    text = _two_links(joint_extra='<drake:gear_ratio value="1.0"/>',
                      top_extra='<drake:joint name="ball" type="ball"><parent link="base"/><child link="arm"/>'
                                '</drake:joint>').replace('type="revolute"', 'type="revolute" drake:mimic="x"')
    robot, messages = _loaded(text)
    assert set(robot.joints) == {"hinge"} and robot.joints["hinge"].joint_description.limit.upper == 1.0
    oddities = [m for c, m in messages if issubclass(c, RepairWarning)]
    assert len(oddities) == 1 and "'drake:'" in oddities[0] and "xmlns" in oddities[0], messages
    with pytest.raises(URDFError, match="unbound prefix"):
        load_urdf(text, strict=True)
    with pytest.raises(URDFError, match="malformed XML: mismatched tag"):  # lenient on prefixes only
        load_urdf(text.replace("</joint>", "</jiont>", 1))


def test_entity_declarations_are_still_refused_where_namespaces_are_lenient():
    text = ('<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
            + _two_links(joint_extra="<drake:x/>").replace('name="r"', 'name="&b;"'))
    with pytest.raises(URDFError, match="ENTITY a"):
        parse_urdf(text)


def test_a_lower_limit_above_the_upper_is_no_position_limit_with_one_repair_per_joint():
    text = ('<robot name="cube"><link name="world"/><link name="x_prismatic">' + INERTIAL + '</link>'
            + CUBE_NO_ROTATION_JOINT + '</robot>')
    robot, messages = _loaded(text)
    limit = robot.joints["x_to_world"].joint_description.limit
    assert limit.lower is None and limit.upper is None
    assert not any(type(g).__name__ == "JointLimitStop" for g in robot.joints["x_to_world"].load_groups)
    oddities = [m for c, m in messages if issubclass(c, RepairWarning)]
    assert len(oddities) == 1 and "joint 'x_to_world'" in oddities[0] and "no position limit" in oddities[0]
    with pytest.raises(URDFError, match="lower 1 is above upper -1"):
        load_urdf(text, strict=True)


# --- item 5: the fixed base said once, and floated on request ----------------------------------------------

MOBILE = ('<robot name="rover"><link name="base_link">' + INERTIAL + '</link><link name="wheel_left_link">'
          + INERTIAL + '</link><joint name="wheel_left_joint" type="continuous"><parent link="base_link"/>'
          '<child link="wheel_left_link"/><axis xyz="0 1 0"/></joint></robot>')


def test_a_mobile_robot_fixed_to_the_world_is_said_once_naming_the_root_and_the_remedy():
    _, messages = _loaded(MOBILE)
    notes = [m for c, m in messages if c is FixedBaseWarning]
    assert len(notes) == 1 and "root link 'base_link'" in notes[0] and "floating_base" in notes[0], messages
    _, messages = _loaded((REPO / "urdf" / "arm6.urdf").read_text())  # an arm rooted at base_link: no note
    assert not [m for c, m in messages if c is FixedBaseWarning]


def test_load_urdf_floating_base_joins_the_root_to_the_world_by_a_floating_joint():
    robot, messages = _loaded(MOBILE, floating_base=True)
    joint = robot.joints["root_joint"]
    assert type(joint).__name__ == "FloatingJoint" and joint.parent.name == "world" and joint.child.name == "base_link"
    assert not [m for c, m in messages if c is FixedBaseWarning]


def test_simulator_floating_base_floats_a_root_given_by_path(tmp_path):
    urdf = tmp_path / "rover.urdf"
    urdf.write_text(MOBILE)
    simulator = Simulator(urdf, floating_base=True, cache_dir=tmp_path / "cache")
    assert "root_joint" in simulator.robot.joints
    simulator.advance(0.1)
    z = simulator.q[simulator.coordinate_names.index("root_joint_z")]
    assert z == pytest.approx(-0.5 * 9.81 * 0.1 ** 2, rel=1e-3)  # free fall from rest


def test_floating_base_on_a_root_named_world_is_refused_in_one_line():
    with pytest.raises(URDFError, match="root link is the world itself"):
        load_urdf(REPO / "urdf" / "free_body.urdf", floating_base=True)


def test_floating_base_on_a_massless_root_with_one_hinge_is_refused_in_one_line():
    with pytest.raises(URDFError, match="link 'base': floating_base: .* no mass"):
        load_urdf(REPO / "urdf" / "pendulum.urdf", floating_base=True)


def _free_fall_depth(csv: Path) -> float:
    """The root's z at the end of a CSV trajectory of mb-sim simulate."""
    header, *rows = [line.split(",") for line in csv.read_text().splitlines() if line.strip()]
    (z,) = [k for k, name in enumerate(header) if name.strip().endswith("root_joint_z")]
    return float(rows[-1][z])


def test_mb_sim_floating_base_floats_the_root_and_it_falls(tmp_path):
    urdf, csv = tmp_path / "rover.urdf", tmp_path / "rover.csv"
    urdf.write_text(MOBILE)
    result = _mb_sim("simulate", str(urdf), "--floating-base", "--duration", "0.1", "--csv", str(csv),
                     cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    assert "FixedBaseWarning" not in result.stderr
    assert _free_fall_depth(csv) == pytest.approx(-0.5 * 9.81 * 0.1 ** 2, rel=1e-3)


def test_the_node_floating_base_parameter_floats_the_root(nodes, peer, tmp_path):
    urdf = tmp_path / "rover.urdf"
    urdf.write_text(MOBILE)
    odometry = peer.collect(Odometry, "/odom")
    process = nodes.get("-p", f"urdf_file:={urdf}", "-p", "floating_base:=true")
    assert peer.spin_until(lambda: len(odometry) > 0, 10.0), "no /odom: the base is not floating"
    assert process.running()


def test_the_node_says_once_that_a_mobile_robot_is_fixed(nodes, peer, tmp_path):
    urdf = tmp_path / "rover.urdf"
    urdf.write_text(MOBILE)
    process = nodes.get("-p", f"urdf_file:={urdf}")
    assert wait_for_output(peer, process, "is fixed to the world")
    notes = [line for line in process.lines if "is fixed to the world" in line]
    assert len(notes) == 1 and "root link 'base_link'" in notes[0] and "floating_base" in notes[0], process.lines

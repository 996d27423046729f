"""Third-party xacro files as ROS 2 users load them: the layouts and habits of real robot
descriptions, written as excerpts in their style (nothing here is read from outside the repository).

* UniversalRobots/Universal_Robots_ROS2_Description (BSD-3-Clause) ``urdf/ur.urdf.xacro`` and
  Kinovarobotics/ros2_kortex (BSD-3-Clause) ``robots/kinova.urdf.xacro`` name the robot
  ``<robot name="$(arg name)">`` above their ``<xacro:arg name="name" default=...>``: xacro reads the
  root's attributes first, so the default never applies (``xacro`` on the command line fails too).
* ros-controls/ros2_control_demos (Apache-2.0) keeps ``description/ros2_control/*.xacro`` in its
  source tree and installs them as ``share/PKG/ros2_control/``; its ``*_description.urdf.xacro``
  files only define macros for the example's top-level file to call.
* ``xacro.load_yaml`` of a configuration file and ``$(env VAR)``, as ur_description and franka_description
  use them; ``$(find pkg)/meshes/...`` of a mesh package not installed.

Each failure is one line naming the file and saying what to change.
"""
from __future__ import annotations

import subprocess

import pytest

from mb_sim.model import load_urdf
from mb_sim.urdf import URDFError, URDFWarning
from mb_sim.urdf.ros2_control import check_systems, ros2_control_systems
from mb_sim.urdf.xacro_expansion import expand_xacro
from test_node import NODE_EXE, node_env  # noqa: F401

XACRO_NS = 'xmlns:xacro="http://wiki.ros.org/xacro"'
#: One link on a revolute joint: the body of every excerpt below.
ARM = """
  <link name="${prefix}base_link"/>
  <link name="${prefix}link1">
    <inertial><mass value="1.0"/><origin xyz="0 0 0.25"/>
      <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.001"/></inertial>
  </link>
  <joint name="${prefix}joint1" type="revolute">
    <parent link="${prefix}base_link"/><child link="${prefix}link1"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/>
  </joint>"""


def one_line(error: pytest.ExceptionInfo) -> str:
    """The error's message, checked to be one line without a traceback."""
    message = str(error.value)
    assert "\n" not in message and "Traceback" not in message, message
    return message


# -- <robot name="$(arg name)"> above its <xacro:arg> (ur_description, kortex_description) ----------
def ur_style(tmp_path):
    """ur.urdf.xacro's opening: the root named by an argument declared inside it, with a default."""
    path = tmp_path / "ur.urdf.xacro"
    path.write_text(f'<?xml version="1.0"?>\n<robot {XACRO_NS} name="$(arg name)">\n'
                    '  <xacro:arg name="name" default="ur"/>\n  <xacro:arg name="tf_prefix" default=""/>\n'
                    '  <xacro:property name="prefix" value="$(arg tf_prefix)"/>\n'
                    f'{ARM}\n</robot>\n')
    return path


def test_an_argument_used_in_the_robot_tag_above_its_default_says_so_and_what_to_give(tmp_path):
    with pytest.raises(URDFError) as error:
        load_urdf(ur_style(tmp_path))
    message = one_line(error)
    assert message.startswith(str(tmp_path / "ur.urdf.xacro")), message
    assert "used in the <robot> tag" in message and 'default="ur"' in message, message
    assert "has no default" not in message, message  # the file declares one
    assert message.endswith("xacro_args name:=ur"), message
    robot = load_urdf(ur_style(tmp_path), xacro_args={"name": "ur5e", "tf_prefix": "left_"})  # as it says
    assert robot.name == "ur5e"
    assert "left_joint1" in robot.joints


def test_the_node_refuses_it_in_one_line_naming_the_argument(tmp_path, node_env):  # noqa: F811
    path = ur_style(tmp_path)
    done = subprocess.run([str(NODE_EXE), "--ros-args", "-p", f"urdf_file:={path}"], capture_output=True,
                          text=True, timeout=120, env=node_env)
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if str(path) in line]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "urdf_file" in lines[0] and "xacro_args name:=ur" in lines[0], lines[0]


# -- $(find pkg) of a source tree (ros2_control_demos' description/ layout) ----------------------
def demo_package(root, name="ros2_control_demo_example_x"):
    """A ros2_control_demos example in its source layout: description/urdf/ includes
    $(find PKG)/ros2_control/..., which exists as description/ros2_control/... until installed."""
    package = root / "src" / name
    (package / "description" / "urdf").mkdir(parents=True)
    (package / "description" / "ros2_control").mkdir()
    (package / "package.xml").write_text(f'<?xml version="1.0"?>\n<package format="3"><name>{name}</name>'
                                         '<version>0.0.0</version></package>\n')
    (package / "CMakeLists.txt").write_text(f"project({name})\ninstall(DIRECTORY description/ros2_control "
                                            f"description/urdf DESTINATION share/{name})\n")
    top = package / "description" / "urdf" / "rrbot.urdf.xacro"
    top.write_text(f'<?xml version="1.0"?>\n<robot {XACRO_NS} name="rrbot">\n'
                   f'  <xacro:include filename="$(find {name})/ros2_control/rrbot.ros2_control.xacro"/>\n'
                   '  <xacro:property name="prefix" value=""/>\n'
                   f'{ARM}\n  <xacro:rrbot_ros2_control name="RRBot" prefix=""/>\n</robot>\n')
    (package / "description" / "ros2_control" / "rrbot.ros2_control.xacro").write_text(
        f'<?xml version="1.0"?>\n<robot {XACRO_NS}>\n  <xacro:macro name="rrbot_ros2_control" params="name prefix">\n'
        '    <ros2_control name="${name}" type="system">\n'
        '      <hardware><plugin>joint_state_topic_hardware_interface/JointStateTopicSystem</plugin></hardware>\n'
        '      <joint name="${prefix}joint1"><command_interface name="position"/>'
        '<state_interface name="position"/></joint>\n    </ros2_control>\n  </xacro:macro>\n</robot>\n')
    return package, top


def install(package, prefix, name="ros2_control_demo_example_x"):
    """What colcon installs of `package`: share/NAME/{urdf,ros2_control}, listed in the ament index."""
    share = prefix / "share" / name
    share.mkdir(parents=True)
    for part in ("urdf", "ros2_control"):
        (share / part).mkdir()
        for file in (package / "description" / part).iterdir():
            (share / part / file.name).write_text(file.read_text())
    marker = prefix / "share" / "ament_index" / "resource_index" / "packages" / name
    marker.parent.mkdir(parents=True)
    marker.write_text("")
    return share / "urdf" / "rrbot.urdf.xacro"


def test_a_source_tree_found_on_ros_package_path_says_it_is_not_the_installed_layout(tmp_path, monkeypatch):
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "src"))
    package, top = demo_package(tmp_path)
    with pytest.raises(URDFError) as error:
        load_urdf(top)
    message = one_line(error)
    assert f"cannot include {package}/ros2_control/rrbot.ros2_control.xacro" in message, message
    assert "source tree" in message and "ROS_PACKAGE_PATH" in message, message
    assert "the tree has description/ros2_control/rrbot.ros2_control.xacro" in message, message
    assert "install/setup.bash" in message and "AMENT_PREFIX_PATH" in message, message
    top = install(package, tmp_path / "install")  # as it says: the installed layout loads
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "install"))
    assert "joint1" in load_urdf(top).joints


# -- a file of macros only (ros2_control_demo_description's *_description.urdf.xacro) --------------
def test_a_file_that_only_defines_macros_says_to_load_the_file_calling_them(tmp_path):
    path = tmp_path / "rrbot_description.urdf.xacro"
    path.write_text(f'<?xml version="1.0"?>\n<robot {XACRO_NS}>\n'
                    f'  <xacro:macro name="rrbot" params="parent prefix">{ARM}\n  </xacro:macro>\n</robot>\n')
    with pytest.raises(URDFError) as error:
        load_urdf(path)
    message = one_line(error)
    assert message.startswith(str(path)), message
    assert "defines xacro macros (rrbot) and calls none" in message and "<xacro:rrbot .../>" in message, message
    path.write_text(f'<?xml version="1.0"?>\n<robot {XACRO_NS} name="empty">\n'  # no macros: the URDF checks say it
                    '  <xacro:property name="a" value="1"/>\n</robot>\n')
    with pytest.raises(URDFError, match="no <link> elements"):
        load_urdf(path)


# -- what xacro itself reads: load_yaml, $(env) --------------------------------------------------
def yaml_robot(tmp_path, yaml_name: str):
    """A file whose inertia comes from a configuration file, as ur_description's physical_parameters."""
    path = tmp_path / "arm.urdf.xacro"
    body = ARM.replace('<mass value="1.0"/>', '<mass value="${config[\'link1\'][\'mass\']}"/>')
    path.write_text(f'<?xml version="1.0"?>\n<robot {XACRO_NS} name="arm">\n'
                    '  <xacro:property name="prefix" value=""/>\n'
                    f'  <xacro:property name="config" value="${{xacro.load_yaml(\'{yaml_name}\')}}"/>\n'
                    f'{body}\n</robot>\n')
    return path


def test_a_missing_yaml_is_named_as_load_yaml_not_as_an_include(tmp_path):
    with pytest.raises(URDFError) as error:
        load_urdf(yaml_robot(tmp_path, "physical_parameters.yaml"))
    message = one_line(error)
    assert f"cannot load {tmp_path / 'physical_parameters.yaml'} (xacro.load_yaml)" in message, message
    assert "include" not in message, message
    (tmp_path / "physical_parameters.yaml").write_text("link1:\n  mass: 2.5\n")  # next to the xacro: read
    robot = load_urdf(yaml_robot(tmp_path, "physical_parameters.yaml"))
    assert robot.links["link1"].link_description.inertial.mass == 2.5


def test_an_unset_environment_variable_is_said_once_without_pythons_class_name(tmp_path, monkeypatch):
    monkeypatch.delenv("MB_SIM_NO_SUCH_VARIABLE", raising=False)
    path = tmp_path / "env.urdf.xacro"
    path.write_text(f'<?xml version="1.0"?>\n<robot {XACRO_NS} name="env">\n'
                    '  <xacro:property name="prefix" value="$(env MB_SIM_NO_SUCH_VARIABLE)"/>\n'
                    f'{ARM}\n</robot>\n')
    with pytest.raises(URDFError) as error:
        load_urdf(path)
    message = one_line(error)
    assert "<class" not in message, message
    assert message.count("MB_SIM_NO_SUCH_VARIABLE") == 1 and "is not set" in message, message


# -- one topic-based <ros2_control> per joint (ros2_control_demos example_6's modular actuators) ----
def test_modular_actuators_on_the_default_topic_are_told_to_give_each_its_own(tmp_path):
    elements = "".join(
        f'<ros2_control name="RRBotModularJoint{k}" type="actuator"><hardware>'
        '<plugin>joint_state_topic_hardware_interface/JointStateTopicSystem</plugin></hardware>'
        f'<joint name="joint{k}"><command_interface name="position"/><state_interface name="position"/></joint>'
        '</ros2_control>' for k in (1, 2))
    text = f'<robot name="rrbot"><link name="base"/>{elements}</robot>'
    systems = ros2_control_systems(text, "rrbot.urdf")
    with pytest.raises(URDFError) as error:
        check_systems(systems, "rrbot.urdf", ["joint1", "joint2"], [], ["joint1", "joint2"], {})
    message = one_line(error)
    assert message.startswith('rrbot.urdf: <ros2_control name="RRBotModularJoint2">'), message
    assert message.endswith('give each <hardware> its own <param name="joint_commands_topic">'), message
    systems = ros2_control_systems(text.replace(  # as it says: served
        '</plugin></hardware><joint name="joint2">',
        '</plugin><param name="joint_commands_topic">/joint2_commands</param></hardware><joint name="joint2">'),
        "rrbot.urdf")
    check_systems(systems, "rrbot.urdf", ["joint1", "joint2"], [], ["joint1", "joint2"], {})
    assert [system.commands_topic for system in systems] == ["/robot_joint_commands", "/joint2_commands"]


# -- $(find pkg) of a package not installed, for meshes only (ROS 1-era descriptions) ---------------
def test_meshes_of_a_package_not_installed_do_not_block_loading_and_are_warned_about_once(tmp_path, monkeypatch):
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path))
    mesh = '<geometry><mesh filename="$(find mb_sim_absent_meshes)/meshes/link1.stl"/></geometry>'
    path = tmp_path / "meshes.urdf.xacro"
    path.write_text(f'<?xml version="1.0"?>\n<robot {XACRO_NS} name="meshes">\n'
                    '  <xacro:property name="prefix" value=""/>\n'
                    + ARM.replace("</inertial>", f"</inertial><visual>{mesh}</visual><collision>{mesh}</collision>")
                    + "\n</robot>\n")
    with pytest.warns(URDFWarning) as notes:
        expanded = expand_xacro(path)
    missing = [str(note.message) for note in notes if "mb_sim_absent_meshes" in str(note.message)]
    assert len(missing) == 1 and "not found" in missing[0] and "package://" in missing[0], missing
    assert expanded.count('filename="package://mb_sim_absent_meshes/meshes/link1.stl"') == 2, expanded
    with pytest.warns(URDFWarning, match="mb_sim_absent_meshes"):
        assert "joint1" in load_urdf(path).joints
    path.write_text(path.read_text().replace(  # included, the same package is still refused by name
        '<xacro:property name="prefix" value=""/>', '<xacro:property name="prefix" value=""/>'
        '<xacro:include filename="$(find mb_sim_absent_meshes)/urdf/parts.xacro"/>'))
    with pytest.raises(URDFError) as error:
        load_urdf(path)
    assert "$(find mb_sim_absent_meshes): package 'mb_sim_absent_meshes' not found" in one_line(error)

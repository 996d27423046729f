"""User components plug in through the ``mb_sim.components`` entry-point group and a URDF refers
to them by registered name.  The plug-in here is a real installed distribution (a dist-info with
an entry_points.txt on sys.path), found by importlib.metadata like any pip-installed one."""
from __future__ import annotations

import textwrap

import pytest

from mb_sim import load_urdf
from mb_sim.model import registered_components
from mb_sim.urdf import URDFError

PLUGIN_MODULE = textwrap.dedent('''
    """A third-party mb_sim component: a constant torque about a revolute joint's axis."""
    from mb_sim.model import LoadGroupBase, RevoluteJoint
    from mb_sim.model.parameters import parameter


    class ConstantJointTorque(LoadGroupBase):
        required_parent_type = RevoluteJoint
        urdf_parameters = {"torque": "constant torque about the joint axis [N m]"}

        def __init__(self, name):
            super().__init__(name)
            self._descriptions = {}

        @property
        def descriptions(self):
            return self._descriptions

        def _define_objects(self):
            self.torque = parameter(self, "torque", self.urdf_values["torque"],
                                    "constant torque about the joint axis [N m]", self._descriptions)

        def _define_loads(self):
            self.system.add_loads(*self.parent.generalized_force_loads(self.torque))
''')

PENDULUM_WITH = '''<robot name="p">
  <link name="base"/>
  <link name="rod"><inertial><origin xyz="0 0 -1"/><mass value="1"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <joint name="hinge" type="continuous"><parent link="base"/><child link="rod"/><axis xyz="0 1 0"/></joint>
  {component}
</robot>'''


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """Install a plug-in distribution registering ``constant_torque`` into a sys.path entry."""
    (tmp_path / "mb_sim_test_plugin.py").write_text(PLUGIN_MODULE)
    dist = tmp_path / "mb_sim_test_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mb-sim-test-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[mb_sim.components]\nconstant_torque = mb_sim_test_plugin:ConstantJointTorque\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "constant_torque"


def test_urdf_uses_a_registered_component(installed_plugin):
    assert installed_plugin in registered_components()
    xml = PENDULUM_WITH.format(component='<component type="constant_torque" name="motor" attach_to="hinge">'
                                         '<parameter name="torque" value="2.5"/></component>')
    robot = load_urdf(xml)
    (group,) = [g for g in robot.joints["hinge"].load_groups if g.name == "motor"]
    assert type(group).__name__ == "ConstantJointTorque"
    assert robot.parameters[group.torque] == 2.5
    assert "motor_torque = 2.5: constant torque about the joint axis [N m]" in robot.describe()
    rod_torques = [load for load in robot.system.loads if load.location == robot.links["rod"].frame]
    assert any(group.torque in load.vector.free_symbols(robot.world_frame) for load in rod_torques)


def test_unregistered_component_is_an_error_naming_it(installed_plugin):
    xml = PENDULUM_WITH.format(component='<component type="warp_drive" name="engine" attach_to="hinge"/>')
    with pytest.raises(URDFError, match=r"component 'engine': no component registered as 'warp_drive'.*constant_torque"):
        load_urdf(xml)


def test_component_parameters_are_checked(installed_plugin):
    xml = PENDULUM_WITH.format(component='<component type="constant_torque" name="motor" attach_to="hinge">'
                                         '<parameter name="torq" value="1"/></component>')
    with pytest.raises(URDFError, match=r"component 'motor': .*unknown parameter\(s\) torq \(known: torque\)"):
        load_urdf(xml)


def test_component_on_the_wrong_parent_type(installed_plugin):
    xml = PENDULUM_WITH.format(component='<component type="constant_torque" name="motor" attach_to="rod">'
                                         '<parameter name="torque" value="1"/></component>')
    with pytest.raises(URDFError, match=r"component 'motor': .*attaches to a RevoluteJoint, not to RigidLink\('rod'\)"):
        load_urdf(xml)


def test_component_attached_to_nothing():
    xml = PENDULUM_WITH.format(component='<component type="constant_torque" name="m" attach_to="elbow"/>')
    with pytest.raises(URDFError, match="component 'm': attach_to 'elbow' is neither a link nor a joint"):
        load_urdf(xml)

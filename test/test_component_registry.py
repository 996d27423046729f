"""User components plug in through the ``mb_sim.components`` entry-point group and a URDF refers
to them by registered name.  The plug-in here is a real installed distribution (a dist-info with
an entry_points.txt on sys.path), found by importlib.metadata like any pip-installed one."""
from __future__ import annotations

import textwrap

import pytest

from mb_sim import load_urdf
from mb_sim.model import registered_components
from mb_sim.sim import Simulator
from mb_sim.urdf import URDFError

PLUGIN_MODULE = textwrap.dedent('''
    """A third-party mb_sim component: a constant torque about a revolute joint's axis."""
    from mb_sim.model import Input, LoadGroupBase, RevoluteJoint
    from mb_sim.model.parameters import dynamic_symbol, parameter


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


    class Thruster(LoadGroupBase):
        """A commanded torque of its own about a revolute joint: an input through the inputs() hook."""
        required_parent_type = RevoluteJoint

        def _define_objects(self):
            self.thrust = dynamic_symbol(self._add_prefix("thrust"))
            self.symbols["thrust"] = self.thrust
            self._descriptions[self.thrust] = f"commanded torque of thruster {self.name!r} (input) [N m]"

        def _define_loads(self):
            self.system.add_loads(*self.parent.generalized_force_loads(self.thrust))

        def inputs(self):
            return [Input("effort", self.thrust, self.name, self.parent.name, 3.0, self)]
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
        "[mb_sim.components]\nconstant_torque = mb_sim_test_plugin:ConstantJointTorque\n"
        "thruster = mb_sim_test_plugin:Thruster\n")
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


FOLLOWER = '''
  <link name="arm"><inertial><origin xyz="0 0 -0.5"/><mass value="2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="follower" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <mimic joint="hinge" multiplier="-2.0"/></joint>'''


def test_a_component_adds_an_input_through_the_inputs_hook(installed_plugin, tmp_path):
    # The simulator, its commands and the CLI learn what can be commanded from the components'
    # inputs() hook, not from their types: a thruster on the mimic joint (which takes no effort of
    # its own) is commanded by the joint's name and clamped to the limit it declares.  By virtual
    # work a torque t on the follower (q_f = -2 q_h) is a torque -2 t on the hinge.
    xml = PENDULUM_WITH.format(component=FOLLOWER + '<component type="thruster" name="follower" attach_to="follower"/>')
    sim = Simulator(load_urdf(xml), cache_dir=tmp_path)
    assert sim.actuated_joints == ["hinge", "follower"] and list(sim.effort_limits[1:]) == [3.0]

    def speeds_after(efforts):
        sim.reset()
        sim.set_efforts(efforts)
        sim.advance(0.1)
        return sim.u.copy()

    through_follower = speeds_after({"follower": 1.5})
    assert through_follower == pytest.approx(speeds_after({"hinge": -3.0}), rel=1e-9, abs=1e-12)
    assert abs(through_follower[0]) > 1e-3
    assert speeds_after({"follower": 10.0}) == pytest.approx(speeds_after({"follower": 3.0}), rel=1e-12)


def test_two_components_commanding_one_joint_is_an_error_naming_both(installed_plugin):
    xml = PENDULUM_WITH.format(component='<component type="thruster" name="hinge" attach_to="hinge"/>')
    with pytest.raises(Exception, match=r"Thruster 'hinge': effort 'hinge' is already an input of JointEffort 'hinge'"):
        Simulator(load_urdf(xml))


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

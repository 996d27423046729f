"""Ball joints in the tree (issue 39, item 2): URDF ``type="spherical"`` (pybullet's name;
``"ball"``, Drake's, is read the same), orientation by a unit quaternion.  Checked against
Pinocchio's spherical joint (mass matrix and forward dynamics at random states), by energy over
10 s of tumbling through every tilt, at the configuration where three revolutes would lock, and
for what it refuses."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pinocchio as pin
import pytest

from mb_sim.sim import Simulator
from mb_sim.urdf import URDFError

#: A spherical pendulum whose rod is off its axes (centre of mass and inertia turned), hung from a
#: turned joint frame: nothing lines up by accident.
PENDULUM = """<?xml version="1.0"?>
<robot name="spherical_pendulum">
  <link name="base"/>
  <link name="rod">
    <inertial>
      <origin xyz="0.05 0.02 -0.5" rpy="0.1 0.2 0.3"/>
      <mass value="1.5"/>
      <inertia ixx="0.03" ixy="0.001" ixz="-0.002" iyy="0.025" iyz="0.0015" izz="0.006"/>
    </inertial>
  </link>
  <joint name="shoulder" type="TYPE">
    <parent link="base"/>
    <child link="rod"/>
    <origin xyz="0 0 1.5" rpy="0.2 -0.1 0.4"/>
    EXTRA
  </joint>
</robot>
"""


def pendulum(kind: str = "spherical", extra: str = "") -> str:
    return PENDULUM.replace("TYPE", kind).replace("EXTRA", extra)


def simulator(model_cache, kind: str = "spherical", **options) -> Simulator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Simulator(pendulum(kind), cache_dir=model_cache, **options)


def pinocchio_pendulum() -> tuple[pin.Model, pin.Data]:
    """The same pendulum built by hand on Pinocchio's spherical joint."""
    model = pin.Model()
    placement = pin.SE3(pin.rpy.rpyToMatrix(0.2, -0.1, 0.4), np.array([0.0, 0.0, 1.5]))
    joint = model.addJoint(0, pin.JointModelSpherical(), placement, "shoulder")
    inertia = np.array([[0.03, 0.001, -0.002], [0.001, 0.025, 0.0015], [-0.002, 0.0015, 0.006]])
    turn = pin.rpy.rpyToMatrix(0.1, 0.2, 0.3)
    model.appendBodyToJoint(joint, pin.Inertia(1.5, np.array([0.05, 0.02, -0.5]), turn @ inertia @ turn.T),
                            pin.SE3.Identity())
    model.gravity.linear = np.array([0.0, 0.0, -9.81])
    return model, model.createData()


def test_mass_matrix_and_accelerations_equal_pinocchio_s_spherical_joint(model_cache):
    sim = simulator(model_cache)
    assert sim.coordinate_names == ["shoulder_qw", "shoulder_qx", "shoulder_qy", "shoulder_qz"]
    assert sim.speed_names == ["shoulder_wx", "shoulder_wy", "shoulder_wz"]
    model, data = pinocchio_pendulum()
    rng = np.random.default_rng(7)
    params, inputs = sim.model.buffers.params.copy(), np.zeros(sim.model.n_inputs)
    for _ in range(20):
        quaternion = rng.normal(size=4)
        quaternion /= np.linalg.norm(quaternion)
        u = rng.normal(scale=3.0, size=3)
        mass = sim.model.evaluate(quaternion, u, inputs, params)["mass_matrix"]
        udot = sim.model.forward_dynamics(quaternion, u, inputs, params, 0.0)[1]
        q_pin = np.r_[quaternion[1:], quaternion[0]]  # Pinocchio: (x, y, z, w)
        assert np.allclose(mass, pin.crba(model, data, q_pin), rtol=0, atol=1e-13)
        assert np.allclose(udot, pin.aba(model, data, q_pin, u, np.zeros(3)), rtol=0, atol=1e-11)


def test_drake_s_ball_is_read_as_spherical(model_cache):
    assert simulator(model_cache, "ball").coordinate_names == simulator(model_cache).coordinate_names


def test_it_tumbles_through_every_tilt_with_its_energy_kept(model_cache):
    """Started at the orientation where a chain of three revolutes (x, y, z) locks, the middle
    one at 90 degrees, and spun: over 10 s the rod passes through horizontal and well above it,
    the mass matrix stays as well conditioned as at rest, the energy holds to 1e-9."""
    sim = simulator(model_cache, integrator="DOP853", rtol=1e-12, atol=1e-12)
    locked = np.r_[math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0]  # 90 degrees about y
    sim.set_state(q=locked, u=[1.0, 9.0, 2.0])
    params, inputs = sim.model.buffers.params, np.zeros(sim.model.n_inputs)
    condition = np.linalg.cond(sim.model.evaluate(locked, sim.u, inputs, params)["mass_matrix"])
    assert condition == pytest.approx(np.linalg.cond(sim.model.evaluate(np.r_[1.0, 0, 0, 0], sim.u, inputs,
                                                                         params)["mass_matrix"]), rel=1e-9)
    energy = lambda o: o.kinetic_energy + o.potential_energy  # noqa: E731
    start, tilts = energy(sim.outputs()), []
    for _ in range(200):
        sim.advance(0.05)
        rod_axis = sim.outputs(dynamics=False).link_poses["rod"][:3, :3] @ np.array([0.05, 0.02, -0.5])
        tilts.append(math.degrees(math.acos(-rod_axis[2] / np.linalg.norm(rod_axis))))  # 0: hanging
    assert min(tilts) < 80.0 and max(tilts) > 120.0
    assert abs(energy(sim.outputs()) - start) <= 1e-9 * abs(start)
    assert abs(np.linalg.norm(sim.q) - 1.0) < 1e-12


@pytest.mark.parametrize("extra, problem", [
    ('<limit lower="-1" upper="1" effort="1" velocity="1"/>', "<limit>: a spherical joint takes no lower or upper"),
    ('<dynamics damping="0.1"/>', "<dynamics>: damping and friction are not simulated on a spherical joint"),
    ('<mimic joint="other"/>', "<mimic>: a spherical joint cannot mimic another joint"),
])
def test_what_a_ball_joint_cannot_honour_is_refused_in_one_line(model_cache, extra, problem):
    with pytest.raises(URDFError) as err:
        Simulator(pendulum(extra=extra), cache_dir=model_cache)
    assert "joint 'shoulder'" in str(err.value) and problem in str(err.value)
    assert "\n" not in str(err.value)


def test_effort_limits_and_a_zero_dynamics_are_fine(model_cache):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = Simulator(pendulum(extra='<limit effort="5" velocity="3"/><dynamics damping="0"/>'), cache_dir=model_cache)
    assert sim.coordinate_names[0] == "shoulder_qw"

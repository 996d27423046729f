"""Mass matrix, forcing (bias forces) and forward dynamics of the generated C code agree with
Pinocchio (crba, nle, aba) to 1e-9 relative at 20 random states (q, u, efforts) per robot.

Damping, friction and joint-stop parameters are set to zero at run time (Pinocchio's algorithms
have none, and the random states lie outside some joint limits).
Panda's finger joint mimics the other: there the expected accelerations solve the constrained
problem with Pinocchio's M and bias forces and the mimic constraint row written from the URDF.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from mb_sim import load_urdf
from mb_sim.codegen import compile_model
from mb_sim.symbolic import derive_equations
from pinocchio_reference import (
    example_robot_data_dir, mimic_constraint_rows, pinocchio_configuration, pinocchio_efforts, random_coordinates,
    relative_error, velocity_map, with_floating_base,
)

RELATIVE_TOLERANCE = 1e-9
# Panda's and Solo12's URDFs carry simulator-specific attributes mb_sim ignores (with a warning).
pytestmark = pytest.mark.filterwarnings("ignore::mb_sim.urdf.URDFWarning")


#: Joints whose axes lie along no frame axis and are not unit vectors (both joint kinds that take
#: an axis), mounted at rotated origins: the axis's components are parameters, normalized.
OBLIQUE_ARM = """<robot name="oblique_arm">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0.1 0 0.2" rpy="0.3 -0.2 0.5"/><axis xyz="0.3 -0.5 0.8"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <link name="l1"><inertial><origin xyz="0.1 0.05 -0.2" rpy="0.2 0.1 0"/><mass value="1.2"/>
    <inertia ixx="0.03" iyy="0.025" izz="0.012" ixy="0.001" ixz="0" iyz="0.002"/></inertial></link>
  <joint name="j2" type="continuous"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0.1 -0.4" rpy="-0.4 0.7 0.1"/><axis xyz="1 1 0"/></joint>
  <link name="l2"><inertial><origin xyz="0 0 -0.2"/><mass value="0.8"/>
    <inertia ixx="0.02" iyy="0.02" izz="0.005" ixy="0" ixz="0.001" iyz="0"/></inertial></link>
  <joint name="j3" type="prismatic"><parent link="l2"/><child link="l3"/>
    <origin xyz="0 0 -0.3" rpy="0 0.3 0"/><axis xyz="0.2 0.4 -1"/>
    <limit lower="-0.2" upper="0.2" effort="10" velocity="1"/></joint>
  <link name="l3"><inertial><origin xyz="0.05 0 0"/><mass value="0.5"/>
    <inertia ixx="0.002" iyy="0.003" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial></link>
</robot>
"""


def robot_xml(name: str, repo) -> str:
    shipped = {"arm6", "double_pendulum", "free_body"}
    if name == "oblique_arm":
        return OBLIQUE_ARM
    if name in shipped:
        return (repo / "urdf" / f"{name}.urdf").read_text()
    robots = example_robot_data_dir()
    if name == "ur5":
        return (robots / "ur_description" / "urdf" / "ur5_robot.urdf").read_text()
    if name == "panda":
        return (robots / "panda_description" / "urdf" / "panda.urdf").read_text()
    return with_floating_base((robots / "solo_description" / "robots" / "solo12.urdf").read_text(), "base_link")


def run_time_parameters(eom) -> np.ndarray:
    """URDF values with joint damping, friction and stops switched off."""
    return np.array([0.0 if str(s).endswith(("_damping", "_friction", "_limit_stiffness")) else value
                     for s, value in zip(eom.parameters, eom.parameter_values)])


@pytest.fixture(scope="module")
def cache_dir(model_cache):
    return model_cache


@pytest.mark.parametrize("name", ["arm6", "double_pendulum", "free_body", "oblique_arm", "ur5", "panda", "solo12"])
def test_dynamics_match_pinocchio(name, repo, cache_dir):
    xml = robot_xml(name, repo)
    robot = load_urdf(xml)
    eom = derive_equations(robot)
    compiled = compile_model(eom, backend="c", cache_dir=cache_dir)
    model = pin.buildModelFromXML(xml)
    data = model.createData()
    params = run_time_parameters(eom)
    rng = np.random.default_rng(7)
    worst = {"mass matrix": 0.0, "forcing": 0.0, "forward dynamics": 0.0}
    for _ in range(20):
        q = random_coordinates(robot, rng)
        q_pin = pinocchio_configuration(robot, model, q)
        v = rng.normal(size=model.nv)
        G, G_dot = velocity_map(robot, model, q, v)
        u = G @ v
        efforts = rng.normal(scale=5.0, size=len(eom.inputs))
        tau = pinocchio_efforts(robot, model, efforts)

        out = compiled.evaluate(q, u, efforts, params)
        M_pin = pin.crba(model, data, q_pin)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        expected_M = G @ M_pin @ G.T
        expected_F = G @ (tau - pin.nle(model, data, q_pin, v) - M_pin @ G_dot.T @ u)
        worst["mass matrix"] = max(worst["mass matrix"], relative_error(out["mass_matrix"], expected_M))
        worst["forcing"] = max(worst["forcing"], relative_error(out["forcing"].ravel(), expected_F))

        _, udot = compiled.forward_dynamics(q, u, efforts, params)
        if eom.n_constraints:
            A = mimic_constraint_rows(robot)
            np.testing.assert_allclose(out["constraint_matrix"], A, atol=1e-14)
            np.testing.assert_allclose(out["acceleration_bias"], 0.0, atol=1e-14)
            n_c = len(A)
            kkt = np.block([[expected_M, A.T], [A, np.zeros((n_c, n_c))]])
            expected_udot = np.linalg.solve(kkt, np.concatenate([expected_F, np.zeros(n_c)]))[:len(u)]
        else:
            expected_udot = G_dot @ v + G @ pin.aba(model, data, q_pin, v, tau)
        worst["forward dynamics"] = max(worst["forward dynamics"], relative_error(udot, expected_udot))
    print(f"{name}: " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    assert max(worst.values()) < RELATIVE_TOLERANCE, worst

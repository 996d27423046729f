"""Force-torque sensors on joints (mb_sim/sim/force_torque.py, outputs ft_jacobians and ft_states
of mb_sim/symbolic/force_torque.py) against references derived here, never from the model:

* a serial arm held at rest in a pose by efforts computed here: each sensor reads the weight of
  its joint's child side and that weight's moment about the joint origin, from the URDF's masses
  and centres of mass by a forward kinematics written here;
* a damped pendulum swinging: the pivot force m (a_G - g) with a_G from the pendulum equation
  (tangential and centripetal parts), the torque's axis component the damping torque, to 1e-8;
* the arm moving: every sensor (a fixed joint's included) against Newton-Euler of its child side
  by a recursion written here, u' from central differences of the simulated speeds;
* Go1 standing on the ground: a calf sensor (child_to_parent) is the foot's contact force plus
  the calf side's weight, the four hip sensors (Gazebo tags) balance the trunk's weight;
* the declarations and their one-line errors, and a real rclpy subscriber of the node's topic.

Convention: "parent_to_child" (the default of ``<mb_sim><force_torque>``) is the wrench the parent
exerts on the child side through the joint; "child_to_parent" (SDFormat's default) its negative.
"""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from mb_sim.model import load_urdf
from mb_sim.sim import Simulator
from mb_sim.urdf import URDFError
from test_node import node_env, nodes, peer, shared_peer, wait_for_output  # noqa: F401  (real node fixtures)

G = 9.81
ROBOTS = Path(__file__).resolve().parents[1] / ".venv/lib/python3.11/site-packages/cmeel.prefix/share/example-robot-data/robots"
GO1 = ROBOTS / "go1_description/urdf/go1.urdf"

ARM = """<robot name="ft_arm">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1000" velocity="50"/>
    <dynamics damping="0.05"/></joint>
  <link name="l1"><inertial><origin xyz="0.02 0.01 0.12"/><mass value="1.5"/>
    <inertia ixx="0.02" iyy="0.025" izz="0.01" ixy="0.001" ixz="0.002" iyz="-0.001"/></inertial></link>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.05 0 0.3" rpy="0.1 0.2 0.3"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1000" velocity="50"/></joint>
  <link name="l2"><inertial><origin xyz="0.15 0.02 0.01" rpy="0.2 0 0.1"/><mass value="1.2"/>
    <inertia ixx="0.004" iyy="0.03" izz="0.028" ixy="0.0005" ixz="0" iyz="0.0002"/></inertial></link>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/>
    <origin xyz="0.3 0 0" rpy="0 0 0.4"/><axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="1000" velocity="50"/></joint>
  <link name="l3"><inertial><origin xyz="0.1 0 -0.02"/><mass value="0.8"/>
    <inertia ixx="0.002" iyy="0.01" izz="0.011" ixy="0" ixz="0.0003" iyz="0"/></inertial></link>
  <joint name="tool_joint" type="fixed"><parent link="l3"/><child link="tool"/>
    <origin xyz="0.22 0.03 0" rpy="0.3 -0.2 0.5"/></joint>
  <link name="tool"><inertial><origin xyz="0.04 -0.01 0.02"/><mass value="0.5"/>
    <inertia ixx="0.001" iyy="0.002" izz="0.0015" ixy="0.0001" ixz="0" iyz="0"/></inertial></link>
  <mb_sim>
    <force_torque name="ft1" joint="j1"/>
    <force_torque name="ft2" joint="j2"/>
    <force_torque name="ft3" joint="j3"/>
    <force_torque name="ft_tool" joint="tool_joint"/>
  </mb_sim>
  <gazebo reference="j2"><sensor type="force_torque" name="ft2_gz">
    <force_torque><frame>parent</frame><measure_direction>child_to_parent</measure_direction></force_torque>
  </sensor></gazebo>
</robot>
"""


def rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF roll-pitch-yaw as a matrix, written out here."""
    cx, sx, cy, sy, cz, sz = (math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch),
                              math.cos(yaw), math.sin(yaw))
    return (np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]]) @ np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
            @ np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]]))


def axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' rotation about a unit axis."""
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


def numbers(text: str | None, default: str = "0 0 0") -> np.ndarray:
    return np.array([float(v) for v in (text or default).split()])


class Chain:
    """The URDF's tree read here with ElementTree: joints (parents first), masses, inertias."""

    def __init__(self, text: str) -> None:
        root = ET.fromstring(text)
        self.joints = []
        for j in root.findall("joint"):
            origin = j.find("origin")
            self.joints.append({
                "name": j.get("name"), "type": j.get("type"), "parent": j.find("parent").get("link"),
                "child": j.find("child").get("link"),
                "xyz": numbers(origin.get("xyz") if origin is not None else None),
                "R": rpy(*numbers(origin.get("rpy") if origin is not None else None)),
                "axis": numbers(j.find("axis").get("xyz")) if j.find("axis") is not None else np.zeros(3)})
        self.inertial = {}
        for link in root.findall("link"):
            i = link.find("inertial")
            if i is None:
                continue
            o = i.find("origin")
            Rc = rpy(*numbers(o.get("rpy") if o is not None else None))
            a = {k: float(v) for k, v in i.find("inertia").attrib.items()}
            inertia = np.array([[a["ixx"], a["ixy"], a["ixz"]], [a["ixy"], a["iyy"], a["iyz"]],
                                [a["ixz"], a["iyz"], a["izz"]]])
            self.inertial[link.get("name")] = (float(i.find("mass").get("value")),
                                               numbers(o.get("xyz") if o is not None else None),
                                               Rc @ inertia @ Rc.T)

    def side(self, joint: str) -> list[str]:
        """The child link of `joint` and every link below it."""
        child = next(j["child"] for j in self.joints if j["name"] == joint)
        found = [child]
        for j in self.joints:
            if j["parent"] in found:
                found.append(j["child"])
        return found

    def motion(self, q: dict, u: dict, udot: dict) -> dict:
        """Per link (fixed base): rotation, origin, angular velocity and acceleration, origin
        acceleration (world), by the textbook recursion."""
        state = {}
        for j in self.joints:
            R_p, p_p, w_p, al_p, a_p = state.get(j["parent"], (np.eye(3), np.zeros(3), np.zeros(3), np.zeros(3),
                                                               np.zeros(3)))
            r = R_p @ j["xyz"]
            R = R_p @ j["R"]
            a = a_p + np.cross(al_p, r) + np.cross(w_p, np.cross(w_p, r))
            w, al = w_p, al_p
            if j["type"] in ("revolute", "continuous"):
                n = j["axis"] / np.linalg.norm(j["axis"])
                s = R @ n
                R = R @ axis_angle(n, q[j["name"]])
                w = w_p + s * u[j["name"]]
                al = al_p + s * udot[j["name"]] + np.cross(w_p, s * u[j["name"]])
            state[j["child"]] = (R, p_p + r, w, al, a)
        return state

    def wrench(self, joint: str, state: dict, gravity=np.array([0, 0, -G])) -> tuple[np.ndarray, np.ndarray]:
        """Newton-Euler of `joint`'s child side: the wrench on it through the joint (world, about
        the joint origin)."""
        side = self.side(joint)
        origin = state[side[0]][1]
        force, torque = np.zeros(3), np.zeros(3)
        for link in side:
            if link not in self.inertial:
                continue
            m, c, inertia = self.inertial[link]
            R, p, w, al, a = state[link]
            r = R @ c
            f = m * (a + np.cross(al, r) + np.cross(w, np.cross(w, r)) - gravity)
            I = R @ inertia @ R.T
            force += f
            torque += I @ al + np.cross(w, I @ w) + np.cross(p + r - origin, f)
        return force, torque


@pytest.fixture(scope="module")
def arm(tmp_path_factory, model_cache) -> Simulator:
    path = tmp_path_factory.mktemp("ft") / "arm.urdf"
    path.write_text(ARM)
    return Simulator(path, dt=1e-4, cache_dir=model_cache)


POSE = {"j1": 0.7, "j2": -0.9, "j3": 1.3}
ARM_SENSORS = {"ft1": "j1", "ft2": "j2", "ft3": "j3", "ft_tool": "tool_joint"}


def test_arm_at_rest_reads_the_weight_below_each_joint(arm: Simulator) -> None:
    chain = Chain(ARM)
    zero = dict.fromkeys(POSE, 0.0)
    state = chain.motion(POSE, zero, zero)
    efforts = {}
    for j in chain.joints:  # hold the pose: minus the weight's moment about each axis
        if j["name"] in POSE:
            _, torque = chain.wrench(j["name"], state)
            axis = state[j["child"]][0] @ (j["axis"] / np.linalg.norm(j["axis"]))
            efforts[j["name"]] = float(axis @ torque)
    arm.set_state(positions=POSE, velocities=zero)
    arm.set_efforts(efforts)
    for name, joint in ARM_SENSORS.items():
        weight, moment = np.zeros(3), np.zeros(3)
        origin = state[chain.side(joint)[0]][1]
        for link in chain.side(joint):
            m, c, _ = chain.inertial[link]
            R, p = state[link][:2]
            weight += m * np.array([0, 0, -G])
            moment += np.cross(p + R @ c - origin, m * np.array([0, 0, -G]))
        R = state[chain.side(joint)[0]][0]
        force, torque = arm.force_torque(name)  # the parent holds the side up: minus its weight
        np.testing.assert_allclose(force, -R.T @ weight, atol=1e-9)
        np.testing.assert_allclose(torque, -R.T @ moment, atol=1e-9)
    parent_frame = state["l1"][0]  # the Gazebo sensor on j2: parent's axes, child_to_parent
    force, torque = arm.force_torque("ft2_gz")
    child_force, child_torque = arm.force_torque("ft2")
    child = state["l2"][0]
    np.testing.assert_allclose(force, -parent_frame.T @ child @ child_force, atol=1e-9)
    np.testing.assert_allclose(torque, -parent_frame.T @ child @ child_torque, atol=1e-9)
    arm.set_efforts(dict.fromkeys(POSE, 0.0))


def test_pendulum_pivot_force_is_mass_times_acceleration_less_gravity(tmp_path) -> None:
    m, l, I, d, theta0 = 2.0, 0.5, 0.03, 0.3, 1.0
    path = tmp_path / "pendulum.urdf"
    path.write_text(f"""<robot name="ft_pendulum"><link name="base"/>
      <joint name="hinge" type="continuous"><parent link="base"/><child link="bob"/>
        <origin xyz="0 0 1"/><axis xyz="0 1 0"/><dynamics damping="{d}"/></joint>
      <link name="bob"><inertial><origin xyz="0 0 -{l}"/><mass value="{m}"/>
        <inertia ixx="0.02" iyy="{I}" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <mb_sim><force_torque name="pivot" joint="hinge"/></mb_sim></robot>""")
    sim = Simulator(path, dt=1e-3, cache_dir=tmp_path / "cache", default_effort_limit=10.0)
    sim.set_state(positions={"hinge": theta0})
    for _ in range(4):
        sim.advance(0.13)
        theta, rate = float(sim.q[0]), float(sim.u[0])
        accel = (-m * G * l * math.sin(theta) - d * rate) / (I + m * l * l)  # the pendulum equation
        # Bob frame: turned by theta about y; centre of mass at (0, 0, -l) there.  Tangential
        # acceleration (0, accel, 0) x (0, 0, -l) = -l accel along x, centripetal l rate^2 towards
        # the pivot (+z); gravity (0, 0, -g) in the bob's axes Ry(theta)^T (0, 0, -g).
        tangential, centripetal = -l * accel, l * rate ** 2
        gravity_in_bob = np.array([G * math.sin(theta), 0.0, -G * math.cos(theta)])
        expected = m * (np.array([tangential, 0.0, centripetal]) - gravity_in_bob)
        force, torque = sim.force_torque("pivot")
        np.testing.assert_allclose(force, expected, rtol=0, atol=1e-8)
        np.testing.assert_allclose(torque[1], -d * rate, rtol=0, atol=1e-8)  # the damping it transmits
        np.testing.assert_allclose(torque[[0, 2]], [0.0, 0.0], atol=1e-8)


def test_moving_arm_matches_newton_euler_of_each_child_side(arm: Simulator) -> None:
    chain = Chain(ARM)
    arm.set_state(positions=POSE, velocities={"j1": 1.5, "j2": -2.0, "j3": 3.0})
    arm.set_efforts({"j1": 2.0, "j2": -1.0, "j3": 0.5})
    arm.advance(0.05)
    names = list(POSE)
    before = dict(zip(names, arm.u))
    arm.step()
    q, u = dict(zip(names, arm.q)), dict(zip(names, arm.u))
    readings = {name: arm.force_torque(name) for name in ARM_SENSORS}
    arm.step()
    after = dict(zip(names, arm.u))
    udot = {n: (after[n] - before[n]) / (2 * arm.dt) for n in names}  # central difference of the simulated speeds
    state = chain.motion(q, u, udot)
    for name, joint in ARM_SENSORS.items():
        force, torque = chain.wrench(joint, state)
        R = state[chain.side(joint)[0]][0]
        np.testing.assert_allclose(readings[name][0], R.T @ force, rtol=0, atol=2e-5 * max(1, np.abs(force).max()))
        np.testing.assert_allclose(readings[name][1], R.T @ torque, rtol=0, atol=2e-5 * max(1, np.abs(torque).max()))
    arm.set_efforts(dict.fromkeys(POSE, 0.0))



LEGS = ("FR", "FL", "RR", "RL")


@pytest.fixture(scope="module")
def go1(tmp_path_factory, model_cache) -> tuple[Simulator, str]:
    """Go1 floating on the ground with a calf sensor (mb_sim, child_to_parent) and Gazebo sensors
    on the hips (SDFormat's default child_to_parent), held standing by PD efforts until at rest."""
    if not GO1.exists():
        pytest.skip("example-robot-data's Go1 is not installed")
    extra = ('<mb_sim><force_torque name="fr_calf" joint="FR_calf_joint" measure_direction="child_to_parent"/>'
             '</mb_sim>' + "".join(f'<gazebo reference="{leg}_hip_joint"><sensor type="force_torque" '
                                   f'name="{leg}_hip_ft"><force_torque><frame>child</frame></force_torque></sensor>'
                                   '</gazebo>' for leg in LEGS))
    text = GO1.read_text().replace("</robot>", extra + "</robot>")
    path = tmp_path_factory.mktemp("go1") / "go1_ft.urdf"
    path.write_text(text)
    sim = Simulator(load_urdf(path, floating_base=True, ground=True), dt=1e-3,
                    cache_dir=model_cache)
    pose = {f"{leg}_{part}_joint": value for leg in LEGS for part, value in (("hip", 0.0), ("thigh", 0.8),
                                                                                ("calf", -1.5))}
    target = np.array(list(pose.values()))
    rows_q = [sim.coordinate_names.index(f"{j}_q") for j in pose]
    rows_u = [sim.speed_names.index(f"{j}_u") for j in pose]
    sim.set_state(positions={**pose, "root_joint_z": 0.33})
    for _ in range(2500):
        sim.set_efforts(dict(zip(pose, 80 * (target - sim.q[rows_q]) - 2 * sim.u[rows_u])))
        sim.step()
    assert np.abs(sim.u).max() < 2e-3  # at rest
    return sim, text


@pytest.mark.slow
def test_go1_calf_carries_the_foot_contact_and_the_hips_carry_the_trunk(go1) -> None:
    sim, text = go1
    chain = Chain(text)
    out = sim.outputs()
    poses = out.link_poses
    # The calf (child_to_parent: the calf side pushes on the thigh): at rest, minus what holds the
    # side up = the foot's contact force plus the side's weight (world), in the calf's axes.
    model = sim.model
    model.evaluate_into(sim.time)
    rows = model.layout.view(model.buffers.out, "contact_states")
    contact = sum(row[9:12] for name, row in zip(model.contact_names, rows) if name.split("/")[1] in chain.side("FR_calf_joint"))
    weight = sum(chain.inertial[link][0] for link in chain.side("FR_calf_joint")) * np.array([0, 0, -G])
    R_calf = poses["FR_calf"][:3, :3]
    force, _ = sim.force_torque("fr_calf")
    expected = R_calf.T @ (contact + weight)
    assert np.linalg.norm(contact) > 10.0
    np.testing.assert_allclose(force, expected, rtol=0, atol=1e-3 * np.linalg.norm(expected))
    # The hips (child_to_parent: each leg on the trunk) and the trunk's weight balance.
    legs = {link for leg in LEGS for link in chain.side(f"{leg}_hip_joint")}
    trunk_mass = sum(m for link, (m, _, _) in chain.inertial.items() if link not in legs)
    total_force, total_torque = trunk_mass * np.array([0, 0, -G]), np.zeros(3)
    centre = sum(chain.inertial[link][0] * (poses[link][:3, :3] @ chain.inertial[link][1] + poses[link][:3, 3])
                 for link in chain.inertial if link not in legs) / trunk_mass
    for leg in LEGS:
        hip = poses[f"{leg}_hip"]
        force, torque = sim.force_torque(f"{leg}_hip_ft")
        total_force += hip[:3, :3] @ force
        total_torque += hip[:3, :3] @ torque + np.cross(hip[:3, 3] - centre, hip[:3, :3] @ force)
    weight = trunk_mass * G
    assert np.linalg.norm(total_force) < 1e-3 * weight
    assert np.linalg.norm(total_torque) < 1e-3 * weight * 0.2


def test_node_publishes_the_pivot_wrench_to_a_real_subscriber(nodes, peer, tmp_path) -> None:
    """``~/force_torque/<name>`` (geometry_msgs/WrenchStamped) from a real node process: a
    pendulum hanging at rest, its pivot carrying its weight m g up in the bob's axes, frame_id
    the bob."""
    from geometry_msgs.msg import WrenchStamped

    mass = 2.0
    path = tmp_path / "hanging.urdf"
    path.write_text(f"""<robot name="ft_hanging"><link name="base"/>
      <joint name="hinge" type="continuous"><parent link="base"/><child link="bob"/>
        <origin xyz="0 0 1"/><axis xyz="0 1 0"/></joint>
      <link name="bob"><inertial><origin xyz="0 0 -0.5"/><mass value="{mass}"/>
        <inertia ixx="0.02" iyy="0.03" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <gazebo reference="hinge"><sensor type="force_torque" name="pivot">
        <force_torque><frame>child</frame><measure_direction>parent_to_child</measure_direction></force_torque>
      </sensor></gazebo></robot>""")
    node = nodes.get("-p", f"urdf_file:={path}")
    assert wait_for_output(peer, node, re.escape("force-torque sensors on ~/force_torque/pivot")), node.output
    received = peer.collect(WrenchStamped, "/mb_sim/force_torque/pivot")
    assert peer.spin_until(lambda: len(received) >= 5, 30), len(received)
    for message in received:
        assert message.header.frame_id == "bob"
        force, torque = message.wrench.force, message.wrench.torque
        np.testing.assert_allclose([force.x, force.y, force.z], [0.0, 0.0, mass * G], atol=1e-9)
        np.testing.assert_allclose([torque.x, torque.y, torque.z], 0.0, atol=1e-9)


def _with(extra: str, gazebo: str = "") -> str:
    """The arm URDF with `extra` in a second <mb_sim> and `gazebo` elements, its sensors dropped."""
    text = ARM[:ARM.index("  <mb_sim>")] + "</robot>\n"
    return text.replace("</robot>", f"<mb_sim>{extra}</mb_sim>{gazebo}</robot>")


@pytest.mark.parametrize("extra, gazebo, message", [
    ('<force_torque name="a" joint="nope"/>', "", "force_torque sensor 'a': joint 'nope' does not exist"),
    ('<force_torque name="a" joint="j2" frame="world"/>', "", "frame must be one of child, sensor, parent"),
    ('<force_torque name="a" joint="j2" measure_direction="up"/>', "", "measure_direction must be one of"),
    ('<force_torque name="a" joint="j2" axis="1"/>', "", "unknown attribute(s) axis"),
    ("", '<gazebo><sensor type="force_torque" name="g"/></gazebo>', "needs <gazebo reference=\"joint\">"),
    ("", '<gazebo reference="j2"><sensor type="force_torque" name="g"><force_torque><frame>world</frame>'
         '</force_torque></sensor></gazebo>', "sensor 'g' <frame>: frame must be one of"),
    ('<force_torque name="a" joint="j2"/><loop_joint name="tie" type="revolute" parent="l3" child="l1">'
     '<origin xyz="0.1 0 0"/><axis xyz="0 1 0"/></loop_joint>', "", "LoopJoint 'tie' also joins the child side"),
    ('<force_torque name="a" joint="j3"/><spring_damper name="s" stiffness="10"><marker link="l1"/>'
     '<marker link="l3"/></spring_damper>', "", "SpringDamper 's' also joins the child side"),
])
def test_bad_declarations_are_one_line_errors(extra: str, gazebo: str, message: str) -> None:
    with pytest.raises(URDFError) as caught:
        load_urdf(_with(extra, gazebo))
    assert message in str(caught.value) and "\n" not in str(caught.value), str(caught.value)


def test_a_spring_inside_the_child_side_is_accepted_and_unknown_names_are_key_errors(arm: Simulator) -> None:
    robot = load_urdf(_with('<force_torque name="a" joint="j2"/><spring_damper name="s" stiffness="10">'
                            '<marker link="l2"/><marker link="l3"/></spring_damper>'))
    assert robot.force_torque_subtree(robot.force_torques[0]) == ["l2", "l3", "tool"]
    with pytest.raises(KeyError, match="sensors: ft1, ft2, ft3, ft_tool, ft2_gz"):
        arm.force_torque("nope")

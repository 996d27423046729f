"""The component model: declared requirements, load groups, define steps, the shared auxiliary
data handler, descriptions and the root system."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from sympy import Symbol, solve, symbols
from sympy.physics.mechanics import Force, Point, TorqueActuator, Vector, dynamicsymbols, msubs

from mb_sim import load_urdf
from mb_sim.model import (
    ComponentError, Gravity, JointBase, JointEffort, LoadGroupBase, ModelBase, ModelRequirement, RevoluteJoint,
    RigidLink, build_robot,
)
from mb_sim.urdf import parse_urdf


def test_requirement_properties_reject_wrong_types(repo):
    description = parse_urdf(repo / "urdf" / "pendulum.urdf")
    joint = RevoluteJoint("hinge", description.joint("hinge"))
    with pytest.raises(ComponentError, match=r"RevoluteJoint 'hinge': parent must be a RigidLink, but 'base' is a str"):
        joint.parent = "base"
    joint.parent = RigidLink("base")
    assert joint.parent.name == "base"
    assert type(joint).parent.__doc__ == "Link the joint is mounted on."


def test_user_model_declares_requirements():
    class Gripper(ModelBase):
        required_models = (ModelRequirement("palm", RigidLink, "Palm link of the gripper."),)

    gripper = Gripper("gripper")
    with pytest.raises(ComponentError, match="palm must be a RigidLink"):
        gripper.palm = 3.0
    gripper.palm = RigidLink("palm")
    assert gripper.submodels() == (gripper.palm,)


def test_load_group_parent_type_is_checked(repo):
    robot = build_robot(parse_urdf(repo / "urdf" / "pendulum.urdf"))
    with pytest.raises(ComponentError, match="attaches to a RevoluteJoint or PrismaticJoint"):
        robot.add_load_group(JointEffort("misplaced"))
    with pytest.raises(ComponentError, match="already attached"):
        robot.joints["hinge"].add_load_group(robot.load_groups[0])


def test_every_symbol_coordinate_and_speed_is_described_and_unique(repo):
    robot = load_urdf(repo / "urdf" / "arm6.urdf")
    system = robot.system
    described = robot.descriptions
    inputs = [g.effort for j in robot.joints.values() for g in j.load_groups if isinstance(g, JointEffort)]
    for item in [*system.q, *system.u, *robot.parameters, *inputs]:
        assert described.get(item), f"{item} has no description"
    names = [str(s) for s in described]
    assert len(names) == len(set(names))
    assert all(str(q).startswith(tuple(robot.joints)) for q in system.q)


def test_root_system_gathers_every_component(repo):
    robot = load_urdf(repo / "urdf" / "arm6.urdf")
    system = robot.system
    joint_coordinates = [q for joint in robot.joints.values() for q in joint.q]
    assert list(system.q) == joint_coordinates
    assert len(system.u) == 6 and len(system.kdes) == 6
    assert {b.name for b in system.bodies} == {f"{n}_body" for n, l in robot.links.items() if not l.is_massless}
    # gravity on 7 bodies; effort, dissipation and limit stops on 6 joints (each a pair of torques)
    assert len(system.loads) == 7 + 6 * 3 * 2


def test_mimic_joint_is_a_dependent_coordinate_with_a_holonomic_constraint(repo):
    robot = load_urdf(repo / "test" / "urdf" / "kinematic_zoo.urdf")
    finger, shoulder = robot.joints["finger_joint"], robot.joints["shoulder"]
    assert list(robot.system.q_dep) == [finger.q[0]]
    (constraint,) = robot.system.holonomic_constraints
    values = {shoulder.q[0]: 0.4, finger.q[0]: -0.5 * 0.4 + 0.1, **robot.parameters}
    assert abs(float(constraint.xreplace(values))) < 1e-15
    assert not any(isinstance(g, JointEffort) for g in finger.load_groups)


class HingeReaction(LoadGroupBase):
    """User component: reports the vertical reaction force at a revolute joint."""

    required_parent_type = RevoluteJoint

    def _define_objects(self) -> None:
        self.symbols["f"] = Symbol(self._add_prefix("reaction"))
        self.uaux = dynamicsymbols(self._add_prefix("uaux"))

    @property
    def descriptions(self):
        return {self.symbols["f"]: "vertical reaction force at the hinge [N]"}

    def _define_kinematics(self) -> None:
        handler = self.auxiliary_handler
        handler.add_noncontributing_force(self.parent.child.origin, handler.inertial_frame.z,
                                          self.uaux, self.symbols["f"])


def test_noncontributing_force_gives_the_hinge_reaction(repo):
    """Pendulum swinging through the bottom at rate w: reaction = m (g + w^2 l), l = 1 m."""
    robot = build_robot(parse_urdf(repo / "urdf" / "pendulum.urdf"))
    reaction = HingeReaction("hinge_reaction")
    robot.joints["hinge"].add_load_group(reaction)
    robot.define_all()
    robot.system.form_eoms()
    kane = robot.system.eom_method
    q, u = robot.system.q[0], robot.system.u[0]
    w = symbols("w")
    t = dynamicsymbols._t
    at_bottom = {q: 0, u: w, u.diff(t): 0, robot.joints["hinge"].load_groups[0].effort: 0}
    (aux,) = msubs(kane.auxiliary_eqs, at_bottom).xreplace(robot.parameters)
    force = solve(aux, reaction.symbols["f"])[0]
    for rate in (0.0, 1.5, -3.0):
        assert float(force.subs(w, rate)) == pytest.approx(1.0 * (9.81 + rate**2), rel=1e-12)
    # The point the force acts on and everything positioned from it carry the auxiliary speed.
    rod = robot.links["rod"]
    assert reaction.uaux in rod.body.masscenter.vel(robot.world_frame).free_dynamicsymbols(robot.world_frame)
    assert robot.system.u_aux[:] == [reaction.uaux]


def test_gravity_default_and_direction(repo):
    robot = load_urdf(repo / "urdf" / "pendulum.urdf")
    (gravity,) = [g for g in robot.load_groups if isinstance(g, Gravity)]
    assert robot.parameters[gravity.g] == 9.81
    (force,) = [load for load in robot.system.loads if load.location == robot.links["rod"].body.masscenter]
    vector = force.vector.to_matrix(robot.world_frame).xreplace(robot.parameters)
    assert np.allclose(np.array(vector, dtype=float).ravel(), [0, 0, -9.81])


def test_structural_values_are_exact_and_the_rest_parameters(repo):
    robot = load_urdf(repo / "urdf" / "arm6.urdf")
    names = {str(s) for s in robot.parameters}
    # zero offsets and inertia products are exact zeros, not parameters
    assert "shoulder_pan_joint_origin_x" not in names and "base_link_ixy" not in names
    # pi/2 origin angles are exact; a 0.05 rad tilt and a skew axis are parameters
    assert "shoulder_lift_joint_origin_pitch" not in names
    assert {"wrist_3_joint_origin_roll", "wrist_3_joint_axis_y", "wrist_3_joint_axis_z"} <= names
    # the rotated inertial frame of wrist_3_link gives off-diagonal inertia parameters; the exact
    # quarter turn of wrist_1_link's leaves exact zeros (no 5e-20 rounding leftovers)
    assert "wrist_3_link_ixy" in names
    assert not {"wrist_1_link_ixy", "wrist_1_link_iyz", "wrist_1_link_ixz"} & names


def test_describe_lists_the_tree_with_descriptions_and_values(repo):
    text = load_urdf(repo / "urdf" / "arm6.urdf").describe()
    assert text.splitlines()[0] == ("Robot 'arm6': 8 links, 7 joints, 6 coordinates, 6 speeds, "
                                    "0 holonomic constraints")
    assert "  RevoluteJoint 'elbow_joint' (revolute: upper_arm_link -> forearm_link)" in text
    assert "    upper_arm_link_m = 8.393: mass of link 'upper_arm_link' [kg]" in text
    assert "    elbow_joint_q: joint 'elbow_joint': angle about the axis [rad]" in text
    assert "  RigidLink 'tool0' (massless)" in text


class ActuatedHinge(LoadGroupBase):
    """Seed 000's recipe: a torque actuator added in the define-loads step."""

    required_parent_type = RevoluteJoint

    def _define_loads(self) -> None:
        joint = self.parent
        self.system.add_actuators(TorqueActuator(2.0, joint.axis, joint.child.frame, joint.parent.frame))


class HandWrittenHinge(LoadGroupBase):
    """The same torque written by hand as the joint's pair of loads."""

    required_parent_type = RevoluteJoint

    def _define_loads(self) -> None:
        self.system.add_loads(*self.parent.generalized_force_loads(2.0))


@pytest.mark.parametrize("group", [ActuatedHinge, HandWrittenHinge])
def test_an_actuator_added_as_seed_000_teaches_applies_its_torque(repo, model_cache, group):
    # An actuator through add_actuators was merged into the System and never read: the pendulum
    # stayed at q = 0, while the same torque through add_loads moved it 0.0099 rad in 0.1 s.
    from mb_sim.sim import Simulator

    robot = build_robot(parse_urdf(repo / "urdf" / "pendulum.urdf"))
    robot.joints["hinge"].add_load_group(group("drive"))
    robot.define_all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the pendulum's joint has no effort limit
        sim = Simulator(robot, cache_dir=model_cache, dt=1e-3)
    sim.advance(0.1)
    hanging = Simulator(repo / "urdf" / "pendulum.urdf", cache_dir=model_cache, dt=1e-3)
    hanging.advance(0.1)
    moved = sim.q[0] - hanging.q[0]
    # 2 N m about the hinge of a 1 kg bob 1 m out: q = 2 / (2 m l^2) t^2 = 0.01 rad, near the bottom
    assert moved == pytest.approx(0.0099, abs=2e-4), moved


class JointReactions(LoadGroupBase):
    """Seed 000's recipe for reactions: noncontributing forces at a joint's child origin along
    given axes (a function of the joint and the world frame giving SymPy vectors), registered in
    define kinematics."""

    required_parent_type = JointBase

    def __init__(self, name: str, axes) -> None:
        super().__init__(name)
        self.axes = axes

    def _define_objects(self) -> None:
        self.uaux = [dynamicsymbols(self._add_prefix(f"uaux{k}")) for k in range(self.axes(None, None, count=True))]
        for k in range(len(self.uaux)):
            self.symbols[f"f{k}"] = Symbol(self._add_prefix(f"reaction{k}"))

    @property
    def descriptions(self):
        return {symbol: f"reaction {key} at joint {self.parent.name} [N]" for key, symbol in self.symbols.items()}

    def _define_kinematics(self) -> None:
        handler = self.auxiliary_handler
        for k, axis in enumerate(self.axes(self.parent, handler.inertial_frame)):
            handler.add_noncontributing_force(self.parent.child.origin, axis, self.uaux[k], self.symbols[f"f{k}"])


def _cart_pole_with_reactions(repo):
    """The cart-pole with six reactions: on the cart (world z, the cart's y, world x: along the rail,
    which its effort drives) and at the pole's hinge (world x and y, the pole's x: not orthogonal
    to world x, and inside the cart's side)."""
    robot = build_robot(parse_urdf(repo / "urdf" / "cart_pole.urdf"))

    def rail(joint, world, count=False):
        return 3 if count else [world.z, joint.child.frame.y, world.x]

    def hinge(joint, world, count=False):
        return 3 if count else [world.x, world.y, joint.child.frame.x]

    robot.joints["cart_joint"].add_load_group(JointReactions("rail", rail))
    robot.joints["pole_joint"].add_load_group(JointReactions("hinge", hinge))
    robot.define_all()
    return robot


def test_noncontributing_forces_simulate_and_match_sympys_auxiliary_equations(repo, model_cache):
    # Seed 000's noncontributing forces derived symbolically and then stopped the numeric
    # derivation with NotImplementedError.  Now they are outputs of the compiled model, checked
    # against SymPy's own KanesMethod on the same component model with each reaction's opposite
    # added by hand on the other side of its point (a reaction is a pair: workless on the real
    # speeds, cancelling inside a larger side): u' from its M and F, the reactions from its
    # auxiliary equations, at random states and efforts.
    from mb_sim.sim import Simulator

    robot = _cart_pole_with_reactions(repo)
    sim = Simulator(robot, cache_dir=model_cache, dt=1e-3)
    reference = _cart_pole_with_reactions(repo)
    handler, world = reference.auxiliary_handler, reference.world_frame
    for force in handler.noncontributing_forces:  # by hand, the opposite on the rest at the same place:
        opposite = Point(f"{force.point.name}_other_side")  # moving as the point, but for its own cut
        opposite.set_vel(world, force.point.vel(world) - sum((f.speed * f.axis for f in handler.noncontributing_forces
                                                              if f.point is force.point), Vector(0)))
        reference.system.add_loads(Force(opposite, -force.symbol * force.axis))
    # the cart effort's reaction acts on the fixed rail (SymPy's position graph moves the point with the cart)
    reference.joints["cart_joint"].reaction_point.set_vel(world, Vector(0))
    reference.system.form_eoms()
    kane, system = reference.system.eom_method, reference.system
    reactions = [g.symbols[f"f{k}"] for g in (reference.joints["cart_joint"].load_groups[-1],
                                            reference.joints["pole_joint"].load_groups[-1]) for k in range(len(g.uaux))]
    efforts = [g.effort for j in ("cart_joint", "pole_joint") for g in reference.joints[j].load_groups
               if isinstance(g, JointEffort)]
    t = dynamicsymbols._t
    rng = np.random.default_rng(5)
    for _ in range(4):
        q, u, tau = rng.uniform(-1, 1, 2), rng.uniform(-2, 2, 2), rng.uniform(-5, 5, 2) * [1, 0.1]
        sim.set_state(positions=dict(zip(["cart_joint", "pole_joint"], q)),
                      velocities=dict(zip(["cart_joint", "pole_joint"], u)))
        sim.set_efforts(dict(zip(["cart_joint", "pole_joint"], tau)))
        got = sim.noncontributing_forces()
        at = {**dict(zip(system.q, q)), **dict(zip(system.u, u)), **dict(zip(efforts, tau))}
        M = np.array(msubs(kane.mass_matrix, at).xreplace(reference.parameters), dtype=float)
        F = np.array(msubs(kane.forcing, at).xreplace(reference.parameters), dtype=float).ravel()
        udot = np.linalg.solve(M, F)
        accelerations = {speed.diff(t): value for speed, value in zip(system.u, udot)}
        aux = msubs(msubs(kane.auxiliary_eqs, accelerations), at).xreplace(reference.parameters)  # u' first
        solved = solve(list(aux), reactions, dict=True)[0]
        want = {str(s): float(solved[s]) for s in reactions}
        assert got.keys() == want.keys()
        for name in want:
            assert got[name] == pytest.approx(want[name], rel=1e-9, abs=1e-9), (name, got, want)
    # upright, the pole's x is world x: the two reactions along one axis at the hinge are not determined
    sim.set_state(positions={"cart_joint": 0.0, "pole_joint": 0.0}, velocities={"cart_joint": 0.0, "pole_joint": 0.0})
    with pytest.raises(ValueError, match="forces hinge_reaction0, hinge_reaction2: their axes at one point are dependent"):
        sim.noncontributing_forces()



def test_three_reactions_in_one_plane_are_refused_by_name(repo, model_cache):
    # World x and z are orthogonal (uncoupled), the pole's x lies in their plane: the three are
    # dependent at every state although no pair of them is parallel.
    from mb_sim.sim import Simulator

    robot = build_robot(parse_urdf(repo / "urdf" / "cart_pole.urdf"))

    def hinge(joint, world, count=False):
        return 3 if count else [world.x, joint.child.frame.x, world.z]

    robot.joints["pole_joint"].add_load_group(JointReactions("hinge", hinge))
    robot.define_all()
    sim = Simulator(robot, cache_dir=model_cache, dt=1e-3)
    sim.set_state(positions={"pole_joint": 0.4})
    with pytest.raises(ValueError, match="forces hinge_reaction0, hinge_reaction1, hinge_reaction2: their axes"):
        sim.noncontributing_forces()


def test_noncontributing_forces_leave_the_motion_unchanged(repo, model_cache):
    # A reaction is workless on the real speeds: the motion with reactions registered is the
    # motion without them, bit for bit.
    from mb_sim.sim import Simulator

    with_reactions = Simulator(_cart_pole_with_reactions(repo), cache_dir=model_cache, dt=1e-3)
    plain = Simulator(repo / "urdf" / "cart_pole.urdf", cache_dir=model_cache, dt=1e-3)
    for sim in (with_reactions, plain):
        sim.set_state(positions={"pole_joint": 2.5})
        sim.set_efforts({"cart_joint": 3.0})
        sim.advance(0.5)
    assert np.array_equal(with_reactions.q, plain.q) and np.array_equal(with_reactions.u, plain.u)


def test_noncontributing_forces_compiled_give_the_pendulums_hinge_reaction(repo, model_cache):
    # Through the bottom at rate w the hinge carries m (g + w^2 l) (1 kg, 1 m), now from the
    # compiled model; a robot with constraint rows is refused in one line naming the forces.
    from mb_sim.sim import Simulator

    robot = build_robot(parse_urdf(repo / "urdf" / "pendulum.urdf"))
    robot.joints["hinge"].add_load_group(HingeReaction("hinge_reaction"))
    robot.define_all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the pendulum's joint has no effort limit
        sim = Simulator(robot, cache_dir=model_cache, dt=1e-3)
    for rate in (0.0, 1.5, -3.0):
        sim.set_state(positions={"hinge": 0.0}, velocities={"hinge": rate})
        assert sim.noncontributing_forces() == {"hinge_reaction_reaction": pytest.approx(9.81 + rate**2, rel=1e-13)}
    looped = build_robot(parse_urdf(repo / "urdf" / "four_bar.urdf"))
    first = next(iter(looped.joints.values()))
    first.add_load_group(HingeReaction("crank_reaction"))
    looped.define_all()
    with pytest.raises(ComponentError, match=r"robot 'four_bar': noncontributing forces \(crank_reaction_reaction\) "
                                             r"on a robot with constraints"):
        Simulator(looped, cache_dir=model_cache)

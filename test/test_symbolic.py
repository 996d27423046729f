"""The symbolic core: constraint levels, redundancy detection, kinematic equations, printing."""
from __future__ import annotations

from sympy import Matrix, cos, simplify, sin

from mb_sim import load_urdf
from mb_sim.model import LoadGroupBase, RevoluteJoint, build_robot
from mb_sim.symbolic import derive_equations
from mb_sim.symbolic.printing import format_equations
from mb_sim.urdf import parse_urdf


def test_mimic_constraint_at_every_level(repo):
    eom = derive_equations(load_urdf(repo / "test" / "urdf" / "kinematic_zoo.urdf"))
    names = [str(q) for q in eom.q]
    shoulder, finger = names.index("shoulder_q"), names.index("finger_joint_q")
    (phi,) = eom.outputs["phi"]
    multiplier = next(p for p in eom.parameters if str(p) == "finger_joint_mimic_multiplier")
    offset = next(p for p in eom.parameters if str(p) == "finger_joint_mimic_offset")
    assert simplify(phi - (eom.q[finger] - multiplier * eom.q[shoulder] - offset)) == 0
    expected_row = [0] * eom.n_u
    expected_row[shoulder], expected_row[finger] = -multiplier, 1
    assert eom.outputs["constraint_matrix"] == Matrix([expected_row])
    assert eom.outputs["constraint_bias"] == Matrix([0])
    assert eom.outputs["acceleration_bias"] == Matrix([0])


class ExtraConstraints(LoadGroupBase):
    """Adds a redundant copy of the mimic constraint and one that always holds."""

    required_parent_type = RevoluteJoint

    def _define_constraints(self) -> None:
        finger, shoulder = self.parent.q[0], self.parent.mimicked.q[0]
        self.system.add_holonomic_constraints(2 * (finger + shoulder / 2 - 0.1),
                                              sin(shoulder) ** 2 + cos(shoulder) ** 2 - 1)


def test_redundant_and_satisfied_constraints_are_reported_and_dropped(repo):
    robot = build_robot(parse_urdf(repo / "test" / "urdf" / "kinematic_zoo.urdf"))
    robot.joints["finger_joint"].add_load_group(ExtraConstraints("extra"))
    robot.define_all()
    assert len(robot.system.holonomic_constraints) == 3
    lines = []
    eom = derive_equations(robot, progress=lines.append)
    # The redundant copy stays in the equations, enforced with the mimic row it repeats (the
    # dynamics leave it to that row); the report calls it redundant.
    assert eom.n_constraints == 2 and eom.outputs["phi"].shape == (2, 1)
    assert eom.constraint_independent == [True, False]
    text = "\n".join(lines)
    assert ("constraint 1 (RevoluteJoint 'finger_joint') is redundant with the others where the robot is assembled; "
            "enforced with them") in text
    assert "constraint 2 (RevoluteJoint 'finger_joint') is already satisfied (zero row); dropped" in text


def test_quaternion_kinematics_keep_the_norm(repo):
    eom = derive_equations(load_urdf(repo / "urdf" / "free_body.urdf"))
    quaternion, rates = Matrix(eom.q[3:]), eom.outputs["qdot"][3:, 0]
    assert simplify(quaternion.dot(rates)) == 0


def test_progress_is_reported_per_stage(repo):
    lines = []
    derive_equations(load_urdf(repo / "urdf" / "arm6.urdf"), progress=lines.append)
    assert any("Kane's equations" in line for line in lines)
    assert lines[-1].endswith("arm6: done") and lines[0].startswith("[")


def test_printed_equations_describe_every_symbol(repo):
    eom = derive_equations(load_urdf(repo / "urdf" / "double_pendulum.urdf"))
    text = format_equations(eom)
    for symbol in [*eom.q, *eom.u, *eom.inputs, *eom.parameters]:
        line = next(line for line in text.splitlines() if line.startswith(f"  {symbol}"))
        assert line.split(": ", 1)[1], f"{symbol} printed without a description"
    assert "Mass matrix M(q):" in text and "\\frac" not in text
    assert "\\left[" in format_equations(eom, style="latex")


def test_kinematic_equations_solved_block_by_block_as_one_lu():
    """solve_by_blocks gives LU's solution: coupled blocks (a quaternion's), 1 x 1 blocks in any
    row order, and LU's own answer or error where it leaves the whole to one LU (not square, a row
    without unknowns)."""
    from sympy import symbols, zeros

    from mb_sim.symbolic.plain import solve_by_blocks

    def outcome(solve, matrix, rhs):
        try:
            return solve(matrix, rhs)
        except Exception as err:  # noqa: BLE001 (compared with LU's)
            return type(err), str(err)

    a, b, c, d, u0, u1, u2, u3 = symbols("a b c d u0 u1 u2 u3", real=True)
    coupled = Matrix([[0, 0, 1, 0], [a, b, 0, 0], [0, 0, 0, 2], [c, d, 0, 0]])  # rows out of block order
    rhs = Matrix([u0, u1, u2, u3])
    assert simplify(solve_by_blocks(coupled, rhs) - coupled.LUsolve(rhs)) == zeros(4, 1)
    assert solve_by_blocks(Matrix.eye(3), Matrix([u0, u1, u2])) == Matrix([u0, u1, u2])
    for matrix, column in ((Matrix([[1, 0, 1]]), Matrix([u0])), (Matrix([[1, 0], [0, 0]]), Matrix([u0, u1])),
                           (Matrix([[1, 1], [0, 0]]), Matrix([u0, u1])),
                           (Matrix([[1, 0, 0], [1, 0, 0], [0, 1, 1]]), Matrix([u0, u1, u2])),  # a 2 x 1 block
                           (Matrix([[1, 1, 0], [2, 2, 0], [0, 0, 1]]), Matrix([u0, u1, u2]))):  # singular block
        assert outcome(solve_by_blocks, matrix, column) == outcome(Matrix.LUsolve, matrix, column)
    assert solve_by_blocks(zeros(0, 0), zeros(0, 1)).shape == (0, 1)


def test_a_fixed_leaf_link_costs_its_pose_only_unless_read():
    """arm6's tool0 hangs from a fixed joint: its pose is an output (link poses), its velocities and
    acceleration biases are derived only when something reads them, and then agree with SymPy's own
    velocity of its origin (in numbers at a random state)."""
    import random

    from mb_sim.resources import robot_path
    from mb_sim.symbolic.kane import derive_kane
    from mb_sim.symbolic.plain import PlainSymbols, robot_inputs
    from mb_sim.symbolic.temporaries import Temporaries

    robot = load_urdf(robot_path("arm6"))
    meanings = set(derive_equations(robot).descriptions.values())
    assert "world position of tool0" in meanings and "velocity of tool0 origin" not in meanings
    system = robot.system
    plain = PlainSymbols(list(system.q), list(system.u), robot_inputs(robot), list(system.kdes))
    temps = Temporaries()
    kane = derive_kane(robot, plain, temps)
    before = len(temps)
    got = kane.links["tool0"].velocity
    assert len(temps) > before  # read: derived on demand
    link = robot.links["tool0"]  # SymPy's own: the velocity of its origin in the world, in its frame
    expected = plain.convert_matrix(link.origin.vel(robot.world_frame).to_matrix(link.frame))
    rng = random.Random(4)
    values = {s: rng.uniform(-1, 1) for s in [*plain.q, *plain.u, *plain.inputs]}
    values.update((p, float(v)) for p, v in robot.parameters.items())
    for symbol, rhs in temps.assignments:  # in evaluation order
        values[symbol] = complex(rhs.xreplace(values)).real
    difference = [complex(e.xreplace(values)) for e in expected - got]
    assert max(abs(d) for d in difference) < 1e-12, difference

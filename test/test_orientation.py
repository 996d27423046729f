"""The rotations mb_sim.model.orientation builds are SymPy's own (orient_body_fixed, orient_axis),
recorded so that SymPy's frame graph answers as after SymPy's methods."""
from sympy import Matrix, simplify, symbols
from sympy.physics.mechanics import ReferenceFrame, dynamicsymbols

from mb_sim.model.orientation import axis_rotation, body_fixed_rotation, orient, orient_fixed, unit_column


def _zero(matrix: Matrix) -> bool:
    return all(simplify(e) == 0 for e in matrix)


def test_body_fixed_rotation_is_sympys_zyx():
    roll, pitch, yaw = symbols("roll pitch yaw")
    parent, child = ReferenceFrame("P"), ReferenceFrame("C")
    child.orient_body_fixed(parent, (yaw, pitch, roll), "zyx")
    assert body_fixed_rotation(roll, pitch, yaw) == parent.dcm(child)


def test_axis_rotation_is_sympys_for_a_parameter_axis():
    q = dynamicsymbols("q")
    ax, ay, az = symbols("a_x a_y a_z")
    parent, child = ReferenceFrame("P"), ReferenceFrame("C")
    child.orient_axis(parent, ax * parent.x + ay * parent.y + az * parent.z, q)
    assert _zero(axis_rotation(unit_column([ax, ay, az]), q) - parent.dcm(child))
    assert unit_column([0, -1, 0]) == Matrix([0, -1, 0])  # exact axes stay exact


def test_recorded_orientation_answers_both_ways_and_through_the_graph():
    roll, pitch, yaw, q = symbols("roll pitch yaw q")
    world, a, b = ReferenceFrame("W"), ReferenceFrame("A"), ReferenceFrame("B")
    orient_fixed(a, world, body_fixed_rotation(roll, pitch, yaw))
    orient(b, a, axis_rotation(Matrix([0, 0, 1]), q))
    b.set_ang_vel(a, q * a.z)
    reference_a, reference_b = ReferenceFrame("RA"), ReferenceFrame("RB")
    reference_a.orient_body_fixed(world, (yaw, pitch, roll), "zyx")
    reference_b.orient_axis(reference_a, reference_a.z, q)
    assert _zero(world.dcm(b) - world.dcm(reference_b))
    assert _zero(b.dcm(world) - world.dcm(b).T)
    assert a.ang_vel_in(world) == 0 * world.x
    assert b.ang_vel_in(world).to_matrix(a) == Matrix([0, 0, q])

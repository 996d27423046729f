"""Guarded sums accumulated in the generated C (mb_sim.codegen.guarded).

A link's contact force is the sum of its points' forces, each computed only where its point
touches; the C adds each into the sum inside the point's own block.  Checked here: what is
accumulated and what is not (a term read elsewhere), and on real compiled models (a tilted box
with some corners in the ground and some out, a pair of boxes pressing on each other) that the C's
accelerations equal the NumPy backend's, which sums the plain expressions.
"""
from __future__ import annotations

import numpy as np
import pytest
from sympy import Piecewise, S, Symbol, symbols

from mb_sim.codegen.guarded import accumulations, guarded_lines, guarded_runs
from mb_sim.sim import Simulator


def _guarded(expr, condition):
    return Piecewise((expr, condition), (S.Zero, True))


def test_terms_read_only_by_their_sum_are_added_inside_their_blocks():
    """s = t1 - t2 over two guarded blocks: s declared zero before the first block, t1 added and
    t2 subtracted where computed, s zeroed where its own guard fails; u is read by an output too,
    so the sum w = t3 + u keeps its plain form."""
    x, y = symbols("x y", real=True)
    t1, t2, t3, u, s, w = (Symbol(n, real=True) for n in ("t1", "t2", "t3", "u", "s", "w"))
    a1, a2 = Symbol("a1", real=True), Symbol("a2", real=True)
    assignments = [(a1, _guarded(2 * x, x > 0)), (t1, _guarded(3 * a1, x > 0)),
                   (a2, _guarded(y + 1, y > 0)), (t2, _guarded(a2 * y, y > 0)),
                   (t3, _guarded(x * y, x > y)), (u, _guarded(x - y, x > y)),
                   (s, _guarded(t1 - t2, x + y > 0)), (w, _guarded(t3 + u, x + y > 0))]
    runs = guarded_runs(assignments)
    sums = accumulations(runs, [s, w, u])
    assert sums.terms == {s: {t1: 1, t2: -1}}
    names = {symbol: str(symbol) for symbol in (x, y, t1, t2, t3, u, s, w, a1, a2)}

    class Printer:
        @staticmethod
        def doprint(e):
            return str(e)

    text = "\n".join(line for run in runs for line in guarded_lines(run, names, Printer, {s, w, t3, u}, sums))
    assert "s += t1;" in text and "s -= t2;" in text
    assert "if (!(x + y > 0)) { s = 0; w = 0; }" not in text  # w is computed there: one if with an else
    assert "w = 0;" in text and "s = 0;" in text
    assert "t3 + u" in text


def _link(name: str, xyz: str, rpy: str, sphere: str = "") -> str:
    """A free box (centred off its origin), with a sphere at `sphere` (link frame) if given."""
    ball = (f'<collision><origin xyz="{sphere}"/><geometry><sphere radius="0.05"/></geometry></collision>'
            if sphere else "")
    return f"""<joint name="{name}_free" type="floating"><parent link="world"/><child link="{name}"/>
    <origin xyz="{xyz}" rpy="{rpy}"/></joint>
  <link name="{name}"><inertial><mass value="1.5"/>
    <inertia ixx="0.003" iyy="0.005" izz="0.006" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0.01 -0.02 0"/><geometry><box size="0.2 0.1 0.05"/></geometry></collision>{ball}</link>"""


#: A box tilted about x and y with some bottom corners in the ground; two links pressing on each
#: other (their spheres overlapping, corners of each link's box inside the other's sphere), one of
#: them also on the ground.
SCENE = f"""<robot name="sums"><link name="world"/>
  {_link("tilted", "0 0 0.03", "0.3 0.2 0.1")}
  {_link("left", "1 0 0.024", "0 0 0", sphere="0.1 0 0.03")}
  {_link("right", "1.23 0.01 0.06", "0.05 0.1 0.2", sphere="-0.06 0 0")}
  <mb_sim><ground stiffness="20000" damping="1" friction="0.7"/>
    <contact_pair link1="left" link2="right" stiffness="10000" damping="0.5" friction="0.4"/></mb_sim>
</robot>
"""


@pytest.fixture(scope="module")
def scene(tmp_path_factory, model_cache):
    path = tmp_path_factory.mktemp("guarded") / "sums.urdf"
    path.write_text(SCENE)
    cache = model_cache
    return {backend: Simulator(path, cache_dir=cache, backend=backend) for backend in ("c", "numpy")}


@pytest.mark.slow
def test_accumulated_contact_sums_give_the_numpy_backends_accelerations(scene):
    """Some points in contact and some not, on the ground and between links (the boxes through
    contact slots, the spheres in closed form), moving: the C (its sums accumulated, ``+=``) and
    the NumPy backend agree on u' to 1e-12 relative."""
    c, numpy_ = scene["c"], scene["numpy"]
    assert "+= v" in c.model.source
    rng = np.random.default_rng(7)
    u = rng.normal(0.0, 0.3, c.model.n_u)
    for sim in (c, numpy_):  # (the start lifted the tilted box out of the ground: put it back in)
        sim.set_state(positions={"tilted_free_z": 0.03}, velocities=dict(zip(sim.speed_names, u)))
        sim.model.forward_dynamics_into(0.0)
    contacts = c.outputs().contacts
    assert {state.link for state in contacts.values()} >= {"tilted", "left"}
    assert 0 < len(contacts) < len(c.model.contact_names)  # some points touch, others not
    udot_c, udot_n = c.model.buffers.udot, numpy_.model.buffers.udot
    assert np.max(np.abs(udot_c)) > 1.0
    np.testing.assert_allclose(udot_c, udot_n, rtol=1e-12, atol=1e-12 * np.max(np.abs(udot_n)))

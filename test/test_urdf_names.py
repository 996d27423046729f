"""URDF names that are not identifiers, names whose symbols collide, and a robot without joints:
each works through load, derive (generated C) and ``mb-sim``, or is refused in one URDFError line."""
from __future__ import annotations

import numpy as np
import pytest

from mb_sim import load_urdf
from mb_sim.cli import main
from mb_sim.sim import Simulator
from mb_sim.urdf import URDFError

INERTIAL = ('<inertial><origin xyz="{c}"/><mass value="{m}"/>'
            '<inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial>')


def chain(base: str, link1: str, link2: str, link3: str, joint1: str, joint2: str, joint3: str,
          robot: str = "chain") -> str:
    """A revolute (limited, damped), a continuous and a prismatic joint in a chain, names given."""
    def esc(name: str) -> str:
        return name.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")

    return (f'<robot name="{esc(robot)}"><link name="{esc(base)}"/>'
            f'<link name="{esc(link1)}">{INERTIAL.format(c="0 0 -0.5", m=1, i=0.1)}</link>'
            f'<link name="{esc(link2)}">{INERTIAL.format(c="0 0.1 -0.5", m=1, i=0.1)}</link>'
            f'<link name="{esc(link3)}">{INERTIAL.format(c="0 0 -0.2", m=0.5, i=0.01)}</link>'
            f'<joint name="{esc(joint1)}" type="revolute"><parent link="{esc(base)}"/><child link="{esc(link1)}"/>'
            '<axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="10" velocity="5"/><dynamics damping="0.1"/></joint>'
            f'<joint name="{esc(joint2)}" type="continuous"><parent link="{esc(link1)}"/><child link="{esc(link2)}"/>'
            '<origin xyz="0 0 -1" rpy="0.1 0 0"/><axis xyz="0 1 0"/><limit effort="10" velocity="5"/></joint>'
            f'<joint name="{esc(joint3)}" type="prismatic"><parent link="{esc(link2)}"/><child link="{esc(link3)}"/>'
            '<origin xyz="0 0 -1"/><axis xyz="0 0.6 0.8"/><limit lower="-0.1" upper="0.1" effort="5" velocity="1"/>'
            '</joint></robot>')


PLAIN = ("base", "upper", "fore", "tool", "shoulder", "elbow", "slide")
WEIRD = ("base link", "upper, arm", "fore:arm[1]", "x0:3", "shoulder joint", "elbow,1:2[3]",
         "wrist's \"slide\" é <1>")


def test_names_that_are_not_identifiers_keep_their_symbols():
    robot = load_urdf(chain(*WEIRD))
    assert [str(q).removesuffix("(t)") for q in robot.system.q] == [
        "shoulder joint_q", "elbow,1:2[3]_q", "wrist's \"slide\" é <1>_q"]
    names = {str(s) for s in robot.parameters}
    assert {"upper, arm_m", "fore:arm[1]_com_y", "x0:3_m", "shoulder joint_limit_upper"} <= names


def test_they_derive_compile_and_move_as_plain_names_do(tmp_path):
    """The same robot with plain and with hostile names: generated C compiles for both and the
    motion is identical; no URDF name reaches the C source outside the (escaped) header comment."""
    runs = []
    for names, robot_name in ((PLAIN, "plain"), (WEIRD, "arm */ ??/ \"x\" , : [0]")):
        sim = Simulator(load_urdf(chain(*names, robot=robot_name)), cache_dir=tmp_path)
        shoulder, elbow, slide = names[4:]
        sim.set_state({shoulder: 0.3, elbow: -0.2}, {elbow: 1.0})
        sim.set_efforts({slide: 1.0, shoulder: 0.5})
        sim.advance(0.2)
        outputs = sim.outputs()
        runs.append([*outputs.positions.values(), *outputs.velocities.values(), outputs.kinetic_energy])
    np.testing.assert_allclose(runs[1], runs[0], rtol=0, atol=1e-12)
    sources = {path.name: path.read_text() for path in tmp_path.glob("*.c")}
    assert len(sources) == 2
    weird_source = next(text for name, text in sources.items() if not name.startswith("plain"))
    assert "/* Equations of motion of model 'arm *\\/ ??/" in weird_source
    for name in WEIRD:
        assert name not in weird_source, name


def test_mb_sim_info_and_derive_accept_them(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MB_SIM_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "weird.urdf"
    path.write_text(chain(*WEIRD))
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  elbow,1:2[3]_q: joint 'elbow,1:2[3]': angle about the axis [rad]" in out
    assert "Degrees of freedom: 3" in out
    assert main(["derive", str(path)]) == 0
    assert "library: " in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["link", "joint"])
def test_an_empty_name_is_one_urdf_error(kind, tmp_path, capsys):
    names = list(PLAIN)
    names[1 if kind == "link" else 5] = ""
    with pytest.raises(URDFError, match=rf"^<string>: {kind} '': a {kind} needs a non-empty name"):
        load_urdf(chain(*names))
    path = tmp_path / "empty.urdf"
    path.write_text(chain(*names))
    assert main(["info", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and f"{kind} ''" in err


def test_joint_k_with_limits_beside_joint_k_limit_works():
    names = list(PLAIN)
    names[4], names[5] = "k", "k_limit"
    robot = load_urdf(chain(*names))
    assert {"k_limit_upper", "k_limit_stiffness", "k_limit_q"} <= {str(s).removesuffix("(t)")
                                                                    for s in [*robot.parameters, *robot.system.q]}


@pytest.mark.parametrize("first, second, symbol", [
    ("k", "k_limit", "k_limit_damping"),             # k's stop damping, k_limit's viscous damping
    ("a", "a_limit_lower", None),                     # no collision: loads
])
def test_colliding_symbols_are_one_line_naming_both(first, second, symbol, tmp_path, capsys):
    xml = chain(*PLAIN[:4], first, second, PLAIN[6]).replace(
        '<axis xyz="0 1 0"/><limit effort="10" velocity="5"/>',
        '<axis xyz="0 1 0"/><limit effort="10" velocity="5"/><dynamics damping="0.2"/>')
    if symbol is None:
        load_urdf(xml)
        return
    with pytest.raises(URDFError) as raised:
        load_urdf(xml)
    message = str(raised.value)
    assert "\n" not in message and f"symbol name '{symbol}' is made twice" in message
    assert f"joint '{first}'" in message and f"joint '{second}'" in message
    path = tmp_path / "collide.urdf"
    path.write_text(xml)
    assert main(["derive", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and symbol in err


def test_a_parameter_and_a_coordinate_of_one_name_are_refused():
    """Joint 'a' has the parameter a_origin_x, floating joint 'a_origin' the coordinate a_origin_x:
    SymPy would take them for one quantity in the generated code."""
    xml = ('<robot name="r"><link name="world"/><link name="b">' + INERTIAL.format(c="0 0 0", m=1, i=0.1)
           + '</link><link name="c">' + INERTIAL.format(c="0 0 -0.5", m=1, i=0.1) + '</link>'
           '<joint name="a_origin" type="floating"><parent link="world"/><child link="b"/></joint>'
           '<joint name="a" type="revolute"><parent link="b"/><child link="c"/><origin xyz="0.3 0 0"/>'
           '<axis xyz="0 1 0"/></joint></robot>')
    with pytest.raises(URDFError, match="symbol name 'a_origin_x' is made twice.*joint 'a_origin'.*joint 'a'"):
        load_urdf(xml)


# --- A robot with one link and no joints ------------------------------------------------------------

SINGLE = {
    "one body": '<robot name="lonely"><link name="base">' + INERTIAL.format(c="0 0 0.1", m=1, i=0.1) + '</link></robot>',
    "massless": '<robot name="frame"><link name="solo"/></robot>',
    "world only": '<robot name="nothing"><link name="world"/></robot>',
}


@pytest.mark.parametrize("case", sorted(SINGLE))
def test_a_robot_without_joints_has_nothing_to_simulate_and_does_not_crash(case, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MB_SIM_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "single.urdf"
    path.write_text(SINGLE[case])
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "0 coordinates, 0 speeds" in out and "Degrees of freedom: 0" in out
    assert main(["derive", str(path)]) == 0
    assert "library: " in capsys.readouterr().out
    for backend in ("c", "numpy"):
        sim = Simulator(str(path), cache_dir=tmp_path / "cache", backend=backend)
        sim.advance(0.05)
        assert sim.time == pytest.approx(0.05)
        outputs = sim.outputs()
        assert outputs.kinetic_energy == 0.0
        assert outputs.potential_energy == pytest.approx(9.81 * 0.1 if case == "one body" else 0.0)
    sim = Simulator(str(path), cache_dir=tmp_path / "cache", integrator="DOP853")
    sim.advance(0.05)
    assert sim.time == pytest.approx(0.05)

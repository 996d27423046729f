"""xacro robots load wherever a URDF does (issue 25): ``load_urdf``, ``Simulator``, ``mb-sim``.

Real files, real xacro (the PyPI package), real compiled models: a two-link arm written with
xacro's habits (test/urdf/xacro/) against its expansion written by hand, and example-robot-data's
hector quadrotor macro file found through ``$(find example-robot-data)`` against the URDF that
package ships as its expansion.  Every bad input is one line naming the file.
"""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from mb_sim.model import load_urdf
from mb_sim.sim import Simulator
from mb_sim.urdf import URDFError, URDFWarning
from mb_sim.urdf.xacro_expansion import expand_xacro, find_package_share, parse_xacro_args, uses_xacro
from pinocchio_reference import example_robot_data_dir

XACRO_DIR = Path(__file__).resolve().parent / "urdf" / "xacro"
ARM_XACRO = XACRO_DIR / "xacro_arm.urdf.xacro"
ARM_BY_HAND = XACRO_DIR / "xacro_arm.urdf"
HECTOR_XACRO = XACRO_DIR / "hector_quadrotor.urdf.xacro"
HECTOR_DIR = example_robot_data_dir() / "hector_description" / "robots"
MB_SIM = Path(sys.executable).parent / "mb-sim"
ARM_START = {"shoulder": 0.7, "elbow": -0.4}


@pytest.fixture(scope="module")
def cache(model_cache) -> Path:
    return model_cache


def trajectory(sim: Simulator, duration: float = 0.5) -> np.ndarray:
    """Positions and speeds every 10 steps for `duration` seconds, no effort applied."""
    samples = []
    for _ in range(round(duration / (10 * sim.dt))):
        sim.advance(10 * sim.dt)
        samples.append(np.concatenate([sim.q, sim.u]))
    return np.array(samples)


def test_a_xacro_arm_simulates_as_its_expansion_written_by_hand(cache):
    # Before: "not a number" (the ${...} read as numbers), and no xacro_args to give.
    expanded = Simulator(ARM_XACRO, xacro_args={"link_length": 0.4}, cache_dir=cache,
                         initial_positions=ARM_START)
    by_hand = Simulator(ARM_BY_HAND, cache_dir=cache, initial_positions=ARM_START)
    assert expanded.robot.name == by_hand.robot.name == "xacro_arm"
    assert expanded.coordinate_names == by_hand.coordinate_names
    assert expanded.robot.source == str(ARM_XACRO)
    # one model, one compiled library: the cache keys on what the xacro expands to
    assert expanded.model.library_path == by_hand.model.library_path
    np.testing.assert_allclose(trajectory(expanded), trajectory(by_hand), rtol=0, atol=1e-9)


def test_xacro_args_and_defaults_shape_the_robot():
    default = load_urdf(ARM_XACRO)  # link_length 0.5, with_tip true
    assert default.joints["elbow"].joint_description.origin_xyz[2] == pytest.approx(-0.5)
    assert "tip" in default.links
    short = load_urdf(ARM_XACRO, xacro_args={"link_length": "0.3", "with_tip": "false"})
    assert short.joints["elbow"].joint_description.origin_xyz[2] == pytest.approx(-0.3)
    assert "tip" not in short.links


@pytest.mark.parametrize("xacro_args, says", [
    (3, "xacro_args: must be a mapping of argument names to values, got 3"),
    ({"link_length": [0.3]}, "xacro_args: link_length: a value is text or a number, got [0.3]"),
    ({"with_tip": None}, "xacro_args: with_tip: a value is text or a number, got None"),
])
def test_xacro_args_that_are_not_names_to_values_are_one_line(xacro_args, says):
    """A number was an AttributeError from inside the expansion; a list or None went to xacro as
    its text ("None")."""
    with pytest.raises(URDFError) as err:
        load_urdf(ARM_XACRO, xacro_args=xacro_args)
    assert str(err.value) == f"{ARM_XACRO}: {says}"


@pytest.mark.parametrize("variable", ["AMENT_PREFIX_PATH", "ROS_PACKAGE_PATH"])
def test_a_third_party_xacro_macro_through_find_simulates_as_its_shipped_urdf(variable, monkeypatch, cache):
    # example-robot-data's quadrotor macro file, included as $(find example-robot-data)/...: found
    # through the ament index of a prefix, or a ROS package path, as a ROS user's workspace would.
    prefix = example_robot_data_dir().parent.parent.parent  # cmeel.prefix
    monkeypatch.setenv(variable, str(prefix if variable == "AMENT_PREFIX_PATH" else prefix / "share"))
    assert find_package_share("example-robot-data") == prefix / "share" / "example-robot-data"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expanded = Simulator(HECTOR_XACRO, floating_base=True, cache_dir=cache)
    notes = [str(w.message) for w in caught if issubclass(w.category, URDFWarning)]
    assert any("xacro: redefining global symbol: pi" in note for note in notes), notes  # the file's own pi
    assert all("\n" not in note for note in notes)
    shipped = Simulator(HECTOR_DIR / "quadrotor_base.urdf", floating_base=True, cache_dir=cache)
    for sim in (expanded, shipped):
        sim.set_state(u=[0.3, -0.2, 1.0, 0.5, 0.1, -0.7])  # tumbling while it falls
    assert expanded.coordinate_names == shipped.coordinate_names
    np.testing.assert_allclose(trajectory(expanded), trajectory(shipped), rtol=0, atol=1e-12)


def test_the_third_party_top_level_xacro_fails_in_one_line_naming_the_include():
    # quadrotor_base.xacro includes package://.../urdf/quadrotor_base.urdf.xacro: xacro reads paths
    with pytest.raises(URDFError) as error:
        load_urdf(HECTOR_DIR / "quadrotor_base.xacro")
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{HECTOR_DIR / 'quadrotor_base.xacro'}: xacro: cannot include ")
    assert "not package://" in message


BROKEN = {
    "undefined_property": ('<link name="a"><inertial><mass value="${mass}"/></inertial></link>',
                           "undefined property: name 'mass' is not defined"),
    "missing_include": ('<xacro:include filename="no_such_file.xacro"/>',
                        "cannot include ", "no_such_file.xacro: No such file or directory"),
    "unknown_package": ('<xacro:include filename="$(find no_such_package_h1)/urdf/x.xacro"/>',
                        "package 'no_such_package_h1' not found in the ament index", "ROS_PACKAGE_PATH"),
    "unset_argument": ('<link name="$(arg side)_link"/>', "xacro argument 'side' is not set",
                       "xacro_args side:=VALUE"),
    "malformed_xml": ('<link name="a">\n<link name="b"/>\n', ":6: xacro: malformed XML: mismatched tag"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_broken_xacro_is_one_line_naming_the_file(case, tmp_path, monkeypatch):
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    body, *expected = BROKEN[case]
    path = tmp_path / f"{case}.urdf.xacro"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                    f'{body}\n</robot>\n')
    with pytest.raises(URDFError) as error:
        load_urdf(path)
    message = str(error.value)
    assert message.startswith(str(path)), message
    assert "\n" not in message and "Traceback" not in message
    for part in expected:
        assert part in message, message


def test_an_error_in_an_included_file_names_that_file(tmp_path):
    (tmp_path / "parts.xacro").write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro">'
                                          '<xacro:macro name="part"><link name="${nowhere}"/></xacro:macro></robot>')
    top = tmp_path / "top.urdf.xacro"
    top.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                   '<xacro:include filename="parts.xacro"/><xacro:part/></robot>')
    with pytest.raises(URDFError) as error:
        load_urdf(top)
    assert str(error.value).startswith(f"{top}: xacro macro 'part' (defined in {tmp_path / 'parts.xacro'}): "
                                       "undefined property: name 'nowhere' is not defined"), str(error.value)


def test_xacro_args_text_as_on_the_command_line():
    assert parse_xacro_args("") == {}
    assert parse_xacro_args('a:=1 prefix:="left arm_"  b:=') == {"a": "1", "prefix": "left arm_", "b": ""}
    for bad, culprit in (("a:=1 b", "'b' is not name:=value"), ("a:=1 a:=2", "'a' is given twice"),
                         ("a:='1", "no closing quotation"), ("1a:=2", "'1a:=2' is not name:=value")):
        with pytest.raises(ValueError, match=culprit) as error:
            parse_xacro_args(bad)
        assert "\n" not in str(error.value)
    with pytest.raises(URDFError, match="'bad name' is not a xacro argument name"):
        expand_xacro(ARM_XACRO, {"bad name": 1})


def test_urdf_text_with_xacro_markup_is_expanded_and_comments_do_not_count():
    text = ('<robot name="t" xmlns:xacro="http://www.ros.org/wiki/xacro"><xacro:property name="m" value="2"/>'
            '<link name="a"><inertial><mass value="${m * 1.5}"/>'
            '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link></robot>')
    assert load_urdf(text).links["a"].link_description.inertial.mass == 3.0
    # an expanded URDF that kept the declaration and a ${...} in a comment (example-robot-data's talos)
    expanded = ('<robot name="t" xmlns:xacro="http://www.ros.org/wiki/xacro"><!-- lower="${-pi}" -->'
                '<link name="a"/></robot>')
    assert not uses_xacro(expanded)


def run_cli(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(MB_SIM), *arguments], capture_output=True, text=True, timeout=300)


def test_the_cli_takes_a_xacro_with_xacro_args(tmp_path):
    done = run_cli("info", str(ARM_XACRO), "--xacro-arg", "link_length:=0.4", "--xacro-arg", "with_tip:=false")
    assert done.returncode == 0, done.stderr
    assert "Degrees of freedom: 2" in done.stdout
    assert "tip" not in done.stdout
    unsplit = run_cli("info", str(ARM_XACRO), "--xacro-arg", "link_length")
    assert unsplit.returncode == 2
    assert unsplit.stderr.strip().splitlines() == [
        "mb-sim: argument --xacro-arg: --xacro-arg 'link_length' is not NAME:=VALUE (e.g. prefix:=left_) "
        "(see 'mb-sim info --help')"]
    twice = run_cli("describe", str(ARM_XACRO), "--xacro-arg", "a:=1", "--xacro-arg", "a:=2")
    assert twice.returncode == 1 and twice.stderr.strip() == "mb-sim: --xacro-arg: 'a' is given twice"
    wrong = run_cli("describe", str(ARM_XACRO), "--xacro-arg", "link_length:=abc")
    assert wrong.returncode == 1
    assert len(wrong.stderr.strip().splitlines()) == 1, wrong.stderr
    macros = XACRO_DIR / "arm_macros.xacro"
    assert wrong.stderr.startswith(f"mb-sim: {ARM_XACRO}: xacro macro 'rod' (defined in {macros}): "
                                   "bad operand type for unary -: 'str' when evaluating expression '-length / 2'")

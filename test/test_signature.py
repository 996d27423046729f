"""The topology key: the same for edits of numbers only (they are parameters; an exact zero is
structure), different for every edit of structure, and an exact text of the expressions it reads."""
from pathlib import Path

import pytest
from sympy import Float, Rational, symbols

from mb_sim.model.builder import load_urdf
from mb_sim.symbolic.signature import _Structure, topology_key

PENDULUM = (Path(__file__).resolve().parents[1] / "urdf" / "double_pendulum.urdf").read_text()
ELBOW = '<origin xyz="0 0 -1" rpy="0 0 0"/>\n    <axis xyz="0 1 0"/>'


def _key(old: str = "", new: str = "") -> str:
    assert old in PENDULUM
    return topology_key(load_urdf(PENDULUM.replace(old, new)))


def test_numbers_only_edits_keep_the_key():
    base = _key()
    assert _key('<mass value="0.5"/>', '<mass value="0.7"/>') == base
    assert _key(ELBOW, ELBOW.replace('xyz="0 0 -1"', 'xyz="0 0 -1.2"')) == base
    turned = _key(ELBOW, ELBOW.replace('xyz="0 0 -1" rpy="0 0 0"', 'xyz="0.1 0 -1" rpy="0.3 0 0.1"'))
    assert _key(ELBOW, ELBOW.replace('xyz="0 0 -1" rpy="0 0 0"', 'xyz="0.2 0 -1.1" rpy="0.4 0 -0.2"')) == turned


@pytest.mark.parametrize("old, new", [
    ('<axis xyz="0 1 0"/>\n  </joint>\n</robot>', '<axis xyz="1 0 0"/>\n  </joint>\n</robot>'),  # elbow's axis
    ('name="elbow" type="continuous"', 'name="elbow" type="prismatic"'),
    (ELBOW, ELBOW.replace('rpy="0 0 0"', 'rpy="0 1.5707963267948966 0"')),  # an exact quarter turn
])
def test_structural_edits_change_the_key(old, new):
    assert _key(old, new) != _key()


def test_structure_text_is_exact():
    text, x = _Structure(), symbols("x")
    assert text(Float(0.1) * x) != text(Float(0.1 + 2**-55) * x)
    assert text(Rational(1, 3) * x) != text(Rational(1, 3) + x)
    assert text(x**2) == _Structure()(x**2)


def test_imus_on_an_instrumented_link_keep_the_key():
    """The IMU outputs have rows per link carrying IMUs: more IMUs there need no new build."""
    end = "</robot>"
    one = _key(end, '<mb_sim><imu name="a" link="lower"/></mb_sim></robot>')
    two = _key(end, '<mb_sim><imu name="b" link="lower"><origin xyz="0 0 -1" rpy="0.1 0 0"/></imu>'
                    '<imu name="c" link="lower"/></mb_sim></robot>')
    assert one == two != _key()
    assert _key(end, '<mb_sim><imu name="a" link="upper"/></mb_sim></robot>') != one

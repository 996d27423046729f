"""Bad URDF input gives a URDFError that names the file and the element at fault."""
from __future__ import annotations

import warnings

import pytest

from mb_sim import load_urdf
from mb_sim.urdf import URDFError, URDFWarning, parse_urdf

INERTIA = '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>'


def link(name: str, mass: str = "1", inertia: str = INERTIA) -> str:
    return f'<link name="{name}"><inertial><mass value="{mass}"/>{inertia}</inertial></link>'


def joint(name: str, parent: str, child: str, kind: str = "revolute", extra: str = "") -> str:
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<axis xyz="0 0 1"/>{extra}</joint>')


def robot(*parts: str) -> str:
    return '<robot name="bad">' + "".join(parts) + "</robot>"


BAD_INPUTS = {
    "malformed XML": ("<robot name='r'><link name='a'></robot>", "malformed XML"),
    "no links": (robot(), "no <link>"),
    "several roots": (robot(link("a"), link("b")), "several root links ('a', 'b')"),
    "cycle, no root": (robot(link("a"), link("b"), joint("ab", "a", "b"), joint("ba", "b", "a")),
                       "cycle"),
    "cycle beside a root": (robot(link("r"), link("a"), link("b"), link("c"), joint("ra", "r", "a"),
                                  joint("bc", "b", "c"), joint("cb", "c", "b")), "joint 'bc': is on a cycle"),
    "two parents": (robot(link("a"), link("b"), link("c"), joint("ac", "a", "c"), joint("bc", "b", "c")),
                    "link 'c': is the child of two joints"),
    "missing link": (robot(link("a"), joint("j", "a", "ghost")), "joint 'j': child link 'ghost' does not exist"),
    "massless moving subtree": (robot(link("a"), '<link name="b"/>', joint("j", "a", "b")),
                                "joint 'j': moves link 'b' whose subtree has no mass"),
    "negative mass": (robot(link("a", mass="-1")), "link 'a' <inertial>: negative mass"),
    "inertia not positive definite": (
        robot(link("a", inertia='<inertia ixx="0.1" ixy="0.2" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>')),
        "link 'a' <inertial>: inertia is not positive definite"),
    "triangle inequality": (
        robot(link("a", inertia='<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.5"/>')),
        "link 'a' <inertial>: inertia breaks the triangle inequality"),
    "NaN": (robot(link("a", mass="nan")), "link 'a' <mass value=\"nan\">: NaN or infinite"),
    "inf": (robot(link("a"), link("b"), joint("j", "a", "b", extra='<origin xyz="0 inf 0"/>')),
            "joint 'j' <origin xyz=\"0 inf 0\">: NaN or infinite"),
    "not a number": (robot(link("a", mass="heavy")), "link 'a' <mass value=\"heavy\">: not a number"),
    "unsupported joint type": (robot(link("a"), link("b"), joint("j", "a", "b", kind="screw")),
                               "joint 'j': unsupported joint type 'screw'"),
    "zero axis": (robot(link("a"), link("b"),
                        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
                        '<axis xyz="0 0 0"/></joint>'), "joint 'j' <axis>: axis is zero"),
    "mimic unknown joint": (robot(link("a"), link("b"), joint("j", "a", "b", extra='<mimic joint="nope"/>')),
                            "joint 'j' <mimic>: mimics unknown joint 'nope'"),
    "mimic cycle": (robot(link("a"), link("b"), link("c"),
                          joint("j1", "a", "b", extra='<mimic joint="j2"/>'),
                          joint("j2", "b", "c", extra='<mimic joint="j1"/>')), "mimic cycle: j1 -> j2 -> j1"),
    "duplicate link": (robot(link("a"), link("a")), "link 'a': 2 links have this name"),
    "negative effort limit": (robot(link("a"), link("b"), joint("j", "a", "b", extra='<limit effort="-5" velocity="1"/>')),
                              "joint 'j' <limit effort=\"-5\">: a negative effort limit means nothing"),
    "negative velocity limit": (robot(link("a"), link("b"),
                                      joint("j", "a", "b", extra='<limit effort="5" velocity="-1"/>')),
                                "joint 'j' <limit velocity=\"-1\">: a negative velocity limit means nothing"),
    "component parameter not a number": (
        robot(link("a"), link("b"), joint("j", "a", "b"),
              '<component type="x" name="c" attach_to="j"><parameter name="k" value="abc"/></component>'),
        "component 'c' <parameter name=\"k\" value=\"abc\">: not a number"),
    "massive world": (robot(link("world"), link("b"), joint("j", "world", "b")), "link 'world'"),
}
# Refused by the per-link check of strict loading only (the default repairs them, see
# test_inertia_policy.py).
STRICT_ONLY = {"triangle inequality"}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_names_the_element(case):
    xml, expected = BAD_INPUTS[case]
    with pytest.raises(URDFError) as raised:
        load_urdf(xml, strict=case in STRICT_ONLY)
    message = str(raised.value)
    assert message.startswith("<string>: "), message
    assert expected in message, message


def test_missing_file_is_named(tmp_path):
    path = tmp_path / "nowhere.urdf"
    with pytest.raises(URDFError, match=f"{path}: file not found"):
        load_urdf(path)


def test_errors_from_a_file_name_the_file(tmp_path):
    path = tmp_path / "broken.urdf"
    path.write_text(robot(link("a", mass="-2")))
    with pytest.raises(URDFError, match=f"^{path}: link 'a' <inertial>: negative mass"):
        load_urdf(str(path))


def test_unknown_extension_elements_warn_once_and_load():
    xml = robot(link("a"), link("b"), joint("j", "a", "b"), "<sparkle/>", "<sparkle/>",
                "<gazebo reference='a'/>", "<transmission name='t'/>")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        description = parse_urdf(xml)
    ours = [w for w in caught if issubclass(w.category, URDFWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    assert "<sparkle>" in str(ours[0].message)
    assert [j.name for j in description.joints] == ["j"]


def test_unknown_element_inside_a_joint_warns_once():
    xml = robot(link("a"), link("b"), joint("j", "a", "b", extra="<glitter/><glitter/>"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_urdf(xml)
    messages = [str(w.message) for w in caught if issubclass(w.category, URDFWarning)]
    assert len(messages) == 1 and "glitter" in messages[0], messages

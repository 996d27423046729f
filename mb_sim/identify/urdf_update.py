"""Write the corrected URDF: the input text with only ``<inertial>`` and ``<dynamics>`` changed.

The file is edited as text, element by element, so everything else (comments, layout,
attribute order, xacro-expanded parts) stays byte for byte.  A link's inertial keeps its
``rpy`` (the inertia is written in those axes); a mass or centre of mass coordinate the
identification left where it was (within :data:`UNCHANGED` of its scale) keeps its original
text, and so does the inertia if all six entries did (a mix of old and new entries might not be
a realizable inertia).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape
from pathlib import Path

import numpy as np
from transforms3d.euler import euler2mat

from mb_sim.identify.parameters import LinkInertial

__all__ = ["corrected_urdf", "UNCHANGED"]

UNCHANGED = 1e-5
"""Relative change below which a number keeps its original text."""
_INERTIA_KEYS = (("ixx", 0, 0), ("ixy", 0, 1), ("ixz", 0, 2), ("iyy", 1, 1), ("iyz", 1, 2), ("izz", 2, 2))


def _number(value: float) -> str:
    return f"{value:.9g}"


def corrected_urdf(source: Path, inertials: dict[str, LinkInertial], dissipation: dict[str, tuple[float, float]]
                   ) -> tuple[str, list[str]]:
    """The text of `source` with the links' new inertials and the joints' new damping and friction,
    and one line per change (``link 'forearm_link' mass 2.275 -> 2.9575 kg``)."""
    text = Path(source).read_text()
    changes: list[str] = []
    for name, inertial in inertials.items():
        text = _edit_element(text, "link", name, lambda body: _inertial(body, name, inertial, changes))
    scale = max((abs(v) for pair in dissipation.values() for v in pair), default=0.0)
    for name, (damping, friction) in dissipation.items():
        text = _edit_element(text, "joint", name, lambda body: _dynamics(body, name, damping, friction, scale, changes))
    return text, changes


_HIDDEN = re.compile(r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<(transmission|gazebo|ros2_control|mb_sim)\b.*?</\1\s*>", re.S)
"""What a search for a robot's own ``<link>`` or ``<joint>`` must not look into: comments, CDATA,
and elements whose children name links and joints too (a transmission's ``<joint name>``)."""


def _shadow(text: str) -> str:
    """`text` with the hidden parts blanked (same length, so offsets carry over)."""
    return _HIDDEN.sub(lambda m: " " * len(m.group(0)), text)


def _edit_element(text: str, tag: str, name: str, edit) -> str:
    """`text` with the inside of the robot's ``<tag name="name"> ... </tag>`` replaced by ``edit(inside)``."""
    written = escape(name, {'"': "&quot;", "'": "&apos;"})
    names = "|".join(re.escape(n) for n in {name, written, escape(name)})
    start = re.compile(rf"<{tag}\s[^>]*?name\s*=\s*(['\"])(?:{names})\1[^>]*?(/?)>", re.S)
    shadow = _shadow(text)
    match = start.search(shadow)
    if match is None:
        raise ValueError(f"no <{tag} name=\"{name}\"> in the URDF")
    if match.group(2):  # <link name="x"/>: open it
        opening = text[match.start():match.end() - 2].rstrip() + ">"
        return text[:match.start()] + opening + edit("\n") + f"</{tag}>" + text[match.end():]
    close = shadow.index(f"</{tag}>", match.end())
    return text[:match.end()] + edit(text[match.end():close]) + text[close:]


def _indent(body: str) -> str:
    found = re.search(r"\n([ \t]*)<", body)
    return found.group(1) if found else "    "


def _inertial(body: str, name: str, new: LinkInertial, changes: list[str]) -> str:
    block = re.search(r"<inertial\b.*?</inertial>|<inertial\b[^>]*/>", _shadow(body), re.S)
    old_element = ET.fromstring(body[block.start():block.end()]) if block else ET.Element("inertial")
    old, rpy, texts = _read_inertial(old_element)
    R = euler2mat(*rpy, axes="sxyz")
    inertia = R.T @ new.inertia @ R  # in the inertial frame's axes, as the file gives it
    length = max(np.abs(old.com).max(), np.sqrt(max(np.trace(old.inertia), 0) / max(old.mass, 1e-12)), 1e-3)
    scale = max(np.abs(old.inertia_in_frame).max(), 1e-12)
    mass = _keep(texts["mass"], old.mass, new.mass, max(old.mass, 1e-12))
    xyz = [_keep(t, o, v, length) for t, o, v in zip(texts["xyz"], old.com, new.com)]
    entries = {k: _keep(texts[k], old.inertia_in_frame[i, j], inertia[i, j], scale) for k, i, j in _INERTIA_KEYS}
    if any(entries[k] != texts[k] for k in entries):  # all new or none: a mix may not be realizable
        largest = np.abs(inertia).max()  # rounding residue of an exact zero (1e-18 of a 1e-2) is written 0
        entries = {k: _number(inertia[i, j] if abs(inertia[i, j]) > 1e-12 * largest else 0.0)
                   for k, i, j in _INERTIA_KEYS}
    pad = _indent(body)
    inner = pad + "  "
    element = (f"<inertial>\n{inner}<origin xyz=\"{' '.join(xyz)}\" rpy=\"{' '.join(texts['rpy'])}\"/>\n"
               f"{inner}<mass value=\"{mass}\"/>\n{inner}<inertia "
               + " ".join(f'{k}="{v}"' for k, v in entries.items()) + f"/>\n{pad}</inertial>")
    if mass != texts["mass"]:
        changes.append(f"link '{name}' mass {texts['mass']} -> {mass} kg")
    if xyz != texts["xyz"]:
        changes.append(f"link '{name}' centre of mass {' '.join(texts['xyz'])} -> {' '.join(xyz)} m")
    if any(entries[k] != texts[k] for k, _, _ in _INERTIA_KEYS):
        changes.append(f"link '{name}' inertia (ixx ixy ixz iyy iyz izz) "
                       f"{' '.join(texts[k] for k, _, _ in _INERTIA_KEYS)} -> "
                       f"{' '.join(entries[k] for k, _, _ in _INERTIA_KEYS)} kg m^2")
    if block:
        return body[:block.start()] + element + body[block.end():]
    return f"\n{pad}{element}" + body


def _keep(text: str, old: float, new: float, scale: float) -> str:
    """The original text where `new` is within UNCHANGED of `old` (relative to `scale`)."""
    return text if abs(new - old) <= UNCHANGED * scale else _number(new)


class _Old(LinkInertial):
    inertia_in_frame: np.ndarray


def _read_inertial(element: ET.Element):
    """Old values (URDF's defaults where absent), their texts, and the inertial frame's rpy."""
    origin, mass, inertia = element.find("origin"), element.find("mass"), element.find("inertia")
    texts = {"xyz": (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split(),
             "rpy": (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split(),
             "mass": mass.get("value", "0") if mass is not None else "0"}
    for key, _, _ in _INERTIA_KEYS:
        texts[key] = inertia.get(key, "0") if inertia is not None else "0"
    in_frame = np.zeros((3, 3))
    for key, i, j in _INERTIA_KEYS:
        in_frame[i, j] = in_frame[j, i] = float(texts[key])
    rpy = [float(v) for v in texts["rpy"]]
    R = euler2mat(*rpy, axes="sxyz")
    old = _Old(float(texts["mass"]), np.array([float(v) for v in texts["xyz"]]), R @ in_frame @ R.T)
    old.inertia_in_frame = in_frame
    return old, rpy, texts


def _dynamics(body: str, name: str, damping: float, friction: float, scale: float, changes: list[str]) -> str:
    """The joint's <dynamics> with the new values; a value within UNCHANGED of the robot's largest
    damping or friction (`scale`) of its old one keeps its text (0 -> 4e-11 is not a change)."""
    element = re.search(r"<dynamics\b[^>]*?/>|<dynamics\b.*?</dynamics>", _shadow(body), re.S)
    old = ET.fromstring(body[element.start():element.end()]) if element else ET.Element("dynamics")
    texts = [old.get("damping", "0"), old.get("friction", "0")]
    new = [_keep(texts[0], float(texts[0]), damping, max(scale, 1e-12)),
           _keep(texts[1], float(texts[1]), friction, max(scale, 1e-12))]
    if new == texts:
        return body
    changes.append(f"joint '{name}' damping {texts[0]} -> {new[0]}, friction {texts[1]} -> {new[1]}")
    replacement = f'<dynamics damping="{new[0]}" friction="{new[1]}"/>'
    if element:
        return body[:element.start()] + replacement + body[element.end():]
    pad = _indent(body)
    return body.rstrip() + f"\n{pad}{replacement}\n" + body[len(body.rstrip()):].lstrip("\n")

"""Contact parameters per link, as URDFs carry them for other simulators and for mb_sim: Gazebo's
``<gazebo reference="link">`` (``mu1``, ``mu2``, ``kp``, ``kd``), pybullet's ``<link><contact>``
(``lateral_friction``, ``rolling_friction``, ``spinning_friction``, ``stiffness``, ``damping``) and
``<mb_sim><contact link>``; for one link mb_sim's form wins over pybullet's, pybullet's over
Gazebo's, value by value.  What is read says where it came from; what is not simulated (ODE's
correction settings, anisotropic friction's direction, restitution...) is listed with the reason,
never dropped silently (``mb-sim info`` and a load warning show both).
"""
from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET
from collections.abc import Iterable

from mb_sim.urdf.description import LinkContactDescription
from mb_sim.urdf.errors import URDFError, URDFWarning, warn_user
from mb_sim.urdf.numbers import read_numbers

__all__ = ["GAZEBO_IGNORED", "PYBULLET_IGNORED", "merge_link_contacts", "read_gazebo_contacts",
           "read_pybullet_contacts"]

#: Gazebo (ODE) contact tags mb_sim does not simulate, with the reason.
GAZEBO_IGNORED = {
    "minDepth": "ODE's penetration allowed before it corrects: mb_sim's contact is compliant, nothing to correct",
    "maxVel": "ODE's cap on its correcting velocity: mb_sim corrects no penetration",
    "fdir1": "the direction of mu1 for anisotropic friction: mb_sim's friction is isotropic",
    "slip1": "ODE's force-dependent slip: not simulated", "slip2": "ODE's force-dependent slip: not simulated",
    "maxContacts": "ODE's contact count: mb_sim checks every feature",
    "soft_cfm": "ODE's constraint softness: stiffness and damping set it here",
    "soft_erp": "ODE's constraint softness: stiffness and damping set it here",
    "restitution_coefficient": "restitution: the damping sets how much a bounce keeps",
    "bounce": "restitution: the damping sets how much a bounce keeps",
    "min_depth": "ODE's penetration allowed before it corrects: mb_sim's contact is compliant",
    "max_vel": "ODE's cap on its correcting velocity: mb_sim corrects no penetration",
}
#: pybullet ``<contact>`` children mb_sim does not simulate, with the reason.
PYBULLET_IGNORED = {
    "restitution": "restitution: the damping sets how much a bounce keeps",
    "contact_cfm": "Bullet's constraint softness: stiffness and damping set it here",
    "contact_erp": "Bullet's constraint softness: stiffness and damping set it here",
    "inertia_scaling": "Bullet's solver inertia scaling: mb_sim's dynamics are exact",
    "friction_anchor": "Bullet's friction anchor: mb_sim's stiction anchors every contact point",
    "anisotropic_friction": "anisotropic friction: mb_sim's friction is isotropic",
}
#: Upper bounds of the values read (no robot's beyond).
_BOUNDS = {"friction": 100.0, "stiffness": 1e12, "linear_damping": 1e9, "rolling_friction": 10.0,
           "spinning_friction": 10.0}


def read_gazebo_contacts(root: ET.Element, source: str) -> dict[str, LinkContactDescription]:
    """The contact tags of the top-level ``<gazebo reference="link">`` elements, by link."""
    found: dict[str, LinkContactDescription] = {}
    for link, tags in _gazebo_tags(root).items():
        contact = {tag: tags[tag] for tag in ("mu1", "mu2", "kp", "kd") if tag in tags}
        ignored = tuple(f"Gazebo <{tag}>: {reason}" for tag, reason in GAZEBO_IGNORED.items() if tag in tags)
        if not contact and not ignored:
            continue
        where = f'<gazebo reference="{link}">'
        if not link:
            warn_user(f"{source}: <gazebo> without a reference: its contact tags ({', '.join(sorted(contact))}) "
                      "name no link: not used", URDFWarning)
            continue
        value = {tag: _number(element.get("value", element.text), source, f"{where} <{tag}>") for tag, element in contact.items()}
        values, read = {}, []
        mus = [value[tag] for tag in ("mu1", "mu2") if tag in value]
        if mus:
            values["friction"] = _checked(min(mus), "friction", source, where)
            differ = len(mus) == 2 and mus[0] != mus[1]
            read.append(f"friction {values['friction']:g} from Gazebo "
                        + (f"<mu1> {mus[0]:g} and <mu2> {mus[1]:g} (anisotropic friction is not simulated: "
                           "the smaller)" if differ else " and ".join(f"<{t}>" for t in ("mu1", "mu2") if t in value)))
        if "kp" in value:
            values["stiffness"] = _checked(value["kp"], "stiffness", source, where)
            read.append(f"stiffness {value['kp']:g} N/m from Gazebo <kp>")
        if "kd" in value:
            values["linear_damping"] = _checked(value["kd"], "linear_damping", source, where)
            read.append(f"linear damping {value['kd']:g} N s/m from Gazebo <kd>")
        found[link] = LinkContactDescription(link, **values, read=tuple(read), ignored=ignored)
    return found


def _gazebo_tags(root: ET.Element) -> dict[str, dict[str, ET.Element]]:
    """The children of every top-level ``<gazebo>`` by reference (Gazebo merges the blocks of one
    reference; a later tag wins), "" for those without one."""
    tags: dict[str, dict[str, ET.Element]] = {}
    for gazebo in root.findall("gazebo"):
        link = (gazebo.get("reference") or "").strip()
        tags.setdefault(link, {}).update({child.tag: child for child in gazebo if isinstance(child.tag, str)})
    return tags


def read_pybullet_contacts(root: ET.Element, source: str) -> dict[str, LinkContactDescription]:
    """The ``<contact>`` element of each ``<link>`` (pybullet's), by link."""
    found: dict[str, LinkContactDescription] = {}
    names = {"lateral_friction": "friction", "rolling_friction": "rolling_friction",
             "spinning_friction": "spinning_friction", "stiffness": "stiffness", "damping": "linear_damping"}
    for link_element in root.findall("link"):
        contact = link_element.find("contact")
        if contact is None:
            continue
        link = link_element.get("name") or ""
        where = f"link '{link}' <contact>"
        values, read, ignored = {}, [], []
        for child in contact:
            if not isinstance(child.tag, str):
                continue
            if child.tag in names:
                raw = child.get("value", child.text)
                number = _number(raw, source, f"{where} <{child.tag}>")
                key = names[child.tag]
                values[key] = _checked(number, key, source, where)
                unit = {"stiffness": " N/m", "linear_damping": " N s/m", "rolling_friction": " m",
                        "spinning_friction": " m"}.get(key, "")
                read.append(f"{key.replace('_', ' ')} {number:g}{unit} from pybullet <{child.tag}>")
            else:
                ignored.append(f"pybullet <{child.tag}>: " + PYBULLET_IGNORED.get(child.tag, "not a contact parameter "
                                                                                   "mb_sim knows"))
        if values or ignored:
            found[link] = LinkContactDescription(link, **values, read=tuple(read), ignored=tuple(ignored))
    return found


def merge_link_contacts(layers: Iterable[dict[str, LinkContactDescription]]) -> dict[str, LinkContactDescription]:
    """One description per link from `layers` in increasing precedence (Gazebo's, pybullet's,
    mb_sim's): a later layer's values replace an earlier one's (the replaced are listed as such)."""
    merged: dict[str, LinkContactDescription] = {}
    for layer in layers:
        for link, new in layer.items():
            old = merged.get(link)
            if old is None:
                merged[link] = new
                continue
            replaced = [f"{key.replace('_', ' ')} of {_origin(old, key)} replaced" for key in new.given()
                        if key in old.given()]
            merged[link] = dataclasses.replace(old, **new.given(), read=(*old.read, *new.read, *replaced),
                                               ignored=(*old.ignored, *new.ignored))
    return merged


def _origin(description: LinkContactDescription, key: str) -> str:
    """Where `description` read `key` (its ``read`` line), for the replaced note."""
    label = key.replace("_", " ")
    for line in description.read:
        if line.startswith(label + " "):
            return line.split(" from ", 1)[-1]
    return "an earlier tag"


def _number(raw: str | None, source: str, where: str) -> float:
    return read_numbers(raw or "", 1, lambda problem: _fail(source, where, problem))[0]


def _checked(value: float, key: str, source: str, where: str) -> float:
    """`value` if a robot's `key` can be it: not negative (stiffness positive), below its bound."""
    positive = key == "stiffness"
    if (value <= 0 if positive else value < 0) or not math.isfinite(value) or value > _BOUNDS[key]:
        _fail(source, where, f"{key.replace('_', ' ')} {value:g} must be {'positive' if positive else 'at least 0'} "
                             f"and at most {_BOUNDS[key]:g}")
    return value


def _fail(source: str, where: str, problem: str):
    raise URDFError(source, where, problem)

"""A fingerprint of everything the derivation reads from a robot model, so derived and compiled
equations can be found again without deriving: the model's topology and its exact structural
values, the names and order of coordinates, speeds, inputs and parameters; never parameter
values (those are passed at run time)."""
from __future__ import annotations

import hashlib
import json

import sympy
from sympy import Basic, MatrixBase
from sympy.physics.mechanics import Force

from mb_sim.model import Robot
from mb_sim.model.base import applied_loads
from mb_sim.symbolic.derive import joint_efforts
from mb_sim.symbolic.imu import imu_links

__all__ = ["topology_signature", "topology_key", "DERIVATION_VERSION"]

#: Bump when the derivation changes what it produces for the same model.
DERIVATION_VERSION = "9"


class _Structure:
    """Exact, process-independent text of expressions: each node's class and arguments, a shared
    subexpression's text computed once per signature (SymPy's printers order and format every term,
    which took a second for a humanoid's 200 joints)."""

    def __init__(self) -> None:
        self._memo: dict[Basic, str] = {}

    def __call__(self, item) -> str:
        if isinstance(item, MatrixBase):
            return f"Matrix{item.shape}[{', '.join(map(self, item))}]"
        if not isinstance(item, Basic):
            return str(item)
        text = self._memo.get(item)
        if text is None:
            text = self._memo[item] = self._node(item)
        return text

    def _node(self, item: Basic) -> str:
        if item.is_Symbol:
            return f"{type(item).__name__}:{item.name}"
        if item.is_Float:
            sign, mantissa, exponent, _ = item._mpf_
            return f"Float:{sign},{int(mantissa)},{exponent}"  # every bit of it, whichever integers mpmath uses
        if item.is_Number:
            return f"Number:{item}"  # integers and rationals: exact
        return f"{type(item).__name__}({', '.join(map(self, item.args))})"  # a dynamic symbol's class is its name


def _vector_terms(vector, text: _Structure) -> list[str]:
    """A SymPy vector's parts as ``frame:components``."""
    return [f"{frame.name}:{text(components)}" for components, frame in vector.args]


def topology_signature(robot: Robot) -> dict:
    """The derivation's inputs as plain data (strings of small local expressions)."""
    system, text = robot.system, _Structure()
    joints = [{
        "name": j.name, "type": type(j).__name__, "parent": j.parent.name, "child": j.child.name,
        **dict(zip(("rotation", "translation", "angular_velocity", "velocity"), map(text, j.local_kinematics()))),
    } for j in robot.joints.values()]
    links = [{
        "name": name, "mass": text(link.body.mass), "masscenter": text(link.com), "inertia": text(link.inertia_matrix),
    } if link.body is not None else {"name": name} for name, link in robot.links.items()]
    loads = [{"on": str(load.location), "kind": "force" if isinstance(load, Force) else "torque",
              "vector": _vector_terms(load.vector, text)} for load in applied_loads(system)]
    return {
        "derivation": DERIVATION_VERSION, "sympy": sympy.__version__, "root": robot.root_link.name,
        "q": [str(q) for q in system.q], "u": [str(u) for u in system.u],
        "q_dependent": [str(q) for q in system.q_dep], "u_dependent": [str(u) for u in system.u_dep],
        "kdes": [text(k) for k in system.kdes],
        "inputs": [str(e) for e in joint_efforts(robot)], "parameters": [str(p) for p in robot.parameters],
        "joints": joints, "links": links, "loads": loads,
        "holonomic": [text(c) for c in system.holonomic_constraints],
        "nonholonomic": [text(c) for c in system.nonholonomic_constraints],
        **_kinematic_loads(robot),
        **_imus(robot),
        **_force_torques(robot),
    }


def _imus(robot: Robot) -> dict:
    """The links carrying IMUs (their outputs' rows; which IMUs and their mountings are applied
    at run time); nothing for a robot without IMUs, so other robots keep their cached builds."""
    links = imu_links(robot)
    return {"imu_links": links} if links else {}


def _force_torques(robot: Robot) -> dict:
    """The force-torque sensors' names and joints (their outputs' rows); nothing for a robot
    without them, so other robots keep their cached builds."""
    sensors = [[sensor.name, sensor.joint] for sensor in getattr(robot, "force_torques", [])]
    return {"force_torques": sensors} if sensors else {}


def _kinematic_loads(robot: Robot) -> dict:
    """What components writing loads from the link kinematics (contacts) read besides parameters;
    nothing for a robot without them, so other robots keep their cached builds."""
    found = [component.signature() for component in robot.walk() if hasattr(component, "kinematic_loads")]
    return {"kinematic_loads": found} if found else {}


def topology_key(robot: Robot) -> str:
    """sha256 of :func:`topology_signature`."""
    text = json.dumps(topology_signature(robot), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()

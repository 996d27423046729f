"""The Gough-Stewart platform of urdf/stewart_platform.urdf: its geometry, the closed-form inverse
kinematics of a 6-UPS platform (leg lengths from the platform's pose) and the URDF text written
from them (test_stewart_platform.py checks the shipped file is this text).

Six legs join a fixed base (anchors b_i on a circle of radius BASE_RADIUS, in pairs +-BASE_SPREAD
about 0, 120 and 240 degrees) to the platform (anchors a_i on a circle of radius PLATFORM_RADIUS,
in pairs +-PLATFORM_SPREAD about 60, 180 and 300 degrees), HEIGHT above the base at the zero
configuration.  Each leg: a universal joint at the base (two revolutes, x then y of a frame whose z
points along the leg, with a light cross link between), a cylinder, a prismatic joint (the
actuator: extension from the nominal length), a piston, and a spherical loop joint at the
platform anchor.  The platform hangs from the world by a floating joint, so every loop is short:
6 + 6 x 3 speeds, 18 loop rows, 6 degrees of freedom.
"""
from __future__ import annotations

import math

import numpy as np

BASE_RADIUS, PLATFORM_RADIUS, HEIGHT = 0.5, 0.3, 0.6
BASE_SPREAD, PLATFORM_SPREAD = math.radians(15.0), math.radians(15.0)
CYLINDER = 0.4  # the piston's joint from the universal joint along the leg [m]
PLATFORM_MASS, CYLINDER_MASS, PISTON_MASS, CROSS_MASS = 4.0, 0.6, 0.4, 0.01
LEGS = 6


def base_anchor(i: int) -> np.ndarray:
    centre = 2 * math.pi / 3 * (i // 2)
    angle = centre + (BASE_SPREAD if i % 2 else -BASE_SPREAD)
    return np.array([BASE_RADIUS * math.cos(angle), BASE_RADIUS * math.sin(angle), 0.0])


def platform_anchor(i: int) -> np.ndarray:
    """Anchor i in the platform's frame: the pairs sit 60 degrees from the base's, so each leg
    leans 30 degrees around the axis and the legs cross (no singularity at the zero configuration)."""
    centre = 2 * math.pi / 3 * (i // 2) + (math.pi / 3 if i % 2 else -math.pi / 3)
    angle = centre + (-PLATFORM_SPREAD if i % 2 else PLATFORM_SPREAD)
    return np.array([PLATFORM_RADIUS * math.cos(angle), PLATFORM_RADIUS * math.sin(angle), 0.0])


def leg_vectors(position: np.ndarray, rotation: np.ndarray) -> list[np.ndarray]:
    """Inverse kinematics: each leg from its base anchor to its platform anchor (world)."""
    return [position + rotation @ platform_anchor(i) - base_anchor(i) for i in range(LEGS)]


def nominal_lengths() -> list[float]:
    return [float(np.linalg.norm(v)) for v in leg_vectors(np.array([0.0, 0.0, HEIGHT]), np.eye(3))]


def _rpy_to_z(direction: np.ndarray) -> tuple[float, float, float]:
    """URDF rpy of a frame whose z is `direction` (a unit vector), x horizontal."""
    d = direction / np.linalg.norm(direction)
    x = np.cross([0.0, 0.0, 1.0], d)
    x /= np.linalg.norm(x)
    y = np.cross(d, x)
    R = np.column_stack([x, y, d])
    # R = Rz(yaw) Ry(pitch) Rx(roll)
    pitch = math.asin(-R[2, 0])
    roll = math.atan2(R[2, 1], R[2, 2])
    yaw = math.atan2(R[1, 0], R[0, 0])
    return roll, pitch, yaw


def _fmt(values) -> str:
    return " ".join(f"{v:.12g}" if abs(v) > 1e-15 else "0" for v in values)


def _inertial(mass: float, com: tuple, inertia: tuple) -> str:
    ixx, iyy, izz = inertia
    return (f'    <inertial>\n      <origin xyz="{_fmt(com)}" rpy="0 0 0"/>\n      <mass value="{mass:g}"/>\n'
            f'      <inertia ixx="{ixx:.6g}" ixy="0" ixz="0" iyy="{iyy:.6g}" iyz="0" izz="{izz:.6g}"/>\n'
            "    </inertial>\n")


def _rod(mass: float, length: float, start: float) -> str:
    """A thin rod along z from `start` over `length`: its inertial element."""
    across = mass * length**2 / 12.0 + 1e-5
    return _inertial(mass, (0.0, 0.0, start + length / 2), (across, across, 1e-5))


def urdf_text() -> str:
    """The URDF of the platform (see the module docstring)."""
    lengths = nominal_lengths()
    radius2 = PLATFORM_RADIUS**2
    out = ['<?xml version="1.0"?>\n',
           "<!-- A Gough-Stewart platform (6-UPS), written by test/stewart_geometry.py (see its docstring):\n"
           "     six legs with a universal joint at the base (two revolutes and a light cross link), a\n"
           "     prismatic actuator, and a spherical loop joint at the platform, which hangs from the world by\n"
           "     a floating joint; 6 degrees of freedom. -->\n",
           '<robot name="stewart_platform">\n  <link name="world"/>\n  <link name="base"/>\n',
           "  <link name=\"platform\">\n" + _inertial(PLATFORM_MASS, (0, 0, 0),
                                                    (PLATFORM_MASS * radius2 / 4, PLATFORM_MASS * radius2 / 4,
                                                     PLATFORM_MASS * radius2 / 2)) + "  </link>\n"]
    for i in range(LEGS):
        n = i + 1
        out.append(f'  <link name="cross_{n}">\n' + _inertial(CROSS_MASS, (0, 0, 0), (1e-6, 1e-6, 1e-6)) + "  </link>\n")
        out.append(f'  <link name="cylinder_{n}">\n' + _rod(CYLINDER_MASS, CYLINDER, 0.0) + "  </link>\n")
        out.append(f'  <link name="piston_{n}">\n' + _rod(PISTON_MASS, lengths[i] - CYLINDER, 0.0) + "  </link>\n")
    out.append('  <joint name="base_joint" type="fixed">\n    <parent link="world"/>\n    <child link="base"/>\n'
               "  </joint>\n")
    out.append('  <joint name="platform_joint" type="floating">\n    <parent link="world"/>\n'
               f'    <child link="platform"/>\n    <origin xyz="0 0 {HEIGHT:g}" rpy="0 0 0"/>\n  </joint>\n')
    for i in range(LEGS):
        n = i + 1
        direction = leg_vectors(np.array([0.0, 0.0, HEIGHT]), np.eye(3))[i]
        out.append(f'  <joint name="hip_{n}_x" type="continuous">\n    <parent link="base"/>\n'
                   f'    <child link="cross_{n}"/>\n    <origin xyz="{_fmt(base_anchor(i))}" '
                   f'rpy="{_fmt(_rpy_to_z(direction))}"/>\n    <axis xyz="1 0 0"/>\n  </joint>\n')
        out.append(f'  <joint name="hip_{n}_y" type="continuous">\n    <parent link="cross_{n}"/>\n'
                   f'    <child link="cylinder_{n}"/>\n    <axis xyz="0 1 0"/>\n  </joint>\n')
        out.append(f'  <joint name="leg_{n}" type="prismatic">\n    <parent link="cylinder_{n}"/>\n'
                   f'    <child link="piston_{n}"/>\n    <origin xyz="0 0 {CYLINDER:g}" rpy="0 0 0"/>\n'
                   '    <axis xyz="0 0 1"/>\n    <limit lower="-0.25" upper="0.25" effort="2000" velocity="1"/>\n'
                   "  </joint>\n")
    out.append("  <mb_sim>\n")
    for i in range(LEGS):
        n = i + 1
        out.append(f'    <loop_joint name="ankle_{n}" type="spherical" parent="piston_{n}" child="platform">\n'
                   f'      <origin xyz="0 0 {lengths[i] - CYLINDER:.12g}" rpy="0 0 0"/>\n'
                   f'      <child_origin xyz="{_fmt(platform_anchor(i))}" rpy="0 0 0"/>\n    </loop_joint>\n')
    out.append("  </mb_sim>\n</robot>\n")
    return "".join(out)


if __name__ == "__main__":
    print(urdf_text(), end="")

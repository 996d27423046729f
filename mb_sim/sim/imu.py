"""IMU readings from the exact accelerations of the model.

Each IMU (``<mb_sim><imu>`` or Gazebo's ``<sensor type="imu">``) is fixed in a link L at offset
``d`` (link frame) with rotation ``R_m`` (sensor in link).  At the current state the generated
code gives, per link carrying IMUs, L's angular velocity ``omega`` and the Jacobians and u'-free
parts of L's angular acceleration and origin acceleration (outputs ``imu_jacobians``,
``imu_states``, see :mod:`mb_sim.symbolic.imu`); with u' from the forward dynamics

    alpha = J_w u' + alpha_b,     a_O - g = J_v u' + (a_b - g)
    f = (a_O - g) + alpha x d_w + omega x (omega x d_w),    d_w = R_L d

is the specific force of the sensor point (what an accelerometer reads: +g up at rest).  The
reading gives the sensor's orientation ``R_L R_m`` as a quaternion (x, y, z, w; sensor in world),
``omega`` and ``f`` in sensor axes.  Optional gaussian noise and constant biases
(:class:`ImuNoise`, seeded) are added per reading; off by default.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mb_sim.urdf.rotations import rpy_to_matrix

__all__ = ["quaternion_xyzw", "ImuNoise", "ImuReading", "ImuSet"]


@dataclass(frozen=True)
class ImuReading:
    """One IMU's reading: ``orientation`` quaternion (x, y, z, w) of the sensor frame in the
    world, ``angular_velocity`` [rad/s] and ``linear_acceleration`` (specific force, gravity
    included: +9.81 up at rest) [m/s^2], both in sensor axes (sensor_msgs/Imu's conventions)."""

    orientation: np.ndarray
    angular_velocity: np.ndarray
    linear_acceleration: np.ndarray


@dataclass(frozen=True)
class ImuNoise:
    """Gaussian white noise (standard deviations) and constant biases added to a reading's
    angular velocity and linear acceleration (sensor axes); ``seed`` seeds its generator."""

    angular_velocity_stddev: float = 0.0
    linear_acceleration_stddev: float = 0.0
    angular_velocity_bias: tuple[float, float, float] = (0.0, 0.0, 0.0)
    linear_acceleration_bias: tuple[float, float, float] = (0.0, 0.0, 0.0)
    seed: int | None = 0

    def __post_init__(self) -> None:
        for name in ("angular_velocity_stddev", "linear_acceleration_stddev"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"ImuNoise {name} must be finite and >= 0, got {value}")
        for name in ("angular_velocity_bias", "linear_acceleration_bias"):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != (3,) or not np.isfinite(value).all():
                raise ValueError(f"ImuNoise {name} must be 3 finite numbers, got {getattr(self, name)!r}")


@dataclass
class _Mounting:
    """Where one IMU sits: its link's rows in ``link_poses`` and in the IMU outputs, offset and
    rotation in the link."""

    link_row: int
    imu_row: int
    offset: np.ndarray
    rotation: np.ndarray
    noise: ImuNoise | None = None
    rng: np.random.Generator | None = field(default=None, repr=False)


class ImuSet:
    """The IMUs of one simulator's robot: readings at the state in the model's buffers."""

    def __init__(self, robot, model) -> None:
        self.model = model
        rows = {name: k for k, name in enumerate(model.link_names)}
        carriers = {name: k for k, name in enumerate(model.imu_links)}
        imus = list(getattr(robot, "imus", []))
        missing = [f"{imu.name} (on {imu.link})" for imu in imus if imu.link not in carriers]
        if missing:
            raise ValueError(f"IMU(s) {', '.join(missing)} on links the compiled model has no IMU rows for "
                             f"(imu_links {model.imu_links})")
        self.mountings: dict[str, _Mounting] = {
            imu.name: _Mounting(rows[imu.link], carriers[imu.link], np.asarray(imu.xyz, dtype=float),
                                rpy_to_matrix(np.asarray(imu.rpy, dtype=float))) for imu in imus}

    @property
    def names(self) -> list[str]:
        return list(self.mountings)

    def set_noise(self, name: str, noise: ImuNoise | None) -> None:
        """Noise and biases on IMU `name` from now on (None: exact readings)."""
        mounting = self._mounting(name)
        mounting.noise = noise
        mounting.rng = None if noise is None else np.random.default_rng(noise.seed)

    def _mounting(self, name: str) -> _Mounting:
        if name not in self.mountings:
            known = ", ".join(self.mountings) or "none"
            raise KeyError(f"no IMU named {name!r} (IMUs: {known})")
        return self.mountings[name]

    def read(self, time: float, names: list[str] | None = None) -> dict[str, ImuReading]:
        """Readings of IMUs `names` (all: None) at the state in the buffers: one evaluation of the
        outputs and one of the forward dynamics (which write ``buffers.udot``, ``buffers.lam``)."""
        names = self.names if names is None else names
        mountings = {name: self._mounting(name) for name in names}
        if not mountings:
            return {}
        model, view = self.model, self.model.layout.view
        b = model.buffers
        model.evaluate_into(time)
        poses = view(b.out, "link_poses").copy()
        jacobians, states = view(b.out, "imu_jacobians").copy(), view(b.out, "imu_states").copy()
        model.forward_dynamics_into(time)
        udot = b.udot.copy()
        readings = {}
        for name, mounting in mountings.items():
            k = mounting.imu_row
            readings[name] = self._reading(mounting, poses[mounting.link_row], jacobians[6 * k:6 * k + 6] @ udot,
                                           states[k])
        return readings

    @staticmethod
    def _reading(mounting: _Mounting, pose: np.ndarray, accelerations: np.ndarray, state: np.ndarray) -> ImuReading:
        """The reading from the link pose row, J u' (6) and the imu_states row (module docstring)."""
        link_rotation = pose[:9].reshape(3, 3)
        omega, alpha = state[0:3], accelerations[0:3] + state[6:9]
        specific_origin = accelerations[3:6] + state[9:12]
        arm = link_rotation @ mounting.offset
        specific = specific_origin + np.cross(alpha, arm) + np.cross(omega, np.cross(omega, arm))
        sensor = link_rotation @ mounting.rotation
        angular_velocity, linear_acceleration = sensor.T @ omega, sensor.T @ specific
        if mounting.noise is not None:
            noise, rng = mounting.noise, mounting.rng
            angular_velocity = (angular_velocity + np.asarray(noise.angular_velocity_bias, dtype=float)
                                + noise.angular_velocity_stddev * rng.standard_normal(3))
            linear_acceleration = (linear_acceleration + np.asarray(noise.linear_acceleration_bias, dtype=float)
                                   + noise.linear_acceleration_stddev * rng.standard_normal(3))
        return ImuReading(quaternion_xyzw(sensor), angular_velocity, linear_acceleration)


def quaternion_xyzw(rotation: np.ndarray) -> np.ndarray:
    """The unit quaternion (x, y, z, w) of rotation matrix `rotation`, computed from its largest
    of trace and diagonal (Shepperd's choice, as SciPy's ``Rotation.from_matrix``, whose results it
    gives: importing SciPy would cost a cached robot's load a quarter of a second)."""
    m = rotation
    decision = (m[0, 0], m[1, 1], m[2, 2], m[0, 0] + m[1, 1] + m[2, 2])
    choice = int(np.argmax(decision))
    quaternion = np.empty(4)
    if choice != 3:
        i, j, k = choice, (choice + 1) % 3, (choice + 2) % 3
        quaternion[i] = 1.0 - decision[3] + 2.0 * m[i, i]
        quaternion[j] = m[j, i] + m[i, j]
        quaternion[k] = m[k, i] + m[i, k]
        quaternion[3] = m[k, j] - m[j, k]
    else:
        quaternion[:3] = m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]
        quaternion[3] = 1.0 + decision[3]
    return quaternion / np.linalg.norm(quaternion)

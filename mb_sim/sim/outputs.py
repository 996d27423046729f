"""What a simulator reports about its state (all SI units)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ConstraintErrors", "ConstraintReaction", "ConstraintSystem", "ContactState", "ContactWrench", "MotorState",
           "SimulationOutputs", "SpringState", "Trajectory"]


@dataclass(frozen=True)
class MotorState:
    """A DC motor's state: the applied (clamped) voltage [V], the current [A], the torque on its
    joint n K i [N m] and the joint's speed [rad/s] (force [N] and speed [m/s] for a prismatic
    joint)."""

    voltage: float
    current: float
    torque: float
    speed: float


@dataclass(frozen=True)
class SpringState:
    """A spring-damper's outputs, as Exudyn's connector outputs (world axes, SI units).

    ``displacement`` is ``p1 - p0`` (marker 0 to marker 1), ``distance`` its length L,
    ``velocity`` the relative velocity ``v1 - v0``, ``force`` the scalar force (tension
    positive) and ``force_vector`` ``force * displacement / distance``: it acts as ``+f`` on
    marker 0 and ``-f`` on marker 1.  ``markers`` are the two marker positions, ``length_rate``
    L' [m/s].
    """

    distance: float
    displacement: np.ndarray
    velocity: np.ndarray
    force: float
    force_vector: np.ndarray
    markers: tuple[np.ndarray, np.ndarray]
    length_rate: float = float("nan")


@dataclass(frozen=True)
class ContactState:
    """One contact feature of a link's collision shape touching (penetration > 0), in world axes
    and SI units (a row of the model's ``contact_states``, see :mod:`mb_sim.model.contact` and
    :mod:`mb_sim.model.body_contact`).

    ``name`` is the feature's ``ground/<link>/<collision index>/<feature>`` (a contact pair's:
    ``<pair>/<link>/<index>/<feature>@<other link>/<index>``), ``point`` its contact point,
    ``normal`` the unit contact normal, ``penetration`` d [m] and ``penetration_rate`` d' [m/s]
    along it, ``normal_force`` f_n [N] (>= 0) and ``force`` the whole force on ``link`` at
    ``point`` (normal plus friction) [N]; in a contact pair the other link gets ``-force`` there.
    """

    link: str
    name: str
    point: np.ndarray
    normal: np.ndarray
    penetration: float
    penetration_rate: float
    normal_force: float
    force: np.ndarray


@dataclass(frozen=True)
class ContactWrench:
    """The total contact force [N] on one link (from the ground and its contact pairs) and its
    torque [N m] about the link's origin, both in world axes."""

    force: np.ndarray
    torque: np.ndarray


@dataclass(frozen=True)
class ConstraintErrors:
    """Karana's poseError/velError/accelError of one named constraint: the residuals of its rows
    of Phi(q) = 0 (holonomic ones only), A u + b = 0 and A u' + c = 0 (NaN where the forward
    dynamics failed), whether it is enforced or not.  A rolling wheel's rows are its contact
    point's velocity along its rolling direction and its axle over its radius (rad/s; times the
    radius: the slip velocity in m/s)."""

    enabled: bool
    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray


@dataclass(frozen=True)
class ConstraintReaction:
    """What one named constraint exerts at the current state.

    ``generalized_forces`` are ``-A^T lambda`` over its rows, by speed name.  For a loop joint,
    ``force`` [N] and ``torque`` [N m] are the reaction on its child link at the child-side
    point C (the torque about C), in the axes of the loop joint's parent-side frame J; the
    parent gets the opposite.  For a rolling wheel, ``force`` is the ground's friction force on
    the wheel at its contact point in world axes (``torque`` zero).  Both are None for constraints
    between coordinates (mimic joints, coordinate constraints), whose reaction is the generalized
    force alone.
    """

    generalized_forces: dict[str, float]
    force: np.ndarray | None = None
    torque: np.ndarray | None = None


@dataclass(frozen=True)
class ConstraintSystem:
    """The constraint rows at one state, as Karana's SubGraph exposes them: ``rows`` names each
    row's constraint, ``enabled`` (bool per row) whether it is enforced; ``matrix`` A (rows x
    speeds) and ``bias`` b of the velocity constraints A u + b = 0, ``acceleration_bias`` c of
    A u' + c = 0 (c = A' u + b'; Karana's Gamma is -c); ``multipliers`` lambda per row (zero for a
    released row) and ``generalized_forces`` -A^T lambda per speed, from the forward dynamics with
    the efforts applied."""

    rows: list[str]
    enabled: np.ndarray
    matrix: np.ndarray
    bias: np.ndarray
    acceleration_bias: np.ndarray
    multipliers: np.ndarray
    generalized_forces: np.ndarray


@dataclass(frozen=True)
class SimulationOutputs:
    """One snapshot of the simulation.

    ``positions``/``velocities`` are keyed by generalized coordinate/speed name (e.g.
    ``elbow_q``, ``elbow_u``); ``joint_positions``/``joint_velocities`` by joint name for one-DoF
    joints; ``efforts`` are the applied (clamped) efforts by actuated joint; ``link_poses`` are 4x4
    world transforms by link.  Constraint errors are the largest absolute residuals of
    Phi(q) = 0, A u + b = 0 and A u' + c = 0; ``constraint_forces`` are the generalized forces
    -A^T lambda the constraints exert, by speed name (errors and forces of enforced constraints
    only).  Without dynamics (``Simulator.outputs(dynamics=False)``) ``accelerations`` and
    ``constraint_forces`` are empty and ``acceleration_error`` is NaN.  ``springs`` holds each
    spring-damper's state by name, ``motors`` each DC motor's; ``reactions`` (with dynamics) each
    named constraint's reaction.  ``contacts`` holds each contact feature touching (penetration
    > 0) by name (``sim.model.contact_names``); ``contact_wrenches`` every link with contact
    features (``<ground>``, ``<contact_pair>``), zero while it does not touch.
    """

    time: float
    positions: dict[str, float]
    velocities: dict[str, float]
    accelerations: dict[str, float]
    joint_positions: dict[str, float]
    joint_velocities: dict[str, float]
    efforts: dict[str, float]
    link_poses: dict[str, np.ndarray]
    position_error: float
    velocity_error: float
    acceleration_error: float
    kinetic_energy: float
    potential_energy: float
    constraint_forces: dict[str, float] = field(default_factory=dict)
    springs: dict[str, SpringState] = field(default_factory=dict)
    reactions: dict[str, ConstraintReaction] = field(default_factory=dict)
    motors: dict[str, MotorState] = field(default_factory=dict)
    contacts: dict[str, ContactState] = field(default_factory=dict)
    contact_wrenches: dict[str, ContactWrench] = field(default_factory=dict)

    @property
    def energy(self) -> float:
        """Kinetic plus gravitational potential energy [J]."""
        return self.kinetic_energy + self.potential_energy


@dataclass(frozen=True)
class Trajectory:
    """Sampled states: ``times`` (n,), ``q`` (n, n_q), ``u`` (n, n_u), ``z`` (n, n_z: motor
    currents), with their names."""

    times: np.ndarray
    q: np.ndarray
    u: np.ndarray
    coordinate_names: list[str]
    speed_names: list[str]
    z: np.ndarray | None = None
    electrical_state_names: list[str] = field(default_factory=list)

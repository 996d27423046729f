"""What a run reports about its current state (:class:`~mb_sim.sim.outputs.SimulationOutputs`):
read from one evaluation of the generated outputs, and the forward dynamics where asked for
(accelerations, constraint forces and reactions)."""
from __future__ import annotations

import numpy as np

from mb_sim.codegen.errors import FactorizationError
from mb_sim.sim.named_constraints import NamedConstraints
from mb_sim.sim.outputs import (
    ConstraintErrors, ConstraintReaction, ContactState, ContactWrench, MotorState, SimulationOutputs, SpringState,
)
from mb_sim.sim.robot_model import RobotModel

__all__ = ["OutputReader"]


class OutputReader:
    """Reads the outputs of `model`'s buffers for a run of `robot`."""

    def __init__(self, robot: RobotModel, model, constraints: NamedConstraints) -> None:
        self.robot, self.model, self.constraints = robot, model, constraints

    def outputs(self, time: float, efforts: np.ndarray, dynamics: bool = True) -> SimulationOutputs:
        """Everything about the state in the buffers at `time` (`efforts`: the applied efforts of the
        actuated joints); ``dynamics=False`` skips the forward dynamics (accelerations and
        constraint forces empty, the acceleration error NaN)."""
        robot, b, view = self.robot, self.model.buffers, self.model.layout.view
        self.model.evaluate_into(time)
        A, bias = view(b.out, "constraint_matrix"), view(b.out, "constraint_bias")[:, 0]
        poses = {}
        for name, row in zip(self.model.link_names, view(b.out, "link_poses")):
            pose = np.eye(4)
            pose[:3, :3], pose[:3, 3] = row[:9].reshape(3, 3), row[9:]
            poses[name] = pose
        on = b.enabled != 0.0  # errors of the enforced constraints only
        largest = lambda v: float(np.abs(v[on[:len(v)]]).max()) if on[:len(v)].any() else 0.0  # noqa: E731
        motor_rows = view(b.out, "motor_states")
        snapshot = dict(
            time=time,
            positions=dict(zip(robot.coordinate_names, b.q.tolist())),
            velocities=dict(zip(robot.speed_names, b.u.tolist())),
            accelerations={},
            joint_positions={j: float(b.q[i]) for j, (i, _) in robot.one_dof.items()},
            joint_velocities={j: float(b.u[k]) for j, (_, k) in robot.one_dof.items()},
            efforts=dict(zip(robot.actuated_joints, efforts.tolist()))
            | {joint: float(row[2]) for joint, row in zip(robot.motor_joints.values(), motor_rows)},
            link_poses=poses,
            position_error=largest(view(b.out, "phi")[:, 0]),
            velocity_error=largest(A @ b.u + bias),
            acceleration_error=float("nan"),
            kinetic_energy=float(view(b.out, "kinetic_energy")[0, 0]),
            potential_energy=float(view(b.out, "potential_energy")[0, 0]),
        )
        snapshot["springs"] = _spring_states(self.model.spring_names, view(b.out, "spring_states"))
        snapshot["contacts"], snapshot["contact_wrenches"] = _contacts(
            self.model.contact_names, list(robot.facts.contact_links), view(b.out, "contact_states"), poses)
        snapshot["motors"] = {name: MotorState(*(float(v) for v in row)) for name, row in zip(robot.motors, motor_rows)}
        if dynamics:  # (the NumPy backend rewrites A and c in out[]: the same values, same state)
            c = view(b.out, "acceleration_bias")[:, 0]
            wrenches = view(b.out, "constraint_wrenches").copy()
            self.model.forward_dynamics_into(time)
            snapshot.update(accelerations=dict(zip(robot.speed_names, b.udot.tolist())),
                            acceleration_error=largest(A @ b.udot + c),
                            constraint_forces=dict(zip(robot.speed_names, (-A.T @ b.lam).tolist())),
                            reactions=self._reactions(A, wrenches))
        return SimulationOutputs(**snapshot)

    def _reactions(self, matrix: np.ndarray, wrenches: np.ndarray) -> dict[str, ConstraintReaction]:
        """Each named constraint's reaction from the multipliers in the buffers."""
        lam, facts, out = self.model.buffers.lam, self.robot.facts, {}
        for name in self.constraints.names:
            rows = self.constraints.rows(name)
            generalized = dict(zip(self.robot.speed_names, (-matrix[rows].T @ lam[rows]).tolist()))
            if name in facts.loop_joints or name in facts.rolling_wheels:
                wrench = -wrenches[rows].T @ lam[rows]
                out[name] = ConstraintReaction(generalized, wrench[:3], wrench[3:])
            else:
                out[name] = ConstraintReaction(generalized)
        return out

    def constraint_errors(self, time: float) -> dict[str, ConstraintErrors]:
        """Position, velocity and acceleration residuals of each named constraint (Karana's
        poseError, velError, accelError), enabled or not."""
        b, view = self.model.buffers, self.model.layout.view
        self.model.evaluate_into(time)
        phi = view(b.out, "phi")[:, 0].copy()
        matrix, bias = view(b.out, "constraint_matrix").copy(), view(b.out, "constraint_bias")[:, 0].copy()
        c = view(b.out, "acceleration_bias")[:, 0].copy()
        try:
            self.model.forward_dynamics_into(time)
            acceleration = matrix @ b.udot + c
        except FactorizationError:
            acceleration = np.full(len(c), np.nan)
        velocity = matrix @ b.u + bias
        out = {}
        for name in self.constraints.names:
            rows = self.constraints.rows(name)
            out[name] = ConstraintErrors(self.constraints.enabled(name), phi[rows[rows < len(phi)]],
                                         velocity[rows], acceleration[rows])
        return out


def _spring_states(names: list[str], rows: np.ndarray) -> dict[str, SpringState]:
    """Spring outputs by name from the rows of the spring_states block (see SPRING_STATE)."""
    states = {}
    for name, row in zip(names, rows):
        p0, p1, dv, length, rate, force = row[0:3], row[3:6], row[6:9], row[9], row[10], row[11]
        displacement = p1 - p0
        states[name] = SpringState(float(length), displacement, dv.copy(), float(force),
                                   force * displacement / length if length > 0 else np.full(3, np.nan),
                                   (p0.copy(), p1.copy()), float(rate))
    return states


def _contacts(names: list[str], links: list[tuple[str, str | None]], rows: np.ndarray, poses: dict[str, np.ndarray]
              ) -> tuple[dict[str, ContactState], dict[str, ContactWrench]]:
    """The features touching (penetration > 0) from the rows of the contact_states block (see
    CONTACT_STATE), and each contact link's total contact force and torque about its origin (world
    axes; zero while it does not touch).  `links`: per feature (a row), the link its force acts on
    and the link that gets the opposite force (None for a ground), as
    :attr:`RobotFacts.contact_links <mb_sim.sim.robot_facts.RobotFacts.contact_links>` lists them."""
    contacts: dict[str, ContactState] = {}
    wrenches = {link: (np.zeros(3), np.zeros(3)) for pair in links for link in pair if link is not None}
    for name, (link, other), row in zip(names, links, rows):
        if not row[6] > 0.0:
            continue
        point, force = row[0:3].copy(), row[9:12].copy()
        contacts[name] = ContactState(link, name, point, row[3:6].copy(), float(row[6]), float(row[7]),
                                      float(row[8]), force)
        for on, f in ((link, force), (other, -force)):
            if on is not None:
                total, torque = wrenches[on]
                total += f
                torque += np.cross(point - poses[on][:3, 3], f)
    return contacts, {link: ContactWrench(force, torque) for link, (force, torque) in wrenches.items()}

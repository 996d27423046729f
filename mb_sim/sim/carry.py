"""Carry a running simulation into another simulator of the same robot in another scene (after
an object is spawned or deleted): sim time, the coordinates, speeds and electrical states named
alike, the parameters (what the user changed, and the defaults the old scene sized), the inputs
held, the pushes acting, servo gains, modes and plans, and which constraints are switched off.
What only the new one has (a spawned object) keeps its start; what only the old one had is
dropped.  The state is put back bit for bit (:meth:`Simulator.restore`), not projected, so a
robot resting or moving goes on exactly where it was."""
from __future__ import annotations

import numpy as np

from mb_sim.sim.simulator import Simulator

__all__ = ["carry_state"]


def carry_state(old: Simulator, new: Simulator) -> None:
    """Give `new` the run of `old` (see the module docstring); `new` keeps its initial state, so
    a reset returns to the new scene's start."""
    _carry_parameters(old, new)
    for name in old.constraints:
        if name in new.constraints and not old.constraint_enabled(name):
            new.set_constraint_enabled(name, False)
    q = _named(new.q, new.coordinate_names, old.q, old.coordinate_names)
    u = _named(new.u, new.speed_names, old.u, old.speed_names)
    z = _named(new.z, new.electrical_state_names, old.z, old.electrical_state_names)
    new.restore(q, u, z, old.time)
    _carry_inputs(old, new)
    _carry_servos(old, new)
    new.wrenches.pushes = [p for p in old.wrenches.pushes if p.link in new.wrench_links]  # world components
    new.wrenches.write_at(new.time)


def _carry_parameters(old: Simulator, new: Simulator) -> None:
    """Every parameter both have, at the old one's value: what the user changed, and the defaults
    sized by the old scene (the ground's stiffness follows the scene's weight: the robot would sink
    or rise when a spawned object changed it).  Parameters of what is new keep the new defaults."""
    b = new.model.buffers
    b.params[:] = _named(b.params, new.parameter_names, old.model.buffers.params, old.parameter_names)


def _named(target: np.ndarray, names: list[str], source: np.ndarray, source_names: list[str]) -> np.ndarray:
    """`target` with the entries `source` has under the same names."""
    where = {name: k for k, name in enumerate(source_names)}
    out = target.copy()
    for k, name in enumerate(names):
        if name in where:
            out[k] = source[where[name]]
    return out


def _carry_inputs(old: Simulator, new: Simulator) -> None:
    """The efforts and voltages commanded (the inputs before any servo), by joint and motor."""
    inputs, n = old.model.buffers.inputs, len(old.actuated_joints)
    efforts = dict(zip(old.actuated_joints, inputs[:n]))
    new.set_efforts([float(efforts.get(joint, 0.0)) for joint in new.actuated_joints])
    if new.motors:
        voltages = dict(zip(old.motors, inputs[n:]))
        new.set_voltages([float(voltages.get(motor, 0.0)) for motor in new.motors])


def _carry_servos(old: Simulator, new: Simulator) -> None:
    """Gains, feed-forward and each joint's servo mode and plan."""
    servos, joints = new.servos, set(new.servos.joints)
    servos.feed_forward = old.servos.feed_forward
    for joint in old.servos.joints:
        if joint not in joints:
            continue
        servos.set_gains(joint, *old.servos.gains[joint])
        mode = old.servos.mode(joint)
        if mode != "effort":
            servos.restore(joint, mode, old.servos.plan(joint))
    servos.refresh(new.time)

"""DC motor states as ROS data (``~/motor_states``, ``/diagnostics``), without rclpy.

``~/motor_states`` is a ``std_msgs/Float64MultiArray`` holding a matrix of one row per motor
(``Simulator.motors`` order) and one column per quantity, row-major, ``data_offset`` 0:

- ``layout.dim[0]``: label ``motors:<name1>,<name2>,...``, size n (motors), stride 4 n;
- ``layout.dim[1]``: label ``voltage,current,torque,speed``, size 4, stride 4;
- ``data[4 k + j]``: quantity j of motor k: the applied (clamped) voltage [V], the armature
  current [A], the torque on the joint n K i [N m] (a force [N] on a prismatic joint) and the
  joint's speed [rad/s] ([m/s] on a prismatic joint), as :class:`mb_sim.sim.outputs.MotorState`.

Self-describing, as ros2_control's multi-array conventions: a reader finds a motor's row from
the first label and a quantity's column from the second (:func:`motor_states_from_message`).
"""
from __future__ import annotations

from collections.abc import Mapping

from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout

from mb_sim.sim.outputs import MotorState

__all__ = ["FIELDS", "MOTORS_LABEL_PREFIX", "motor_states_message", "motor_states_from_message",
           "motor_diagnostics"]

#: The columns of ``~/motor_states``: the fields of MotorState, in order.
FIELDS = ("voltage", "current", "torque", "speed")
#: The first dimension's label: this prefix, then the motor names joined by commas.
MOTORS_LABEL_PREFIX = "motors:"


def motor_states_message(motors: Mapping[str, MotorState]) -> Float64MultiArray:
    """``~/motor_states``: the states of `motors` (by name, in motor order) as a labelled matrix."""
    names = list(motors)
    n, width = len(names), len(FIELDS)
    layout = MultiArrayLayout(dim=[
        MultiArrayDimension(label=MOTORS_LABEL_PREFIX + ",".join(names), size=n, stride=n * width),
        MultiArrayDimension(label=",".join(FIELDS), size=width, stride=width),
    ], data_offset=0)
    data = [float(getattr(motors[name], field)) for name in names for field in FIELDS]
    return Float64MultiArray(layout=layout, data=data)


def motor_states_from_message(message: Float64MultiArray) -> dict[str, MotorState]:
    """The motor states in a ``~/motor_states`` message (the inverse of :func:`motor_states_message`).

    Raises ValueError for a message without that layout.
    """
    dims = message.layout.dim
    if len(dims) != 2 or not dims[0].label.startswith(MOTORS_LABEL_PREFIX):
        raise ValueError(f"not a motor-state layout: {[d.label for d in dims]}")
    label = dims[0].label[len(MOTORS_LABEL_PREFIX):]
    names = label.split(",") if label else []
    fields = dims[1].label.split(",")
    if len(names) != dims[0].size or dims[1].size != len(fields) or set(FIELDS) - set(fields):
        raise ValueError(f"inconsistent motor-state layout: {[(d.label, d.size, d.stride) for d in dims]}")
    row, offset, data = dims[1].stride, message.layout.data_offset, list(message.data)
    if len(data) < offset + row * len(names):
        raise ValueError(f"{len(data)} values for {len(names)} motors of {row}")
    states = {}
    for k, name in enumerate(names):
        values = dict(zip(fields, data[offset + k * row:offset + (k + 1) * row]))
        states[name] = MotorState(*(values[field] for field in FIELDS))
    return states


def motor_diagnostics(motors: Mapping[str, MotorState], prismatic: frozenset[str] | set[str] = frozenset()
                      ) -> dict[str, str]:
    """``/diagnostics`` values of each motor: ``motor <name> voltage [V]``, ``... current [A]``,
    ``... torque [N m]`` and ``... speed [rad/s]`` (``force [N]`` and ``speed [m/s]`` for the motors
    in `prismatic`, those driving prismatic joints)."""
    values = {}
    for name, state in motors.items():
        linear = name in prismatic
        values[f"motor {name} voltage [V]"] = f"{state.voltage:.6g}"
        values[f"motor {name} current [A]"] = f"{state.current:.6g}"
        values[f"motor {name} {'force [N]' if linear else 'torque [N m]'}"] = f"{state.torque:.6g}"
        values[f"motor {name} speed [{'m/s' if linear else 'rad/s'}]"] = f"{state.speed:.6g}"
    return values

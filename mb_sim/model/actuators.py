"""DC motors: voltage in, current as an electrical state, torque on a joint (seed 002).

An armature-controlled DC motor whose body is the joint's parent link drives the joint through a
gear of ratio ``n``:

    L di/dt = V - R i - K n q'          joint torque  n K i  (reaction on the parent link)

with the rotor's inertia ``J`` reflected to the joint as ``n^2 J`` (added to the joint's diagonal
entry of the mass matrix, as MuJoCo's ``armature``: the rotor's gyroscopic coupling with the
parent's rotation is neglected) and its viscous friction ``b`` as the joint damping ``n^2 b``.
With ``L = 0`` there is no current state: ``i = (V - K n q') / R`` (the quasi-static model).
The voltage is an input, clamped to the voltage limit by the simulator.  The current is an
*electrical state*: the derivation integrates it with the mechanical state, and its linear decay
rate ``-R/L`` is declared so the integrator can take it exactly (see :mod:`mb_sim.codegen`).
"""
from __future__ import annotations

from sympy import Expr, S

from mb_sim.model.base import Input, LoadGroupBase
from mb_sim.model.joints import PrismaticJoint, RevoluteJoint
from mb_sim.model.parameters import dynamic_symbol, parameter
from mb_sim.urdf import DCMotorDescription

__all__ = ["DCMotor", "MOTOR_STATE"]

#: Columns of a motor's row in the ``motor_states`` output.
MOTOR_STATE = ("voltage", "current", "torque", "speed")


class DCMotor(LoadGroupBase):
    """``<dc_motor>`` on a one-DoF joint (see the module docstring).

    After define objects: ``voltage`` (the input), ``current`` (the electrical state, None for
    the quasi-static model); after define loads: ``torque`` (at the joint, n K i) and ``state``,
    the row of :data:`MOTOR_STATE`.
    """

    required_parent_type = (RevoluteJoint, PrismaticJoint)

    def __init__(self, name: str, description: DCMotorDescription) -> None:
        super().__init__(name)
        self.motor_description = description
        self.current: Expr | None = None

    @property
    def inductive(self) -> bool:
        """Whether the motor has a current state (non-zero inductance)."""
        return self.motor_description.inductance > 0.0

    def _define_objects(self) -> None:
        md, d, name = self.motor_description, self._descriptions, self.name
        joint = self.parent.name
        self.K = parameter(self, "torque_constant", md.torque_constant, f"torque constant of motor '{name}' [N m/A]", d)
        self.R = parameter(self, "resistance", md.resistance, f"armature resistance of motor '{name}' [ohm]", d)
        self.n = S.One if md.gear_ratio == 1.0 else parameter(
            self, "gear_ratio", md.gear_ratio, f"gear ratio of motor '{name}' (rotor turns per joint turn)", d)
        self.J = parameter(self, "rotor_inertia", md.rotor_inertia, f"rotor inertia of motor '{name}' [kg m^2]", d)
        self.b = parameter(self, "viscous_friction", md.viscous_friction,
                           f"viscous friction of motor '{name}' at its shaft [N m s/rad]", d)
        self.voltage = dynamic_symbol(self._add_prefix("voltage"))
        self.symbols["voltage"] = self.voltage
        d[self.voltage] = f"voltage across motor '{name}' on joint '{joint}' (input) [V]"
        if self.inductive:
            self.L = parameter(self, "inductance", md.inductance, f"armature inductance of motor '{name}' [H]", d)
            self.current = dynamic_symbol(self._add_prefix("i"))
            d[self.current] = f"armature current of motor '{name}' (electrical state) [A]"

    def _define_loads(self) -> None:
        speed = self.parent.u[0]
        current = self.current if self.inductive else (self.voltage - self.K * self.n * speed) / self.R
        self.torque = self.n * self.K * current
        friction = self.n ** 2 * self.b * speed
        self.system.add_loads(*self.parent.generalized_force_loads(self.torque - friction))
        self.state = [self.voltage, current, self.torque, speed]

    def inputs(self) -> list[Input]:
        """The voltage, addressed by the motor's name, clamped to its rated voltage."""
        return [Input("voltage", self.voltage, self.name, self.parent.name,
                      float(self.motor_description.voltage_limit), self)]

    def electrical_states(self) -> list[tuple[Expr, Expr, Expr]]:
        """``(state, rate, linear decay coefficient)``: ``di/dt = (V - R i - K n q') / L``, of which
        ``-R/L`` multiplies the state itself."""
        if not self.inductive:
            return []
        rate = (self.voltage - self.R * self.current - self.K * self.n * self.parent.u[0]) / self.L
        return [(self.current, rate, -self.R / self.L)]

    def reflected_inertia(self) -> list[tuple[Expr, Expr]]:
        """The rotor's inertia at the joint's speed, ``n^2 J`` (none without a rotor inertia)."""
        return [] if self.J == 0 else [(self.parent.u[0], self.n ** 2 * self.J)]

"""Load groups of a robot: gravity, joint efforts (inputs), joint damping, friction and springs."""
from __future__ import annotations

from collections.abc import Sequence

from sympy import Expr, Piecewise, Rational, S, tanh
from sympy.physics.mechanics import Force, Vector

from mb_sim.model.base import Input, LoadGroupBase
from mb_sim.model.extrema import KeptMax, KeptMin
from mb_sim.model.joints import PrismaticJoint, RevoluteJoint
from mb_sim.model.parameters import dynamic_symbol, parameter
from mb_sim.urdf.description import STANDARD_GRAVITY, JointSpringDescription

__all__ = ["Gravity", "JointEffort", "JointDissipation", "JointLimitStop", "JointSpring", "FRICTION_SPEED",
           "STANDARD_GRAVITY", "STOP_STIFFNESS", "STOP_DAMPING"]

#: Speed scale of the smooth Coulomb friction model [rad/s or m/s].
FRICTION_SPEED = 0.01
#: Default joint-stop stiffness [N m/rad or N/m] and damping [N m s/rad or N s/m]; the simulator
#: retunes both per joint for its time step (see JointLimitStop).
STOP_STIFFNESS = 1.0e4
STOP_DAMPING = 1.0e2


class Gravity(LoadGroupBase):
    """Uniform gravity on every body of the robot.

    The default, 9.81 m/s^2 along the world's -z axis, has one parameter ``g`` (the magnitude);
    any other direction (URDF ``<gravity xyz>``) has one parameter per non-zero world component
    (``g_x``, ``g_y``, ``g_z``).  ``components`` holds the acceleration's world components.
    """

    def __init__(self, name: str, vector: Sequence[float] = (0.0, 0.0, -STANDARD_GRAVITY)) -> None:
        super().__init__(name)
        self.vector = tuple(float(v) for v in vector)

    def _define_objects(self) -> None:
        x, y, z = self.vector
        d = self._descriptions
        if x == 0.0 and y == 0.0 and z < 0.0:
            self.g = parameter(self, "g", -z, "gravitational acceleration, along the world's -z axis [m/s^2]", d)
            self.components: tuple[Expr, Expr, Expr] = (S.Zero, S.Zero, -self.g)
        else:
            self.components = tuple(parameter(self, f"g_{a}", v, f"gravitational acceleration along the world's "
                                              f"{a} axis [m/s^2]", d) for a, v in zip("xyz", self.vector))

    def acceleration(self) -> Vector:
        """The gravitational acceleration as a vector in the world frame."""
        world = self.auxiliary_handler.inertial_frame
        return self.components[0] * world.x + self.components[1] * world.y + self.components[2] * world.z

    def _define_loads(self) -> None:
        if all(c == 0 for c in self.components):
            return
        g = self.acceleration()
        self.system.add_loads(*[Force(body.masscenter, body.mass * g) for body in self.system.bodies])


class JointEffort(LoadGroupBase):
    """The commanded effort of a one-DoF joint: a torque (revolute) or force (prismatic) input.

    The effort acts on the child link along the joint axis, and its reaction on the parent link.
    """

    required_parent_type = (RevoluteJoint, PrismaticJoint)

    def _define_objects(self) -> None:
        self.effort = dynamic_symbol(self._add_prefix("effort"))
        self.symbols["effort"] = self.effort
        unit = "N m" if isinstance(self.parent, RevoluteJoint) else "N"
        self._descriptions[self.effort] = f"commanded effort of joint '{self.parent.name}' (input) [{unit}]"

    def _define_loads(self) -> None:
        self.system.add_loads(*self.parent.generalized_force_loads(self.effort))

    def inputs(self) -> list[Input]:
        """The effort, addressed by the joint's name, clamped to its URDF effort limit."""
        joint = self.parent.name
        return [Input("effort", self.effort, joint, joint, float(self.parent.joint_description.limit.effort), self)]


class JointDissipation(LoadGroupBase):
    """URDF ``<dynamics>``: viscous damping ``-d u`` and smooth Coulomb friction.

    Friction is ``-f tanh(u / v_s)`` with ``v_s`` = :data:`FRICTION_SPEED` (a parameter, per
    joint): within about ``v_s`` of standstill it acts like steep viscous damping, beyond it the
    full Coulomb force ``f`` opposes motion.
    """

    required_parent_type = (RevoluteJoint, PrismaticJoint)

    def __init__(self, name: str, damping: float, friction: float) -> None:
        super().__init__(name)
        self.damping, self.friction = damping, friction

    def _define_objects(self) -> None:
        joint, d = self.parent.name, self._descriptions
        self.d = parameter(self, "damping", self.damping, f"viscous damping of joint '{joint}' [N m s/rad or N s/m]", d)
        self.f = parameter(self, "friction", self.friction, f"Coulomb friction of joint '{joint}' [N m or N]", d)
        self.v_s = parameter(self, "friction_speed", FRICTION_SPEED if self.friction else 0.0,
                             f"speed scale of the smooth friction of joint '{joint}' [rad/s or m/s]", d)

    def _define_loads(self) -> None:
        u = self.parent.u[0]
        effort = -self.d * u - (self.f * tanh(u / self.v_s) if self.f != 0 else 0)
        self.system.add_loads(*self.parent.generalized_force_loads(effort))


class JointLimitStop(LoadGroupBase):
    """URDF ``<limit lower upper>`` as a stop: a one-sided spring-damper beyond each bound.

    Beyond ``upper`` the effort is ``min(0, -k (q - upper) - d u)``, below ``lower``
    ``max(0, -k (q - lower) - d u)``, zero in between: it only pushes back (never pulls the joint
    into the stop) and acts only while the bound is exceeded.  ``k`` and ``d`` are parameters
    (``<joint>_limit_stiffness``, ``<joint>_limit_damping``) so they can be tuned at run time.
    """

    required_parent_type = (RevoluteJoint, PrismaticJoint)

    def __init__(self, name: str, lower: float | None, upper: float | None) -> None:
        super().__init__(name)
        self.lower, self.upper = lower, upper

    def _define_objects(self) -> None:
        joint, d = self.parent.name, self._descriptions
        self.k = parameter(self, "limit_stiffness", STOP_STIFFNESS, f"stiffness of the stops of joint '{joint}'", d)
        self.c = parameter(self, "limit_damping", STOP_DAMPING, f"damping of the stops of joint '{joint}'", d)
        self.bounds = {side: parameter(self, f"limit_{side}", value, f"{side} position limit of joint '{joint}'", d)
                       for side, value in (("lower", self.lower), ("upper", self.upper)) if value is not None}

    def _define_loads(self) -> None:
        q, u = self.parent.q[0], self.parent.u[0]
        pieces = []
        if "upper" in self.bounds:
            upper = self.bounds["upper"]
            pieces.append((KeptMin(0, -self.k * (q - upper) - self.c * u), q > upper))
        if "lower" in self.bounds:
            lower = self.bounds["lower"]
            pieces.append((KeptMax(0, -self.k * (q - lower) - self.c * u), q < lower))
        effort = Piecewise(*pieces, (0, True))
        self.system.add_loads(*self.parent.generalized_force_loads(effort))


class JointSpring(LoadGroupBase):
    """``<joint_spring>``: effort ``-k (q - q_ref) - d u`` on a one-DoF joint, with potential energy
    ``k (q - q_ref)^2 / 2``.  All three are parameters, zeros included, so they can be tuned at
    run time."""

    required_parent_type = (RevoluteJoint, PrismaticJoint)

    def __init__(self, name: str, description: JointSpringDescription) -> None:
        super().__init__(name)
        self.spring_description = description

    def _define_objects(self) -> None:
        sd, d, joint = self.spring_description, self._descriptions, self.parent.name
        unit = "rad" if isinstance(self.parent, RevoluteJoint) else "m"
        self.k = parameter(self, "stiffness", sd.stiffness, f"stiffness of joint spring '{self.name}' on joint "
                           f"'{joint}' [N m/rad or N/m]", d, keep_zero=True)
        self.reference = parameter(self, "reference", sd.reference, f"rest position of joint spring '{self.name}' "
                                   f"[{unit}]", d, keep_zero=True)
        self.d = parameter(self, "damping", sd.damping, f"damping of joint spring '{self.name}' "
                           "[N m s/rad or N s/m]", d, keep_zero=True)

    def _define_loads(self) -> None:
        q, u = self.parent.q[0], self.parent.u[0]
        self.system.add_loads(*self.parent.generalized_force_loads(-self.k * (q - self.reference) - self.d * u))

    def potential_energy(self) -> Expr:
        return Rational(1, 2) * self.k * (self.parent.q[0] - self.reference) ** 2

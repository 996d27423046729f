"""Point-to-point spring-dampers between two links, with Exudyn's ObjectConnectorSpringDamper
semantics (seed 003).

With ``dp = p1 - p0`` the displacement from marker 0 to marker 1 (world axes), ``L = |dp|``, the
unit vector ``v_f = dp / L`` and ``L' = v_f . (v1 - v0)``, the scalar force (tension positive) is

    f_SD = k (L - L0) + d (L' - L0') + f          (zero when not active)

or a registered user law's value.  The force vector ``f = f_SD v_f`` (Exudyn's ``Force`` output)
acts as ``+f`` on marker 0 and ``-f`` on marker 1: tension pulls the markers together.  The
potential energy is ``k (L - L0)^2 / 2 + f (L - L0)`` (none for a user law).  ``L = 0`` leaves
``v_f`` undefined: the generated code reports it, and the simulator stops naming the spring.
"""
from __future__ import annotations

from sympy import Expr, Matrix, Rational, S, sqrt
from sympy.physics.mechanics import Force, Point, dynamicsymbols

from mb_sim.model.base import ConnectionBase, component_system
from mb_sim.model.force_laws import SpringForceLaw
from mb_sim.model.joints import JointBase
from mb_sim.model.link import RigidLink
from mb_sim.model.parameters import parameter
from mb_sim.model.requirement import ModelRequirement
from mb_sim.urdf import SpringDamperDescription

__all__ = ["SpringDamper", "SPRING_STATE"]

#: Columns of a spring's row in the ``spring_states`` output (world axes, SI units).
SPRING_STATE = ("p0_x", "p0_y", "p0_z", "p1_x", "p1_y", "p1_z", "dv_x", "dv_y", "dv_z",
                "length", "length_rate", "force")


class SpringDamper(ConnectionBase):
    """``<spring_damper>``: a spring-damper between a marker on ``link0`` and one on ``link1``.

    Its parameters (``stiffness``, ``damping``, ``reference_length``, ``force``,
    ``velocity_offset`` and the 0/1 switch ``active``) stay symbols even where zero, so every one
    can be changed at run time.  ``law_index`` numbers the springs with a user force law (None: the
    linear law).  After define loads, ``state`` holds the row of :data:`SPRING_STATE` and
    ``length`` the distance L, in coordinates and speeds.
    """

    required_models = (
        ModelRequirement("link0", RigidLink, "Link holding marker 0."),
        ModelRequirement("link1", RigidLink, "Link holding marker 1."),
    )
    link0: RigidLink
    link1: RigidLink

    def __init__(self, name: str, description: SpringDamperDescription, law_index: int | None = None) -> None:
        super().__init__(name)
        self.spring_description = description
        self.law_index = law_index
        self.state: Matrix | None = None
        self.length: Expr | None = None

    def resolve(self, links: dict[str, RigidLink], joints: dict[str, JointBase]) -> None:
        """Find the markers' links by name (define connections)."""
        self.link0, self.link1 = (links[marker.link] for marker in self.spring_description.markers)

    def _define_objects(self) -> None:
        self._system = component_system()
        sd, d, name = self.spring_description, self._descriptions, self.name
        values = (("stiffness", sd.stiffness, "stiffness k [N/m]"), ("damping", sd.damping, "damping d [N s/m]"),
                  ("reference_length", sd.reference_length, "reference length L0 [m]"),
                  ("force", sd.force, "constant force f, tension positive [N]"),
                  ("velocity_offset", sd.velocity_offset, "velocity offset L0' [m/s]"),
                  ("active", 1.0 if sd.active else 0.0, "1 if active, 0 if not"))
        self.k, self.d, self.reference_length, self.force, self.velocity_offset, self.active = (
            parameter(self, key, value, f"spring-damper '{name}': {meaning}", d, keep_zero=True)
            for key, value, meaning in values)
        self.markers = [Point(self._add_prefix(f"marker{i}")) for i in range(2)]

    def _define_kinematics(self) -> None:
        d = self._descriptions
        for i, (marker, link, spec) in enumerate(zip(self.markers, (self.link0, self.link1),
                                                     self.spring_description.markers)):
            xyz = [parameter(self, f"marker{i}_{a}", v, f"marker {i} of spring-damper '{self.name}' along link "
                             f"'{link.name}' {a} [m]", d) for a, v in zip("xyz", spec.xyz)]
            marker.set_pos(link.origin, xyz[0] * link.frame.x + xyz[1] * link.frame.y + xyz[2] * link.frame.z)
            marker.set_vel(link.frame, 0)

    def _define_loads(self) -> None:
        world, origin = self.auxiliary_handler.inertial_frame, self.auxiliary_handler.inertial_point
        t = dynamicsymbols._t
        p0, p1 = (marker.pos_from(origin).to_matrix(world) for marker in self.markers)
        dp = p1 - p0
        length = sqrt(dp.dot(dp))
        dv = dp.diff(t)
        rate = dp.dot(dv) / length
        elongation, elongation_rate = length - self.reference_length, rate - self.velocity_offset
        if self.law_index is None:
            scalar = self.active * (self.k * elongation + self.d * elongation_rate + self.force)
        else:
            scalar = SpringForceLaw(self.law_index, t, elongation, elongation_rate, self.k, self.d, self.force,
                                    self.active)
        f = scalar / length * dp
        vector = f[0] * world.x + f[1] * world.y + f[2] * world.z
        self.system.add_loads(Force(self.markers[0], vector), Force(self.markers[1], -vector))
        self.length = length
        self.state = Matrix([[*p0, *p1, *dv, length, rate, scalar]])
        self._elongation = elongation

    def potential_energy(self) -> Expr:
        if self.law_index is not None:
            return S.Zero
        return self.active * (Rational(1, 2) * self.k * self._elongation ** 2 + self.force * self._elongation)

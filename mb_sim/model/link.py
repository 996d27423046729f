"""A URDF link as a model: a link frame, its origin, and a rigid body where it has mass."""
from __future__ import annotations

from sympy import Matrix
from sympy.physics.mechanics import Dyadic, Point, ReferenceFrame, RigidBody

from mb_sim.model.base import ModelBase, component_system
from mb_sim.model.parameters import parameter
from mb_sim.urdf import LinkDescription

__all__ = ["RigidLink"]

_INERTIA_ENTRIES = (("ixx", 0, 0), ("iyy", 1, 1), ("izz", 2, 2), ("ixy", 0, 1), ("iyz", 1, 2), ("ixz", 0, 2))


class RigidLink(ModelBase):
    """A link: frame and origin as URDF defines them, and a rigid body if it has mass.

    ``com`` (centre of mass, link-frame components) and ``inertia_matrix`` (about the centre of
    mass, link-frame axes) hold the mass properties as matrices.  Mass properties are parameters: mass ``m``, centre of mass ``com_x/y/z`` in the link frame and
    the inertia tensor about the centre of mass in link-frame axes (``ixx`` ... ``ixz``); entries
    that are exactly zero in the URDF are exact zeros.  A massless link has no body: it only
    carries a frame (a sensor mount, a tool frame, the world).
    """

    def __init__(self, name: str, description: LinkDescription | None = None) -> None:
        super().__init__(name)
        self.link_description = description if description is not None else LinkDescription(name, None)
        self.frame: ReferenceFrame | None = None
        self.origin: Point | None = None
        self.body: RigidBody | None = None
        self.com: Matrix = Matrix([0, 0, 0])
        self.inertia_matrix: Matrix = Matrix.zeros(3, 3)

    @property
    def is_massless(self) -> bool:
        """True where the link has no mass properties (no rigid body)."""
        return self.link_description.inertial is None

    def _define_objects(self) -> None:
        self._system = component_system()
        self.frame = ReferenceFrame(self._add_prefix("frame"))
        self.origin = Point(self._add_prefix("origin"))
        if self.is_massless:
            return
        props = self.link_description.inertial
        d = self._descriptions
        mass = parameter(self, "m", props.mass, f"mass of link '{self.name}' [kg]", d)
        self.com = Matrix([parameter(self, f"com_{axis}", value,
                                      f"centre of mass of link '{self.name}' along its frame's {axis} axis [m]", d)
                            for axis, value in zip("xyz", props.com)])
        entries = {key: parameter(self, key, props.inertia[i, j],
                                  f"inertia {key} of link '{self.name}' about its centre of mass, "
                                  f"link-frame axes [kg m^2]", d)
                   for key, i, j in _INERTIA_ENTRIES}
        for key, i, j in _INERTIA_ENTRIES:
            self.inertia_matrix[i, j] = self.inertia_matrix[j, i] = entries[key]
        masscenter = Point(self._add_prefix("masscenter"))
        dyadic = _inertia_dyadic(self.frame, self.inertia_matrix)
        self.body = RigidBody(self._add_prefix("body"), masscenter, self.frame, mass, (dyadic, masscenter))
        self.system.add_bodies(self.body)

    def _define_kinematics(self) -> None:
        if self.body is None:
            return
        com = self.com
        self.body.masscenter.set_pos(self.origin, com[0] * self.frame.x + com[1] * self.frame.y + com[2] * self.frame.z)
        self.body.masscenter.set_vel(self.frame, 0)


def _inertia_dyadic(frame: ReferenceFrame, matrix: Matrix) -> Dyadic:
    """The dyadic sum of ``matrix[i, j] e_i e_j`` over `frame`'s unit vectors, as ``inertia()``
    builds it but in one step: ``Dyadic`` merges terms by comparing printed forms pairwise, which
    took 2.4 s of a humanoid's 2.9 s load through ``inertia()``'s nine additions."""
    dyadic = Dyadic(0)
    axes = (frame.x, frame.y, frame.z)
    dyadic.args = [(matrix[i, j], axes[i], axes[j]) for i in range(3) for j in range(3) if matrix[i, j] != 0]
    return dyadic

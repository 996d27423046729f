"""An external wrench on a link, as inputs (Gazebo's apply-link-wrench, a push in a recovery test).

A force ``F`` at the link's origin and a torque ``T`` on the link, both in world components:
six inputs ``<link>.force_x`` ... ``<link>.torque_z`` [N, N m], zero unless commanded.  Inputs
are held over a step, so a force held for a time changes a free body's momentum by exactly
force times time (the generated RK4 integrates a constant force exactly).
"""
from __future__ import annotations

import math

from sympy.physics.mechanics import Force, Torque

from mb_sim.model.base import Input, LoadGroupBase
from mb_sim.model.link import RigidLink
from mb_sim.model.parameters import dynamic_symbol

__all__ = ["ExternalWrench", "WRENCH_COMPONENTS"]

#: The inputs of one link's wrench, in the order the input vector holds them.
WRENCH_COMPONENTS = ("force_x", "force_y", "force_z", "torque_x", "torque_y", "torque_z")


class ExternalWrench(LoadGroupBase):
    """A commanded force at link `parent`'s origin and torque on it, world components (see the
    module docstring)."""

    required_parent_type = RigidLink

    def _define_objects(self) -> None:
        link = self.parent.name
        for component in WRENCH_COMPONENTS:
            symbol = dynamic_symbol(self._add_prefix(component))
            self.symbols[component] = symbol
            if component.startswith("force"):
                meaning = f"external force on link '{link}' at its origin, along the world's {component[-1]} axis [N]"
            else:
                meaning = f"external torque on link '{link}', about the world's {component[-1]} axis [N m]"
            self._descriptions[symbol] = meaning.replace(" [", " (input) [")

    def _define_loads(self) -> None:
        world = self.auxiliary_handler.inertial_frame
        axes = (world.x, world.y, world.z)
        s = self.symbols
        force = sum((s[f"force_{a}"] * axis for a, axis in zip("xyz", axes)), 0 * world.x)
        torque = sum((s[f"torque_{a}"] * axis for a, axis in zip("xyz", axes)), 0 * world.x)
        self.system.add_loads(Force(self.parent.origin, force), Torque(self.parent.frame, torque))

    def inputs(self) -> list[Input]:
        """Six inputs named ``<link>.<component>``, acting on the link, unclamped."""
        link = self.parent.name
        return [Input("wrench", self.symbols[c], f"{link}.{c}", link, math.inf, self) for c in WRENCH_COMPONENTS]

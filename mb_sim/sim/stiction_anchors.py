"""The stiction anchors of a run's grounds, moved in Python where the generated step does not
move them: after an adaptive integrator's advance, and onto the contact points when a body is set
down (it starts unstressed)."""
from __future__ import annotations

from mb_sim.model.anchors import updated_anchors
from mb_sim.sim.robot_model import RobotModel

__all__ = ["move_anchors"]


def move_anchors(robot: RobotModel, model, time: float, to_contact_points: bool = False) -> None:
    """Move the anchors of `robot`'s grounds (if it has them) in ``model.buffers.z`` as a step's end
    does (:func:`~mb_sim.model.anchors.updated_anchors`, the rule of the generated
    ``state_updates``), or with `to_contact_points` put them at the contact points."""
    grounds = robot.facts.anchors
    if not grounds:
        return
    b = model.buffers
    model.evaluate_into(time)
    rows, names = model.layout.view(b.out, "contact_states"), list(model.contact_names)
    parameter = lambda name: float(b.params[robot.parameter_names.index(name)])  # noqa: E731
    for ground in grounds:
        mine = rows[[names.index(feature) for feature in ground.features]]
        states = [robot.electrical_state_names.index(s) for anchor in ground.states for s in anchor]
        if to_contact_points:
            b.z[states] = mine[:, :3].ravel()
        else:
            b.z[states] = updated_anchors(mine, b.z[states].reshape(-1, 3), parameter(ground.stiffness),
                                          parameter(ground.friction)).ravel()

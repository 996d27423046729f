"""The stiction anchors of a run's grounds and contact pairs, moved in Python where the generated
step does not move them: after an adaptive integrator's advance, and onto the contact points when a
body is set down (it starts unstressed)."""
from __future__ import annotations

import numpy as np

from mb_sim.model.anchors import updated_anchors
from mb_sim.sim.robot_model import RobotModel

__all__ = ["move_anchors"]


def move_anchors(robot: RobotModel, model, time: float, to_contact_points: bool = False) -> None:
    """Move the anchors of `robot`'s contacts (if it has them) in ``model.buffers.z`` as a step's
    end does (:func:`~mb_sim.model.anchors.updated_anchors`, the rule of the generated
    ``state_updates``), or with `to_contact_points` put them at the contact points (a pair's in
    its target link's axes)."""
    groups = robot.facts.anchors
    if not groups:
        return
    b = model.buffers
    model.evaluate_into(time)
    view = model.layout.view
    rows, names = view(b.out, "contact_states"), list(model.contact_names)
    poses = dict(zip(model.link_names, view(b.out, "link_poses")))
    value = lambda term: float(b.params[robot.parameter_names.index(term)]) if isinstance(term, str) \
        else float(term)  # noqa: E731
    for group in groups:
        mine = rows[[names.index(feature) for feature in group.features]]
        states = [robot.electrical_state_names.index(s) for anchor in group.states for s in anchor]
        frames = [None if link is None else (poses[link][:9].reshape(3, 3), poses[link][9:]) for link in group.frames]
        if to_contact_points:
            mine = mine.copy()
            mine[:, 6] = 0.0  # (not touching: each anchor at its contact point)
        frictions = np.array([value(term) for term in group.frictions])
        b.z[states] = updated_anchors(mine, b.z[states].reshape(-1, 3), value(group.stiffness), frictions,
                                      frames).ravel()

"""How a ground's stiction anchors move after a step, in NumPy: the rule the generated
``state_updates`` apply (:class:`mb_sim.model.contact.GroundContact`), for the integrators that
move them in Python (a light module: the simulator of a cached robot imports it, not SymPy)."""
from __future__ import annotations

import numpy as np

__all__ = ["updated_anchors"]


def updated_anchors(rows, anchors, stiffness: float, friction, frames=None):
    """The anchors after a step (NumPy; as the generated ``state_updates``): per ``contact_states``
    row (x, n, penetration, normal force) and anchor a (n x 3 arrays), a touching point keeps a
    while ``k_t |(x - a)_t| <= mu f_n`` (`friction` mu, one per row or one for all), beyond it a
    is moved along ``(x - a)_t`` to that edge, a point not touching gets ``a = x``.  `frames`:
    per row the rotation and origin (world) of the axes its anchor is in, None for the world's."""
    rows, anchors = np.asarray(rows, float), np.asarray(anchors, float)
    x, n, depth, f_n = rows[:, 0:3].copy(), rows[:, 3:6].copy(), rows[:, 6], rows[:, 8]
    for k, frame in enumerate(frames or ()):
        if frame is not None:
            R, p = frame
            x[k], n[k] = R.T @ (x[k] - p), R.T @ n[k]
    friction = np.broadcast_to(np.asarray(friction, float), depth.shape)
    offset = x - anchors
    slip = offset - np.sum(offset * n, axis=1)[:, None] * n
    spring, cone = stiffness * np.linalg.norm(slip, axis=1), friction * f_n
    beyond = spring > cone
    dragged = x - slip * (cone / np.where(beyond, spring, 1.0))[:, None]
    new = np.where(beyond[:, None], dragged, anchors)
    return np.where((depth > 0)[:, None], new, x)

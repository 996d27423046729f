"""Contact manifolds between links' shapes, found by coal before every step and written into the
contact slots of the generated equations (:mod:`mb_sim.model.manifold`).

Per link pair: each of its shape pairs whose bounding spheres come within :data:`MARGIN` is given
to coal (``collide`` with that security margin, then ``computeContactPatch``: the polygon where the
two surfaces meet, several points for a face on a face).  coal's patch points share one depth, so
each point's own penetration is measured along the contact normal: the line through it crosses
link1's shape and link2's shape, and the ends facing each other are the slot's material point
``a`` and surface point ``b`` (exact for boxes and convex meshes, the cylinder as a 32-sided prism:
0.5 % of its radius).  A sphere or capsule against anything touches at coal's one pair of witness
points.  Of more points than slots the deepest is kept, then each time the one farthest from those
kept (a face keeps its corners).  The manifold persists (as Bullet's does): a slot still within
the margin whose points have not slid :data:`MATCH` apart keeps its material points, normal and
stiction anchor, so its force never jumps and a held grasp stays held; coal's points add only the
contacts not held yet, and a new slot starts unstressed.  Which pairs are looked at, and when:
:class:`ContactManifolds`.  The result depends on the state and the slots of the last step only:
deterministic.
"""
from __future__ import annotations

import math

import numpy as np

from mb_sim.sim.robot_facts import ManifoldFacts, RobotFacts

__all__ = ["ContactManifolds", "MARGIN", "MATCH", "convex_faces"]

#: Shapes closer than this [m] are given slots (not yet touching: the force law waits for d > 0).
MARGIN = 2e-3
#: A new slot's material point this close [m] to one of the last step's keeps its anchor.
MATCH = 2e-3
#: How far [m] a shape's faces are moved out where the lines through coal's patch points are cut
#: by them: a patch's corners lie on the two shapes' edges, where rounding would make a line miss.
CHORD_SLACK = 5e-5
#: A pair with a round or cylindrical shape is found anew once it moved this much [m].
ROLLING_STILL = 1e-7
#: Sides of the prism a cylinder's penetrations are measured on.
CYLINDER_SIDES = 32
_ROUND = ("sphere", "capsule")


class _Shape:
    """One collision shape: its coal geometry, pose in its link, bounding radius and (not round)
    its faces as half-spaces ``N x <= o`` in its own frame."""

    def __init__(self, record: tuple) -> None:
        import coal

        kind, size, xyz, rotation, points = record
        self.kind, self.xyz = kind, np.array(xyz, float)
        self.rotation = np.array(rotation, float).reshape(3, 3)
        hull = np.array(points, float).reshape(-1, 3) if points else None
        if kind == "sphere":
            self.geometry, self.radius = coal.Sphere(size[0]), size[0]
        elif kind == "capsule":
            self.geometry, self.radius = coal.Capsule(size[0], size[1]), size[0] + size[1] / 2
        elif kind == "box":
            self.geometry, self.radius = coal.Box(*size), 0.5 * math.sqrt(sum(s * s for s in size))
        elif kind == "cylinder":
            self.geometry, self.radius = coal.Cylinder(size[0], size[1]), math.hypot(size[0], size[1] / 2)
        else:  # a mesh: its hull's points
            vertices = coal.StdVec_Vec3s()
            for vertex in hull:
                vertices.append(vertex)
            self.geometry = coal.Convex.convexHull(vertices, False, "")
            self.radius = float(np.linalg.norm(hull, axis=1).max())
        self.faces = None if kind in _ROUND else convex_faces(kind, size, hull)

    def pose(self, R: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The shape's world rotation and position on a link at (R, p)."""
        return R @ self.rotation, p + R @ self.xyz


def convex_faces(kind: str, size, hull: np.ndarray | None) -> np.ndarray:
    """A convex shape's faces as rows ``(N, o)`` with the shape ``{x: N x <= o}`` (its own frame):
    a box's six, a cylinder's prism of :data:`CYLINDER_SIDES` sides and two ends, a hull's facets."""
    if kind == "box":
        half = np.asarray(size, float) / 2
        normals = np.vstack([np.eye(3), -np.eye(3)])
        return np.column_stack([normals, np.concatenate([half, half])])
    if kind == "cylinder":
        radius, length = size
        angles = np.arange(CYLINDER_SIDES) * 2 * np.pi / CYLINDER_SIDES
        sides = np.column_stack([np.cos(angles), np.sin(angles), np.zeros(CYLINDER_SIDES),
                                 np.full(CYLINDER_SIDES, radius)])
        return np.vstack([sides, [[0, 0, 1, length / 2], [0, 0, -1, length / 2]]])
    from scipy.spatial import ConvexHull

    equations = ConvexHull(hull).equations  # N x + c <= 0 inside
    return np.column_stack([equations[:, :3], -equations[:, 3]])


def _chord(faces: np.ndarray, R: np.ndarray, p: np.ndarray, points: np.ndarray, direction: np.ndarray):
    """Where the lines ``points + t direction`` (world) enter and leave a convex shape at (R, p):
    arrays t_in, t_out (t_in > t_out: the line misses it)."""
    local, along = (points - p) @ R, R.T @ direction
    N, o = faces[:, :3], faces[:, 3]
    rate = N @ along
    room = o[None, :] + CHORD_SLACK - local @ N.T  # N (x + t d) <= o  <=>  t rate <= room
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = room / rate[None, :]
    outside = (np.abs(rate) < 1e-12)[None, :] & (room < 0)
    t_in = np.where(rate[None, :] < -1e-12, bound, -np.inf).max(axis=1)
    t_out = np.where(rate[None, :] > 1e-12, bound, np.inf).min(axis=1)
    return np.where(outside.any(axis=1), np.inf, t_in), t_out


class _Group:
    """One link pair's slots: its shapes, the indices of its slots' parameters and anchors."""

    def __init__(self, facts: ManifoldFacts, robot: RobotFacts, model) -> None:
        import coal

        self.facts = facts
        self.shapes = [[_Shape(record) for record in side] for side in (facts.shapes1, facts.shapes2)]
        names = list(robot.parameter_names)
        self.parameters = np.array([[names.index(n) for n in row] for row in facts.parameters], dtype=np.intp)
        states = list(robot.electrical_state_names)
        self.anchors = (np.array([[states.index(n) for n in row] for row in facts.anchors], dtype=np.intp)
                        if facts.anchors else None)
        links = list(model.link_names)
        self.links = links.index(facts.link1), links.index(facts.link2)
        self.request = coal.CollisionRequest()
        self.request.security_margin = MARGIN
        self.result = coal.CollisionResult()
        self.patch_request = coal.ContactPatchRequest(1, 12, MARGIN)
        self.patch_result = coal.ContactPatchResult()
        self.reach = [max(float(np.linalg.norm(s.xyz)) + s.radius for s in side) for side in self.shapes]
        self.in_use = 0
        self.clearance = 0.0  # how far apart the shapes were found (a lower bound), 0 while touching
        #: A round or cylindrical shape's contact point moves over it as it rolls: found anew every time.
        self.curved = any(s.kind in (*_ROUND, "cylinder") for side in self.shapes for s in side)

    def refresh(self, poses: np.ndarray, params: np.ndarray, z: np.ndarray) -> int:
        """Write this pair's slots (and their anchors) for links at `poses` (rows of
        ``link_poses``); returns how many slots are in use.  A persistent manifold: a slot still
        touching or within MARGIN, whose two points have slid apart less than MATCH along the
        surface, is kept as it is (its material points, normal and anchor: the force it gives
        does not jump); coal's points add the contacts not yet held (farther than MATCH from a
        kept slot's point); of more than there are slots, :func:`_spread` chooses."""
        (R1, p1), (R2, p2) = (_frame(poses[i]) for i in self.links)
        old = params[self.parameters]
        kept = [] if self.curved else self._kept(old, z, (R1, p1, R2, p2))
        fresh = [point + (None,) for point in self._points(R1, p1, R2, p2)
                 if all(np.linalg.norm(point[0] - slot[0]) >= MATCH for slot in kept)]
        if self.curved and self.anchors is not None:  # the friction state carried to the new points
            fresh = [point[:4] + (self._carried(old, z, point, (R1, p1, R2, p2)),) for point in fresh]
        count = len(self.parameters)
        chosen = _spread(kept + fresh, count)
        values = np.zeros((count, 9))
        anchors = None if self.anchors is None else np.empty((count, 3))
        for k in range(count):
            if k < len(chosen):
                a, b, n, _, anchor = chosen[k]
                values[k] = np.concatenate([(a - p1) @ R1, (b - p2) @ R2, n @ R2])
                if anchors is not None:
                    anchors[k] = ((a + b) / 2 - p2) @ R2 if anchor is None else anchor
            elif anchors is not None:
                anchors[k] = ((p1 + p2) / 2 - p2) @ R2
        if anchors is not None:
            z[self.anchors] = anchors
        params[self.parameters] = values
        self.in_use = len(chosen)
        return self.in_use

    def _kept(self, old: np.ndarray, z: np.ndarray, frames: tuple) -> list:
        """The last slots still within MARGIN whose points have slid less than MATCH apart:
        (a, b, n, depth, anchor), world axes (the anchor in link2's)."""
        R1, p1, R2, p2 = frames
        kept = []
        for k in np.flatnonzero(np.any(old[:, 6:9] != 0.0, axis=1)):
            a, b, n = p1 + R1 @ old[k, 0:3], p2 + R2 @ old[k, 3:6], R2 @ old[k, 6:9]
            gap = b - a
            depth = float(n @ gap)
            if depth > -MARGIN and np.linalg.norm(gap - depth * n) < MATCH:
                kept.append((a, b, n, depth, None if self.anchors is None else z[self.anchors[k]].copy()))
        return kept

    def _carried(self, old: np.ndarray, z: np.ndarray, point: tuple, frames: tuple) -> np.ndarray | None:
        """For a rolling contact's new point: the anchor (link2's axes) keeping the stiction
        deflection of the last slot whose contact point was within MATCH of it, or None."""
        R1, p1, R2, p2 = frames
        here = (point[0] + point[1]) / 2
        best, anchor = MATCH, None
        for k in np.flatnonzero(np.any(old[:, 6:9] != 0.0, axis=1)):
            was = ((p1 + R1 @ old[k, 0:3]) + (p2 + R2 @ old[k, 3:6])) / 2
            distance = float(np.linalg.norm(was - here))
            if distance < best:
                best, anchor = distance, (here - p2) @ R2 - ((was - p2) @ R2 - z[self.anchors[k]])
        return anchor

    def _points(self, R1, p1, R2, p2) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, float]]:
        """Every contact point of the pair's shapes: (a on link1, b on link2, normal from link2
        to link1, penetration), world."""
        import coal

        found, self.clearance = [], np.inf
        for i, j in self.facts.pairs:
            first, second = self.shapes[0][i], self.shapes[1][j]
            (Ra, pa), (Rb, pb) = first.pose(R1, p1), second.pose(R2, p2)
            apart = float(np.linalg.norm(pa - pb)) - first.radius - second.radius
            if apart > MARGIN:
                self.clearance = min(self.clearance, apart)
                continue  # the broad phase: bounding spheres apart
            self.result.clear()
            if not coal.collide(first.geometry, coal.Transform3s(Ra, pa), second.geometry, coal.Transform3s(Rb, pb),
                                self.request, self.result):
                self.clearance = min(self.clearance, max(float(self.result.distance_lower_bound), MARGIN))
                continue
            self.clearance = 0.0
            contact = self.result.getContact(0)
            normal = -np.asarray(contact.normal, float)  # coal's points from the first shape to the second
            if first.faces is None or second.faces is None:
                a, b = np.asarray(contact.getNearestPoint1(), float), np.asarray(contact.getNearestPoint2(), float)
                found.append((a, b, normal, float(normal @ (b - a))))
                continue
            self.patch_result.clear()
            coal.computeContactPatch(first.geometry, coal.Transform3s(Ra, pa), second.geometry,
                                     coal.Transform3s(Rb, pb), self.result, self.patch_request, self.patch_result)
            patch = self.patch_result.getContactPatch(0)
            pairs = [(np.asarray(patch.getPointShape1(k), float), np.asarray(patch.getPointShape2(k), float))
                     for k in range(patch.size())]
            found += _measured(pairs, normal, (first, Ra, pa), (second, Rb, pb))
        return found


def _measured(pairs: list, normal: np.ndarray, first: tuple, second: tuple) -> list:
    """Each patch point's own penetration along `normal`: the line through it leaves link2's
    shape (its end towards link1: b) and enters link1's (a); a line missing one is left out
    (coal's first point where every line misses)."""
    middle = np.array([(a + b) / 2 for a, b in pairs])
    (shape1, R1, p1), (shape2, R2, p2) = first, second
    enter1, leave1 = _chord(shape1.faces, R1, p1, middle, normal)
    enter2, leave2 = _chord(shape2.faces, R2, p2, middle, normal)
    found = []
    for k in range(len(pairs)):
        if enter1[k] <= leave1[k] and enter2[k] <= leave2[k]:
            a, b = middle[k] + enter1[k] * normal, middle[k] + leave2[k] * normal
            found.append((a, b, normal, float(normal @ (b - a))))
    if not found and pairs:
        a, b = pairs[0]
        found.append((a, b, normal, float(normal @ (b - a))))
    return found


def _spread(points: list, count: int) -> list:
    """At most `count` of `points`: the deepest, then each time the one farthest from those kept."""
    if len(points) <= count:
        return sorted(points, key=lambda point: -point[3])
    where = np.array([(point[0] + point[1]) / 2 for point in points])
    kept = [int(np.argmax([point[3] for point in points]))]
    distance = np.linalg.norm(where - where[kept[0]], axis=1)
    while len(kept) < count:
        k = int(np.argmax(distance))
        kept.append(k)
        distance = np.minimum(distance, np.linalg.norm(where - where[k], axis=1))
    return [points[k] for k in kept]


def _frame(row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return row[:9].reshape(3, 3), row[9:12]


class ContactManifolds:
    """The contact slots of a run (none: ``active`` False); :meth:`refresh` fills them for the
    state in the model's buffers.  The broad phase, per link pair, asks how far the pair has moved
    *relative to itself* (link2's shapes in link1's frame) since its slots were found: a pair found
    apart by a clearance c (coal's lower bound, or its bounding spheres') is not looked at again
    until it has moved c - MARGIN; a touching pair once it moved its ``still`` distance (a quarter
    of MARGIN; any motion for a rolling shape).  One vectorized test of each link's own motion
    since a pair was last looked at, against what is left of its allowance, picks the pairs whose
    relative motion is worth computing (it bounds it): a box on a table costs nothing, one carried
    in a gripper its relative pose, no search."""

    def __init__(self, robot: RobotFacts, model) -> None:
        self.groups = [_Group(facts, robot, model) for facts in robot.manifolds]
        self.model = model
        self.in_use = 0
        self._links = np.array([group.links for group in self.groups], dtype=np.intp).reshape(-1, 2)
        reach = np.array([group.reach for group in self.groups], dtype=float).reshape(-1, 2)
        self._seen = np.full((len(self.groups), 2, 12), np.nan)  # the links' poses when the pair was last looked at
        self._weights = np.ones((len(self.groups), 2, 12))  # a pose change's reach: rotations at the shapes'
        self._weights[:, :, :9] = reach[:, :, None]
        self._found = np.full((len(self.groups), 12), np.nan)  # link2 in link1 when the slots were found
        self._lever = reach[:, 1]
        #: How far a touching pair may move before its slots are found anew: a quarter of the margin
        #: for flat faces; for a rolling shape any motion (its normal must turn with it).
        self._still = np.array([ROLLING_STILL if group.curved else MARGIN / 4 for group in self.groups])
        self._allowed = self._still.copy()
        self._budget = self._still.copy()  # what is left of allowed since the poses were last seen
        self._poses = None

    @property
    def active(self) -> bool:
        """Whether the run has contact slots to fill."""
        return bool(self.groups)

    def refresh(self, time: float) -> None:
        """Find the contacts at the current state and write the slots and their anchors."""
        if not self.groups:
            return
        model, b = self.model, self.model.buffers
        model.evaluate_into(time)
        if self._poses is None:
            self._poses = model.layout.view(b.out, "link_poses")
        now = self._poses[self._links]  # (pairs, 2, 12)
        moving = np.flatnonzero(~(np.einsum("ijk,ijk->i", np.abs(now - self._seen), self._weights) <= self._budget))
        refreshed = False
        for k in moving:
            relative = _relative(now[k])
            moved = np.abs(relative - self._found[k]) @ np.r_[np.full(9, self._lever[k]), np.ones(3)]
            if moved <= self._allowed[k]:  # (moving together: a carried box; or settling within the budget)
                self._seen[k], self._budget[k] = now[k], self._allowed[k] - moved
                continue
            group = self.groups[k]
            group.refresh(self._poses, b.params, b.z)
            self._found[k], self._seen[k], refreshed = relative, now[k], True
            self._allowed[k] = self._still[k] if group.in_use else max(self._still[k], group.clearance - MARGIN)
            self._budget[k] = self._allowed[k]
        if refreshed:
            self.in_use = sum(group.in_use for group in self.groups)

    def clear(self) -> None:
        """Forget the last step's slots (a state set anew: every contact starts unstressed)."""
        for group in self.groups:
            self.model.buffers.params[group.parameters] = 0.0
            group.in_use = 0
        self._seen[:] = np.nan
        self._found[:] = np.nan
        self._allowed = self._still.copy()
        self._budget = self._still.copy()


def _relative(pair: np.ndarray) -> np.ndarray:
    """Link2's pose in link1's frame (rotation row-major, position) from their two world poses."""
    R1, R2 = pair[0, :9].reshape(3, 3), pair[1, :9].reshape(3, 3)
    return np.concatenate([(R1.T @ R2).ravel(), R1.T @ (pair[1, 9:] - pair[0, 9:])])

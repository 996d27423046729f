"""The inertia policy: judge the bodies that move, repair what is rounding, say what was done.

A URDF gives mass properties per link, but a link attached to its parent by a fixed joint is not a
body of its own: it moves with the parent.  As Pinocchio (which adds a fixed child's inertia to its
parent's and checks nothing), Gazebo (sdformat lumps fixed joints when it converts a URDF, then
refuses a lumped link whose inertia fails gz-math's check: "A link named ... has invalid inertia")
and MuJoCo (``fusestatic``) do, mb_sim judges the **merged body**: the link a moving joint moves
(or the root) with every link fixed to it; combined mass, centre of mass, and inertia about that
centre by the parallel-axis theorem.  The links keep their own values in the model (each stays a
rigid body fixed to the others), so the equations equal Pinocchio's.

Per merged body, with principal moments ``l1 <= l2 <= l3`` of its inertia about its centre of mass:

- a negative mass: :class:`URDFError` (for any link: a sign error in the file);
- ``-ROUNDING * l3 - NOISE <= l1 < 0``: rounding.  URDFs print 4 to 7 significant digits, and a
  tensor printed so has eigenvalues off by up to about 1e-7 of the largest; ``NOISE`` (16 machine
  epsilons, Drake's floor) covers floating-point noise in files that mean 0.  The negative
  moments are raised to 0: the body's inertia changes by at most ``ROUNDING`` of its largest
  moment, below anything a simulation shows;
- ``l1 < -ROUNDING * l3 - NOISE``: :class:`URDFError` (no mass distribution has it);
- the triangle inequality broken, ``l1 + l2 < l3`` beyond the per-link check's tolerance: the
  smallest moment is raised by the deficit ``l3 - l1 - l2`` along its principal axis: the
  smallest single change that makes the body physical, which never makes it easier to turn about
  any axis.  (MuJoCo refuses such a body unless ``balanceinertia``, which sets all three moments
  to their mean, a far larger change; Drake warns and substitutes a solid sphere of water of the
  link's mass.)  A deficit above ``ROUNDING * l3`` changes the dynamics visibly, and the warning
  says so with the relative change (``Repair.relative_change``, ``Repair.changes_dynamics``);
- zero rotational inertia (a point mass) or one zero moment (a thin rod): physical limits, kept
  as given (Pinocchio and Drake accept them; MuJoCo refuses a moving body with an inertia below
  ``mjMINVAL`` unless ``boundinertia`` invents one).  The mass matrix must then still be positive
  definite: it is checked at a generic configuration, and a joint that would turn such a body
  about an axis without inertia is a :class:`URDFError` naming the joint and the links;
- zero mass with a rotational inertia (no link of the body has mass): kept (it resists rotation
  but carries no weight, as in Pinocchio; MuJoCo's ``boundmass`` would invent a mass).

A link whose own values fail the per-link check but whose merged body is physical is kept as given
and reported too, as is a link fixed to the world (its inertia never enters the dynamics).  Every
deviation from the per-link check is one :class:`Repair` per link, issued as an
:class:`~mb_sim.urdf.InertiaRepairWarning` and kept on the description (``RobotDescription.repairs``,
``Robot.repairs``); ``strict=True`` turns each back into the :class:`URDFError` of the per-link
check.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from mb_sim.urdf.description import JOINT_TYPES, Inertial, JointDescription, LinkDescription
from mb_sim.urdf.errors import URDFError
from mb_sim.urdf.rotations import rpy_to_matrix

__all__ = ["Repair", "ROUNDING", "TRIANGLE_TOLERANCE", "apply_inertia_policy", "link_problem", "mass_matrix",
           "refuse_link_problems"]

#: Negative principal moments and triangle deficits up to this fraction of a body's largest
#: principal moment are rounding in the file; a repair that changes a body's inertia by more than
#: this fraction (of its largest moment) changes the dynamics visibly and its warning says so.
ROUNDING = 1e-6
#: Moments this close to zero [kg m^2] are floating-point noise whatever the body's size (Drake's
#: floor: 16 machine epsilons).
NOISE = 16 * np.finfo(float).eps
#: The per-link (strict) check's tolerance on the triangle inequality, as before this policy.
TRIANGLE_TOLERANCE = 1e-9
#: Scaled mass-matrix eigenvalues at or below this are a singular mass matrix.
SINGULAR = 1e-12


@dataclass(frozen=True)
class Repair:
    """One thing mb_sim accepted or changed in a URDF instead of refusing it.

    ``element`` is ``"link"`` or ``"joint"`` and ``name`` its URDF name; ``problem`` says what was
    wrong and ``action`` what mb_sim did.  ``relative_change`` is the largest change of a principal
    moment of the body's inertia relative to its largest moment (0: the dynamics are unchanged);
    ``body`` names the link whose frame ``inertia_change`` (3 x 3, about the body's centre of mass,
    added to that body's inertia) is expressed in, for an inertia that was changed.
    """

    element: str
    name: str
    problem: str
    action: str
    relative_change: float = 0.0
    body: str | None = None
    inertia_change: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        """``link 'name'`` or ``joint 'name'``."""
        return f"{self.element} '{self.name}'"

    @property
    def changes_dynamics(self) -> bool:
        """Whether the repair changes the motion visibly (more than rounding)."""
        return self.relative_change > ROUNDING

    def __str__(self) -> str:
        return f"{self.label}: {self.problem}; {self.action}"


def _moments(inertia: np.ndarray) -> np.ndarray:
    return np.linalg.eigvalsh(0.5 * (inertia + inertia.T))


def _fmt(values) -> str:
    return "[" + ", ".join(f"{v:.4g}" for v in values) + "]"


def link_problem(mass: float, inertia: np.ndarray, advice: bool = True) -> str | None:
    """What the per-link check (``strict``) refuses in a link's mass properties, or None.

    Mass non-negative is checked by the parser; here: a massive link's inertia positive definite
    and satisfying the triangle inequality, a massless link without inertia.  `advice` adds how to
    fix the file (for the strict error; a repair says what was done instead).
    """
    if mass == 0.0:
        return "zero mass with a non-zero inertia tensor" if inertia.any() else None
    moments = _moments(inertia)
    if moments[0] <= 0.0:
        problem = f"inertia is not positive definite (principal moments {np.round(moments, 12).tolist()})"
        return problem + ("; a point mass needs a small positive inertia, e.g. that of a small sphere" if advice else "")
    a, b, c = moments
    if a + b < c * (1.0 - TRIANGLE_TOLERANCE):
        return f"inertia breaks the triangle inequality: principal moments {a:g} + {b:g} < {c:g}"
    return None


def refuse_link_problems(source: str, links) -> None:
    """The per-link check of ``strict`` loading: URDFError for the first link that fails it."""
    for link in links:
        if link.inertial is not None:
            problem = link_problem(link.inertial.mass, link.inertial.inertia)
            if problem is not None:
                raise URDFError(source, f"link '{link.name}' <inertial>", problem)


@dataclass
class _Body:
    """A moving body: a head link (the root, or the child of a moving joint) and the links fixed to it."""

    head: str
    members: list[str]
    fixed_to_world: bool
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))

    def describe(self) -> str:
        """``link 'x'``, or ``link 'x' and the links fixed to it ('a', 'b')``."""
        others = [m for m in self.members if m != self.head]
        if not others:
            return f"link '{self.head}'"
        shown = ", ".join(f"'{m}'" for m in others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else "")
        return f"link '{self.head}' and the links fixed to it ({shown})"

    @property
    def merged(self) -> bool:
        """Whether links are fixed to the head (the body is more than one link)."""
        return len(self.members) > 1


def _transform(xyz: np.ndarray, rpy: np.ndarray) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3], t[:3, 3] = rpy_to_matrix(rpy), xyz
    return t


def _bodies(links: dict[str, LinkDescription], joints: list[JointDescription], root: str
            ) -> tuple[list[_Body], dict[str, np.ndarray], dict[str, str]]:
    """Merged bodies (joints in tree order), each link's pose in its body's head frame, and each
    link's head."""
    head_of = {root: root}
    pose = {root: np.eye(4)}
    for joint in joints:
        if joint.type == "fixed":
            head_of[joint.child] = head_of[joint.parent]
            pose[joint.child] = pose[joint.parent] @ _transform(joint.origin_xyz, joint.origin_rpy)
        else:
            head_of[joint.child], pose[joint.child] = joint.child, np.eye(4)
    bodies: dict[str, _Body] = {}
    for link in [root, *(j.child for j in joints)]:
        head = head_of[link]
        if head not in bodies:
            bodies[head] = _Body(head, [], fixed_to_world=head == root)
        bodies[head].members.append(link)
    for body in bodies.values():
        _combine(body, links, pose)
    return list(bodies.values()), pose, head_of


def _combine(body: _Body, links: dict[str, LinkDescription], pose: dict[str, np.ndarray]) -> None:
    """Mass, centre of mass and inertia about it (head-frame axes) of the merged body."""
    parts = []
    for name in body.members:
        inertial = links[name].inertial
        if inertial is None:
            continue
        rotation, offset = pose[name][:3, :3], pose[name][:3, 3]
        parts.append((inertial.mass, rotation @ inertial.com + offset, rotation @ inertial.inertia @ rotation.T))
    body.mass = float(sum(m for m, _, _ in parts))
    body.com = sum((m * c for m, c, _ in parts), np.zeros(3)) / body.mass if body.mass > 0 else np.zeros(3)
    inertia = np.zeros((3, 3))
    for m, c, rotational in parts:
        d = c - body.com
        inertia += rotational + m * (d @ d * np.eye(3) - np.outer(d, d))
    body.inertia = 0.5 * (inertia + inertia.T)


def _judge(body: _Body, source: str) -> tuple[np.ndarray, str | None, str | None, float]:
    """(inertia change, what was wrong, what was done, relative change) of a merged body; raises
    URDFError for a really unphysical one."""
    zero = np.zeros((3, 3))
    if body.mass == 0.0 and not body.inertia.any():
        return zero, None, None, 0.0
    moments, axes = np.linalg.eigh(body.inertia)
    largest = float(moments[-1])
    subject = "inertia" if not body.merged else "combined inertia"
    if -moments[0] > ROUNDING * max(largest, 0.0) + NOISE:
        element = f"link '{body.head}' <inertial>" if not body.merged else body.describe()
        raise URDFError(source, element,
                        f"{subject} is not positive definite (principal moments {_fmt(moments)} kg m^2 about the "
                        f"centre of mass): a negative moment beyond rounding ({ROUNDING:g} of the largest); "
                        "no mass distribution has it")
    repaired = np.maximum(moments, 0.0)
    problems, actions = [], []
    if moments[0] < 0.0:
        problems.append(f"{subject} has rounding-level negative principal moment(s) {_fmt(moments[moments < 0])} "
                        f"(largest {largest:.4g} kg m^2)")
        actions.append("raised them to 0")
    deficit = repaired[2] - repaired[0] - repaired[1]
    if deficit > TRIANGLE_TOLERANCE * repaired[2] + NOISE:  # what the per-link check lets pass, too
        problems.append(f"{subject} breaks the triangle inequality (principal moments "
                        f"{repaired[0]:.4g} + {repaired[1]:.4g} < {repaired[2]:.4g} kg m^2)")
        actions.append(f"raised the smallest principal moment by the deficit, from {repaired[0]:.4g} to "
                       f"{repaired[0] + deficit:.4g} kg m^2")
        repaired[0] += deficit
    if not problems:
        return zero, None, None, 0.0
    if body.merged:
        problems[0] = f"{problems[0]} (merged: {body.describe()})"
    change = axes @ np.diag(repaired - moments) @ axes.T
    relative = float(np.max(np.abs(repaired - moments)) / largest) if largest > NOISE else 0.0
    return 0.5 * (change + change.T), "; ".join(problems), " and ".join(actions), relative


def _effect(body: _Body, relative: float) -> str:
    if body.fixed_to_world:
        return "no effect on the motion (the body is fixed to the world)"
    if relative > ROUNDING:
        return (f"this CHANGES THE DYNAMICS: the body's inertia changes by {relative:.3g} of its largest principal "
                "moment")
    if relative == 0.0:
        return "no effect on the motion (the moments are floating-point noise)"
    return f"rounding-level: the body's inertia changes by {relative:.1e} of its largest principal moment"


def apply_inertia_policy(source: str, links: dict[str, LinkDescription], joints: list[JointDescription],
                         root: str, strict: bool = False) -> tuple[dict[str, LinkDescription], list[Repair]]:
    """Links with the policy's repairs applied, and the repairs (at most one per link, in link order).

    `joints` in tree order.  With `strict`, the per-link check refuses instead (URDFError).
    """
    if strict:
        refuse_link_problems(source, links.values())
        return links, []
    bodies, pose, _ = _bodies(links, joints, root)
    records: dict[str, Repair] = {}
    changed = dict(links)
    accepted: list[str] = []
    for body in bodies:
        change, problem, action, relative = _judge(body, source)
        own = {name: link_problem(links[name].inertial.mass, links[name].inertial.inertia, advice=False)
               for name in body.members if links[name].inertial is not None}
        target = None
        if action is not None:
            target = _carrier(body, links)
            rotation = pose[target][:3, :3]
            inertial = links[target].inertial or Inertial(0.0, np.zeros(3), np.zeros((3, 3)))
            changed[target] = dataclasses.replace(links[target], inertial=dataclasses.replace(
                inertial, inertia=inertial.inertia + rotation.T @ change @ rotation))
            if body.merged and own.get(target):
                problem = f"{own[target]}; {problem}"
            place = f" (to link '{target}', in its frame)" if body.merged else ""
            records[target] = Repair("link", target, problem, f"{action}{place}; {_effect(body, relative)}",
                                     0.0 if body.fixed_to_world else relative, body.head, change)
        final = _moments(body.inertia + change)
        if (not body.fixed_to_world and (body.mass > 0.0 or body.inertia.any())
                and (body.mass == 0.0 or final[0] <= ROUNDING * final[2] + NOISE)):
            accepted.append(body.head)
        for name, link_issue in own.items():
            if link_issue is not None and name != target:
                records[name] = Repair("link", name, link_issue, _kept(body, target))
    if accepted:
        check_mass_matrix(source, changed, joints, root, accepted)
    return changed, [records[name] for name in links if name in records]


def _carrier(body: _Body, links: dict[str, LinkDescription]) -> str:
    """The link of `body` that takes an inertia change: the heaviest member (the head on ties)."""
    massive = [(links[m].inertial.mass, -i, m) for i, m in enumerate(body.members) if links[m].inertial is not None]
    return max(massive)[2] if massive else body.head


def _kept(body: _Body, repaired_at: str | None) -> str:
    """What was done with a link whose own values fail the per-link check: nothing, and why."""
    if body.fixed_to_world:
        return "kept as given: the link is fixed to the world, so its inertia never enters the dynamics"
    others = len(body.members) - 1
    merged = f"link '{body.head}' and the {others} link{'s' if others > 1 else ''} fixed to it"
    if repaired_at is not None:
        return f"kept as given: judged as part of its body ({merged}), repaired at link '{repaired_at}'"
    if body.merged:
        return (f"kept as given: judged as part of its body ({merged}: mass {body.mass:.4g} kg, principal moments "
                f"{_fmt(_moments(body.inertia))} kg m^2), which is physical; Pinocchio, Gazebo and MuJoCo merge "
                "links attached by fixed joints too")
    if body.mass == 0.0:
        return "kept as given: the body resists rotation but has no mass (as in Pinocchio)"
    return ("kept as given: a point mass or a rod is a physical limit (the mass matrix was checked positive "
            "definite)")


# --- The mass matrix at a generic configuration -------------------------------------------------

def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    x, y, z = axis
    k = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def mass_matrix(links: dict[str, LinkDescription], joints: list[JointDescription], root: str,
                rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
    """The open tree's mass matrix at a random configuration, in a basis of joint twists (any basis
    of each joint's motions: positive definiteness does not depend on it), with the joint of each
    column."""
    world = {root: np.eye(4)}
    twists: dict[str, np.ndarray] = {}
    for joint in joints:
        frame = world[joint.parent] @ _transform(joint.origin_xyz, joint.origin_rpy)
        rotation, point = frame[:3, :3], frame[:3, 3]
        axis = rotation @ joint.axis
        motion = np.eye(4)
        if joint.type in ("revolute", "continuous"):
            motion[:3, :3] = _axis_rotation(joint.axis, rng.uniform(-np.pi, np.pi))
            twists[joint.name] = np.concatenate([axis, np.cross(point, axis)])[:, None]
        elif joint.type == "prismatic":
            motion[:3, 3] = joint.axis * rng.uniform(-1, 1)
            twists[joint.name] = np.concatenate([np.zeros(3), axis])[:, None]
        elif joint.type == "planar":
            e = np.linalg.svd(joint.axis[None, :])[2][1:]  # two unit vectors normal to the axis
            motion[:3, :3] = _axis_rotation(joint.axis, rng.uniform(-np.pi, np.pi))
            motion[:3, 3] = e.T @ rng.uniform(-1, 1, 2)
            origin = (frame @ motion)[:3, 3]
            twists[joint.name] = np.column_stack([
                np.concatenate([np.zeros(3), rotation @ e[0]]), np.concatenate([np.zeros(3), rotation @ e[1]]),
                np.concatenate([axis, np.cross(origin, axis)])])
        elif joint.type == "floating":
            quaternion = rng.normal(size=4)
            motion[:3, :3] = _axis_rotation(quaternion[1:] / np.linalg.norm(quaternion[1:]), rng.uniform(-np.pi, np.pi))
            motion[:3, 3] = rng.uniform(-1, 1, 3)
            twists[joint.name] = np.eye(6)
        world[joint.child] = frame @ motion
    # Spatial inertia of each link about the world origin, for twists (angular velocity, velocity of
    # the point at the origin): T = 1/2 x^T I x.
    spatial = {}
    for name, link in links.items():
        inertial = link.inertial
        if inertial is None or name not in world:
            continue
        rotation, offset = world[name][:3, :3], world[name][:3, 3]
        c = rotation @ inertial.com + offset
        cx = _skew(c)
        m = inertial.mass
        spatial[name] = np.block([[rotation @ inertial.inertia @ rotation.T + m * cx.T @ cx, -m * cx.T],
                                  [-m * cx, m * np.eye(3)]])
    children: dict[str, list[JointDescription]] = {}
    for joint in joints:
        children.setdefault(joint.parent, []).append(joint)
    composite: dict[str, np.ndarray] = {}
    for joint in reversed(joints):  # leaves first
        link = joint.child
        composite[link] = spatial.get(link, np.zeros((6, 6))) + sum(
            (composite[j.child] for j in children.get(link, [])), np.zeros((6, 6)))
    moving = [j for j in joints if JOINT_TYPES[j.type]]
    columns, start = {}, 0
    for joint in moving:
        columns[joint.name] = list(range(start, start + twists[joint.name].shape[1]))
        start += twists[joint.name].shape[1]
    parent_joint = {j.child: j for j in joints}
    matrix = np.zeros((start, start))
    for joint in moving:
        block = composite[joint.child] @ twists[joint.name]
        ancestor: JointDescription | None = joint
        while ancestor is not None:
            if JOINT_TYPES[ancestor.type]:
                entry = twists[ancestor.name].T @ block
                matrix[np.ix_(columns[ancestor.name], columns[joint.name])] = entry
                matrix[np.ix_(columns[joint.name], columns[ancestor.name])] = entry.T
            ancestor = parent_joint.get(ancestor.parent)
    owners = [joint.name for joint in moving for _ in columns[joint.name]]
    return matrix, owners


def check_mass_matrix(source: str, links: dict[str, LinkDescription], joints: list[JointDescription], root: str,
                      accepted: list[str]) -> None:
    """URDFError if the mass matrix is singular at a generic configuration (checked where bodies with
    a zero principal moment or no mass were accepted)."""
    matrix, owners = mass_matrix(links, joints, root, np.random.default_rng(20240515))
    if not owners:
        return
    diagonal = np.diag(matrix).copy()
    empty = [owners[k] for k in np.flatnonzero(diagonal <= 0.0)]
    if not empty:
        scale = 1.0 / np.sqrt(diagonal)
        values, vectors = np.linalg.eigh(matrix * np.outer(scale, scale))
        if values[0] > SINGULAR:
            return
        empty = [owners[int(np.argmax(np.abs(vectors[:, 0])))]]
    names = ", ".join(f"'{name}'" for name in accepted)
    raise URDFError(source, f"joint '{empty[0]}'",
                    f"the mass matrix would be singular: this joint (alone or with others) moves no mass or "
                    f"rotational inertia; accepted here with a zero principal moment or no mass: link(s) {names} "
                    "(a point mass turned about an axis through it needs a rotational inertia)")

"""How large a model mb_sim derives and compiles, judged from the URDF's tree alone.

The cost of a model grows with the entries of its mass matrix that the tree does not make zero:
generalized speed k couples with the speeds on its path to the root (itself included), so an
n-link chain has n (n + 1) / 2 of them on and below the diagonal, a humanoid a few hundred.  The
derivation, the generated C and above all the C compiler's time and memory grow with that count,
the compiler's superlinearly.  It is counted before anything is built, so a model that would not
compile in reasonable time is refused at once, in one line that says the limit and why, instead of
after minutes of derivation or a compiler that never finishes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from mb_sim.urdf.description import JOINT_TYPES, LOOP_JOINT_TYPES, JointDescription, RobotDescription
from mb_sim.urdf.errors import URDFError

__all__ = ["MAX_CONSTRAINT_ROWS", "MAX_LINKS", "MAX_MASS_MATRIX_ENTRIES", "MAX_SPEEDS", "ModelSize", "check_model_size",
           "constraint_rows", "model_size"]

#: The largest model mb_sim derives and compiles, in mass-matrix entries on and below the diagonal
#: on the tree's sparsity (see the module docstring): 2080 is a chain of 64 links.  Measured on
#: 2 cores with gcc 12 -O2 and the composite-body derivation (commit c4b6ed2), chains of n links
#: (entries; C size; compile CPU time, compiler memory): 24 (300; 0.25 MB; 4 s, 0.2 GB), 50 (1275;
#: 0.69 MB; 26 s, 0.9 GB), 64 (2080; 0.99 MB; 68 s, 1.8 GB), 80 (3240; 1.4 MB; 126 s, 3.0 GB), 100
#: (5050; 2.0 MB; 236 s, 5.1 GB).  Loading, deriving and generating the C of 64 links take 17 s
#: more; 500 links took 80 s to load and 33 min to derive (a loaded machine) before any C.  The
#: largest example-robot-data models are well below (Talos full on a floating base 567, tiago_dual
#: on a floating base 1557: 1.6 MB of C).  Raise it when the generated code gets smaller.
MAX_MASS_MATRIX_ENTRIES = 2080
#: The most generalized speeds mb_sim derives, whatever the tree's shape: a wide tree has few
#: mass-matrix entries but its forcing, Jacobians and C grow with the speeds (150 links on one root:
#: 150 entries, 16 s of Kane's equations, 1.07 MB of C, 47 s of compiling; 500, minutes).  The
#: largest example-robot-data model has 107 (tiago_dual on a floating base).
MAX_SPEEDS = 128
#: The most scalar constraint rows (a <mimic> or <coordinate_constraint> 1, a <loop_joint> up to
#: 6): each adds a row of the constraint Jacobian to derive.  example-robot-data has at most 12
#: (Talos' mimic fingers), mb_sim's examples 10; 500 loop joints on one link took 44 s to load.
MAX_CONSTRAINT_ROWS = 128
#: The most links (fixed joints included: each is merged into the body it moves with, at a cost
#: that grows faster than the count: 250 fixed links load in 2.5 s, 500 in 15 s, 2000 in more than
#: 5 minutes).  example-robot-data has at most 130 (tiago_dual).
MAX_LINKS = 256


@dataclass(frozen=True)
class ModelSize:
    """Generalized speeds, the deepest path (in speeds) and the mass-matrix entries on and below the
    diagonal that the tree does not make zero."""

    speeds: int
    depth: int
    entries: int


def model_size(joints: Iterable[JointDescription], root: str) -> ModelSize:
    """The size of the tree rooted at `root` made of `joints` (any order; loop joints are not
    joints here: they add constraints, not speeds)."""
    children: dict[str, list[JointDescription]] = {}
    for joint in joints:
        children.setdefault(joint.parent, []).append(joint)
    speeds = deepest = entries = 0
    pending = [(root, 0)]  # (link, speeds on its path to the root): no recursion, any depth
    while pending:
        link, above = pending.pop()
        for joint in children.get(link, []):
            dof = JOINT_TYPES[joint.type]
            entries += sum(above + k for k in range(1, dof + 1))
            speeds += dof
            deepest = max(deepest, above + dof)
            pending.append((joint.child, above + dof))
    return ModelSize(speeds, deepest, entries)


def constraint_rows(description: RobotDescription) -> int:
    """Scalar constraint rows the description asks for (before redundancy is removed)."""
    extensions = description.extensions
    return (sum(1 for joint in description.joints if joint.mimic is not None and JOINT_TYPES[joint.type])
            + len(extensions.coordinate_constraints)
            + sum(LOOP_JOINT_TYPES[loop.type] for loop in extensions.loop_joints))


def check_model_size(source: str, name: str, joints: Iterable[JointDescription], root: str,
                     constraints: int = 0) -> ModelSize:
    """The model's size; URDFError naming the robot if it is above MAX_MASS_MATRIX_ENTRIES, has
    more than MAX_SPEEDS speeds, MAX_LINKS links or MAX_CONSTRAINT_ROWS `constraints`."""
    joints = list(joints)
    size = model_size(joints, root)
    raise_it = "(mb_sim.urdf.size.{}, a constant, not an option: beyond it {})"
    compiling = "derivation takes minutes and the C compiler gigabytes"
    if size.entries > MAX_MASS_MATRIX_ENTRIES:
        raise URDFError(source, f"robot '{name}'", (
            f"too large to derive and compile: {size.speeds} generalized speeds (up to {size.depth} in series "
            f"from the root) make {size.entries} mass-matrix entries on and below the diagonal (each speed counts "
            f"the speeds on its path to the root); the limit is {MAX_MASS_MATRIX_ENTRIES}, a 64-link chain, "
            "whose 1 MB of C takes the C compiler a minute and 1.8 GB, growing superlinearly beyond"))
    if size.speeds > MAX_SPEEDS:
        raise URDFError(source, f"robot '{name}'", (
            f"too large to derive and compile: {size.speeds} generalized speeds; the limit is {MAX_SPEEDS} "
            + raise_it.format("MAX_SPEEDS", compiling)))
    if len(joints) + 1 > MAX_LINKS:
        raise URDFError(source, f"robot '{name}'", (
            f"too large to load: {len(joints) + 1} links; the limit is {MAX_LINKS} "
            + raise_it.format("MAX_LINKS", "loading takes minutes")))
    if constraints > MAX_CONSTRAINT_ROWS:
        raise URDFError(source, f"robot '{name}'", (
            f"too large to derive and compile: {constraints} scalar constraints (mimics, coordinate constraints, "
            f"loop joints); the limit is {MAX_CONSTRAINT_ROWS} " + raise_it.format("MAX_CONSTRAINT_ROWS", compiling)))
    return size

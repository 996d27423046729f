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

from mb_sim.urdf.description import JOINT_TYPES, JointDescription
from mb_sim.urdf.errors import URDFError

__all__ = ["MAX_MASS_MATRIX_ENTRIES", "ModelSize", "check_model_size", "model_size"]

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


def check_model_size(source: str, name: str, joints: Iterable[JointDescription], root: str) -> ModelSize:
    """The model's size; URDFError naming the robot if it is above MAX_MASS_MATRIX_ENTRIES."""
    size = model_size(joints, root)
    if size.entries > MAX_MASS_MATRIX_ENTRIES:
        raise URDFError(source, f"robot '{name}'", (
            f"too large to derive and compile: {size.speeds} generalized speeds (up to {size.depth} in series "
            f"from the root) make {size.entries} mass-matrix entries on and below the diagonal (each speed counts "
            f"the speeds on its path to the root); the limit is {MAX_MASS_MATRIX_ENTRIES}, a 64-link chain, "
            "whose 1 MB of C takes the C compiler a minute and 1.8 GB, growing superlinearly beyond"))
    return size

"""Errors and warnings about URDF input, always naming the file and the element at fault."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

__all__ = ["FixedBaseWarning", "InertiaRepairWarning", "RepairWarning", "URDFError", "URDFWarning", "warn_user"]


class URDFError(ValueError):
    """A URDF that cannot be simulated; the message names the source and the element.

    Attributes
    ----------
    source : str
        File path, or ``"<string>"`` for URDF text.
    element : str
        The element at fault, e.g. ``"joint 'elbow'"``; empty for whole-document problems.
    """

    def __init__(self, source: str, element: str, problem: str) -> None:
        self.source, self.element, self.problem = source, element, problem
        where = f"{source}: {element}: " if element else f"{source}: "
        super().__init__(where + problem)


class URDFWarning(UserWarning):
    """Something in a URDF that mb_sim ignores (e.g. an unknown extension element)."""


class RepairWarning(URDFWarning):
    """Something in a URDF that mb_sim repaired or accepted instead of refusing it (see
    :class:`mb_sim.urdf.inertia.Repair`); ``strict`` loading refuses it instead."""


class FixedBaseWarning(URDFWarning):
    """A robot that looks mobile (wheels, legs) is fixed to the world: its root link is not
    ``world``; said once per load, with how to float it (``floating_base``)."""


class InertiaRepairWarning(RepairWarning):
    """A link's mass properties were repaired, or accepted as part of the body they move with."""


_PACKAGE = str(Path(__file__).resolve().parent.parent)


def warn_user(message: str, category: type[Warning]) -> None:
    """Issue a warning attributed to the first caller outside mb_sim (the user's load call)."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)

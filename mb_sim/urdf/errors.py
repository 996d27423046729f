"""Errors and warnings about URDF input, always naming the file and the element at fault."""
from __future__ import annotations

__all__ = ["URDFError", "URDFWarning"]


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

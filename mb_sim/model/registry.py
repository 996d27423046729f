"""Components users add in Python and plug in by name through the ``mb_sim.components``
entry-point group; a URDF names them, never an import path."""
from __future__ import annotations

from importlib.metadata import entry_points

__all__ = ["ENTRY_POINT_GROUP", "component_class", "registered_components"]

ENTRY_POINT_GROUP = "mb_sim.components"


def registered_components() -> list[str]:
    """Names registered in the ``mb_sim.components`` entry-point group."""
    return sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def component_class(name: str) -> type:
    """The class registered under `name`.

    Raises
    ------
    KeyError
        No component is registered under `name`; the message lists the registered ones.
    """
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name == name:
            return entry_point.load()
    known = ", ".join(registered_components()) or "none"
    raise KeyError(f"no component registered as '{name}' in entry-point group {ENTRY_POINT_GROUP} (registered: {known})")

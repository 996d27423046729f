"""Declared requirements: the submodels and connections a component needs, by name and type."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConnectionRequirement", "ModelRequirement", "Requirement"]


@dataclass(frozen=True)
class Requirement:
    """A named, typed slot a component needs filled.

    Parameters
    ----------
    attribute_name : str
        Name of the property created on the component.
    types : type or tuple of types
        Accepted types of the value.
    description : str
        What the slot holds; becomes the property's docstring.
    """

    attribute_name: str
    types: type | tuple[type, ...]
    description: str

    @property
    def type_names(self) -> str:
        """The accepted types, for error messages."""
        types = self.types if isinstance(self.types, tuple) else (self.types,)
        return " or ".join(t.__name__ for t in types)


class ModelRequirement(Requirement):
    """A submodel a model or connection requires."""


class ConnectionRequirement(Requirement):
    """A connection a model requires."""

"""What a numeric model needs of its equations of motion, without SymPy: the model's *header*.

A :class:`~mb_sim.codegen.numeric_model.NumericModel` reads names, dimensions, output shapes,
index lists and default parameter values of the equations (never an expression: those are in the
compiled code).  :class:`ModelHeader` holds just these, goes to and from JSON and stands in for
:class:`~mb_sim.symbolic.equations.EquationsOfMotion` where a model is loaded from the cache, so
loading one imports no SymPy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mb_sim.symbolic.output_names import Dimensions

__all__ = ["INDEX_LISTS", "NAME_LISTS", "ModelHeader", "OutputShape", "header_json"]

#: The index lists of the equations the header carries ...
INDEX_LISTS = ("dependent_coordinates", "dependent_speeds", "position_speeds", "projection_speeds",
               "dissipation_rows", "quaternion_starts")
#: ... and its name lists.
NAME_LISTS = ("constraint_names", "redundant_constraints", "constraint_labels", "spring_names", "motor_names",
              "contact_names", "imu_links", "noncontributing_names")


@dataclass(frozen=True)
class OutputShape:
    """An output's shape, where the equations have its matrix (``outputs[name].shape``)."""

    shape: tuple[int, int]


@dataclass(frozen=True)
class ModelHeader(Dimensions):
    """The equations of motion less their expressions (attribute names as there).

    ``q``, ``u``, ``z``, ``inputs`` and ``parameters`` are names; ``outputs`` maps each output to
    its :class:`OutputShape`; ``force_laws`` holds, per user-law spring, ``(spring, law)``.
    """

    name: str
    q: tuple[str, ...]
    u: tuple[str, ...]
    z: tuple[str, ...]
    inputs: tuple[str, ...]
    parameters: tuple[str, ...]
    parameter_values: tuple[float, ...]
    outputs: dict[str, OutputShape]
    link_names: tuple[str, ...] = ()
    constraint_independent: tuple[bool, ...] = ()
    generic_configurations: tuple[tuple[float, ...], ...] = ()
    dependent_coordinates: tuple[int, ...] = ()
    dependent_speeds: tuple[int, ...] = ()
    position_speeds: tuple[int, ...] = ()
    projection_speeds: tuple[int, ...] = ()
    dissipation_rows: tuple[int, ...] = ()
    quaternion_starts: tuple[int, ...] = ()
    constraint_names: tuple[str, ...] = ()
    redundant_constraints: tuple[str, ...] = ()
    constraint_labels: tuple[str, ...] = ()
    spring_names: tuple[str, ...] = ()
    motor_names: tuple[str, ...] = ()
    contact_names: tuple[str, ...] = ()
    imu_links: tuple[str, ...] = ()
    noncontributing_names: tuple[str, ...] = ()
    force_laws: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def from_equations(cls, eom) -> ModelHeader:
        """The header of `eom` (an :class:`~mb_sim.symbolic.equations.EquationsOfMotion`)."""
        return cls.from_json(header_json(eom), eom.parameter_values, eom.force_laws)

    @classmethod
    def from_json(cls, data: dict[str, Any], parameter_values, force_laws=()) -> ModelHeader:
        """The header of :func:`header_json`'s dict, with the parameters' (default) values and
        the force laws of the robot at hand (neither is part of the compiled code).  KeyError,
        TypeError or ValueError if `data` is not such a dict."""
        return cls(
            name=str(data["name"]), q=tuple(data["q"]), u=tuple(data["u"]), z=tuple(data["z"]),
            inputs=tuple(data["inputs"]), parameters=tuple(data["parameters"]),
            parameter_values=tuple(float(v) for v in parameter_values),
            outputs={name: OutputShape((int(r), int(c))) for name, (r, c) in data["shapes"].items()},
            link_names=tuple(data["link_names"]),
            constraint_independent=tuple(bool(v) for v in data["constraint_independent"]),
            generic_configurations=tuple(tuple(float(v) for v in c) for c in data["generic_configurations"]),
            **{key: tuple(int(i) for i in data[key]) for key in INDEX_LISTS},
            **{key: tuple(str(n) for n in data[key]) for key in NAME_LISTS},
            force_laws=tuple((str(s), str(law)) for s, law in force_laws),
        )


def header_json(eom) -> dict[str, Any]:
    """The JSON-able header of `eom` (equations of motion, or a :class:`ModelHeader`)."""
    return {
        "name": eom.name, "q": [str(s) for s in eom.q], "u": [str(s) for s in eom.u], "z": [str(s) for s in eom.z],
        "constraint_independent": [bool(v) for v in eom.constraint_independent],
        "generic_configurations": [[float(v) for v in c] for c in eom.generic_configurations],
        "inputs": [str(s) for s in eom.inputs], "parameters": [str(s) for s in eom.parameters],
        "link_names": list(eom.link_names),
        "shapes": {name: list(matrix.shape) for name, matrix in eom.outputs.items()},
        **{key: [int(i) for i in getattr(eom, key)] for key in INDEX_LISTS},
        **{key: [str(n) for n in getattr(eom, key)] for key in NAME_LISTS},
    }

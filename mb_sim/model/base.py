"""Base classes of the component model: models, connections and load groups (after SymBRiM).

Every component owns a :class:`sympy.physics.mechanics.System` and implements only its own define
steps (``_define_objects``, ``_define_kinematics``, ``_define_loads``, ``_define_constraints``);
the public ``define_*`` methods, called on the root, run the step over the whole tree and gather
each child's system into its parent's, so the root's system holds everything.

Traversal order per step (a component's own step always first):

- objects: self, submodels, connections, load groups;
- kinematics: self, connections (they place the submodels), submodels, load groups;
- loads and constraints: self, submodels, connections, load groups.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

from sympy import Basic, Matrix, MutableDenseMatrix, S
from sympy.physics.mechanics import Point, ReferenceFrame, System

from mb_sim.model.auxiliary import AuxiliaryDataHandler
from mb_sim.model.requirement import ConnectionRequirement, ModelRequirement, Requirement

__all__ = ["ComponentBase", "ComponentError", "ConnectionBase", "ConstraintRow", "INPUT_KINDS", "Input",
           "LoadGroupBase", "ModelBase", "applied_loads", "component_system", "symbol_name"]

#: The inertial frame and fixed point of every component's own System.  A component's System
#: only collects its coordinates, bodies, loads and constraints for the robot's, whose frame is
#: the world; ``System()`` would make a frame and a point of its own each time (a seventh of
#: parsing a robot of 400 links and joints).  Nothing is oriented or placed against them.
_COMPONENT_FRAME = ReferenceFrame("component_inertial_frame")
_COMPONENT_POINT = Point("component_inertial_point")


def component_system() -> System:
    """An empty System for a component's define steps (see :data:`_COMPONENT_FRAME`)."""
    return System(_COMPONENT_FRAME, _COMPONENT_POINT)


#: The kinds of input a component can add (:meth:`ComponentBase.inputs`), in the order the
#: equations of motion take them: commanded joint efforts [N m or N], motor voltages [V], external
#: wrenches on links [N, N m] (:mod:`mb_sim.model.wrench`).
INPUT_KINDS = ("effort", "voltage", "wrench")


def symbol_name(symbol: Basic) -> str:
    """A symbol's name; for a coordinate, speed or input (a function of time) without ``(t)``."""
    return str(symbol).removesuffix("(t)")


class ComponentError(TypeError):
    """A component was given something of the wrong type or was used out of order."""


@dataclass(frozen=True)
class Input:
    """One input a component adds: a commanded quantity of `kind` (one of :data:`INPUT_KINDS`),
    the dynamic symbol `symbol` the equations take, addressed by `name` (a joint for efforts, a
    motor for voltages, ``<link>.<component>`` for a wrench) and acting on joint `joint` (a
    wrench: on link `joint`); commands are clamped to +-`limit` (inf: none)."""

    kind: str
    symbol: Basic
    name: str
    joint: str
    limit: float
    component: Any = None  # the component that adds it (a motor's states live there)

    def __post_init__(self) -> None:
        if self.kind not in INPUT_KINDS:
            raise ComponentError(f"input {self.name!r}: unknown kind {self.kind!r} (kinds: {', '.join(INPUT_KINDS)})")


@dataclass(frozen=True)
class ConstraintRow:
    """What one scalar constraint a component adds says, and, for a loop joint, the unit wrench
    on its child (force then torque, 6 x 1, in the loop joint's frame) that the row's multiplier
    scales (None: the row acts on coordinates only, e.g. a mimic joint's)."""

    description: str
    wrench: Matrix | None = None


def _requirement_property(requirement: Requirement) -> property:
    """A typed property for a declared requirement; wrong types are rejected by name."""
    private = f"_{requirement.attribute_name}"

    def getter(self: ComponentBase) -> Any:
        return getattr(self, private, None)

    def setter(self: ComponentBase, value: Any) -> None:
        if value is not None and not isinstance(value, requirement.types):
            raise ComponentError(
                f"{type(self).__name__} '{self.name}': {requirement.attribute_name} must be a "
                f"{requirement.type_names}, but {value!r} is a {type(value).__name__}")
        setattr(self, private, value)

    return property(getter, setter, doc=requirement.description)


class ComponentBase:
    """What models, connections and load groups share: a name, symbols, a system, define steps.

    Attributes
    ----------
    symbols : dict[str, Symbol]
        The component's symbols (parameters, inputs), keyed by short name.
    parameter_values : dict[Symbol, float]
        Numeric values of the parameter symbols, as the URDF gives them.
    q, u : MutableDenseMatrix
        The component's own generalized coordinates and speeds.
    """

    required_models: ClassVar[tuple[ModelRequirement, ...]] = ()
    #: Parameters a URDF ``<component>`` element may set: name -> description.
    urdf_parameters: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for requirement in (*cls.__dict__.get("required_models", ()), *cls.__dict__.get("required_connections", ())):
            setattr(cls, requirement.attribute_name, _requirement_property(requirement))

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ComponentError(f"a {type(self).__name__} needs a non-empty name, got {name!r}")
        self._name = name
        self.symbols: dict[str, Basic] = {}
        self.parameter_values: dict[Basic, float] = {}
        self._descriptions: dict[Basic, str] = {}
        self.q: MutableDenseMatrix = Matrix()
        self.u: MutableDenseMatrix = Matrix()
        #: The constraints this component added, by expression (as in its system).
        self.constraint_rows: dict[Basic, ConstraintRow] = {}
        self._system: System | None = None
        self._auxiliary_handler: AuxiliaryDataHandler | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @property
    def name(self) -> str:
        """Name of the component; prefixes all its symbol names."""
        return self._name

    @property
    def system(self) -> System:
        """The component's System (exists from define objects on)."""
        if self._system is None:
            raise ComponentError(f"{self!r}: no system before define_objects()")
        return self._system

    @property
    def auxiliary_handler(self) -> AuxiliaryDataHandler:
        """The auxiliary data handler shared from the root (set at the end of define objects)."""
        if self._auxiliary_handler is None:
            raise ComponentError(f"{self!r}: the auxiliary data handler exists only after define_objects()")
        return self._auxiliary_handler

    @property
    def descriptions(self) -> dict[Basic, str]:
        """Human descriptions of the component's symbols, coordinates and speeds.

        Components record them in ``self._descriptions`` as they create the symbols.
        """
        return dict(self._descriptions)

    def _add_prefix(self, name: str) -> str:
        """``name`` prefixed with the component's name, so symbol names are unique."""
        return f"{self.name}_{name}"

    def children(self) -> Iterator[ComponentBase]:
        """Direct children in traversal order (overridden by models and connections)."""
        return iter(())

    def walk(self) -> Iterator[ComponentBase]:
        """This component and all its descendants, depth first."""
        yield self
        for child in self.children():
            yield from child.walk()

    # Define steps: subclasses implement the underscore methods for themselves only.
    def _define_objects(self) -> None:
        """Create symbols, coordinates, speeds, frames, points and bodies (nothing oriented)."""

    def _define_kinematics(self) -> None:
        """Orient frames, position points, set velocities and kinematic differential equations."""

    def _define_loads(self) -> None:
        """Add forces, torques and actuators to the system."""

    def _define_constraints(self) -> None:
        """Add holonomic and nonholonomic constraints to the system."""

    def potential_energy(self) -> Basic:
        """Potential energy of the component's conservative forces (springs) [J]; gravity's is
        derived from the link kinematics instead."""
        return S.Zero

    def inputs(self) -> list[Input]:
        """The inputs the component adds (a joint's commanded effort, a motor's voltage): how the
        simulator, its command topics and the CLI learn what can be commanded."""
        return []

    def electrical_states(self) -> list[tuple[Basic, Basic, Basic]]:
        """States besides q and u the component adds (a motor's current): ``(state, rate, linear
        coefficient)`` with ``state' = rate``, of which ``linear coefficient * state`` is the part
        linear in the state itself (a decay the integrator takes exactly)."""
        return []

    def reflected_inertia(self) -> list[tuple[Basic, Basic]]:
        """``(speed, inertia)`` added to the speed's diagonal entry of the mass matrix (a motor
        rotor's inertia reflected through its gear)."""
        return []

    def _share_auxiliary_handler(self, handler: AuxiliaryDataHandler) -> None:
        for component in self.walk():
            component._auxiliary_handler = handler


def applied_loads(system: System) -> list:
    """Every load `system` applies: its loads, then each actuator's (``to_loads``), as SymPy's own
    ``System.form_eoms`` gathers them (seed 000 teaches ``add_actuators`` in a define-loads step)."""
    return [*system.loads, *(load for actuator in system.actuators for load in actuator.to_loads())]


def _new(existing, items) -> list:
    """Items not already present, compared by identity (SymPy's Vector equality is costly)."""
    seen = {id(x) for x in existing}
    return [x for x in items if id(x) not in seen]


def _merge(into: System, child: System) -> None:
    """Add everything of `child`'s system that `into` does not have yet."""
    if into is child:
        return
    additions = (
        (into.add_coordinates, [q for q in child.q_ind if q not in into.q], {"independent": True}),
        (into.add_coordinates, [q for q in child.q_dep if q not in into.q], {"independent": False}),
        (into.add_speeds, [u for u in child.u_ind if u not in into.u], {"independent": True}),
        (into.add_speeds, [u for u in child.u_dep if u not in into.u], {"independent": False}),
        (into.add_auxiliary_speeds, [u for u in child.u_aux if u not in into.u_aux], {}),
        (into.add_kdes, [k for k in child.kdes if k not in into.kdes], {}),
        (into.add_bodies, _new(into.bodies, child.bodies), {}),
        (into.add_loads, _new(into.loads, child.loads), {}),
        (into.add_actuators, _new(into.actuators, child.actuators), {}),
        (into.add_holonomic_constraints,
         [c for c in child.holonomic_constraints if c not in into.holonomic_constraints], {}),
        (into.add_nonholonomic_constraints,
         [c for c in child.nonholonomic_constraints if c not in into.nonholonomic_constraints], {}),
    )
    for add, items, options in additions:
        if items:  # System's add_* re-parse everything even when given nothing
            add(*items, **options)


class _TreeComponent(ComponentBase):
    """A model or connection: has submodels and load groups and runs the traversal."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._load_groups: list[LoadGroupBase] = []

    @property
    def load_groups(self) -> tuple[LoadGroupBase, ...]:
        """Load groups attached to this component."""
        return tuple(self._load_groups)

    def add_load_group(self, load_group: LoadGroupBase) -> None:
        """Attach `load_group`; its ``required_parent_type`` must accept this component."""
        if not isinstance(load_group, LoadGroupBase):
            raise ComponentError(f"{self!r}: {load_group!r} is not a load group")
        allowed = load_group.required_parent_type
        if not isinstance(self, allowed):
            names = " or ".join(t.__name__ for t in (allowed if isinstance(allowed, tuple) else (allowed,)))
            raise ComponentError(f"load group {load_group!r} attaches to a {names}, not to {self!r}")
        if load_group.parent is not None:
            raise ComponentError(f"load group {load_group!r} is already attached to {load_group.parent!r}")
        load_group._parent = self
        self._load_groups.append(load_group)

    def submodels(self) -> tuple[ModelBase, ...]:
        """Submodels filled in through the declared requirements."""
        found = (getattr(self, r.attribute_name) for r in self.required_models)
        return tuple(m for m in found if m is not None)

    def connections(self) -> tuple[ConnectionBase, ...]:
        """Connections (models only)."""
        return ()

    def children(self) -> Iterator[ComponentBase]:
        yield from self.submodels()
        yield from self.connections()
        yield from self._load_groups

    def _run_step(self, step: str, order: tuple[str, ...]) -> None:
        getattr(self, f"_define_{step}")()
        groups = {"submodels": self.submodels(), "connections": self.connections(), "load_groups": self._load_groups}
        for group in order:
            for child in groups[group]:
                if isinstance(child, _TreeComponent):
                    child._run_step(step, order)
                else:
                    getattr(child, f"_define_{step}")()
                _merge(self.system, child.system)

    def define_objects(self) -> None:
        """Run define objects over the tree; the root then shares an auxiliary data handler."""
        self._run_step("objects", _ORDER["objects"])
        self._share_auxiliary_handler(AuxiliaryDataHandler(self.system.frame, self.system.fixed_point))

    def define_kinematics(self) -> None:
        """Run define kinematics over the tree, then apply auxiliary velocities."""
        self._run_step("kinematics", _ORDER["kinematics"])
        self.auxiliary_handler.apply_auxiliary_velocities(self.system)

    def define_loads(self) -> None:
        """Run define loads over the tree, then add the noncontributing forces."""
        self._run_step("loads", _ORDER["loads"])
        self.auxiliary_handler.apply_noncontributing_forces(self.system)

    def define_constraints(self) -> None:
        """Run define constraints over the tree."""
        self._run_step("constraints", _ORDER["constraints"])

    def define_all(self) -> None:
        """All define steps in order."""
        self.define_connections()
        self.define_objects()
        self.define_kinematics()
        self.define_loads()
        self.define_constraints()

    def define_connections(self) -> None:
        """Tell connections which submodels they act on (models only)."""


_ORDER = {
    "objects": ("submodels", "connections", "load_groups"),
    "kinematics": ("connections", "submodels", "load_groups"),
    "loads": ("submodels", "connections", "load_groups"),
    "constraints": ("submodels", "connections", "load_groups"),
}


class ModelBase(_TreeComponent):
    """A system with its own boundary, made of submodels joined by connections."""

    required_connections: ClassVar[tuple[ConnectionRequirement, ...]] = ()

    def connections(self) -> tuple[ConnectionBase, ...]:
        found = (getattr(self, r.attribute_name) for r in self.required_connections)
        return tuple(c for c in found if c is not None)

    def define_connections(self) -> None:
        """Run ``_define_connections`` over the model tree."""
        self._define_connections()
        for submodel in self.submodels():
            submodel.define_connections()

    def _define_connections(self) -> None:
        """Associate connections with the submodels they operate on."""


class ConnectionBase(_TreeComponent):
    """How submodels interact (a joint, a contact); its submodels belong to the parent model."""

    def submodels(self) -> tuple[ModelBase, ...]:
        return ()  # a connection's models are the parent's submodels: not traversed twice

    def connected_models(self) -> tuple[ModelBase, ...]:
        """The models this connection acts on."""
        return super().submodels()


class LoadGroupBase(ComponentBase):
    """Forces and torques belonging to one model or connection; uses its parent's system."""

    required_parent_type: ClassVar[type | tuple[type, ...]] = (ModelBase, ConnectionBase)

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._parent: _TreeComponent | None = None
        self.urdf_values: dict[str, float] = {}

    @property
    def parent(self) -> _TreeComponent | None:
        """The model or connection this load group belongs to."""
        return self._parent

    @property
    def system(self) -> System:
        """The parent's system."""
        if self._parent is None:
            raise ComponentError(f"{self!r} is not attached to a model or connection")
        return self._parent.system

    def _define_objects(self) -> None:
        pass

    @classmethod
    def from_urdf(cls, name: str, parameters: dict[str, float]) -> LoadGroupBase:
        """Build from a URDF ``<component>`` element; unknown parameters are rejected by name."""
        unknown = sorted(set(parameters) - set(cls.urdf_parameters))
        if unknown:
            known = ", ".join(cls.urdf_parameters) or "none"
            raise ComponentError(f"{cls.__name__} '{name}': unknown parameter(s) {', '.join(unknown)} (known: {known})")
        missing = sorted(set(cls.urdf_parameters) - set(parameters))
        if missing:
            raise ComponentError(f"{cls.__name__} '{name}': missing parameter(s) {', '.join(missing)}")
        group = cls(name)
        group.urdf_values = dict(parameters)
        return group

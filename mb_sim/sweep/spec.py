"""What a sweep runs: the robot, what varies from sample to sample, what each run reports.

A value that varies is fixed (a number), drawn per sample from a distribution
(:class:`Uniform`, :class:`Normal`, :class:`Choice`), or one axis of a grid (:class:`Grid`: the
samples cover every combination of the grids' values, ``samples`` draws at each).  Sample ``i``
draws with its own generator, seeded by :func:`sample_seed` from the sweep's seed and ``i``: its
values, and whatever a controller draws, depend on nothing else, so a sample replays alone.

A sweep description file (YAML or JSON; ``mb-sim sweep FILE``) holds the same fields::

    robot: urdf/arm6.urdf
    duration: 5.0
    samples: 16
    seed: 7
    parameters:
      wrist_3_link_m: {uniform: [0.1, 0.5]}
      elbow_joint_limit_damping: {grid: [1.0, 10.0]}
    initial_positions: {elbow_joint: {normal: [0.0, 0.2]}}
    commands:
      - {time: 1.0, positions: {shoulder_lift_joint: -1.0}}
    outputs: [state, energy]
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Union

import numpy as np

__all__ = ["Choice", "Command", "Grid", "Normal", "OUTPUTS", "Sample", "SweepError", "SweepSpec", "Switch",
           "Uniform", "load_sweep", "sample_seed"]

#: What a row can report, besides the sample's values, status, times and the metrics of a callable:
#: ``state`` (final q and u by name), ``joints`` (final joint positions and velocities), ``energy``
#: (final kinetic and potential energy), ``springs`` (each spring-damper's final length, length rate
#: and force: ``spring.<name>.length``, ``.length_rate``, ``.force``), ``link:<name>`` (a link's
#: final position, world frame).
OUTPUTS = ("state", "joints", "energy", "springs")
#: Most samples one sweep may have (a description asking for more is a mistake, not a plan).
MAX_SAMPLES = 10_000_000


class SweepError(ValueError):
    """A sweep description that cannot run; the message names the field and the value."""


@dataclass(frozen=True)
class Uniform:
    """Drawn uniformly in ``[low, high]``."""

    low: float
    high: float

    def draw(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(self.low, self.high))


@dataclass(frozen=True)
class Normal:
    """Drawn from a normal distribution."""

    mean: float
    std: float

    def draw(self, rng: np.random.Generator) -> float:
        return float(rng.normal(self.mean, self.std))


@dataclass(frozen=True)
class Choice:
    """One of ``values``, each as likely."""

    values: tuple[float, ...]

    def draw(self, rng: np.random.Generator) -> float:
        return float(self.values[int(rng.integers(len(self.values)))])


@dataclass(frozen=True)
class Grid:
    """One axis of the grid: every sample set takes each of ``values`` in turn."""

    values: tuple[float, ...]


Value = Union[float, Uniform, Normal, Choice, Grid]


@dataclass(frozen=True)
class Command:
    """At sim time ``time``: efforts (actuated joints), voltages (motors), positions a servo holds
    (joints), each by name."""

    time: float
    efforts: Mapping[str, float] = field(default_factory=dict)
    voltages: Mapping[str, float] = field(default_factory=dict)
    positions: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Switch:
    """At sim time ``time``: constraint ``constraint`` enabled or released."""

    time: float
    constraint: str
    enabled: bool


@dataclass(frozen=True)
class SweepSpec:
    """A sweep (see the module docstring).

    Parameters
    ----------
    robot
        A URDF path or text (or a :class:`~mb_sim.sim.robot_cache.RobotBundle`).
    duration
        Sim time of every run [s].
    samples
        Draws per grid point (all of them without grids).
    seed
        The sweep's seed; sample ``i``'s is :func:`sample_seed` ``(seed, i)``.
    parameters, initial_positions, initial_velocities
        By parameter, joint (or coordinate, speed) name: a number or a distribution.
    commands, switches
        What happens at given sim times (:class:`Command`, :class:`Switch`).
    controller
        ``controller(sim, rng)`` called at time 0 and every ``control_period`` (a top-level
        function, so worker processes can import it); ``rng`` is the sample's generator.
    metrics
        ``metrics(sim) -> dict`` of numbers added to the row at the end of the run.
    outputs
        What each row reports (:data:`OUTPUTS`, ``link:<name>``).
    record_every
        Record the state every so many steps for the trajectory file (0: no trajectories).
    dt, integrator, floating_base, ground, xacro_args
        As :class:`~mb_sim.sim.Simulator` takes them.
    """

    robot: Any
    duration: float
    samples: int = 1
    seed: int = 0
    parameters: Mapping[str, Value] = field(default_factory=dict)
    initial_positions: Mapping[str, Value] = field(default_factory=dict)
    initial_velocities: Mapping[str, Value] = field(default_factory=dict)
    commands: Sequence[Command] = ()
    switches: Sequence[Switch] = ()
    controller: Callable | None = None
    control_period: float = 0.01
    metrics: Callable | None = None
    outputs: Sequence[str] = ("state",)
    record_every: int = 0
    dt: float = 1e-3
    integrator: str = "rk4"
    floating_base: bool = False
    ground: Any = False
    xacro_args: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        _check_positive("duration", self.duration)
        _check_positive("dt", self.dt)
        _check_positive("control_period", self.control_period)
        for name in ("samples", "record_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < (name == "samples"):
                raise SweepError(f"{name} must be a {'positive' if name == 'samples' else 'non-negative'} whole "
                                 f"number, got {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise SweepError(f"seed must be a non-negative whole number, got {self.seed!r}")
        for group in ("parameters", "initial_positions", "initial_velocities"):
            for name, value in getattr(self, group).items():
                _check_value(f"{group}.{name}", value)
        for k, command in enumerate(self.commands):
            _check_time(f"commands[{k}]", command.time, self.duration)
            for kind in ("efforts", "voltages", "positions"):
                for name, value in getattr(command, kind).items():
                    _check_finite(f"commands[{k}].{kind}.{name}", value)
        for k, switch in enumerate(self.switches):
            _check_time(f"switches[{k}]", switch.time, self.duration)
        for output in self.outputs:
            if output not in OUTPUTS and not (isinstance(output, str) and output.startswith("link:")):
                raise SweepError(f"outputs: unknown output {output!r} (choose from {', '.join(OUTPUTS)}, link:<name>)")
        if self.xacro_args is not None and not (
                isinstance(self.xacro_args, Mapping) and all(isinstance(name, str) for name in self.xacro_args)
                and all(isinstance(value, (str, int, float)) for value in self.xacro_args.values())):
            raise SweepError(f"xacro_args must be a mapping of argument names to values, got {self.xacro_args!r}")
        if self.size > MAX_SAMPLES:
            raise SweepError(f"{self.size} samples: more than the {MAX_SAMPLES} a sweep may have")

    @property
    def grid(self) -> list[tuple[tuple[str, str], Grid]]:
        """The grid axes: ((group, name), Grid), in a fixed order."""
        return [((group, name), value) for group in ("parameters", "initial_positions", "initial_velocities")
                for name, value in sorted(getattr(self, group).items()) if isinstance(value, Grid)]

    @property
    def size(self) -> int:
        """How many samples the sweep has: grid points times draws per point."""
        return math.prod(len(axis.values) for _, axis in self.grid) * self.samples

    def sample(self, index: int) -> Sample:
        """Sample `index` (0 .. size - 1): its seed and its values."""
        if not 0 <= index < self.size:
            raise SweepError(f"sample {index} does not exist (the sweep has {self.size}: 0 .. {self.size - 1})")
        seed = sample_seed(self.seed, index)
        rng = np.random.default_rng(seed)
        on_grid, point = {}, index // self.samples  # the grid point, as itertools.product orders them
        for key, axis in reversed(self.grid):
            point, k = divmod(point, len(axis.values))
            on_grid[key] = float(axis.values[k])
        values = {}
        for group in ("parameters", "initial_positions", "initial_velocities"):
            values[group] = {name: on_grid[(group, name)] if isinstance(value, Grid)
                             else value.draw(rng) if hasattr(value, "draw") else float(value)
                             for name, value in sorted(getattr(self, group).items())}
        return Sample(index, seed, values["parameters"], values["initial_positions"], values["initial_velocities"])

    def replace(self, **changes) -> SweepSpec:
        """A copy with `changes` (checked again)."""
        return SweepSpec(**{f.name: changes.get(f.name, getattr(self, f.name)) for f in fields(self)})


@dataclass(frozen=True)
class Sample:
    """One sample: its index, seed and values (numbers, by name)."""

    index: int
    seed: int
    parameters: dict[str, float]
    initial_positions: dict[str, float]
    initial_velocities: dict[str, float]

    def rng(self) -> np.random.Generator:
        """The sample's generator after its values were drawn (what a controller gets)."""
        return np.random.default_rng([self.seed, 1])


def sample_seed(seed: int, index: int) -> int:
    """Sample `index`'s seed in a sweep of seed `seed`: NumPy's SeedSequence of the two, so every
    sample's stream is independent of the others' and of how many there are."""
    return int(np.random.SeedSequence(entropy=int(seed), spawn_key=(int(index),)).generate_state(1, np.uint32)[0])


# -- checks ------------------------------------------------------------------------------------------
def _check_finite(what: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) or \
            not math.isfinite(float(value)):
        raise SweepError(f"{what} must be a finite number, got {value!r}")
    return float(value)


def _check_positive(what: str, value: Any) -> None:
    if _check_finite(what, value) <= 0:
        raise SweepError(f"{what} must be positive, got {value!r}")


def _check_time(what: str, time: Any, duration: float) -> None:
    if not 0 <= _check_finite(f"{what}.time", time) <= duration:
        raise SweepError(f"{what}.time must be within [0, duration {duration:g}], got {time!r}")


def _check_value(what: str, value: Any) -> None:
    if isinstance(value, Uniform):
        low, high = _check_finite(f"{what} uniform low", value.low), _check_finite(f"{what} uniform high", value.high)
        if low > high:
            raise SweepError(f"{what}: uniform low {low:g} is above high {high:g}")
    elif isinstance(value, Normal):
        _check_finite(f"{what} normal mean", value.mean)
        if _check_finite(f"{what} normal std", value.std) < 0:
            raise SweepError(f"{what}: normal std must not be negative, got {value.std!r}")
    elif isinstance(value, (Choice, Grid)):
        kind = type(value).__name__.lower()
        if not value.values:
            raise SweepError(f"{what}: {kind} needs at least one value")
        for v in value.values:
            _check_finite(f"{what} {kind} value", v)
    else:
        _check_finite(what, value)


# -- from a file ------------------------------------------------------------------------------------------
#: The fields a description file may hold (the callables are Python only).
FILE_FIELDS = ("robot", "duration", "samples", "seed", "parameters", "initial_positions", "initial_velocities",
               "commands", "switches", "outputs", "record_every", "dt", "integrator", "floating_base", "ground",
               "xacro_args", "control_period")
_DISTRIBUTIONS = {"uniform": lambda a: Uniform(*_pair(a, "uniform")), "normal": lambda a: Normal(*_pair(a, "normal")),
                  "choice": lambda a: Choice(tuple(_list(a, "choice"))), "grid": lambda a: Grid(tuple(_list(a, "grid")))}


def load_sweep(path: str | Path) -> SweepSpec:
    """The sweep a YAML (``.yaml``, ``.yml``) or JSON file describes; a relative ``robot`` path is
    taken from the file's directory when it is there, else from the working directory.

    Raises
    ------
    SweepError
        Unreadable, not a mapping, an unknown field or a value that cannot be (one line each).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise SweepError(f"{path}: cannot be read ({err})") from None
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as err:  # noqa: BLE001 (yaml's and json's errors name the line)
        raise SweepError(f"{path}: not valid {'YAML' if path.suffix in ('.yaml', '.yml') else 'JSON'}: "
                         f"{str(err).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise SweepError(f"{path}: a sweep description is a mapping of fields ({', '.join(FILE_FIELDS)})")
    unknown = sorted(set(data) - set(FILE_FIELDS))
    if unknown:
        raise SweepError(f"{path}: unknown field {unknown[0]!r} (fields: {', '.join(FILE_FIELDS)})")
    for required in ("robot", "duration"):
        if required not in data:
            raise SweepError(f"{path}: field {required!r} missing")
    try:
        return _spec(data, path)
    except SweepError as err:
        raise SweepError(f"{path}: {err}") from None
    except TypeError as err:
        raise SweepError(f"{path}: {err}") from None


def _spec(data: dict, path: Path) -> SweepSpec:
    robot = data["robot"]
    if not isinstance(robot, str):
        raise SweepError(f"robot must be a URDF path, got {robot!r}")
    if not robot.lstrip().startswith("<") and not Path(robot).is_absolute() and (path.parent / robot).exists():
        robot = str(path.parent / robot)
    values = {group: {str(name): _value(f"{group}.{name}", value) for name, value in _mapping(data, group).items()}
              for group in ("parameters", "initial_positions", "initial_velocities")}
    commands = tuple(_command(k, item) for k, item in enumerate(_list(data.get("commands", []), "commands")))
    switches = tuple(_switch(k, item) for k, item in enumerate(_list(data.get("switches", []), "switches")))
    outputs = data.get("outputs", ["state"])
    if not isinstance(outputs, list):
        raise SweepError(f"outputs must be a list, got {outputs!r}")
    others = {key: data[key] for key in ("duration", "samples", "seed", "record_every", "dt", "integrator",
                                         "floating_base", "ground", "xacro_args", "control_period") if key in data}
    return SweepSpec(robot=robot, **values, commands=commands, switches=switches, outputs=tuple(outputs), **others)


def _mapping(data: dict, key: str) -> dict:
    value = data.get(key, {}) or {}
    if not isinstance(value, dict):
        raise SweepError(f"{key} must be a mapping of names to values, got {value!r}")
    return value


def _list(value: Any, what: str) -> list:
    if not isinstance(value, list):
        raise SweepError(f"{what} must be a list, got {value!r}")
    return value


def _pair(value: Any, what: str) -> tuple:
    if not isinstance(value, list) or len(value) != 2:
        raise SweepError(f"{what} takes two numbers [a, b], got {value!r}")
    return tuple(value)


def _value(what: str, value: Any) -> Value:
    if isinstance(value, dict):
        if len(value) != 1 or next(iter(value)) not in _DISTRIBUTIONS:
            raise SweepError(f"{what}: a distribution is one of {', '.join('{' + k + ': ...}' for k in _DISTRIBUTIONS)},"
                             f" got {value!r}")
        kind, argument = next(iter(value.items()))
        return _DISTRIBUTIONS[kind](argument)
    return value


def _command(k: int, item: Any) -> Command:
    if not isinstance(item, dict) or "time" not in item:
        raise SweepError(f"commands[{k}] must be a mapping with a time, got {item!r}")
    unknown = sorted(set(item) - {"time", "efforts", "voltages", "positions"})
    if unknown:
        raise SweepError(f"commands[{k}]: unknown key {unknown[0]!r} (time, efforts, voltages, positions)")
    return Command(item["time"], **{key: _mapping(item, key) for key in ("efforts", "voltages", "positions")})


def _switch(k: int, item: Any) -> Switch:
    if not isinstance(item, dict) or set(item) != {"time", "constraint", "enabled"} or \
            not isinstance(item["enabled"], bool) or not isinstance(item["constraint"], str):
        raise SweepError(f"switches[{k}] must be {{time: T, constraint: NAME, enabled: true|false}}, got {item!r}")
    return Switch(item["time"], item["constraint"], item["enabled"])

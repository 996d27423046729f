"""From a robot model to a numeric model, through the disk cache keyed by the robot's topology.

A cache hit needs no derivation and no code generation: the index entry
``<robot>-<topology key>.model.json`` names the generated C (kept in the cache, by a plain file
name: nothing outside the cache directory is ever read) with its sha256, and records the
equations' header (symbol names, output shapes, the indices projection uses); the library is
loaded and verified as ``compile_model`` does.  A source that no longer has its recorded sha256
(edited after generation), or an index another user could have written, is not trusted: the
model is derived and generated again.  Parameter values always come from the robot at hand.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from mb_sim.codegen.cache import ChangedSource, atomic_write, cache_directory, read_index, safe_name
from mb_sim.codegen.compiled import CompiledModel
from mb_sim.codegen.compiler import TCC_FLAGS, quick_flags
from mb_sim.codegen.errors import CodegenError
from mb_sim.codegen.header import ModelHeader, header_json
from mb_sim.codegen.numeric_model import NumericModel
from mb_sim.codegen.numpy_backend import NumpyModel
from mb_sim.codegen.progress import Progress, report
from mb_sim.model import Robot
from mb_sim.symbolic import EquationsOfMotion, derive_equations
from mb_sim.symbolic.signature import topology_key
from mb_sim.codegen.version import GENERATOR_VERSION
from mb_sim.urdf.size import check_model_size

__all__ = ["first_load_seconds", "load_numeric_model"]

def load_numeric_model(robot: Robot, backend: str = "c", cache_dir: str | os.PathLike | None = None,
                       progress: Progress = None) -> NumericModel:
    """The numeric model of `robot`: from the cache when its topology was compiled before.

    ``backend="numpy"`` always derives (nothing to cache but the derivation).  A model above
    :data:`mb_sim.urdf.size.MAX_MASS_MATRIX_ENTRIES` is refused first (URDFError, one line).
    """
    check_model_size(robot.source, robot.name, [j.joint_description for j in robot.joints.values()],
                     robot.root_link.name)
    if backend == "numpy":
        return NumpyModel(derive_equations(robot, progress), progress)
    if backend != "c":
        raise ValueError(f"unknown backend {backend!r}: use 'c' or 'numpy'")
    directory = cache_directory(cache_dir)
    index = directory / f"{safe_name(robot.name)}-{topology_key(robot)[:24]}-g{GENERATOR_VERSION}.model.json"
    cached = _load_cached(robot, index, directory, progress)
    if cached is not None:
        return cached
    seconds = first_load_seconds(len(robot.system.u), len(robot.links))
    report(progress, f"{robot.name}: first load of this structure: deriving, generating and compiling its equations, "
                     f"about {seconds:.0f} s (kept for the next loads, numbers-only edits of the URDF included)")
    eom = derive_equations(robot, progress)
    model = CompiledModel(eom, directory, progress)
    _write_index(index, eom, model.library_path.with_suffix(".c"), model.source)
    return model


#: Seconds a first load takes per generalized speed and per link to derive, generate and
#: quick-compile with tcc (2 cores of this project's machines, whose speed differs 1.7x from day to
#: day: bench/results/cold.md of 2026-12-02, on the faster, 0.061 s and 0.008 s fit chain64's 4.4 s
#: and iCub's 4.0 s for 38 speeds and 215 links; set here for the slower).
SECONDS_PER_SPEED, SECONDS_PER_LINK = 0.1, 0.013
#: How much longer the first load takes where the quick build compiles with cc -O0 (no tcc): iCub's
#: 4.0 s with tcc, 7.1 s without.
WITHOUT_TCC = 1.8


def first_load_seconds(n_speeds: int, n_links: int) -> float:
    """About how long a first load of a model with `n_speeds` speeds and `n_links` links takes
    after parsing: the progress line's estimate (every stage grows about linearly with the tree)."""
    seconds = SECONDS_PER_SPEED * n_speeds + SECONDS_PER_LINK * n_links
    return max(1.0, seconds if quick_flags() == TCC_FLAGS else WITHOUT_TCC * seconds)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _force_laws(robot: Robot) -> list[tuple[str, str]]:
    """(spring, law) of the robot's user-law springs: law names are not part of the topology (the
    generated code calls back whatever law the robot at hand names), so never from the cache."""
    springs = getattr(robot, "spring_dampers", {}).values()
    return [(s.name, s.spring_description.law) for s in springs if s.law_index is not None]


def _write_index(index: Path, eom: EquationsOfMotion, source: Path, text: str) -> None:
    """Atomically write the index entry (temporary file in the same directory, then replace):
    the source file's name and the sha256 of `text`, the source as generated."""
    entry = {"source": source.name, "source_sha256": _sha256(text), "header": header_json(eom)}
    atomic_write(index, json.dumps(entry, indent=1).encode())


def _load_cached(robot: Robot, index: Path, directory: Path, progress: Progress) -> NumericModel | None:
    """The cached model, or None (missing, unreadable or inconsistent entries are rebuilt)."""
    try:
        found = read_index(index, directory)
        if found is None:
            return None
        entry, source = found
        header = entry["header"]
        values = robot.parameters
        if header["parameters"] != [str(p) for p in values]:
            return None
        eom = ModelHeader.from_json(header, list(values.values()), _force_laws(robot))
        model = CompiledModel(eom, directory, progress, source=source)
    except ChangedSource as err:
        report(progress, f"{robot.name}: {err}; deriving again")
        return None
    except (OSError, ValueError, KeyError, TypeError, CodegenError):
        return None
    report(progress, f"{robot.name}: loaded from the cache ({index.name})")
    return model

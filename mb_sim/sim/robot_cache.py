"""Robots by their URDF, from the disk cache without parsing or SymPy: what a simulator of a
robot compiled before needs is read from files.

An entry ``<robot>-<key>.robot.json`` in the model cache (``~/.cache/mb_sim``) is keyed by the
URDF's text (a xacro's expansion), the load options (``floating_base``, ``ground``, ``wrench_links``), where the
file is (messages name it), the package search path, and a stamp of mb_sim's own code (its
files' sizes and times: an upgraded or edited mb_sim derives again).  It holds the simulator's
:class:`~mb_sim.sim.robot_facts.RobotFacts`, the compiled model's
:class:`~mb_sim.codegen.header.ModelHeader`, the generated C's file name and sha256 (the library
itself is found and verified by :func:`mb_sim.codegen.cache.load_library`), the mesh files the
load read (size and time: a changed mesh derives again) and the warnings the load gave, which a
load from the entry gives again (nothing a user should hear of is lost on the second run).

A robot with a component of a plug-in (``<component>``) is not entered: its code is not mb_sim's
to stamp.  An entry another user could have written, or that does not match, is ignored and
rewritten, as the model cache does.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from mb_sim.codegen.cache import atomic_write, cache_directory, read_index, safe_name
from mb_sim.codegen.progress import Progress, report
from mb_sim.codegen.version import GENERATOR_VERSION
from mb_sim.sim.robot_facts import RobotFacts

__all__ = ["ENTRY_VERSION", "LoadedRobot", "RobotBundle", "bundle", "code_stamp", "load_robot"]

#: Bump when an entry's content changes meaning.
ENTRY_VERSION = "1"
#: The subpackages whose code decides what a URDF becomes (their files make the code stamp).
_STAGES = ("urdf", "model", "symbolic", "codegen", "sim")
#: Environment variables mesh paths are resolved by (package://).
_SEARCH_VARIABLES = ("ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH")
_STAMP: list[str] = []


@dataclass
class LoadedRobot:
    """A robot ready to simulate: its facts, its numeric model, and the component model when it
    was built (None from the cache: :attr:`robot` builds it on demand)."""

    facts: RobotFacts
    model: Any
    component_model: Any = None
    rebuild: Callable[[], Any] | None = None
    #: Its :class:`RobotBundle`, once :func:`bundle` made it (or the one it was installed from).
    bundle: RobotBundle | None = None

    @property
    def robot(self):
        """The component model (:class:`mb_sim.model.Robot`), loaded from the URDF if the entry
        was read from the cache (SymPy is imported then)."""
        if self.component_model is None and self.rebuild is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # said at the first load already
                self.component_model = self.rebuild()
        return self.component_model


@dataclass(frozen=True)
class RobotBundle:
    """A compiled robot as data, for another process or machine: its entry (facts, model header,
    force laws) and generated C.  :meth:`install` loads it there without the URDF or SymPy: the
    library from that machine's cache where it holds one for this C (and compiler flags), else
    compiled there from the C.  Pickles small (the C, plus a few kB)."""

    key: str
    entry: dict
    source: str

    def install(self, cache_dir=None, progress: Progress = None) -> LoadedRobot:
        """The robot, loaded (a new numeric model: its own buffers)."""
        from mb_sim.codegen.compiled import CompiledModel
        from mb_sim.codegen.header import ModelHeader

        facts = RobotFacts.from_json(self.entry["facts"])
        try:
            header = ModelHeader.from_json(self.entry["header"], facts.parameter_values, self.entry["force_laws"])
        except KeyError as missing:  # its C has another layout of outputs: not to be run with this header
            raise ValueError(f"robot bundle {self.key}: made by another version of mb_sim (its header has no "
                             f"{missing}); load the robot again to make a new one") from None
        return LoadedRobot(facts, CompiledModel(header, cache_dir, progress, source=self.source), bundle=self)


def bundle(loaded: LoadedRobot) -> RobotBundle:
    """The bundle of a robot loaded with the C backend (ValueError for the NumPy backend)."""
    if loaded.bundle is not None:
        return loaded.bundle
    model = loaded.model
    if not hasattr(model, "library_path"):
        raise ValueError("only a compiled robot (backend='c') can be bundled")
    entry = _entry(loaded, [], [])
    key = hashlib.sha256(json.dumps(entry, sort_keys=True).encode() + model.source.encode()).hexdigest()
    loaded.bundle = RobotBundle(key, entry, model.source)
    return loaded.bundle


def load_robot(robot, *, floating_base: bool = False, xacro_args=None, ground=False, backend: str = "c",
               cache_dir=None, progress: Progress = None, wrench_links=()) -> LoadedRobot:
    """The facts and numeric model of `robot`: a :class:`mb_sim.model.Robot`, a
    :class:`RobotBundle`, or a URDF path or text (loaded as :func:`mb_sim.model.load_urdf` loads
    it), from an entry where there is one."""
    from mb_sim.urdf.xacro_expansion import is_xacro

    if wrench_links and not isinstance(robot, (str, os.PathLike)):
        raise ValueError("wrench_links need the robot as a URDF path or text (a robot model: attach "
                         "mb_sim.model.ExternalWrench load groups to its links before defining it)")
    if isinstance(robot, RobotBundle):
        return robot.install(cache_dir, progress)
    if isinstance(robot, LoadedRobot):  # another simulator of the same robot: its own buffers
        if robot.component_model is None:
            return bundle(robot).install(cache_dir, progress)
        return _from_model(robot.component_model, backend, cache_dir, progress)
    if not isinstance(robot, (str, os.PathLike)):
        return _from_model(robot, backend, cache_dir, progress)
    text, source = _read(robot)
    if is_xacro(robot):
        from mb_sim.urdf.xacro_expansion import expand_xacro

        text = expand_xacro(robot, xacro_args)
    elif xacro_args:  # the parser's warning, said here for a cached robot too (and once: not again below)
        from mb_sim.urdf.errors import URDFWarning, warn_user

        warn_user(f"{source}: xacro_args ignored: not a xacro file", URDFWarning)
        xacro_args = None
    options = {"floating_base": bool(floating_base), "ground": _ground_option(ground)}
    wrench_links = [wrench_links] if isinstance(wrench_links, str) else [str(n) for n in wrench_links]
    if wrench_links:  # only then: the keys of robots loaded without stay as they were
        options["wrench_links"] = list(dict.fromkeys(wrench_links))

    def rebuild():
        from mb_sim.model import load_urdf

        return load_urdf(robot, floating_base=floating_base, xacro_args=xacro_args, ground=ground,
                         wrench_links=wrench_links)

    if backend != "c":
        return _from_model(rebuild(), backend, cache_dir, progress)
    directory = cache_directory(cache_dir)
    key = _key(text, source, options)
    stem = f"{safe_name(_robot_name(text))}-{key[:24]}"
    index = directory / f"{stem}.robot.json"
    loaded = _read_entry(index, directory, progress)
    if loaded is not None:
        loaded.rebuild = rebuild
        return loaded
    return _build(rebuild, index, backend, cache_dir, progress)


def _from_model(robot, backend: str, cache_dir, progress: Progress) -> LoadedRobot:
    from mb_sim.codegen import load_numeric_model
    from mb_sim.sim.robot_facts import robot_facts

    return LoadedRobot(robot_facts(robot), load_numeric_model(robot, backend, cache_dir, progress), robot)


def _read(robot) -> tuple[str, str]:
    """The URDF text (the xacro's own text, for a xacro) and its source's name."""
    from mb_sim.urdf.source import read_source

    return read_source(robot)


def _ground_option(ground) -> Any:
    """`ground` as JSON: a bool, or the link names (as the loader reads them)."""
    if isinstance(ground, bool) or not ground:
        return bool(ground)
    return list(dict.fromkeys(ground.split() if isinstance(ground, str) else (str(n) for n in ground)))


def _robot_name(text: str) -> str:
    """The robot's name from the text, for the entry's file name only."""
    found = re.search(r"<robot\b[^>]*?\bname\s*=\s*[\"']([^\"']*)", text)
    return found.group(1) if found else "robot"


def code_stamp() -> str:
    """sha256 over the sizes and modification times of mb_sim's own code of the stages a URDF
    passes (computed once per process)."""
    if not _STAMP:
        root = Path(__file__).resolve().parent.parent
        digest = hashlib.sha256()
        for stage in _STAGES:
            for path in sorted((root / stage).rglob("*")):
                if path.suffix in (".py", ".c", ".h"):
                    status = path.stat()
                    digest.update(f"{path.relative_to(root)}:{status.st_size}:{status.st_mtime_ns}\0".encode())
        _STAMP.append(digest.hexdigest())
    return _STAMP[0]


def _key(text: str, source: str, options: dict) -> str:
    digest = hashlib.sha256()
    search = {name: os.environ.get(name, "") for name in _SEARCH_VARIABLES}
    for part in (ENTRY_VERSION, GENERATOR_VERSION, code_stamp(), source, json.dumps(options, sort_keys=True),
                 json.dumps(search, sort_keys=True), text):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


# -- an entry ------------------------------------------------------------------------------------
def _read_entry(index: Path, directory: Path, progress: Progress) -> LoadedRobot | None:
    """The robot of entry `index`, or None (missing, unreadable, not private, files changed)."""
    from mb_sim.codegen.compiled import CompiledModel
    from mb_sim.codegen.errors import CodegenError
    from mb_sim.codegen.header import ModelHeader

    try:
        found = read_index(index, directory)
        if found is None or not _files_unchanged(found[0]["files"]):
            return None
        entry, source = found
        facts = RobotFacts.from_json(entry["facts"])
        header = ModelHeader.from_json(entry["header"], facts.parameter_values, entry["force_laws"])
        model = CompiledModel(header, directory, progress, source=source)
    except (OSError, ValueError, KeyError, TypeError, CodegenError):
        return None
    _say_again(entry["warnings"])
    report(progress, f"{facts.name}: loaded from the cache ({index.name})")
    return LoadedRobot(facts, model)


def _build(rebuild: Callable[[], Any], index: Path, backend: str, cache_dir, progress: Progress) -> LoadedRobot:
    """Load the URDF (SymPy), derive or find the compiled model, and write the entry."""
    from mb_sim.sim.runaway import unknown_component
    from mb_sim.urdf.meshes import recording_reads

    with warnings.catch_warnings(record=True) as said, recording_reads() as files:
        warnings.simplefilter("always")
        robot = rebuild()
    _say_again([], said)
    loaded = _from_model(robot, backend, cache_dir, progress)
    if unknown_component(robot) is None and hasattr(loaded.model, "library_path"):
        _write_entry(index, loaded, said, files)
    return loaded


def _entry(loaded: LoadedRobot, said: list, files: list[Path]) -> dict:
    """The entry of a robot loaded with the C backend."""
    from mb_sim.codegen.header import header_json

    model = loaded.model
    return {
        "source": model.library_path.with_suffix(".c").name,
        "source_sha256": hashlib.sha256(model.source.encode()).hexdigest(),
        "facts": loaded.facts.to_json(), "header": header_json(model.header),
        "force_laws": [list(law) for law in model.force_laws],
        "files": [_file_stamp(path) for path in dict.fromkeys(files)],
        "warnings": [[w.category.__name__, str(w.message)] for w in said],
    }


def _write_entry(index: Path, loaded: LoadedRobot, said: list, files: list[Path]) -> None:
    entry = _entry(loaded, said, files)
    try:
        atomic_write(index, json.dumps(entry).encode())
    except OSError:
        pass  # a cache that cannot be written to only costs the next load its speed


def _file_stamp(path: Path) -> list:
    status = Path(path).stat()
    return [str(Path(path).resolve()), status.st_size, status.st_mtime_ns]


def _files_unchanged(files: list) -> bool:
    for name, size, mtime in files:
        try:
            status = Path(name).stat()
        except OSError:
            return False
        if (status.st_size, status.st_mtime_ns) != (size, mtime):
            return False
    return True


#: The warnings a load may give, by class name (an entry says them again by name).
_WARNINGS: dict[str, type] = {}


def _warning_class(name: str) -> type:
    if not _WARNINGS:
        from mb_sim.urdf import errors

        _WARNINGS.update({n: getattr(errors, n) for n in dir(errors)
                          if isinstance(getattr(errors, n), type) and issubclass(getattr(errors, n), Warning)})
    return _WARNINGS.get(name, UserWarning)


def _say_again(said: list, caught: list | None = None) -> None:
    """Warn each (class name, message) again, attributed to the user's call (or the warnings
    `caught` while building, as they were)."""
    from mb_sim.urdf.errors import warn_user

    if caught is not None:
        for w in caught:
            warn_user(str(w.message), w.category)
        return
    for name, message in said:
        warn_user(message, _warning_class(name))

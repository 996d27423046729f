"""Expand xacro (ROS's XML macro language) into URDF text, with the ``xacro`` package from PyPI.

A ``.xacro`` path, or URDF text that declares the xacro namespace and uses it, is expanded before
it is parsed; ``xacro_args`` are the ``name:=value`` pairs of ``xacro robot.urdf.xacro name:=value``.
``$(find pkg)`` resolves through the ament index (``AMENT_PREFIX_PATH``, then this Python's prefix,
where ROS wheels install) and the ROS package path (``ROS_PACKAGE_PATH``).  Nothing here evaluates
text itself: only xacro does, as ``xacro`` on the command line would.  Every failure is one
:class:`URDFError` naming the file (and the line where xacro knows it).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path
from xml.parsers.expat import ExpatError

from mb_sim.urdf.errors import URDFError, URDFWarning, warn_user
from mb_sim.urdf.xml_document import parse_document  # the loader's reading (no entities)

__all__ = ["XACRO_SUFFIX", "PackageNotFound", "expand_xacro", "expand_xacro_bounded", "find_package_share", "is_argument_name", "is_xacro",
           "parse_xacro_args", "uses_xacro"]

#: The file suffix that marks a xacro file (``robot.urdf.xacro``, ``robot.xacro``).
XACRO_SUFFIX = ".xacro"
#: A xacro argument name, as ``<xacro:arg name=...>`` takes it.
_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: A ROS package name (``example-robot-data`` has dashes): never a path.
_PACKAGE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
#: Lines xacro prints after a message, saying where it was (joined to that message).
_LOCATION_LINES = ("when ", "in file:", "included from:", "instantiated from:")
#: How deep below a ``ROS_PACKAGE_PATH`` entry a package is looked for (a workspace's src/group/pkg).
_PACKAGE_PATH_DEPTH = 3
#: xacro keeps its state in module globals: one expansion at a time.
_LOCK = threading.Lock()
#: How many files of a package's source tree are looked through for a file an include missed.
_SOURCE_SEARCH_LIMIT = 5000


class PackageNotFound(LookupError):
    """``$(find pkg)`` names a package neither the ament index nor ROS_PACKAGE_PATH has."""


def is_xacro(path_or_xml: str | os.PathLike) -> bool:
    """Whether `path_or_xml` is a xacro file path (``*.xacro``) or URDF text using xacro markup."""
    if _is_text(path_or_xml):
        return uses_xacro(path_or_xml)
    return str(path_or_xml).endswith(XACRO_SUFFIX)


def _is_text(path_or_xml: str | os.PathLike) -> bool:
    """Whether `path_or_xml` is XML text rather than a path (as the URDF parser tells them apart)."""
    return isinstance(path_or_xml, str) and path_or_xml.lstrip("\ufeff \t\r\n").startswith("<")


def uses_xacro(text: str) -> bool:
    """Whether URDF text declares the xacro namespace and uses it: an element of it, or a ``${...}``
    or ``$(...)`` in an attribute or text.  Comments do not count: expanded URDFs (example-robot-data's
    talos, pr2) keep the declaration and xacro expressions in comments, and are read as they are."""
    if "xmlns:xacro" not in text:
        return False
    try:
        root = ET.fromstring(text)
    except ET.ParseError:  # the URDF parser says what is wrong with it
        return False
    return any(_xacro_element(element) for element in root.iter())


def _xacro_element(element: ET.Element) -> bool:
    """Whether `element` is in the xacro namespace or has a xacro expression in an attribute or its text."""
    if isinstance(element.tag, str) and element.tag.startswith("{") and "xacro" in element.tag.split("}")[0]:
        return True
    values = [*element.attrib.values(), element.text or ""]
    return any("${" in value or "$(" in value for value in values)


def is_argument_name(name: str) -> bool:
    """Whether `name` can name a xacro argument (``<xacro:arg name=...>``)."""
    return bool(_ARG_NAME.match(name))


#: Longest xacro_args text [characters] (shlex's split slows down with the square of a word's
#: length: 1 MB took 19 s); 10,000 arguments fit.
MAX_XACRO_ARGS = 200_000
#: Largest URDF text an expansion may make [characters]: a property such as ${'a'*10**9} makes
#: gigabytes the URDF parser then chews on for minutes; the largest real robots expand to ~1 MB.
MAX_EXPANSION = 32_000_000


def parse_xacro_args(text: str) -> dict[str, str]:
    """``"a:=1 b:=2"`` (as on xacro's command line; values may be quoted) as ``{"a": "1", "b": "2"}``.

    Raises
    ------
    ValueError
        A word that is not ``name:=value``, a name given twice, unbalanced quotes; the message
        names the word.
    """
    if len(text) > MAX_XACRO_ARGS:
        raise ValueError(f"xacro_args: {len(text)} characters, at most {MAX_XACRO_ARGS}")
    try:
        words = shlex.split(text)
    except ValueError as err:  # "No closing quotation"
        raise ValueError(f"xacro_args {text[:60]!r}{'...' if len(text) > 60 else ''}: {str(err).lower()}") from None
    arguments: dict[str, str] = {}
    for word in words:
        name, separator, value = word.partition(":=")
        if not separator or not _ARG_NAME.match(name):
            raise ValueError(f"xacro_args: {word[:60]!r}{'...' if len(word) > 60 else ''} is not name:=value (e.g. \"prefix:=left_ use_gripper:=true\")")
        if name in arguments:
            raise ValueError(f"xacro_args: {name!r} is given twice")
        arguments[name] = value
    return arguments


def find_package_share(package: str) -> Path:
    """The share directory of ROS package `package`, as ``$(find package)`` means it.

    Raises
    ------
    PackageNotFound
        Saying where it looked.
    """
    found = _find_package(package)
    if found is not None:
        return found[0]
    raise PackageNotFound(
        f"$(find {package}): package {package!r} not found in the ament index (AMENT_PREFIX_PATH: "
        f"{os.environ.get('AMENT_PREFIX_PATH') or 'not set'}; {sys.prefix}) nor on ROS_PACKAGE_PATH "
        f"({os.environ.get('ROS_PACKAGE_PATH') or 'not set'}); source its workspace or add its prefix to "
        "AMENT_PREFIX_PATH")


def _find_package(package: str) -> tuple[Path, bool] | None:
    """(share directory, whether it is a source tree found on ROS_PACKAGE_PATH) of `package`, or None."""
    if not _PACKAGE_NAME.match(package):
        return None
    for found in (_ament_index(package), _prefix_share(package)):
        if found is not None:
            return found, False
    found = _package_path(package)
    return (found, True) if found is not None else None


def _ament_index(package: str) -> Path | None:
    """The share directory ament_index_python knows (it reads AMENT_PREFIX_PATH), or None."""
    try:
        from ament_index_python.packages import get_package_share_directory

        return Path(get_package_share_directory(package))
    except (ImportError, LookupError, ValueError, OSError):  # not installed, not found, no AMENT_PREFIX_PATH
        return None


def _prefix_share(package: str) -> Path | None:
    """``<prefix>/share/<package>`` of this Python's prefix (ROS wheels) if its ament index lists it."""
    marker = Path(sys.prefix) / "share" / "ament_index" / "resource_index" / "packages" / package
    share = Path(sys.prefix) / "share" / package
    return share if marker.is_file() and share.is_dir() else None


def _package_path(package: str) -> Path | None:
    """The directory on ROS_PACKAGE_PATH whose package.xml names `package`, or else a package
    directory of that name (example-robot-data installs its share directory under that name, while
    its package.xml says example_robot_descriptions), or None."""
    manifests = [manifest for entry in filter(None, os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep))
                 for manifest in _manifests(Path(entry), _PACKAGE_PATH_DEPTH)]
    named = [m.parent for m in manifests if _manifest_name(m) == package]
    return next(iter(named or [m.parent for m in manifests if m.parent.name == package]), None)


def _manifests(directory: Path, depth: int) -> Iterator[Path]:
    """package.xml files in `directory` and up to `depth` levels below it (not below a package)."""
    manifest = directory / "package.xml"
    if manifest.is_file():
        yield manifest
        return
    if depth > 0 and directory.is_dir():
        try:
            children = sorted(child for child in directory.iterdir()
                              if child.is_dir() and not child.name.startswith("."))
        except OSError:
            return
        for child in children:
            yield from _manifests(child, depth - 1)


def _manifest_name(manifest: Path) -> str | None:
    """The ``<name>`` of a package.xml (read as text: nothing evaluated)."""
    try:
        match = re.search(r"<name>\s*([^<\s]+)\s*</name>", manifest.read_text(errors="replace"))
    except OSError:
        return None
    return match.group(1) if match else None


def expand_xacro(path_or_xml: str | os.PathLike, xacro_args: Mapping[str, object] | None = None) -> str:
    """The URDF text xacro makes of a ``.xacro`` file (or of xacro text) with `xacro_args`.

    xacro's own warnings become one :class:`URDFWarning` each.

    Raises
    ------
    URDFError
        Naming the file (the included file where the fault is there), and the line for malformed
        XML: an undefined property or argument, a missing include, an include or ``xacro.load_yaml``
        from an unknown ``$(find pkg)`` (elsewhere, as in a mesh path, that is a warning and stays
        ``package://pkg``), a file of macros only.
    """
    is_text = _is_text(path_or_xml)
    source = "<string>" if is_text else str(path_or_xml)
    try:
        import xacro
    except ImportError:
        raise URDFError(source, "", "the xacro package is not installed (pip install xacro), and it expands "
                                    "xacro files") from None
    mappings = _checked_mappings(source, xacro_args)
    if not is_text and not Path(path_or_xml).is_file():
        raise URDFError(source, "", "file not found")
    captured = io.StringIO()
    with _LOCK, _package_finder() as packages, contextlib.redirect_stderr(captured):
        try:
            xacro.init_stacks(None if is_text else source)
            document = xacro.parse(path_or_xml if is_text else None, None if is_text else source)
            xacro.process_doc(document, mappings=mappings)
            text = document.toprettyxml(indent="  ")
        except Exception as err:  # xacro raises anything (NameError, IOError, ExpatError, yaml...): one line
            raise URDFError(*_failure(source, err, xacro.filestack, xacro.macrostack, packages)) from None
        finally:
            xacro.substitution_args_context["arg"] = {}
    if len(text) > MAX_EXPANSION:
        raise URDFError(source, "xacro", f"expands to {len(text)} characters of URDF, more than "
                                         f"{MAX_EXPANSION} (MAX_EXPANSION): a property or loop runs away")
    _refuse_macro_library(source, path_or_xml if is_text else Path(path_or_xml), document)
    for message in _messages(captured.getvalue()):
        warn_user(f"{source}: xacro: {message}", URDFWarning)
    for message in packages.missing.values():
        warn_user(f"{source}: xacro: {message}; its paths are kept as package:// URIs (mb_sim reads no meshes)",
                  URDFWarning)
    return text


def _checked_mappings(source: str, xacro_args: Mapping[str, object] | None) -> dict[str, str]:
    """`xacro_args` as xacro takes them (strings), each name checked."""
    if xacro_args is not None and not isinstance(xacro_args, Mapping):
        raise URDFError(source, "xacro_args", f"must be a mapping of argument names to values, got {xacro_args!r}")
    mappings = {}
    for name, value in (xacro_args or {}).items():
        if not isinstance(name, str) or not _ARG_NAME.match(name):
            raise URDFError(source, "xacro_args", f"{name!r} is not a xacro argument name")
        if not isinstance(value, (str, int, float)):
            raise URDFError(source, "xacro_args", f"{name}: a value is text or a number, got {value!r}")
        mappings[name] = value if isinstance(value, str) else str(value)
    return mappings


class _Packages:
    """How the ``$(find pkg)`` of one expansion were resolved: the packages found as source trees on
    ROS_PACKAGE_PATH (their layout is not the installed one) and the ones not found (why, by name)."""

    def __init__(self) -> None:
        self.sources: dict[str, Path] = {}
        self.missing: dict[str, str] = {}

    def find(self, package: str) -> str:
        """``$(find package)``: its share directory; a package not found stays ``package://package``
        (a mesh path, which mb_sim never reads, then does not block loading; an include or
        ``xacro.load_yaml`` of it fails naming the package)."""
        found = _find_package(package)
        if found is None:
            try:
                find_package_share(package)
            except PackageNotFound as err:
                self.missing[package] = str(err)
            return f"package://{package}"
        if found[1] and any((found[0] / build).is_file() for build in ("CMakeLists.txt", "setup.py")):
            self.sources[package] = found[0]  # a source tree, not an installed share directory
        return str(found[0])

    def not_found(self, filename: str) -> str | None:
        """Why the file `filename` (an include or a load_yaml that failed) is missing, if its package is."""
        match = re.search(r"package://([^/]+)", filename)
        return self.missing.get(match.group(1)) if match else None


@contextlib.contextmanager
def _package_finder() -> Iterator[_Packages]:
    """xacro's ``$(find pkg)`` resolved by :func:`find_package_share` (it knows the ament index only)."""
    from xacro import substitution_args

    packages = _Packages()
    find = packages.find

    original = substitution_args._eval_find
    substitution_args._eval_find = find
    substitution_args._eval_dict["find"] = find
    try:
        yield packages
    finally:
        substitution_args._eval_find = original
        substitution_args._eval_dict["find"] = original


def _failure(source: str, err: Exception, filestack: list | None, macrostack: list | None,
             packages: _Packages | None = None) -> tuple[str, str, str]:
    """(file, element, problem) of a failed expansion: the innermost file xacro was reading, the
    macro being instantiated, and xacro's message on one line (`packages`: how $(find) resolved)."""
    files = [f for f in (filestack or []) if f]
    where = files[-1] if files else source
    element = _macro_element(macrostack[-1], where) if macrostack else "xacro"
    if isinstance(err, ExpatError):
        return f"{where}:{err.lineno}", "xacro", f"malformed XML: {xacro_message(err)}"
    cause = _innermost(err)
    if isinstance(cause, PackageNotFound) or isinstance(err, PackageNotFound):
        return where, element, str(cause or err)
    if isinstance(cause, OSError) and getattr(cause, "filename", None):
        packages = packages or _Packages()
        return where, element, packages.not_found(str(cause.filename)) or _unreadable(cause, packages.sources)
    if isinstance(cause, NameError):
        return where, element, f"undefined property: {xacro_message(err)}"
    if type(cause).__name__ == "ArgException":
        return where, element, _unset_argument(str(cause), where)
    if cause is not None and xacro_message(err).startswith("<class "):  # xacro prefixed the type, then repeated
        return where, element, xacro_message(cause)
    return where, element, xacro_message(err)


def _unreadable(cause: OSError, sources: Mapping[str, Path]) -> str:
    """Why a file xacro opened (an include, or ``xacro.load_yaml``) could not be read, and what to change."""
    filename = str(cause.filename)
    what = "load" if _raised_in(cause, "load_yaml") else "include"
    if "package://" in filename:
        hint = " (xacro takes a path or $(find pkg)/..., not package://)"
    else:
        hint = _source_tree_hint(Path(filename), sources)
    return f"cannot {what} {filename}{' (xacro.load_yaml)' if what == 'load' else ''}: {cause.strerror}{hint}"


def _raised_in(err: BaseException, function: str) -> bool:
    """Whether `err` was raised inside a function named `function` (xacro wraps its errors alike)."""
    return any(frame.name == function for frame in traceback.extract_tb(err.__traceback__))


def _source_tree_hint(missing: Path, sources: Mapping[str, Path]) -> str:
    """Where `missing` lies in a package found as a source tree on ROS_PACKAGE_PATH: a ROS 2 package
    installs its files in another layout (ros2_control_demos' description/ros2_control/ is installed
    as share/PKG/ros2_control/), so say so, and where a file of that name is in the tree."""
    for package, tree in sources.items():
        if not missing.is_relative_to(tree):
            continue
        namesake = _file_named(tree, missing.name)
        there = f"; the tree has {namesake.relative_to(tree)}" if namesake else ""
        return (f" ($(find {package}) is the source tree {tree}, found on ROS_PACKAGE_PATH, and ROS 2 installs "
                f"packages in another layout{there}: build the workspace and source its install/setup.bash, "
                f"or put its install prefix on AMENT_PREFIX_PATH)")
    return ""


def _file_named(tree: Path, name: str) -> Path | None:
    """The first file called `name` below `tree` (hidden directories skipped; a bounded search)."""
    seen = 0
    for directory, subdirectories, files in os.walk(tree):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
        if name in files:
            return Path(directory) / name
        seen += len(files)
        if seen > _SOURCE_SEARCH_LIMIT:
            return None
    return None


def _unset_argument(name: str, where: str) -> str:
    """Why xacro argument `name` has no value: not given and not declared with a default, or used
    before its declaration (ur_description's and kortex's ``<robot name="$(arg name)">``: xacro reads
    the root's attributes before the ``<xacro:arg>`` inside it, as ``xacro`` on the command line does)."""
    root = _document(Path(where)) if where != "<string>" else None
    declared = _declared_default(root, name) if root is not None else None
    if declared is None:
        return f"xacro argument {name!r} is not set and has no default (give it: xacro_args {name}:=VALUE)"
    place = "in the <robot> tag, which xacro reads before" if any(
        f"$(arg {name})" in value for value in root.attrib.values()) else "above"
    return (f"xacro argument {name!r} is used {place} its <xacro:arg name=\"{name}\" default=\"{declared}\"/>, "
            f"so that default does not apply (xacro on the command line fails alike): give it, "
            f"xacro_args {name}:={declared if declared and '$(' not in declared else 'VALUE'}")


def _document(path: Path) -> ET.Element | None:
    """The document element of xacro file `path` (read as the URDF loader reads XML), or None."""
    try:
        return parse_document(path.read_text(errors="replace"), str(path))[0]
    except (OSError, URDFError):
        return None


def _xacro_elements(root: ET.Element, kind: str) -> list[ET.Element]:
    """The ``<xacro:KIND>`` elements of a document (any xacro namespace URI)."""
    return [e for e in root.iter() if isinstance(e.tag, str) and e.tag.startswith("{")
            and "xacro" in e.tag[1:].split("}")[0] and e.tag.split("}")[1] == kind]


def _declared_default(root: ET.Element, name: str) -> str | None:
    """The default of ``<xacro:arg name=NAME default=...>`` in `root` (its text, unevaluated), or None."""
    for element in _xacro_elements(root, "arg"):
        if element.get("name") == name and element.get("default") is not None:
            return element.get("default")
    return None


def _refuse_macro_library(source: str, origin: str | Path, document) -> None:
    """Refuse a file that only defines xacro macros (one to include, as ros2_control_demos'
    rrbot_description.urdf.xacro): its expansion has no <link>, and the robot is in the file calling them."""
    if document.documentElement.getElementsByTagName("link"):
        return
    if isinstance(origin, Path):
        root = _document(origin)
    else:
        try:
            root = parse_document(origin, source)[0]
        except URDFError:
            return
    macros = [m.get("name") for m in _xacro_elements(root, "macro")] if root is not None else []
    if macros:
        raise URDFError(source, "xacro", f"the file defines xacro macros ({', '.join(macros)}) and calls none, so "
                                         f"it describes no link: load the .urdf.xacro that includes it and calls "
                                         f"<xacro:{macros[0]} .../>")


def _innermost(err: BaseException) -> BaseException | None:
    """The exception xacro wrapped (through its nested XacroExceptions), or None."""
    cause = getattr(err, "exc", None)
    while getattr(cause, "exc", None) is not None:
        cause = cause.exc
    return cause


def _macro_element(macro, where: str) -> str:
    """``xacro macro 'name'``, with the file defining it where that is not `where`."""
    name = macro.body.getAttribute("name")
    defined = (macro.history[-1][-1] if macro.history and macro.history[-1] else None) or where
    return f"xacro macro '{name}'" + (f" (defined in {defined})" if defined != where else "")


def xacro_message(err: BaseException) -> str:
    """xacro's message about `err` on one line."""
    return " ".join(str(err).split()) or type(err).__name__


def _messages(printed: str) -> list[str]:
    """What xacro printed (warnings, each followed by where it was) as one line per message."""
    messages: list[str] = []
    for line in filter(None, (line.strip() for line in printed.splitlines())):
        if messages and line.startswith(_LOCATION_LINES):
            messages[-1] += f" ({line})"
        else:
            messages.append(line.removeprefix("warning: "))
    return messages



#: Seconds a bounded expansion may take: xacro evaluates the files' ``${...}`` expressions, and a
#: runaway one (``${10**10**8}``) runs in C, holding the interpreter, where no thread can stop it.
EXPANSION_TIMEOUT = 20.0
#: Address space of the expanding child interpreter [bytes] (``${'a'*10**10}`` fails there, not here).
EXPANSION_MEMORY = 4 << 30


def expand_xacro_bounded(path_or_xml: str | os.PathLike, xacro_args: Mapping[str, object] | None = None,
                         timeout: float = EXPANSION_TIMEOUT) -> str:
    """:func:`expand_xacro` in a child interpreter, ended after `timeout` s and bounded in memory:
    a runaway expression in a file is one line, not a frozen or exhausted process (the node)."""
    source = "<string>" if _is_text(path_or_xml) else str(path_or_xml)
    request = json.dumps({"source": str(path_or_xml), "xacro_args": {str(k): str(v) for k, v in (xacro_args or {}).items()}})
    try:
        done = subprocess.run([sys.executable, "-m", __name__], input=request, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise URDFError(source, "xacro", f"the expansion took more than {timeout:g} s (EXPANSION_TIMEOUT): a "
                                         "property or loop runs away") from None
    try:
        outcome = json.loads(done.stdout)
    except ValueError:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise URDFError(source, "xacro", f"the expansion ended without a result ({last[:200]})") from None
    if outcome[0] == "error":
        raise URDFError(*outcome[1:])
    for message in outcome[2]:
        warn_user(message, URDFWarning)
    return outcome[1]


def _expand_request() -> None:
    """The child side of :func:`expand_xacro_bounded`: a JSON request on stdin, the outcome (the
    URDF text and xacro's warnings, or the error's parts) as JSON on stdout."""
    import resource
    import warnings

    resource.setrlimit(resource.RLIMIT_AS, (EXPANSION_MEMORY, EXPANSION_MEMORY))
    request = json.load(sys.stdin)
    source = "<string>" if _is_text(request["source"]) else request["source"]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome = ["ok", expand_xacro(request["source"], request["xacro_args"]), [str(w.message) for w in caught]]
    except URDFError as err:
        outcome = ["error", err.source, err.element, err.problem]
    except MemoryError:
        outcome = ["error", source, "xacro", f"the expansion needs more than {EXPANSION_MEMORY >> 30} GiB "
                                             "(EXPANSION_MEMORY): a property or loop runs away"]
    json.dump(outcome, sys.stdout)


if __name__ == "__main__":
    _expand_request()

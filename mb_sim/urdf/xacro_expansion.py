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
import os
import re
import shlex
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path
from xml.parsers.expat import ExpatError

from mb_sim.urdf.errors import URDFError, URDFWarning, warn_user

__all__ = ["XACRO_SUFFIX", "PackageNotFound", "expand_xacro", "find_package_share", "is_argument_name", "is_xacro",
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


def parse_xacro_args(text: str) -> dict[str, str]:
    """``"a:=1 b:=2"`` (as on xacro's command line; values may be quoted) as ``{"a": "1", "b": "2"}``.

    Raises
    ------
    ValueError
        A word that is not ``name:=value``, a name given twice, unbalanced quotes; the message
        names the word.
    """
    try:
        words = shlex.split(text)
    except ValueError as err:  # "No closing quotation"
        raise ValueError(f"xacro_args {text!r}: {str(err).lower()}") from None
    arguments: dict[str, str] = {}
    for word in words:
        name, separator, value = word.partition(":=")
        if not separator or not _ARG_NAME.match(name):
            raise ValueError(f"xacro_args: {word!r} is not name:=value (e.g. \"prefix:=left_ use_gripper:=true\")")
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
    if _PACKAGE_NAME.match(package):
        for found in (_ament_index(package), _prefix_share(package), _package_path(package)):
            if found is not None:
                return found
    raise PackageNotFound(
        f"$(find {package}): package {package!r} not found in the ament index (AMENT_PREFIX_PATH: "
        f"{os.environ.get('AMENT_PREFIX_PATH') or 'not set'}; {sys.prefix}) nor on ROS_PACKAGE_PATH "
        f"({os.environ.get('ROS_PACKAGE_PATH') or 'not set'}); source its workspace or add its prefix to "
        "AMENT_PREFIX_PATH")


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
        XML: an undefined property or argument, a missing include, an unknown ``$(find pkg)``.
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
    with _LOCK, _package_finder(), contextlib.redirect_stderr(captured):
        try:
            xacro.init_stacks(None if is_text else source)
            document = xacro.parse(path_or_xml if is_text else None, None if is_text else source)
            xacro.process_doc(document, mappings=mappings)
            text = document.toprettyxml(indent="  ")
        except Exception as err:  # xacro raises anything (NameError, IOError, ExpatError, yaml...): one line
            raise URDFError(*_failure(source, err, xacro.filestack, xacro.macrostack)) from None
        finally:
            xacro.substitution_args_context["arg"] = {}
    for message in _messages(captured.getvalue()):
        warn_user(f"{source}: xacro: {message}", URDFWarning)
    return text


def _checked_mappings(source: str, xacro_args: Mapping[str, object] | None) -> dict[str, str]:
    """`xacro_args` as xacro takes them (strings), each name checked."""
    mappings = {}
    for name, value in (xacro_args or {}).items():
        if not isinstance(name, str) or not _ARG_NAME.match(name):
            raise URDFError(source, "xacro_args", f"{name!r} is not a xacro argument name")
        mappings[name] = value if isinstance(value, str) else str(value)
    return mappings


@contextlib.contextmanager
def _package_finder() -> Iterator[None]:
    """xacro's ``$(find pkg)`` resolved by :func:`find_package_share` (it knows the ament index only)."""
    from xacro import substitution_args

    original = substitution_args._eval_find
    substitution_args._eval_find = lambda package: str(find_package_share(package))
    substitution_args._eval_dict["find"] = substitution_args._eval_find
    try:
        yield
    finally:
        substitution_args._eval_find = original
        substitution_args._eval_dict["find"] = original


def _failure(source: str, err: Exception, filestack: list | None, macrostack: list | None) -> tuple[str, str, str]:
    """(file, element, problem) of a failed expansion: the innermost file xacro was reading, the
    macro being instantiated, and xacro's message on one line."""
    files = [f for f in (filestack or []) if f]
    where = files[-1] if files else source
    element = _macro_element(macrostack[-1], where) if macrostack else "xacro"
    if isinstance(err, ExpatError):
        return f"{where}:{err.lineno}", "xacro", f"malformed XML: {xacro_message(err)}"
    cause = _innermost(err)
    if isinstance(cause, PackageNotFound) or isinstance(err, PackageNotFound):
        return where, element, str(cause or err)
    if isinstance(cause, OSError) and getattr(cause, "filename", None):
        hint = (" (xacro includes take a path or $(find pkg)/..., not package://)"
                if "package://" in str(cause.filename) else "")
        return where, element, f"cannot include {cause.filename}: {cause.strerror}{hint}"
    if isinstance(cause, NameError):
        return where, element, f"undefined property: {xacro_message(err)}"
    if type(cause).__name__ == "ArgException":
        return where, element, (f"xacro argument {str(cause)!r} is not set and has no default "
                                f"(give it: xacro_args {cause}:=VALUE)")
    return where, element, xacro_message(err)


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


"""Locate the package's shared files (``urdf/``, ``config/``, ``launch/``) in any install."""
from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["share_directory", "robot_path"]

PACKAGE = "mb_sim"


def _source_tree() -> Path | None:
    """The repository root when running from a source checkout (editable install)."""
    root = Path(__file__).resolve().parent.parent
    manifest = root / "package.xml"
    if manifest.is_file() and f"<name>{PACKAGE}</name>" in manifest.read_text():
        return root
    return None


def share_directory() -> Path:
    """Directory holding ``urdf/``, ``config/`` and ``launch/``.

    Looked up in order: the source checkout, the ament index (a colcon install), and
    ``<prefix>/share/mb_sim`` of the running interpreter (a pip install).
    """
    source = _source_tree()
    if source is not None:
        return source
    try:
        from ament_index_python.packages import get_package_share_directory

        return Path(get_package_share_directory(PACKAGE))
    except (ImportError, LookupError, ValueError):
        pass
    prefix_share = Path(sys.prefix) / "share" / PACKAGE
    if prefix_share.is_dir():
        return prefix_share
    raise FileNotFoundError(f"cannot find the share directory of {PACKAGE}; is it installed?")


def robot_path(robot: str) -> Path:
    """Path of a robot given as a file path or as the name of a URDF shipped in ``urdf/``."""
    candidate = Path(robot).expanduser()
    if candidate.is_file():
        return candidate
    if candidate.is_dir():
        raise FileNotFoundError(f"robot {robot!r} is a directory, not a URDF file")
    name = robot if robot.endswith(".urdf") else f"{robot}.urdf"
    shipped = share_directory() / "urdf" / name
    if shipped.is_file():
        return shipped
    raise FileNotFoundError(f"robot {robot!r}: no such file, and no {name} in {shipped.parent}")

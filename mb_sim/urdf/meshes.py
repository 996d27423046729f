"""Collision meshes: find the file a URDF names, read it, keep a few support points of its hull.

A contact with the ground needs, of a convex shape, only the points that can be lowest: the
vertices of its convex hull extreme along a fixed set of directions (the 26 of a cube's faces,
edges and corners), at most 26 points however many triangles the mesh has.  Meshes are read
here (binary and ASCII STL, OBJ) or through trimesh where installed (DAE and the rest).

``package://name/path`` is looked up, in order, under ``ROS_PACKAGE_PATH`` (a directory named
``name`` or holding it), ``AMENT_PREFIX_PATH``'s ``share/name``, the Python environment's
``share/name`` (example-robot-data installs there, under ``cmeel.prefix``), and the directories
above the URDF file named ``name``; a file that is not found is an error listing where it looked.
"""
from __future__ import annotations

import itertools
import os
import struct
import sys
import sysconfig
from pathlib import Path

import numpy as np

__all__ = ["MeshError", "SUPPORT_DIRECTIONS", "mesh_search_paths", "read_mesh_vertices", "resolve_mesh",
           "support_points"]

#: The directions along which a hull's extreme vertices are kept (unit vectors).
SUPPORT_DIRECTIONS = np.array([d for d in itertools.product((-1, 0, 1), repeat=3) if any(d)], dtype=float)
SUPPORT_DIRECTIONS /= np.linalg.norm(SUPPORT_DIRECTIONS, axis=1)[:, None]
#: Files above this size are not read (no robot's collision mesh is; a 100 MB STL takes seconds).
MAX_MESH_BYTES = 64 * 1024 * 1024


class MeshError(ValueError):
    """A mesh cannot be found, read or used; the message says which and why (one line)."""


def mesh_search_paths(package: str, urdf_path: str | None) -> list[Path]:
    """Where ``package://package/...`` is looked for, in order (see the module docstring)."""
    paths: list[Path] = []
    for entry in filter(None, os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep)):
        paths.append(Path(entry) / package)
        if _is_package(Path(entry), package):  # an entry may be the package itself
            paths.append(Path(entry))
    for entry in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        paths.append(Path(entry) / "share" / package)
    for prefix in dict.fromkeys((sys.prefix, sysconfig.get_paths()["data"])):
        paths.append(Path(prefix) / "share" / package)
    for site in dict.fromkeys((sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])):
        paths.append(Path(site) / "cmeel.prefix" / "share" / package)
    if urdf_path:
        paths += [p for p in Path(urdf_path).resolve().parents if p.name == package]
    return list(dict.fromkeys(paths))


def _is_package(directory: Path, package: str) -> bool:
    """Whether `directory` is the package `package`: named so, or its package.xml says so."""
    if directory.name == package:
        return True
    try:
        manifest = (directory / "package.xml").read_text(errors="replace")[:100_000]
    except OSError:
        return False
    return f"<name>{package}</name>" in manifest.replace(" ", "")


def _not_a_file(path: Path) -> str:
    """Why `path` (not a regular file) cannot be a mesh, in words."""
    try:
        if path.is_dir():
            return f"mesh file {str(path)!r} is a directory"
        if path.exists():
            return f"mesh file {str(path)!r} is not a regular file (a device, pipe or socket)"
        if path.is_symlink():
            return f"mesh file {str(path)!r} is a broken or looping symbolic link"
    except OSError as err:  # a symbolic link loop on an older Python, a permission error
        return f"mesh file {str(path)!r} cannot be opened ({err.strerror or err})"
    return f"mesh file {str(path)!r} not found"


def resolve_mesh(filename: str, urdf_path: str | None) -> Path:
    """The file a URDF ``<mesh filename>`` names (``package://``, ``file://``, absolute, or
    relative to the URDF's directory).

    Raises
    ------
    MeshError
        Not found: the message lists where it was looked for.
    """
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        searched = mesh_search_paths(package, urdf_path)
        for base in searched:
            candidate = base / rest
            if candidate.is_file():
                return candidate
        where = ", ".join(str(p) for p in searched) or "nowhere (no ROS_PACKAGE_PATH, AMENT_PREFIX_PATH)"
        raise MeshError(f"package '{package}' holding {rest!r} not found (searched {where}; set ROS_PACKAGE_PATH "
                        "to the directory containing the package)")
    path = Path(filename[len("file://"):] if filename.startswith("file://") else filename)
    if not path.is_absolute() and urdf_path:
        path = Path(urdf_path).resolve().parent / path
    if not path.is_file():
        raise MeshError(_not_a_file(path))
    return path


def read_mesh_vertices(path: Path) -> np.ndarray:
    """The vertices (n x 3, in the file's units) of the mesh in `path`.

    Raises
    ------
    MeshError
        Unreadable, too large, of an unknown format, or without vertices.
    """
    try:
        size = path.stat().st_size
        if size > MAX_MESH_BYTES:
            raise MeshError(f"{path}: {size} bytes, above the {MAX_MESH_BYTES} a collision mesh may have")
        data = path.read_bytes()
    except OSError as err:
        raise MeshError(f"{path}: cannot be read ({err.strerror or err})") from None
    suffix = path.suffix.lower()
    try:
        if suffix == ".stl":
            vertices = _stl_vertices(data)
        elif suffix == ".obj":
            vertices = _obj_vertices(data)
        else:
            vertices = _trimesh_vertices(path)
    except MeshError:
        raise
    except Exception as err:  # a malformed file must not end in a parser's traceback
        raise MeshError(f"{path}: not a readable {suffix or 'mesh'} file ({type(err).__name__}: {err})") from None
    vertices = np.asarray(vertices, dtype=float).reshape(-1, 3)
    if not len(vertices):
        raise MeshError(f"{path}: the mesh has no vertices")
    if not np.all(np.isfinite(vertices)):
        raise MeshError(f"{path}: the mesh has NaN or infinite coordinates")
    return vertices


def support_points(vertices: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The convex hull's vertices extreme along :data:`SUPPORT_DIRECTIONS` (scaled; unique, at most 26).

    Raises
    ------
    MeshError
        The mesh has no volume (all its vertices on a plane or a line).
    """
    points = np.asarray(vertices, dtype=float) * np.asarray(scale, dtype=float)  # Qhull merges duplicates
    extent = np.ptp(points, axis=0) if len(points) else np.zeros(3)
    centred = points - points.mean(axis=0)
    if len(points) < 4 or np.linalg.matrix_rank(centred, tol=1e-9 * max(float(extent.max()), 1e-300)) < 3:
        raise MeshError("the mesh has no volume (its vertices lie on a plane or a line)")
    from scipy.spatial import ConvexHull, QhullError  # noqa: PLC0415 (only robots with meshes need it)

    try:
        hull = points[ConvexHull(points).vertices]
    except QhullError as err:
        raise MeshError(f"the mesh's convex hull cannot be built ({str(err).splitlines()[0]})") from None
    chosen = sorted({int(np.argmax(hull @ d)) for d in SUPPORT_DIRECTIONS})
    return hull[chosen]


def _stl_vertices(data: bytes) -> np.ndarray:
    """Vertices of a binary or ASCII STL (binary when the size matches its triangle count)."""
    if len(data) >= 84:
        count = struct.unpack_from("<I", data, 80)[0]
        if 84 + 50 * count == len(data):
            records = np.frombuffer(data, dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]),
                                    count=count, offset=84)
            return records["v"].reshape(-1, 3).astype(float)
    text = data.decode("ascii", errors="strict")
    if not text.lstrip().lower().startswith("solid"):
        raise MeshError("neither a binary STL (size does not match its triangle count) nor an ASCII one")
    rows = [line.split()[1:4] for line in text.splitlines() if line.strip().lower().startswith("vertex")]
    return np.array([[float(v) for v in row] for row in rows], dtype=float).reshape(-1, 3)


def _obj_vertices(data: bytes) -> np.ndarray:
    """The ``v x y z`` lines of a Wavefront OBJ."""
    rows = [line.split()[1:4] for line in data.decode("utf-8", errors="replace").splitlines() if line.startswith("v ")]
    return np.array([[float(v) for v in row] for row in rows], dtype=float).reshape(-1, 3)


def _trimesh_vertices(path: Path) -> np.ndarray:
    """Any other format through trimesh (DAE needs pycollada too)."""
    try:
        import trimesh  # noqa: PLC0415 (optional: STL and OBJ need nothing)
    except ImportError:
        raise MeshError(f"{path}: reading {path.suffix or 'this'} meshes needs trimesh (pip install trimesh "
                        "pycollada); STL and OBJ are read without it") from None
    loaded = trimesh.load(str(path), force="mesh", process=False)
    return np.asarray(loaded.vertices, dtype=float)

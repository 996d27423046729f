"""Collision meshes: find the file a URDF names, read it, keep a few support points of its hull.

A contact with the ground needs, of a convex shape, only the points that can be lowest: vertices
of its convex hull.  A few of them stand for the hull (:func:`support_points`): the extreme ones
along the six axes, then, one at a time, the vertex extreme along the direction where the kept
points fall furthest short of the hull, until they fall short by at most
:data:`SUPPORT_TOLERANCE` of the hull's size along every direction (or :data:`MAX_SUPPORT_POINTS`
are kept).  The kept points' hull lies inside the mesh's, so a shape touches at most that much
later (deeper) than the mesh would, never earlier; every point costs each evaluation near the
ground, so Solo12's round foot keeps 20 and its shin 7 instead of 26 each.  Meshes are read here (binary
and ASCII STL, OBJ) or through trimesh where installed (DAE and the rest).

``package://name/path`` is looked up, in order, under ``ROS_PACKAGE_PATH`` (a directory named
``name`` or holding it), ``AMENT_PREFIX_PATH``'s ``share/name``, the Python environment's
``share/name`` (example-robot-data installs there, under ``cmeel.prefix``), and the directories
above the URDF file named ``name``; a file that is not found is an error listing where it looked.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import struct
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import numpy as np

__all__ = ["MAX_SUPPORT_POINTS", "MeshError", "SUPPORT_DIRECTIONS", "SUPPORT_TOLERANCE", "fibonacci_directions",
           "hull_points", "mesh_search_paths", "read_mesh_vertices", "recording_reads", "resolve_mesh", "support_error", "support_points"]

#: The 26 directions of a cube's faces, edges and corners (unit vectors).
SUPPORT_DIRECTIONS = np.array([d for d in itertools.product((-1, 0, 1), repeat=3) if any(d)], dtype=float)
SUPPORT_DIRECTIONS /= np.linalg.norm(SUPPORT_DIRECTIONS, axis=1)[:, None]
#: How far short of the mesh's hull the kept points may fall along any direction, as a fraction of
#: the diagonal of the hull's bounding box, on the directions they are chosen on (between those a
#: little more: Solo12's 48 mm foot diagonal 2.5 mm = 5.2 %, its 185 mm shin 7.8 mm = 4.2 %).
SUPPORT_TOLERANCE = 0.05
#: At most this many points per mesh (what the 26 directions kept): a mesh so round that it needs
#: more keeps these 26, short of its hull by more than the tolerance.
MAX_SUPPORT_POINTS = 26
#: Directions over which the shortfall is measured while choosing points.
_CHOOSING_DIRECTIONS = 4000
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


#: The lists :func:`recording_reads` fills with the mesh files read (innermost last).
_READS: list[list[Path]] = []


@contextlib.contextmanager
def recording_reads() -> Iterator[list[Path]]:
    """A list of every mesh file :func:`read_mesh_vertices` reads inside the block: what the
    robot made of a URDF depends on besides the URDF (the cache of compiled robots checks them)."""
    reads: list[Path] = []
    _READS.append(reads)
    try:
        yield reads
    finally:
        _READS.remove(reads)


def read_mesh_vertices(path: Path) -> np.ndarray:
    """The vertices (n x 3, in the file's units) of the mesh in `path`.

    Raises
    ------
    MeshError
        Unreadable, too large, of an unknown format, or without vertices.
    """
    for reads in _READS:
        reads.append(Path(path))
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


def fibonacci_directions(count: int) -> np.ndarray:
    """`count` unit vectors spread evenly over the sphere (a Fibonacci lattice; deterministic)."""
    i = np.arange(count) + 0.5
    polar, azimuth = np.arccos(1 - 2 * i / count), np.pi * (1 + 5 ** 0.5) * i
    return np.column_stack([np.cos(azimuth) * np.sin(polar), np.sin(azimuth) * np.sin(polar), np.cos(polar)])


def support_error(hull: np.ndarray, kept: np.ndarray, directions: np.ndarray) -> float:
    """How far the hull of `kept` falls short of the hull of `hull` along `directions` at most:
    max over d of (max_v v.d - max_k k.d), the largest distance between their support planes."""
    return float(((hull @ directions.T).max(axis=0) - (kept @ directions.T).max(axis=0)).max())


def _greedy_support(hull: np.ndarray, tolerance: float, limit: int) -> list[int]:
    """Indices of `hull` rows: the six axis extremes, then the row extreme along the direction the
    kept rows fall furthest short, until short by at most `tolerance` or `limit` rows are kept.
    Memory stays at a block of directions times the hull's vertices (a hull may have thousands)."""
    directions = fibonacci_directions(_CHOOSING_DIRECTIONS)
    full = np.concatenate([(hull @ block.T).max(axis=0) for block in np.array_split(directions, 8)])
    chosen = list(dict.fromkeys(int(np.argmax(hull @ d)) for d in np.vstack([np.eye(3), -np.eye(3)])))
    reached = (hull[chosen] @ directions.T).max(axis=0)
    while len(chosen) < limit:
        worst = int(np.argmax(full - reached))
        if full[worst] - reached[worst] <= tolerance:
            break
        best = int(np.argmax(hull @ directions[worst]))
        chosen.append(best)
        reached = np.maximum(reached, directions @ hull[best])
    return sorted(chosen)


def hull_points(vertices: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The vertices of the mesh's convex hull, scaled (what the collision library touches with).

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
        return points[ConvexHull(points).vertices]
    except QhullError as err:
        raise MeshError(f"the mesh's convex hull cannot be built ({str(err).splitlines()[0]})") from None


def support_points(vertices: np.ndarray, scale: np.ndarray, tolerance: float = SUPPORT_TOLERANCE,
                   limit: int = MAX_SUPPORT_POINTS, hull: np.ndarray | None = None) -> np.ndarray:
    """Vertices of the mesh's convex hull (scaled; `hull` if already built) that stand for it
    against the ground: as many as the greedy choice of the module docstring takes to fall short
    of the hull by at most `tolerance` times its bounding-box diagonal along every direction, at
    most `limit` of them.

    Raises
    ------
    MeshError
        The mesh has no volume (all its vertices on a plane or a line).
    """
    hull = hull_points(vertices, scale) if hull is None else hull
    size = float(np.linalg.norm(np.ptp(hull, axis=0)))
    return hull[_greedy_support(hull, tolerance * size, limit)]


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

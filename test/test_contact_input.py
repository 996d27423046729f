"""The input side of ground contact: ``<collision>`` shapes, meshes, ``<ground>``, bad input and
the listing by ``mb-sim info``.

Every expected number is derived here independently of mb_sim: rotations from elementary
rotation matrices, mesh vertices from files this test writes (or reads with its own STL reader),
support points from their definition (extreme along each of 26 directions).
"""
from __future__ import annotations

import itertools
import math
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from mb_sim.cli import main
from mb_sim.model import load_urdf
from mb_sim.model.contact import contact_features
from mb_sim.urdf import URDFError, URDFWarning, parse_urdf
from mb_sim.urdf.meshes import support_points

ROBOTS = Path(np.__file__).parents[1] / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
SOLO12 = ROBOTS / "solo_description" / "robots" / "solo12.urdf"
XYZ, RPY = (0.1, -0.2, 0.3), (0.3, -0.5, 0.7)

CUBE = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
TETRAHEDRON = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])


def rotation(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF's fixed-axis roll, pitch, yaw: Rz(yaw) Ry(pitch) Rx(roll)."""
    c, s = math.cos, math.sin
    rx = np.array([[1, 0, 0], [0, c(roll), -s(roll)], [0, s(roll), c(roll)]])
    ry = np.array([[c(pitch), 0, s(pitch)], [0, 1, 0], [-s(pitch), 0, c(pitch)]])
    rz = np.array([[c(yaw), -s(yaw), 0], [s(yaw), c(yaw), 0], [0, 0, 1]])
    return rz @ ry @ rx


def robot(collisions: str, extension: str = "<mb_sim><ground/></mb_sim>") -> str:
    """A 1 kg body 'b' on a floating joint with the given ``<collision>`` elements."""
    return f"""<robot name="r"><link name="world"/>
  <joint name="free" type="floating"><parent link="world"/><child link="b"/></joint>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>
  </inertial>{collisions}</link>{extension}</robot>"""


def collision(geometry: str, origin: str = "") -> str:
    return f"<collision>{origin}<geometry>{geometry}</geometry></collision>"


def placed(geometry: str) -> str:
    """A collision at the test's pose XYZ, RPY."""
    return collision(geometry, f'<origin xyz="{" ".join(map(str, XYZ))}" rpy="{" ".join(map(str, RPY))}"/>')


def features_of(urdf: str, path: Path | None = None) -> list:
    if path is not None:
        path.write_text(urdf)
        urdf = str(path)
    description = parse_urdf(urdf, ground=True)
    return [f for shape in description.collisions for f in contact_features(shape)]


def sorted_rows(rows) -> np.ndarray:
    rows = np.round(np.asarray(rows, float), 12)
    return rows[np.lexsort(rows.T[::-1])]


def assert_points(features, expected) -> None:
    """The features are points (radius 0, no axis) at exactly `expected` (any order)."""
    assert all(f.radius == 0.0 and f.axis is None for f in features)
    np.testing.assert_allclose(sorted_rows([f.centre for f in features]), sorted_rows(expected), atol=1e-9)


# -- files written by the tests ------------------------------------------------------------------

def triangles(vertices: np.ndarray) -> np.ndarray:
    """Triangles (n x 3 x 3) of the convex hull of a cube's or tetrahedron's vertices (every triple
    of vertices would do for reading; the hull's faces keep the files small and real)."""
    from scipy.spatial import ConvexHull

    return vertices[ConvexHull(vertices).simplices]


def write_binary_stl(path: Path, vertices: np.ndarray) -> Path:
    tris = triangles(vertices)
    with open(path, "wb") as f:
        f.write(b"solid but binary (as SolidWorks writes it)".ljust(80, b" "))
        f.write(struct.pack("<I", len(tris)))
        for tri in tris:
            f.write(struct.pack("<12fH", 0, 0, 0, *tri.ravel(), 0))
    return path


def write_ascii_stl(path: Path, vertices: np.ndarray) -> Path:
    lines = ["solid test"]
    for tri in triangles(vertices):
        lines += ["  facet normal 0 0 0", "    outer loop"]
        lines += [f"      vertex {x:.9g} {y:.9g} {z:.9g}" for x, y, z in tri]
        lines += ["    endloop", "  endfacet"]
    path.write_text("\n".join(lines + ["endsolid test", ""]))
    return path


def write_obj(path: Path, vertices: np.ndarray, extra: str = "") -> Path:
    faces = [" ".join(str(int(np.flatnonzero((vertices == v).all(axis=1))[0]) + 1) for v in tri)
             for tri in triangles(vertices)]
    path.write_text("# test\n" + "".join(f"v {x} {y} {z}\n" for x, y, z in vertices) + extra
                    + "".join(f"f {f}\n" for f in faces))
    return path


def read_binary_stl(path: Path) -> np.ndarray:
    """This test's own reader of a binary STL: the vertices of its triangles."""
    data = path.read_bytes()
    (count,) = struct.unpack_from("<I", data, 80)
    return np.array([struct.unpack_from("<9f", data, 84 + 50 * k + 12) for k in range(count)]).reshape(-1, 3)


# -- 1. every shape kind at its place ------------------------------------------------------------

def test_sphere_is_one_sphere_at_the_origin_of_the_collision(tmp_path):
    (feature,) = features_of(robot(placed('<sphere radius="0.05"/>')))
    np.testing.assert_allclose(feature.centre, XYZ, atol=1e-12)
    assert feature.radius == 0.05 and feature.axis is None


def test_box_is_its_eight_corners_rotated_and_moved():
    R = rotation(*RPY)
    half = np.array([0.1, 0.2, 0.3]) / 2
    expected = [np.array(XYZ) + R @ (half * s) for s in CUBE]
    assert_points(features_of(robot(placed('<box size="0.1 0.2 0.3"/>'))), expected)


@pytest.mark.parametrize("kind", ["cylinder", "capsule"])
def test_cylinder_and_capsule_are_their_two_ends_along_the_rotated_z_axis(kind):
    R = rotation(*RPY)
    features = features_of(robot(placed(f'<{kind} radius="0.04" length="0.2"/>')))
    ends = [np.array(XYZ) + R @ (0, 0, z) for z in (-0.1, 0.1)]
    assert len(features) == 2
    for feature, end in zip(features, ends):
        np.testing.assert_allclose(feature.centre, end, atol=1e-12)
        assert feature.radius == 0.04
        if kind == "cylinder":  # a rim: the lowest point of the end's circle, about the shape's axis
            np.testing.assert_allclose(feature.axis, R @ (0, 0, 1), atol=1e-12)
        else:  # a hemisphere: a sphere at each end
            assert feature.axis is None


def test_shapes_without_origin_sit_at_the_link_origin():
    # (a sphere of radius 1.5 neither holds the box nor lies inside it: both stay)
    features = features_of(robot(collision('<sphere radius="1.5"/>') + collision('<box size="2 4 6"/>')))
    assert features[0].centre == (0.0, 0.0, 0.0)
    assert_points(features[1:], CUBE * (1, 2, 3))


def test_a_shape_inside_another_of_its_body_is_skipped_and_listed():
    """A shape wholly inside another on the same rigid body (here a sphere in a box, and a box on a
    link fixed to it) can never touch first: left out, listed with the container."""
    from mb_sim.urdf import parse_urdf

    text = robot(collision('<box size="2 4 6"/>') + collision('<sphere radius="0.5"/>')).replace(
        "</robot>", '<joint name="mount" type="fixed"><parent link="b"/><child link="sensor"/>'
                    '<origin xyz="0.5 1 1"/></joint><link name="sensor"><collision><geometry>'
                    '<box size="0.01 0.01 0.01"/></geometry></collision></link></robot>')
    description = parse_urdf(text, ground=True)
    assert [(c.link, c.index) for c in description.collisions] == [("b", 0)]
    assert sorted((s.link, s.index) for s in description.skipped_collisions) == [("b", 1), ("sensor", 0)]
    assert all("inside link 'b' <collision 0>" in s.reason for s in description.skipped_collisions)


# -- meshes --------------------------------------------------------------------------------------

@pytest.mark.parametrize("writer, name", [(write_binary_stl, "cube.stl"), (write_ascii_stl, "cube.STL"),
                                          (write_obj, "cube.obj")])
def test_cube_mesh_gives_its_eight_corners_in_every_format(tmp_path, writer, name):
    offset = np.array([0.5, -1.0, 2.0])
    writer(tmp_path / name, CUBE + offset)
    urdf = robot(placed(f'<mesh filename="{name}"/>'))  # relative to the URDF file
    R = rotation(*RPY)
    expected = [np.array(XYZ) + R @ (v + offset) for v in CUBE]
    assert_points(features_of(urdf, tmp_path / "r.urdf"), expected)


@pytest.mark.parametrize("writer", [write_binary_stl, write_ascii_stl, write_obj])
def test_tetrahedron_mesh_scaled(tmp_path, writer):
    writer(tmp_path / f"t.{'obj' if writer is write_obj else 'stl'}", TETRAHEDRON)
    scale = np.array([2.0, 3.0, 0.5])
    name = f"t.{'obj' if writer is write_obj else 'stl'}"
    urdf = robot(collision(f'<mesh filename="file://{tmp_path / name}" scale="2 3 0.5"/>'))
    assert_points(features_of(urdf), TETRAHEDRON * scale)


def test_inner_mesh_vertices_are_not_contact_points(tmp_path):
    write_obj(tmp_path / "c.obj", CUBE, extra="v 0 0 0\nv 0.5 0.2 -0.3\n")
    assert_points(features_of(robot(collision('<mesh filename="c.obj"/>')), tmp_path / "r.urdf"), CUBE)


#: The stated bound on how far a mesh's kept points fall short of its hull along any direction, as
#: a fraction of the hull's bounding-box diagonal (SUPPORT_TOLERANCE, 0.05, is met on the
#: directions the points are chosen on; between them a little more).
SUPPORT_BOUND = 0.06


def shortfall(vertices: np.ndarray, kept: np.ndarray, samples: int = 100_000) -> float:
    """Largest distance between the support planes of all `vertices` and of `kept`, over random
    directions (this test's own: max over vertices of v.d is the hull's support, no hull needed),
    as a fraction of the vertices' bounding-box diagonal."""
    directions = np.random.default_rng(7).normal(size=(samples, 3))
    directions /= np.linalg.norm(directions, axis=1)[:, None]
    gap = max(float(((vertices @ chunk.T).max(axis=0) - (kept @ chunk.T).max(axis=0)).max())
              for chunk in np.array_split(directions, 20))
    return gap / float(np.linalg.norm(np.ptp(vertices, axis=0)))


def assert_stand_for_hull(vertices: np.ndarray, kept: np.ndarray) -> None:
    """`kept` are vertices, extreme along the six axes, within SUPPORT_BOUND of the hull."""
    assert all((np.abs(vertices - p).max(axis=1) < 1e-12).any() for p in kept)  # vertices of the mesh
    for d in np.vstack([np.eye(3), -np.eye(3)]):  # the lowest point along each axis is kept
        assert max(kept @ d) == pytest.approx(max(vertices @ d), abs=1e-12)
    assert shortfall(vertices, kept) <= SUPPORT_BOUND


def test_support_points_are_hull_vertices_within_the_stated_bound_of_the_hull():
    rng = np.random.default_rng(1)
    cloud = rng.normal(size=(400, 3)) * (0.3, 0.1, 0.05)
    scale = np.array([1.0, 2.0, 0.5])
    points = support_points(cloud, scale)
    assert len(points) <= 26
    assert_stand_for_hull(cloud * scale, points)


@pytest.mark.parametrize("mesh", ["with_foot/solo_foot.stl", "with_foot/solo_lower_leg_left_side.stl",
                                  "solo12/solo_12_base.stl"])
def test_solo_meshes_reduce_to_fewer_points_within_the_stated_bound(mesh):
    """Real STL files (Solo12's foot, shin, base): fewer points than the 26 directions kept, the
    shortfall against all the file's vertices along 100 000 random directions within the bound."""
    vertices = read_binary_stl(ROBOTS / "solo_description" / "meshes" / "stl" / mesh)
    points = support_points(vertices, np.ones(3))
    assert 6 <= len(points) <= 20
    assert_stand_for_hull(vertices, points)


def test_solo12_loads_with_ground_and_floating_base_from_the_installed_package():
    robot_model = load_urdf(str(SOLO12), floating_base=True, ground=True)
    (ground,) = robot_model.grounds.values()
    shapes = ground.shapes
    assert len(shapes) == 17 and all(s.shape == "mesh" for s in shapes)
    # The foot: its support points against this test's own reading of the STL file.
    foot = next(s for s in shapes if s.link == "FL_FOOT")
    rest = foot.filename[len("package://example-robot-data/"):]
    vertices = read_binary_stl(ROBOTS.parent / rest)
    for d in np.vstack([np.eye(3), -np.eye(3)]):
        assert max(foot.points @ d) == pytest.approx(max(vertices @ d), abs=1e-7)
    assert shortfall(vertices, foot.points) <= SUPPORT_BOUND
    assert len(ground.features) == sum(len(s.points) for s in shapes)


def test_package_not_found_is_one_line_naming_package_and_searched_paths(monkeypatch, tmp_path):
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "ws"))
    with pytest.raises(URDFError) as err:
        parse_urdf(robot(collision('<mesh filename="package://no_such_pkg/meshes/m.stl"/>')), ground=True)
    message = str(err.value)
    assert "\n" not in message
    assert "link 'b' <collision 0> <mesh>" in message and "package 'no_such_pkg'" in message
    assert str(tmp_path / "ws" / "no_such_pkg") in message


def test_ros_package_path_is_honoured(monkeypatch, tmp_path):
    write_binary_stl((tmp_path / "ws" / "my_pkg" / "meshes").mkdir(parents=True) or
                     tmp_path / "ws" / "my_pkg" / "meshes" / "cube.stl", CUBE)
    urdf = robot(collision('<mesh filename="package://my_pkg/meshes/cube.stl"/>'))
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    with pytest.raises(URDFError, match="package 'my_pkg'"):
        parse_urdf(urdf, ground=True)
    monkeypatch.setenv("ROS_PACKAGE_PATH", os.pathsep.join([str(tmp_path / "elsewhere"), str(tmp_path / "ws")]))
    assert_points(features_of(urdf), CUBE)


def test_ros_package_path_entry_may_be_the_package_but_not_another(monkeypatch, tmp_path):
    package = tmp_path / "src_checkout"  # a package whose directory is not named after it
    write_binary_stl((package / "meshes").mkdir(parents=True) or package / "meshes" / "cube.stl", CUBE)
    urdf = robot(collision('<mesh filename="package://my_pkg/meshes/cube.stl"/>'))
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(package))
    with pytest.raises(URDFError, match="package 'my_pkg'"):  # not my_pkg: its file is not taken
        parse_urdf(urdf, ground=True)
    (package / "package.xml").write_text("<package format='3'><name>my_pkg</name></package>")
    assert_points(features_of(urdf), CUBE)


# -- 2. bad input: one line naming the element ---------------------------------------------------

@pytest.mark.parametrize("geometry, element, problem", [
    ('<sphere radius="0"/>', "<sphere> radius=\"0\"", "must be positive"),
    ('<box size="0.1 -0.2 0.3"/>', "<box> size=\"0.1 -0.2 0.3\"", "must be positive"),
    ('<cylinder radius="0.1" length="nan"/>', "<cylinder> length=\"nan\"", "NaN"),
    ('<capsule radius="0.1"/>', "<capsule>", "needs a 'length'"),
    ('<box size="1 1"/>', "<box> size=\"1 1\"", "expected 3"),
    ('<sphere radius="1"/><box size="1 1 1"/>', "<collision 0>", "<sphere>, <box>"),
    ('<cone radius="1"/>', "<collision 0>", "<cone>; give one of"),
    ('<mesh/>', "<mesh>", "needs a 'filename'"),
    ('<mesh filename="/no/such/file.stl"/>', "<mesh> filename=\"/no/such/file.stl\"", "not found"),
    ('<mesh filename="/dev/null"/>', "filename=\"/dev/null\"", "not a regular file"),
    ('<mesh filename="m.stl" scale="1 0 1"/>', "<mesh> scale=\"1 0 1\"", "must be nonzero"),
])
def test_bad_collision_is_one_line_naming_the_element(geometry, element, problem):
    with pytest.raises(URDFError) as err:
        parse_urdf(robot(collision(geometry)), ground=True)
    message = str(err.value)
    assert "\n" not in message and "link 'b'" in message
    assert element in message and problem in message


def test_bad_collision_origin_is_named():
    with pytest.raises(URDFError, match=r"<collision 0> <origin> rpy=\"0 inf 0\": NaN or infinite"):
        parse_urdf(robot(collision('<sphere radius="1"/>', '<origin rpy="0 inf 0"/>')), ground=True)


def _hostile_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    """Mesh files that must each give one line: the path and the expected problem."""
    (tmp / "garbage.stl").write_bytes(bytes(range(256)) * 7)
    (tmp / "truncated.stl").write_bytes(write_binary_stl(tmp / "t0.stl", CUBE).read_bytes()[:-10])
    (tmp / "words.obj").write_text("v one two three\n")
    (tmp / "short.obj").write_text("v 1 2\nv 3 4\n")
    (tmp / "empty.stl").write_text("solid nothing\nendsolid nothing\n")
    (tmp / "nan.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 nan\n")
    (tmp / "flat.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 0.3 0.3 0\nf 1 2 3\n")
    (tmp / "line.stl").write_text("solid l\nvertex 0 0 0\nvertex 1 1 1\nvertex 2 2 2\nvertex 3 3 3\nendsolid l\n")
    (tmp / "huge.stl").touch()
    os.truncate(tmp / "huge.stl", 65 * 1024 * 1024)  # sparse: no disk used
    (tmp / "far.obj").write_text("v 0 0 0\nv 1e5 0 0\nv 0 1 0\nv 0 0 1\n")
    (tmp / "folder.stl").mkdir()
    os.symlink(tmp / "loop.stl", tmp / "loop.stl")
    os.symlink(tmp / "gone.stl", tmp / "dangling.stl")
    (tmp / "mesh.xyz").write_text("0 0 0\n")
    return {"garbage.stl": "not a readable .stl", "truncated.stl": "not a readable .stl",
            "words.obj": "not a readable .obj", "short.obj": "not a readable .obj",
            "empty.stl": "no vertices", "nan.obj": "NaN or infinite", "flat.obj": "no volume",
            "line.stl": "no volume", "huge.stl": "bytes, above", "far.obj": "wrong units",
            "folder.stl": "is a directory", "loop.stl": "symbolic link", "dangling.stl": "symbolic link",
            "mesh.xyz": "mesh"}


def test_hostile_mesh_files_are_one_line_each(tmp_path):
    problems = _hostile_files(tmp_path)
    for name, problem in problems.items():
        with pytest.raises(URDFError) as err:
            parse_urdf(robot(collision(f'<mesh filename="{tmp_path / name}"/>')), ground=True)
        message = str(err.value)
        assert "\n" not in message, name
        assert f"link 'b' <collision 0> <mesh> filename=\"{tmp_path / name}\"" in message, message
        assert problem in message, message


@pytest.mark.parametrize("ground, problem", [
    ('<ground stiffness="-1"/>', "stiffness must be positive"),
    ('<ground friction="nan"/>', "friction=\"nan\">: NaN or infinite"),
    ('<ground normal="0 0 0"/>', "normal is zero"),
    ('<ground normal="0 1"/>', "normal"),
    ('<ground stifness="1e4"/>', "unknown attribute(s) stifness"),
    ('<ground/><ground/>', "given 2 times"),
    ('<ground exponent="0.9"/>', "exponent must not be below 1"),
    ('<ground damping="-2"/>', "damping must not be below 0"),
    ('<ground stick_velocity="0"/>', "stick_velocity must be positive"),
    ('<ground name="a b"/>', "name 'a b'"),
    ('<ground><plane/></ground>', "unknown element <plane>"),
])
def test_bad_ground_is_one_line_naming_it(ground, problem):
    with pytest.raises(URDFError) as err:
        parse_urdf(robot(collision('<sphere radius="1"/>'), f"<mb_sim>{ground}</mb_sim>"))
    message = str(err.value)
    assert "\n" not in message and "mb_sim ground" in message and problem in message


def test_ground_attributes_are_read():
    description = parse_urdf(robot(collision('<sphere radius="1"/>'), '<mb_sim><ground name="floor" height="0.2" '
                                   'normal="0 0 2" friction="0.7" stiffness="5e4" damping="3" exponent="1.5" '
                                   'stick_velocity="0.02"/></mb_sim>'))
    g = description.extensions.ground
    assert (g.name, g.height, g.friction, g.stiffness, g.damping, g.exponent, g.stick_velocity) == (
        "floor", 0.2, 0.7, 5e4, 3.0, 1.5, 0.02)
    np.testing.assert_array_equal(g.normal, [0, 0, 1])  # normalized


FIXED_BASE = """<robot name="arm">
  <link name="base"><inertial><mass value="5"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link>
  <joint name="mount" type="fixed"><parent link="base"/><child link="plate"/><origin xyz="0 0 0.1"/></joint>
  <link name="plate"><collision name="top"><geometry><cylinder radius="0.1" length="0.01"/></geometry></collision></link>
  <joint name="hinge" type="revolute"><parent link="plate"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
    </inertial>{arm}</link>
  {extension}
</robot>"""


def test_nothing_can_touch_the_ground_is_warned_and_fixed_links_are_skipped():
    urdf = FIXED_BASE.format(arm="<collision/>", extension="<mb_sim><ground/></mb_sim>")
    with pytest.warns(URDFWarning, match="nothing can touch the ground"):
        description = parse_urdf(urdf)
    assert description.collisions == []
    skipped = {(s.link, s.index): s.reason for s in description.skipped_collisions}
    assert sorted(skipped) == [("arm", 0), ("base", 0), ("plate", 0)]
    assert skipped["arm", 0] == "no <geometry> shape"
    assert skipped["base", 0].startswith("its link is fixed to the world")
    assert skipped["plate", 0].startswith("its link is fixed to the world")


def test_robot_without_ground_never_reads_its_collisions():
    # A missing mesh is no error while nothing touches anything.
    description = parse_urdf(robot(collision('<mesh filename="/no/such/file.stl"/>'), ""))
    assert description.extensions.ground is None and description.collisions == []


# -- 3. mb-sim info and --ground -----------------------------------------------------------------

def test_info_lists_used_and_skipped_collisions_and_the_ground(tmp_path, capsys):
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(FIXED_BASE.format(
        arm='<collision><origin xyz="0 0 -0.3"/><geometry><capsule radius="0.03" length="0.5"/></geometry></collision>'
            '<collision name="tip"><geometry><sphere radius="0.05"/></geometry></collision><collision/>',
        extension='<mb_sim><ground friction="0.8" stiffness="1e5"/></mb_sim>'))
    assert main(["info", str(urdf)]) == 0
    out = capsys.readouterr().out.splitlines()
    start = out.index("Ground 'ground': the plane n . x = ground_height, n = (0 0 1) (world axes)")
    section = out[start:]
    assert "  ground_friction = 0.8: ground 'ground': Coulomb friction coefficient mu" in section
    assert any(line.startswith("  ground_stiffness = 100000: ") for line in section)
    assert any(line.startswith("  ground_damping = ") and "(default, from the robot's mass)" in line
               for line in section)
    assert any(line.startswith("  ground_height = 0: ") for line in section)
    assert "  Collision shapes used (2, 3 contact points):" in section
    assert "    link 'arm' <collision 0>: capsule radius 0.03 m length 0.5 m: 2 contact point(s)" in section
    assert "    link 'arm' <collision 1 'tip'>: sphere radius 0.05 m: 1 contact point(s)" in section
    assert "  Collision shapes skipped (3):" in section
    assert any(line.startswith("    link 'base' <collision 0>: its link is fixed to the world") for line in section)
    assert any(line.startswith("    link 'plate' <collision 0>: its link is fixed to the world") for line in section)
    assert "    link 'arm' <collision 2>: no <geometry> shape" in section


def test_ground_flag_adds_the_plane_to_a_real_robot(capsys):
    assert main(["info", "--floating-base", str(SOLO12)]) == 0
    assert "Ground '" not in capsys.readouterr().out
    assert main(["info", "--floating-base", "--ground", str(SOLO12)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  Collision shapes used (17, " in "\n".join(out)
    foot = [line for line in out if line.startswith("    link 'FL_FOOT' <collision 0>: mesh package://")]
    kept = len(support_points(read_binary_stl(ROBOTS / "solo_description/meshes/stl/with_foot/solo_foot.stl"),
                              np.ones(3)))
    assert len(foot) == 1 and foot[0].endswith(f"solo_foot.stl scale 1 1 1: {kept} contact point(s)"), foot
    assert "  Collision shapes skipped (0)" in out


def test_ground_flag_is_accepted_by_every_robot_command():
    from mb_sim.cli import build_parser

    parser = build_parser()
    for command in ("describe", "info", "eom", "derive", "simulate", "linearize", "equilibrium", "export-c"):
        extra = ["--duration", "0.1"] if command == "simulate" else []
        extra += ["/tmp/unused_out_dir"] if command == "export-c" else []
        try:
            args = parser.parse_args([command, "arm6", "--ground", *extra])
        except SystemExit:
            pytest.fail(f"{command} does not take --ground")
        assert args.ground is True


def test_ground_flag_errors_are_one_line(tmp_path, capsys):
    urdf = tmp_path / "bad.urdf"
    urdf.write_text(robot(collision('<sphere radius="-1"/>'), ""))
    assert main(["describe", str(urdf)]) == 0  # no ground: the collision is not read
    capsys.readouterr()
    assert main(["describe", "--ground", str(urdf)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "link 'b' <collision 0> <sphere> radius=\"-1\"" in err


def test_dae_mesh_is_read_through_trimesh_or_named_as_needing_it(tmp_path):
    (tmp_path / "m.dae").write_text("<COLLADA>not really</COLLADA>")
    with pytest.raises(URDFError) as err:
        parse_urdf(robot(collision(f'<mesh filename="{tmp_path / "m.dae"}"/>')), ground=True)
    message = str(err.value)
    assert "\n" not in message and "link 'b' <collision 0> <mesh>" in message
    try:
        import trimesh  # noqa: F401
    except ImportError:
        assert "needs trimesh" in message and "STL and OBJ are read without it" in message
    else:
        assert "not a readable .dae" in message or "no vertices" in message

"""Robots loaded from the cache without SymPy (mb_sim.sim.robot_cache): a fresh process simulates a
cached robot importing neither SymPy, SciPy, rclpy nor urdf_parser_py, and ends bit for bit where
the SymPy path ends; an edited URDF, a changed mesh, other load options are other entries; the
warnings of the first load are given again; a bundle loads in another cache (compiling the C
there); a large model compiles as two translation units into the same results."""
from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from mb_sim import load_urdf
from mb_sim.sim import Simulator
from mb_sim.sim.robot_cache import RobotBundle

REPO = Path(__file__).resolve().parent.parent
ARM6 = REPO / "urdf" / "arm6.urdf"


def _run(sim: Simulator) -> bytes:
    sim.set_state({"elbow_joint": 0.4, "wrist_1_joint": -0.3})
    sim.advance(0.5)
    return np.concatenate([sim.q, sim.u]).tobytes()


def test_a_fresh_process_loads_a_cached_robot_without_sympy_and_ends_where_sympy_ends(tmp_path):
    cache = tmp_path / "cache"
    reference = _run(Simulator(load_urdf(ARM6), cache_dir=cache))  # the component model's path
    _run(Simulator(str(ARM6), cache_dir=cache))  # writes the entry
    assert len(list(cache.glob("*.robot.json"))) == 1
    script = (f"import sys; from mb_sim.sim import Simulator; s = Simulator({str(ARM6)!r}, cache_dir={str(cache)!r}); "
              "s.set_state({'elbow_joint': 0.4, 'wrist_1_joint': -0.3}); s.advance(0.5); import numpy as np; "
              "sys.stdout.write(np.concatenate([s.q, s.u]).tobytes().hex() + ' ' + ','.join(sorted("
              "{'sympy', 'scipy', 'rclpy', 'urdf_parser_py'} & set(sys.modules))))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    state, imported = done.stdout.split(" ")
    assert imported == ""
    assert bytes.fromhex(state) == reference


def test_the_component_model_is_built_when_asked(tmp_path):
    Simulator(str(ARM6), cache_dir=tmp_path)
    sim = Simulator(str(ARM6), cache_dir=tmp_path)
    assert sim._loaded.component_model is None
    assert sim.robot.name == "arm6" and "elbow_joint" in sim.robot.joints


def test_an_edited_urdf_or_other_options_are_other_entries(tmp_path):
    text = ARM6.read_text()
    assert text.count('<mass value="3.7"/>') == 1
    first = Simulator(text, cache_dir=tmp_path)
    heavier = Simulator(text.replace('<mass value="3.7"/>', '<mass value="5.0"/>'), cache_dir=tmp_path)
    assert (first.parameter("shoulder_link_m"), heavier.parameter("shoulder_link_m")) == (3.7, 5.0)
    Simulator(text, cache_dir=tmp_path, floating_base=True)
    assert len(list(tmp_path.glob("*.robot.json"))) == 3


def test_the_warnings_of_the_first_load_are_given_again(tmp_path):
    mobile = (REPO / "test" / "urdf" / "kinematic_zoo.urdf")
    said = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            Simulator(str(mobile), cache_dir=tmp_path)
        said.append(sorted((w.category.__name__, str(w.message)) for w in caught
                           if w.category.__name__ in ("FixedBaseWarning", "RepairWarning", "URDFWarning")))
    assert said[0] and said[0] == said[1]
    assert any(name == "FixedBaseWarning" for name, _ in said[1])


def _binary_stl(path: Path, half: float) -> None:
    """A cube of half-size `half` about the origin as a binary STL (12 triangles)."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * half
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1), (2, 3, 7), (2, 7, 6),
             (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
    data = b"\0" * 80 + struct.pack("<I", len(faces))
    for face in faces:
        data += struct.pack("<3f", 0, 0, 0) + b"".join(struct.pack("<3f", *corners[k]) for k in face) + b"\0\0"
    path.write_bytes(data)


def test_a_changed_mesh_is_read_again(tmp_path):
    mesh = tmp_path / "foot.stl"
    _binary_stl(mesh, 0.1)
    urdf = tmp_path / "block.urdf"
    urdf.write_text(f"""<robot name="block"><link name="world"/>
  <joint name="free" type="floating"><parent link="world"/><child link="block"/></joint>
  <link name="block"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><mesh filename="foot.stl"/></geometry></collision></link>
  <mb_sim><ground/></mb_sim></robot>""")
    cache = tmp_path / "cache"
    small = Simulator(str(urdf), cache_dir=cache)
    os.utime(mesh, ns=(mesh.stat().st_atime_ns, mesh.stat().st_mtime_ns))
    assert Simulator(str(urdf), cache_dir=cache).model.contact_names == small.model.contact_names
    _binary_stl(mesh, 0.2)
    os.utime(mesh, ns=(mesh.stat().st_atime_ns, mesh.stat().st_mtime_ns + 10**9))
    large = Simulator(str(urdf), cache_dir=cache)
    small.set_state({"free_z": 0.5}), large.set_state({"free_z": 0.5})
    small.advance(1.0), large.advance(1.0)
    assert small.q[2] == pytest.approx(0.1, abs=0.01) and large.q[2] == pytest.approx(0.2, abs=0.01)


def test_an_entry_others_could_write_is_not_used(tmp_path):
    Simulator(str(ARM6), cache_dir=tmp_path)
    entry = next(tmp_path.glob("*.robot.json"))
    data = json.loads(entry.read_text())
    data["facts"]["name"] = "tampered"
    entry.write_text(json.dumps(data))
    entry.chmod(0o666)
    assert Simulator(str(ARM6), cache_dir=tmp_path).facts.name == "arm6"


def test_a_bundle_loads_in_another_cache_compiling_its_c_there(tmp_path):
    sim = Simulator(str(ARM6), cache_dir=tmp_path / "here")
    bundle = sim.bundle()
    import pickle

    moved = pickle.loads(pickle.dumps(bundle))
    assert isinstance(moved, RobotBundle) and len(pickle.dumps(bundle)) < 2 * len(bundle.source) + 100_000
    elsewhere = Simulator(moved, cache_dir=tmp_path / "there")
    assert list((tmp_path / "there").glob("*.so"))  # compiled there, from the C
    assert _run(elsewhere) == _run(Simulator(str(ARM6), cache_dir=tmp_path / "here"))


def test_a_large_model_compiles_as_units_into_the_same_library(tmp_path, monkeypatch):
    from mb_sim.codegen import units

    one = Simulator(str(ARM6), cache_dir=tmp_path / "one")
    monkeypatch.setattr(units, "SPLIT_ABOVE", 1000)
    lines = []
    two = Simulator(load_urdf(ARM6), cache_dir=tmp_path / "two", progress=lines.append)
    assert any(re.search(r"in 3 units, [1-3] at a time", line) for line in lines), lines  # main, mb_dynamics, outputs
    assert not [p for p in (tmp_path / "two").iterdir() if "-unit" in p.name]  # the units' files removed
    assert _run(one) == _run(two)
    b1, b2 = one.model.buffers, two.model.buffers
    one.model.evaluate_into(one.time), two.model.evaluate_into(two.time)
    assert b1.out.tobytes() == b2.out.tobytes()  # every output, the other units' included


def test_xacro_args_for_a_plain_urdf_are_said_ignored_from_the_cache_too(tmp_path):
    """Given with a URDF that is not a xacro, xacro_args change nothing: the parser says so on the
    first load, and the cached load (which parses nothing) says the same, once each."""
    said = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            Simulator(str(ARM6), xacro_args={"prefix": "left_"}, cache_dir=tmp_path)
        said.append([str(w.message) for w in caught if "xacro_args" in str(w.message)])
    assert said == [[f"{ARM6}: xacro_args ignored: not a xacro file"]] * 2

"""package.xml and setup.py describe an ament_python package a colcon workspace can build."""
from __future__ import annotations

import ast
import re
import subprocess
import sys

from catkin_pkg.package import parse_package

REQUIRED_EXEC = {
    "rclpy", "std_msgs", "std_srvs", "sensor_msgs", "geometry_msgs", "tf2_msgs", "tf2_ros", "nav_msgs",
    "rosgraph_msgs", "diagnostic_msgs", "launch", "launch_ros", "rviz2", "urdfdom_py",
    "python3-sympy", "python3-numpy", "python3-scipy", "python3-transforms3d",
}


def test_package_xml_validates_with_catkin_pkg(repo):
    package = parse_package(str(repo / "package.xml"))  # raises InvalidPackage on any problem
    package.validate()
    assert package.name == "mb_sim"
    assert package.package_format == 3
    assert package.get_build_type() == "ament_python"


def test_package_xml_lists_every_dependency(repo):
    package = parse_package(str(repo / "package.xml"))
    exec_deps = {dep.name for dep in package.exec_depends}
    assert REQUIRED_EXEC <= exec_deps, f"missing: {sorted(REQUIRED_EXEC - exec_deps)}"
    assert "python3-pytest" in {dep.name for dep in package.test_depends}


#: The rosdep key of each PyPI dependency (setup.py's ``pypi`` extra), from rosdistro's rosdep
#: files; mcap comes with mcap-ros2-support, which requires it (rosdep installs both with pip).
ROSDEP_KEYS = {"sympy": "python3-sympy", "numpy": "python3-numpy", "scipy": "python3-scipy",
               "transforms3d": "python3-transforms3d", "urdf-parser-py": "urdfdom_py", "PyYAML": "python3-yaml",
               "matplotlib": "python3-matplotlib", "mcap": "mcap-ros2-support",
               "mcap-ros2-support": "mcap-ros2-support", "xacro": "xacro", "trimesh": "python3-trimesh-pip",
               "pycollada": "python3-collada", "coal": "coal"}


def test_every_pypi_dependency_has_its_rosdep_key(repo):
    """A workspace set up with rosdep gets what the pypi extra installs (mcap for recordings...)."""
    tree = ast.parse((repo / "setup.py").read_text())
    listed = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                  and getattr(node.targets[0], "id", "") == "PYPI_DEPENDENCIES")
    names = [re.split(r"[<>=!~ ]", item.value)[0] for item in listed.elts]
    assert set(names) == set(ROSDEP_KEYS), "a new PyPI dependency needs its rosdep key here and in package.xml"
    exec_deps = {dep.name for dep in parse_package(str(repo / "package.xml")).exec_depends}
    missing = sorted({ROSDEP_KEYS[name] for name in names} - exec_deps)
    assert not missing, f"package.xml lacks {missing}"


def test_setup_version_matches_package_xml(repo):
    package = parse_package(str(repo / "package.xml"))
    version = subprocess.run([sys.executable, "setup.py", "--version"], cwd=repo,
                             capture_output=True, text=True, check=True).stdout.split()[-1]
    assert version == package.version


def test_console_scripts_are_installed():
    from importlib.metadata import entry_points

    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts.get("mb_sim_node") == "mb_sim.ros.node:main"
    assert scripts.get("mb-sim") == "mb_sim.cli:main"


def test_controllers_start_through_a_light_entry_module():
    """A Ctrl-C while a launch starts: the controllers' console scripts import nothing heavy before
    their signal handling is installed (importing rclpy, the messages and SymPy took about a second,
    and a SIGINT then was a KeyboardInterrupt traceback and exit code -2)."""
    from importlib.metadata import entry_points

    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    for script, function in (("mb_sim_demo_controller", "demo_controller"),
                             ("mb_sim_diff_drive_controller", "diff_drive_controller"),
                             ("mb_sim_lqr_controller", "lqr_controller")):
        assert scripts.get(script) == f"mb_sim.ros.entry:{function}"
    loaded = subprocess.run([sys.executable, "-c", "import sys, mb_sim.ros.entry; "
                             "print(sorted({'rclpy', 'sympy', 'numpy'} & set(sys.modules)))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"

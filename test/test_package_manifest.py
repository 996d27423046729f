"""package.xml and setup.py describe an ament_python package a colcon workspace can build."""
from __future__ import annotations

import subprocess
import sys

from catkin_pkg.package import parse_package

REQUIRED_EXEC = {
    "rclpy", "std_msgs", "std_srvs", "sensor_msgs", "geometry_msgs", "tf2_msgs", "nav_msgs",
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

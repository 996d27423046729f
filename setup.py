"""ament_python package set-up for mb_sim.

Under colcon the dependencies come from package.xml (rosdep), as ROS 2 Python packages do; the
``pypi`` extra names the same dependencies on PyPI for installs without rosdep (``.ci/setup-env``).
"""
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "mb_sim"

# package.xml's rosdep keys under their PyPI names.
PYPI_DEPENDENCIES = [
    "sympy>=1.13",
    "numpy>=1.24",
    "scipy>=1.10",
    "transforms3d>=0.4",
    "urdf-parser-py>=0.0.4",
    "PyYAML>=6",
    "matplotlib>=3.7",
    "mcap>=1.1",
    "mcap-ros2-support>=0.5",
    "xacro>=2.0",  # .xacro robots (mb_sim.urdf.xacro_expansion)
    "trimesh>=4.0",  # collision meshes other than STL and OBJ (mb_sim.urdf.meshes)
    "pycollada>=0.8",  # ... Collada (.dae), common in ROS packages, through trimesh
    "coal>=3.0",  # contact manifolds between any two shapes (mb_sim.sim.manifolds): hpp-fcl's successor
]
# Sweeps on a Dask cluster (mb_sim.sweep, backend="dask"): from PyPI (rosdep has no keys for them);
# set-up installs them, and the local backend needs neither.
SWEEP_DEPENDENCIES = ["dask>=2024.1", "distributed>=2024.1"]
TEST_DEPENDENCIES = [
    "pytest>=7",
    "pytest-xdist>=3.5",  # make test runs the suite on every core
    "jvrc-description>=1.0",  # JVRC-1, a humanoid with Collada meshes (test/test_friction.py)
    "upkie-description>=2.0",  # Upkie: pybullet <contact> tags, a start inside the ground (test/test_friction.py)
    "catkin-pkg>=1.0",
    "colcon-common-extensions>=0.3",
    "pin>=3.0",
    "example-robot-data>=4.0",
    # the peer the contact model is checked against side by side (test/test_contact_physics.py)
    "mujoco>=3.2",
    # pybullet_data's URDFs for test/test_third_party_simulate.py (wheels for CPython 3.11; elsewhere
    # those cases skip rather than build pybullet from source)
    'pybullet>=3.2; python_version < "3.12"',
]

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    # The hand-written C runtime every generated model includes (and mb-sim export-c copies).
    package_data={f"{PACKAGE}.codegen": ["c/*.c", "c/*.h"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.rviz")),
        (f"share/{PACKAGE}/urdf", glob("urdf/*.urdf")),
    ],
    install_requires=["setuptools"],
    extras_require={"pypi": PYPI_DEPENDENCIES, "test": TEST_DEPENDENCIES, "sweep": SWEEP_DEPENDENCIES},
    zip_safe=True,
    maintainer="mb_sim developers",
    maintainer_email="mb-sim@example.org",
    description="Multibody simulator for ROS 2 with symbolically derived equations of motion.",
    license="BSD-3-Clause",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "mb_sim_node = mb_sim.ros.node:main",
            "mb-sim = mb_sim.cli:main",
            "mb_sim_demo_controller = mb_sim.ros.entry:demo_controller",
            "mb-sim-demo = mb_sim.ros.demo:main",
            "mb_sim_diff_drive_controller = mb_sim.ros.entry:diff_drive_controller",
            "mb_sim_lqr_controller = mb_sim.ros.entry:lqr_controller",
            "mb_sim_pick_and_place = mb_sim.ros.entry:pick_and_place",
        ],
        "mb_sim.components": [],
    },
)

"""Launch files are valid Python declaring the documented arguments (launch_ros is not installable
here; where it is, the launch description is also built)."""
from __future__ import annotations

import ast
import importlib.util

import pytest

LAUNCH_ARGUMENTS = {"sim.launch.py": {"robot", "params_file"}}


def _declared_arguments(source: str) -> set[str]:
    """Names given to DeclareLaunchArgument(...) calls in a launch file."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "DeclareLaunchArgument":
            names.add(ast.literal_eval(node.args[0]))
    return names


@pytest.mark.parametrize("name", sorted(LAUNCH_ARGUMENTS))
def test_launch_file_compiles_and_declares_arguments(repo, name):
    source = (repo / "launch" / name).read_text()
    compile(source, name, "exec")
    assert "def generate_launch_description" in source
    assert _declared_arguments(source) == LAUNCH_ARGUMENTS[name]


@pytest.mark.skipif(importlib.util.find_spec("launch_ros") is None, reason="launch_ros not installed")
@pytest.mark.parametrize("name", sorted(LAUNCH_ARGUMENTS))
def test_launch_description_builds(repo, name):
    spec = importlib.util.spec_from_file_location("launch_file", repo / "launch" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.generate_launch_description().entities

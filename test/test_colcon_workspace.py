"""The package builds in a throwaway colcon workspace into the layout ros2 run/launch rely on."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

COLCON = Path(sys.executable).parent / "colcon"


def _copy_sources(repo: Path, destination: Path) -> None:
    """Copy the files git tracks or would track (what a clone holds) into `destination`."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=repo,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = repo / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def test_colcon_build_install_layout(repo, tmp_path):
    _copy_sources(repo, tmp_path / "src" / "mb_sim")
    build = subprocess.run([str(COLCON), "build", "--base-paths", "src"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr

    prefix = tmp_path / "install" / "mb_sim"
    for executable in ("mb_sim_node", "mb-sim"):
        path = prefix / "lib" / "mb_sim" / executable
        assert path.is_file() and path.stat().st_mode & 0o111, f"{path} missing or not executable"
    share = prefix / "share" / "mb_sim"
    assert (share / "package.xml").read_text() == (repo / "package.xml").read_text()
    assert (prefix / "share" / "ament_index" / "resource_index" / "packages" / "mb_sim").is_file()
    for folder in ("launch", "config", "urdf"):
        shipped = sorted(p.name for p in (repo / folder).iterdir() if p.is_file())
        installed = sorted(p.name for p in (share / folder).iterdir())
        assert installed == shipped, f"share/mb_sim/{folder}"
    runtime = sorted(p.name for p in (repo / "mb_sim" / "codegen" / "c").iterdir())  # every model includes it
    (installed_runtime,) = prefix.glob("lib/python*/site-packages/mb_sim/codegen/c")
    assert sorted(p.name for p in installed_runtime.iterdir()) == runtime
    assert (tmp_path / "install" / "setup.bash").is_file()

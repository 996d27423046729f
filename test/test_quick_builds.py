"""Quick first builds (issue 37, mb_sim.codegen.tiers): a cache miss compiles the C unoptimized and
runs at once; a process of its own builds the optimized library, which the model takes up at a call.
The two compute the same results bit for bit, so a run does not depend on when the switch happens.

The compiler is the real one behind a wrapper (``$CC``) that logs each call and can hold back or
fail the optimizing ones, so the order of events is the test's, not the machine's."""
from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import warnings
from pathlib import Path

import numpy as np
import pytest

from mb_sim.codegen.compiler import QUICK_FLAGS, TCC_FLAGS, quick_flags
from mb_sim.codegen.tiers import FIRST_BUILD_VARIABLE, OptimizedBuildWarning, quick_first_builds
from mb_sim.resources import robot_path
from mb_sim.sim import Simulator

#: A closed loop (projection and constraint code) driven by gravity.
ROBOT = "four_bar"


def _compiler(tmp_path: Path, *, delay: float = 0.0, fail: bool = False) -> Path:
    """A `cc` that logs its optimization level, and sleeps `delay` s or fails before an -O2 compile."""
    log = tmp_path / "cc.log"
    script = tmp_path / "cc"
    script.write_text(
        "#!/bin/sh\n"
        f'level=none; for a in "$@"; do case "$a" in -O0|-O2) level=$a;; esac; done\n'
        f'echo "$level" >> {log}\n'
        f'if [ "$level" = -O2 ]; then sleep {delay}; {"echo cc1: out of memory >&2; exit 4;" if fail else ""} fi\n'
        'exec cc "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return log


def _run(cache: Path, wait_between: bool) -> tuple[np.ndarray, list[str], object]:
    lines: list[str] = []
    sim = Simulator(robot_path(ROBOT), cache_dir=cache, progress=lines.append)
    sim.advance(0.3)
    before = sim.model.library_path
    if wait_between:
        assert sim.model.wait_until_optimized(timeout=120)
    sim.advance(0.3)
    return np.concatenate([sim.q, sim.u, sim.z]), lines, (before, sim.model)


def test_a_first_load_runs_quickly_then_switches_to_the_optimized_build_bit_for_bit(tmp_path, monkeypatch):
    log = _compiler(tmp_path, delay=3.0)
    monkeypatch.setenv("CC", str(tmp_path / "cc"))
    monkeypatch.setenv(FIRST_BUILD_VARIABLE, "quick")
    state, lines, (before, model) = _run(tmp_path / "quick", wait_between=True)
    assert any("quickly (unoptimized, -O0)" in line for line in lines), lines
    assert any("optimized build runs in the background" in line for line in lines), lines
    assert any("calls run the optimized build now" in line for line in lines), lines
    assert before != model.library_path and model.optimized  # the first 0.3 s ran on the quick build
    assert log.read_text().split().count("-O0") >= 1 and "-O2" in log.read_text().split()
    monkeypatch.setenv(FIRST_BUILD_VARIABLE, "optimized")
    reference, lines, (_, reference_model) = _run(tmp_path / "optimized", wait_between=False)
    assert not any("-O0" in line for line in lines) and reference_model.optimized
    assert np.array_equal(state, reference)  # the switch changes nothing but the speed


def test_the_next_load_finds_the_optimized_build_and_one_build_serves_two_loads(tmp_path, monkeypatch):
    log = _compiler(tmp_path, delay=2.0)
    monkeypatch.setenv("CC", str(tmp_path / "cc"))
    monkeypatch.setenv(FIRST_BUILD_VARIABLE, "quick")
    first = Simulator(robot_path(ROBOT), cache_dir=tmp_path)
    second = Simulator(robot_path(ROBOT), cache_dir=tmp_path)  # while the first's optimized build runs
    assert not first.model.optimized and not second.model.optimized
    assert first.model.wait_until_optimized(timeout=120) and second.model.wait_until_optimized(timeout=120)
    assert log.read_text().split().count("-O2") == log.read_text().split().count("-O0")  # built once
    lines: list[str] = []
    third = Simulator(robot_path(ROBOT), cache_dir=tmp_path, progress=lines.append)
    assert third.model.optimized and third.model.library_path == first.model.library_path
    assert not any("compiling" in line for line in lines), lines
    assert not list(tmp_path.glob(".*.optimizing"))  # the build's marker is gone with it


def test_a_failed_optimized_build_is_said_and_the_quick_build_runs_on(tmp_path, monkeypatch):
    _compiler(tmp_path, fail=True)
    monkeypatch.setenv("CC", str(tmp_path / "cc"))
    monkeypatch.setenv(FIRST_BUILD_VARIABLE, "quick")
    sim = Simulator(robot_path(ROBOT), cache_dir=tmp_path)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert not sim.model.wait_until_optimized(timeout=120)
        sim.advance(0.1)
    messages = [str(w.message) for w in said if w.category is OptimizedBuildWarning]
    assert len(messages) == 1 and "model 'four_bar'" in messages[0] and "out of memory" in messages[0], messages
    assert np.all(np.isfinite(sim.q)) and sim.time == pytest.approx(0.1)


def test_the_first_build_variable_is_checked(monkeypatch):
    monkeypatch.setenv(FIRST_BUILD_VARIABLE, "fast")
    with pytest.raises(ValueError, match=r"\$MB_SIM_FIRST_BUILD must be 'quick' or 'optimized', got 'fast'"):
        quick_first_builds()
    monkeypatch.delenv(FIRST_BUILD_VARIABLE)
    assert quick_first_builds()  # the default


# --- tcc: the quick build's compiler where it is installed ------------------------------------
#: Robots whose generated C together holds every kind of code: closed loops (projection), contact
#: with the ground and between links, DC motors, spring-dampers, rolling wheels, every joint type.
TCC_ROBOTS = ["four_bar", "stewart_platform", "diff_drive_contact", "spring_mass", "wheeled_base",
              "test/urdf/contact_ball.urdf", "test/urdf/self_collision_chain.urdf", "test/urdf/kinematic_zoo.urdf"]


def _flat(outputs) -> np.ndarray:
    """Every number of a SimulationOutputs, in a fixed order (NaN as a number)."""
    numbers: list[float] = []

    def add(value) -> None:
        if dataclasses.is_dataclass(value):
            for field in dataclasses.fields(value):
                add(getattr(value, field.name))
        elif isinstance(value, dict):
            for key in sorted(value):
                add(value[key])
        elif isinstance(value, (list, tuple, np.ndarray)):
            for item in np.asarray(value, dtype=object).ravel():
                add(item)
        elif isinstance(value, (int, float, np.number, bool)):
            numbers.append(float(value))
    add(outputs)
    return np.nan_to_num(np.array(numbers), nan=1234.5)


def _tcc_path(tmp_path: Path) -> Path:
    """A directory for the front of $PATH: `tcc` logging its calls, `cc` failing every -O2 build
    (and linking tcc's object file)."""
    directory = tmp_path / "bin"
    directory.mkdir()
    hold_back = 'for a in "$@"; do [ "$a" = -O2 ] && { echo cc1: held back by the test >&2; exit 4; }; done\n'
    for name, body in (("tcc", f'echo tcc >> {directory / "log"}\nexec {shutil.which("tcc")} "$@"\n'),
                       ("cc", f'{hold_back}exec {shutil.which("cc")} "$@"\n')):
        (directory / name).write_text("#!/bin/sh\n" + body)
        (directory / name).chmod(0o755)
    return directory


@pytest.mark.skipif(shutil.which("tcc") is None, reason="tcc is not installed (make setup installs Debian's tcc)")
@pytest.mark.parametrize("robot", TCC_ROBOTS)
def test_the_tcc_quick_build_computes_what_the_optimized_build_does_bit_for_bit(robot, repo, tmp_path, monkeypatch,
                                                                               model_cache):
    """0.5 s run entirely on tcc's library (the optimized build held back) against the same 0.5 s on
    gcc -O2's: state and every output (poses, accelerations, constraint forces, contacts, sensors)
    equal bit for bit."""
    path = repo / robot if robot.endswith(".urdf") else robot_path(robot)
    monkeypatch.delenv("CC", raising=False)
    bin_directory = _tcc_path(tmp_path)
    monkeypatch.setenv("PATH", f"{bin_directory}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(FIRST_BUILD_VARIABLE, "quick")
    lines: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quick = Simulator(path, cache_dir=tmp_path / "cache", progress=lines.append)
        quick.model.wait_until_optimized(timeout=120)  # fails: the quick build runs on
        quick.advance(0.5)
    assert any("quickly (tcc)" in line for line in lines), lines
    assert (bin_directory / "log").read_text().split() == ["tcc"] and not quick.model.optimized
    monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])
    monkeypatch.setenv(FIRST_BUILD_VARIABLE, "optimized")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = Simulator(path, cache_dir=model_cache)
        reference.advance(0.5)
    assert reference.model.optimized
    state = [np.concatenate([sim.q, sim.u, sim.z]) for sim in (quick, reference)]
    assert np.array_equal(*state) and np.any(state[0] != np.concatenate(quick.initial_state[:3]))
    assert np.array_equal(_flat(quick.outputs()), _flat(reference.outputs()))
    assert _stack_flags(quick.model.library_path) == "RW"  # no executable stack for the process


def _stack_flags(library: Path) -> str:
    """The flags of a 64-bit ELF file's GNU_STACK program header ("" without one: glibc then
    makes the stack executable)."""
    data = library.read_bytes()
    offset, size, count = int.from_bytes(data[32:40], "little"), data[54], int.from_bytes(data[56:58], "little")
    for k in range(count):
        header = data[offset + k * size: offset + (k + 1) * size]
        if int.from_bytes(header[:4], "little") == 0x6474E551:  # PT_GNU_STACK
            flags = int.from_bytes(header[4:8], "little")
            return "R" * bool(flags & 4) + "W" * bool(flags & 2) + "X" * bool(flags & 1)
    return ""


def test_tcc_is_the_quick_compiler_only_where_installed_and_cc_unset(tmp_path, monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(_tcc_path(tmp_path)))
    assert quick_flags() == TCC_FLAGS
    monkeypatch.setenv("CC", "cc")  # a compiler the user chose is used at every level
    assert quick_flags() == QUICK_FLAGS
    monkeypatch.setenv("CC", "  ")  # set but empty: no choice
    assert quick_flags() == TCC_FLAGS
    monkeypatch.delenv("CC")
    monkeypatch.setenv("PATH", str(tmp_path))  # no tcc
    assert quick_flags() == QUICK_FLAGS


def test_a_failing_tcc_gives_way_to_cc_O0(tmp_path, monkeypatch):
    """A tcc that cannot build (an installation without its runtime files) costs the first load
    one progress line, not the load."""
    directory = tmp_path / "bin"
    directory.mkdir()
    (directory / "tcc").write_text("#!/bin/sh\necho \"tcc: error: file 'crt1.o' not found\" >&2\nexit 1\n")
    (directory / "tcc").chmod(0o755)
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(FIRST_BUILD_VARIABLE, "quick")
    lines: list[str] = []
    sim = Simulator(robot_path("pendulum"), cache_dir=tmp_path / "cache", progress=lines.append)
    said = [line for line in lines if "the quick build by tcc failed" in line]
    assert len(said) == 1 and "crt1.o" in said[0] and "compiling with cc -O0 instead" in said[0], lines
    assert any("quickly (unoptimized, -O0)" in line for line in lines), lines
    sim.advance(0.1)
    assert np.all(np.isfinite(sim.q)) and sim.model.wait_until_optimized(timeout=120)

"""Third-party URDFs simulate (issue 23): each runs 10 s at the defaults with nothing but gravity,
from a start inside its joint limits, without divergence and without gaining energy.

The robots come from packages a user has: example-robot-data (a test dependency) and pybullet's
``pybullet_data`` (its cases skip in one line when pybullet is not installed).  Each case names the
failure class it covers; every case failed on the code before issue 23 (``bench/corpus_simulate.py``
surveys all of these packages' URDFs):

* stiff joint damping / friction on light links (RK4 at 1 ms diverged within milliseconds);
* a start beyond the joint limits (q = 0 outside them: the stop stores up to kJ at t = 0);
* XML that urdfdom accepts (a blank line before ``<?xml``; ``lower > upper`` meaning no limit);
* real fast motion (a free fall, a swing past 100 x the URDF velocity limit) that a runaway
  check must not stop.

The energy ``E`` is :meth:`~mb_sim.sim.runaway.RunawayWatch.energy` (kinetic, gravity, springs,
the joint stops' stored energy, motors): with dissipation it may only fall; it may rise by at most
``ENERGY_TOLERANCE`` of its scale (the larger of ``|E(0)|`` and the largest kinetic energy seen).
"""
from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from mb_sim.sim import Simulator
from pinocchio_reference import example_robot_data_dir

DURATION = 10.0
CALL = 0.1  # s per advance(): the energy's peak kinetic part is sampled this often
ENERGY_TOLERANCE = 1e-3
#: Energy a stop may hold at t = 0 [J]: none beyond rounding (the start is inside the limits).
STORED_AT_START = 1e-9


@dataclass(frozen=True)
class Case:
    """One URDF: `source` (its package), `path` inside the package's robot folder, what it `covers`."""

    source: str
    path: str
    covers: str

    def __str__(self) -> str:
        return f"{self.source}:{self.path}"


CASES = [
    Case("example-robot-data", "z1_description/urdf/z1.urdf",
         "stiff damping and friction on the light wrist links"),
    Case("example-robot-data", "allegro_hand_description/urdf/allegro_right_hand.urdf",
         "stiff damping on 16 light finger joints; the thumb's joint_12.0 has q = 0 beyond its limits"),
    Case("example-robot-data", "kinova_description/robots/kinova.urdf",
         "q = 0 beyond the limits of three joints (3.2 kJ stored in the stops at t = 0)"),
    Case("pybullet_data", "xarm/xarm6_robot.urdf",
         "damping 1 and friction 1 on link6 (izz 8e-5 kg m^2): RK4 at 1 ms diverged in milliseconds"),
    Case("pybullet_data", "kuka_iiwa/model_vr_limits.urdf",
         "q = 0 beyond lbr_iiwa_joint_4's limits (0.57 kJ stored at t = 0)"),
    Case("pybullet_data", "differential/diff_ring.urdf",
         "a blank line before <?xml (urdfdom accepts it)"),
    Case("pybullet_data", "cube_no_rotation.urdf",
         "<limit lower > upper> for 'no limit' (urdfdom accepts it): a cube falling freely for 10 s"),
]


def robots_folder(source: str) -> Path:
    """The folder the case paths of `source` are relative to; skips in one line without its package."""
    if source == "example-robot-data":
        return example_robot_data_dir()
    spec = importlib.util.find_spec(source)  # pybullet_data: a top-level package of the pybullet wheel
    if spec is None or spec.origin is None:
        pytest.skip(f"{source} is not installed (it comes with pip install pybullet)")
    return Path(spec.origin).parent


@pytest.fixture(scope="module")
def cache_dir(model_cache) -> Path:
    """One compile cache for the module."""
    return model_cache


def load(case: Case, cache_dir: Path) -> Simulator:
    """The case's simulator at the defaults (its load warnings are not what is tested here)."""
    path = robots_folder(case.source) / case.path
    assert path.is_file(), f"{case.source} no longer ships {case.path}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Simulator(path, cache_dir=cache_dir)


def run(sim: Simulator, duration: float) -> tuple[float, float, float]:
    """Run `duration` s with zero inputs; ``(E at the start, E at the end, largest kinetic energy)``."""
    start, peak = sim.runaway.energy(sim.time)
    while sim.time < duration - 1e-9:
        sim.advance(CALL)
        _, kinetic = sim.runaway.energy(sim.time)
        peak = max(peak, kinetic)
    end, _ = sim.runaway.energy(sim.time)
    return start, end, peak


@pytest.mark.parametrize("case", CASES, ids=str)
def test_runs_10_s_at_the_defaults_without_gaining_energy(case: Case, cache_dir: Path):
    """Loads, starts inside its joint limits, runs 10 s (no SimulationError: no divergence, no
    runaway) and ends with no more energy than it started with, beyond 1e-3 of the scale."""
    sim = load(case, cache_dir)
    total, _ = sim.runaway.energy(sim.time)
    stored = total - sim.outputs(False).energy  # the stops' (and motors') energy at rest
    start, end, peak = run(sim, DURATION)
    scale = max(abs(start), peak)
    assert end - start <= ENERGY_TOLERANCE * scale + 1e-9, (
        f"{case} ({case.covers}): the energy rose from {start:.6g} J to {end:.6g} J (scale {scale:.4g} J)")
    assert stored <= STORED_AT_START, f"{case} ({case.covers}): started with {stored:.4g} J in its joint stops"

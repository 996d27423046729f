"""Sweeps (mb_sim.sweep): the same rows in one process, on a pool of processes and on a Dask
LocalCluster of two workers; a sample replayed alone from its recorded seed, bit for bit; a
failing sample is a row; bad descriptions are one line before any sample runs; batched C
rollouts end where the simulator ends, bit for bit, on any number of threads; the CLI."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mb_sim.sim import Simulator
from mb_sim.sweep import SweepError, SweepSpec, replay_sample, rollout, run_sweep
from mb_sim.sweep.spec import Choice, Command, Grid, Normal, Switch, Uniform, load_sweep, sample_seed

REPO = Path(__file__).resolve().parent.parent
ARM6, PENDULUM, FOUR_BAR = (str(REPO / "urdf" / f"{n}.urdf") for n in ("arm6", "pendulum", "four_bar"))


def _without_wall_time(rows):
    return [{k: v for k, v in row.items() if k != "wall_time"} for row in rows]


@pytest.fixture(scope="module")
def cache(model_cache):
    return str(model_cache)


def arm_spec(**changes) -> SweepSpec:
    spec = SweepSpec(robot=ARM6, duration=0.3, samples=3, seed=11,
                     parameters={"wrist_3_link_m": Uniform(0.1, 0.5), "elbow_joint_limit_damping": Grid((1.0, 20.0))},
                     initial_positions={"elbow_joint": Normal(0.0, 0.3), "shoulder_lift_joint": Choice((-0.5, 0.5))},
                     commands=(Command(0.1, positions={"wrist_1_joint": 0.4}), Command(0.2, efforts={"shoulder_pan_joint": 2.0})),
                     outputs=("state", "energy", "link:wrist_3_link"), record_every=50)
    return spec.replace(**changes)


def test_the_rows_are_the_same_in_one_process_on_a_pool_and_on_dask(cache, tmp_path):
    spec = arm_spec()
    assert spec.size == 6  # a grid of two, three draws each
    alone = run_sweep(spec, workers=1, progress=False, cache_dir=cache)
    pooled = run_sweep(spec, workers=2, progress=False, cache_dir=cache, trajectories=tmp_path / "runs.mcap")
    dask = run_sweep(spec, backend="dask", workers=2, progress=False, cache_dir=cache)
    assert [row["status"] for row in alone] == ["ok"] * 6
    assert _without_wall_time(alone.rows) == _without_wall_time(pooled.rows) == _without_wall_time(dask.rows)
    assert [row["parameter.elbow_joint_limit_damping"] for row in alone] == [1.0] * 3 + [20.0] * 3
    assert len({row["parameter.wrist_3_link_m"] for row in alone}) == 6  # drawn per sample
    assert all(row["seed"] == sample_seed(11, row["sample"]) for row in alone)
    assert {"q.elbow_joint_q", "u.elbow_joint_u", "kinetic_energy", "link:wrist_3_link.z"} <= set(alone.columns)
    from mcap.reader import make_reader

    with open(tmp_path / "runs.mcap", "rb") as file:
        counts: dict[str, int] = {}
        last: dict[str, dict] = {}
        for _, channel, message in make_reader(file).iter_messages(log_time_order=False):
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            last[channel.topic] = json.loads(message.data)
    assert counts == {f"/sample_{i}": 7 for i in range(6)}  # t = 0, 0.05 ... 0.3
    for i in range(6):  # the recorded end is the row's final state
        assert last[f"/sample_{i}"]["t"] == pytest.approx(0.3)
        assert last[f"/sample_{i}"]["q"]["elbow_joint_q"] == pooled.rows[i]["q.elbow_joint_q"]


def test_a_sample_replays_alone_bit_for_bit(cache):
    spec = arm_spec()
    rows = run_sweep(spec, workers=2, progress=False, cache_dir=cache).rows
    for index in (0, 4):
        replayed = replay_sample(spec, index, cache_dir=cache).row
        assert _without_wall_time([replayed]) == _without_wall_time([rows[index]])


def test_a_sample_that_diverges_is_a_row(cache):
    spec = SweepSpec(robot=PENDULUM, duration=0.2, samples=1, parameters={"rod_m": Grid((1.0, -1.0, 2.0))})
    results = run_sweep(spec, workers=2, progress=False, cache_dir=cache)
    assert [row["status"] for row in results] == ["ok", "diverged", "ok"]
    assert "mass matrix" in results.rows[1]["error"] or "positive definite" in results.rows[1]["error"]
    assert results.rows[2]["sim_time"] == pytest.approx(0.2)
    assert results.failed == [results.rows[1]]


def test_constraint_switches_and_a_controller(cache):
    spec = SweepSpec(robot=FOUR_BAR, duration=0.2, samples=2, switches=(Switch(0.1, "rocker_pin", False),),
                     controller=hold_crank, outputs=("joints",))
    rows = run_sweep(spec, workers=1, progress=False, cache_dir=cache).rows
    assert [row["status"] for row in rows] == ["ok", "ok"]
    assert rows[0]["position.crank_joint"] != rows[1]["position.crank_joint"]  # each its own random push


def hold_crank(sim, rng) -> None:
    """A controller for the test: a random effort on the crank (the sample's generator)."""
    sim.set_efforts({"crank_joint": float(rng.normal(0.0, 0.5))})


@pytest.mark.parametrize("change, says", [
    ({"parameters": {"no_such_parameter": 1.0}}, "parameters: the robot has no parameter 'no_such_parameter'"),
    ({"initial_positions": {"knee": 1.0}}, "initial_positions: the robot has no joint or coordinate 'knee'"),
    ({"commands": (Command(0.1, efforts={"nowhere": 1.0}),)}, "commands[0].efforts: the robot has no actuated joint"),
    ({"switches": (Switch(0.1, "loop", False),)}, "switches[0]: the robot has no constraint 'loop'"),
])
def test_unknown_names_are_one_line_before_any_sample_runs(cache, change, says):
    ran = []
    with pytest.raises(SweepError) as err:
        run_sweep(arm_spec(**change), workers=1, progress=ran.append, cache_dir=cache)
    assert says in str(err.value) and "\n" not in str(err.value)
    assert not any("samples (" in line for line in ran)  # nothing ran


@pytest.mark.parametrize("field, value, says", [
    ("samples", 0, "samples must be a positive whole number"), ("samples", 2.5, "samples must be"),
    ("duration", -1.0, "duration must be positive"), ("duration", float("nan"), "duration must be a finite number"),
    ("parameters", {"rod_m": Uniform(2.0, 1.0)}, "uniform low 2 is above high 1"),
    ("commands", (Command(5.0),), "commands[0].time must be within [0, duration"),
    ("outputs", ("everything",), "unknown output 'everything'"),
    ("xacro_args", 3, "xacro_args must be a mapping of argument names to values"),
    ("xacro_args", {"prefix": ["left"]}, "xacro_args must be a mapping"),
])
def test_bad_values_are_one_line(field, value, says):
    with pytest.raises(SweepError, match=None) as err:
        SweepSpec(**{"robot": PENDULUM, "duration": 1.0, field: value})
    assert says in str(err.value)


@pytest.mark.slow
def test_an_unreachable_scheduler_is_one_line(cache):
    with pytest.raises(SweepError) as err:
        run_sweep(arm_spec(), backend="dask", address="tcp://127.0.0.1:9", progress=False, cache_dir=cache)
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in str(err.value)


def test_batched_rollout_ends_where_the_simulator_ends(cache):
    sim = Simulator(ARM6, cache_dir=cache)
    rng = np.random.default_rng(3)
    starts, ends = [], []
    for _ in range(5):
        sim.reset()
        sim.set_state({j: float(rng.normal(0, 0.4)) for j in ("elbow_joint", "wrist_1_joint")})
        starts.append(np.concatenate([sim.q, sim.u, sim.z]))
        sim.advance(0.25)
        ends.append(np.concatenate([sim.q, sim.u, sim.z]))
    sim.reset()
    one = rollout(sim, np.array(starts), 250)
    two = rollout(sim, np.array(starts), 250, threads=2, record=True)
    assert not one.status.any()
    assert one.states.tobytes() == np.array(ends).tobytes() == two.states.tobytes()
    assert np.array_equal(two.trajectory[:, -1], two.states) and two.trajectory.shape == (5, 250, 12)
    assert np.allclose(one.times, 0.25)


def test_rollout_reports_a_failing_state(cache):
    sim = Simulator(PENDULUM, cache_dir=cache)
    states = np.tile(np.concatenate([sim.q, sim.u, sim.z]), (3, 1))
    params = np.tile(sim.model.buffers.params, (3, 1))
    params[1, sim.parameter_names.index("rod_m")] = -1.0  # a negative mass: M is not positive definite
    result = rollout(sim, states, 100, params=params)
    assert list(result.status) == [0, 1, 0]
    assert result.times[1] == 0.0 and result.times[0] == pytest.approx(0.1)


def test_the_cli_runs_a_yaml_description(cache, tmp_path):
    description = tmp_path / "sweep.yaml"
    description.write_text(f"""robot: {ARM6}
duration: 0.2
samples: 4
seed: 5
parameters:
  wrist_3_link_m: {{uniform: [0.1, 0.5]}}
initial_positions:
  elbow_joint: {{normal: [0.0, 0.2]}}
outputs: [state]
""")
    command = [str(Path(sys.executable).parent / "mb-sim"), "sweep", str(description), "--workers", "2",
               "--csv", str(tmp_path / "rows.csv"), "--plot", "initial.elbow_joint", "q.elbow_joint_q",
               str(tmp_path / "plot.png")]
    done = subprocess.run(command, capture_output=True, text=True, env={"MB_SIM_CACHE_DIR": cache,
                                                                          **_environment()})
    assert done.returncode == 0, done.stderr
    assert "4 samples, 0 failed" in done.stdout
    assert (tmp_path / "plot.png").stat().st_size > 1000
    assert len((tmp_path / "rows.csv").read_text().splitlines()) == 5
    spec = load_sweep(description)
    replayed = subprocess.run([*command[:3], "--replay", "2"], capture_output=True, text=True,
                              env={"MB_SIM_CACHE_DIR": cache, **_environment()})
    assert json.loads(replayed.stdout)["initial.elbow_joint"] == spec.sample(2).initial_positions["elbow_joint"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"robot: {ARM6}\nduration: 1\nsampels: 3\n")
    refused = subprocess.run([*command[:2], str(bad)], capture_output=True, text=True,
                             env={"MB_SIM_CACHE_DIR": cache, **_environment()})
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [f"mb-sim: {bad}: unknown field 'sampels' (fields: robot, duration, "
                                                   "samples, seed, parameters, initial_positions, initial_velocities, "
                                                   "commands, switches, outputs, record_every, dt, integrator, "
                                                   "floating_base, ground, xacro_args, control_period)"]


def _environment() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if k != "MB_SIM_CACHE_DIR"}


def test_spring_outputs_are_columns_of_a_row(cache):
    # spring_mass (k = 100 N/m swept, d = 1 N s/m, reference length 1 m, no gravity): each row's
    # spring.<name>.* columns are the spring's own length, rate and force at the state reached.
    spec = SweepSpec(robot=str(REPO / "urdf" / "spring_mass.urdf"), duration=0.3, samples=1,
                     parameters={"spring_stiffness": Grid((50.0, 200.0))}, outputs=("state", "springs"))
    rows = run_sweep(spec, workers=1, progress=False, cache_dir=cache).rows
    assert len(rows) == 2 and rows[0]["spring.spring.force"] != rows[1]["spring.spring.force"]
    for row, k in zip(rows, (50.0, 200.0)):
        length, rate = 1.05 + row["q.slide_q"], row["u.slide_u"]
        assert row["spring.spring.length"] == pytest.approx(length, abs=1e-12)
        assert row["spring.spring.length_rate"] == pytest.approx(rate, abs=1e-12)
        assert row["spring.spring.force"] == pytest.approx(k * (length - 1.0) + 1.0 * rate, abs=1e-9)

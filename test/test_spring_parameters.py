"""A spring-damper's run-time parameters, as Exudyn's connector has them: the constant force f,
the velocity offset L0' and the switch active change the force, f_SD = active (k (L - L0) + d (L' -
L0') + f), and the body's acceleration at once, without a rebuild (urdf/spring_mass: k = 100 N/m,
d = 1 N s/m, L0 = 1 m, a 1 kg body 1.05 m from the anchor, no gravity)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from mb_sim.resources import robot_path
from mb_sim.sim import Simulator


@pytest.fixture(scope="module")
def sim(model_cache):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Simulator(robot_path("spring_mass"), cache_dir=model_cache)


@pytest.mark.parametrize("changes, rate, force", [
    ({}, 0.0, 5.0),                                    # k (L - L0)
    ({"spring_force": 2.0}, 0.0, 7.0),                 # + f
    ({"spring_velocity_offset": 0.3}, 0.0, 4.7),       # + d (L' - L0'), at rest
    ({"spring_velocity_offset": 0.3}, 0.5, 5.2),       # ... moving away at 0.5 m/s
    ({"spring_active": 0.0, "spring_force": 2.0}, 0.5, 0.0),  # switched off: nothing
])
def test_force_offset_and_switch_act_at_run_time(sim, changes, rate, force):
    defaults = {"spring_force": 0.0, "spring_velocity_offset": 0.0, "spring_active": 1.0}
    sim.set_parameters({**defaults, **changes})
    sim.set_state(positions={"slide_q": 0.0}, velocities={"slide_u": rate})
    state = sim.outputs().springs["spring"]
    assert state.force == pytest.approx(force, abs=1e-12)
    np.testing.assert_allclose(state.force_vector, [force, 0.0, 0.0], atol=1e-12)  # +f on marker 0 (anchor)
    _, udot = sim.model.forward_dynamics(sim.q, sim.u, np.zeros(len(sim.model.buffers.inputs)),
                                         sim.model.buffers.params)
    assert udot[0] == pytest.approx(-force, abs=1e-12)  # body (1 kg) back toward the anchor
    sim.set_parameters(defaults)

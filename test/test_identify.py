"""Identification (issue 40): the symbolic regressor against Pinocchio's, base parameters recovered
from recordings with known parameters, the corrected URDF, and bad input named in one line."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from identify_recordings import inverse_dynamics_recording, simulated_recording, write
from mb_sim.identify.identification import identify, structural_base
from mb_sim.identify.parameters import prior_parameters
from mb_sim.identify.regressor import NumericRegressor
from mb_sim.identify.signals import RecordingError, read_joint_states
from mb_sim.identify.validation import replay_error
from mb_sim.model import load_urdf
from mb_sim.urdf import InertiaRepairWarning
from pinocchio_reference import example_robot_data_dir

pytestmark = pytest.mark.filterwarnings("ignore::mb_sim.urdf.URDFWarning")

REPO = Path(__file__).resolve().parent.parent
ARM6, PLANAR = REPO / "urdf" / "arm6.urdf", REPO / "urdf" / "planar_arm3.urdf"


def _with_tool(tmp_path: Path) -> Path:
    """arm6 with a 0.8 kg tool on a fixed joint, rotated and offset: the body merges two massive links."""
    text = ARM6.read_text().replace("</robot>", """
  <link name="tool_mass"><inertial><origin xyz="0.01 -0.02 0.05" rpy="0.3 -0.2 0.5"/><mass value="0.8"/>
    <inertia ixx="0.002" ixy="0.0001" ixz="0" iyy="0.003" iyz="0.0002" izz="0.001"/></inertial></link>
  <joint name="tool_mount" type="fixed"><parent link="wrist_3_link"/><child link="tool_mass"/>
    <origin xyz="0.02 0.01 0.08" rpy="0.4 0.1 -0.3"/></joint>
</robot>""")
    path = tmp_path / "arm6_tool.urdf"
    path.write_text(text)
    return path


def _sources(tmp_path: Path) -> list[Path]:
    robots = example_robot_data_dir()
    return [ARM6, PLANAR, _with_tool(tmp_path), robots / "ur_description" / "urdf" / "ur5_robot.urdf"]


def test_regressor_matches_pinocchio(tmp_path):
    """Y(q, u, u') column by column against computeJointTorqueRegressor (bodies in Pinocchio's
    joint frames, its parameter order), and Y pi of the URDF's parameters against RNEA."""
    rng = np.random.default_rng(7)
    for path in _sources(tmp_path):
        robot = load_urdf(path)
        regressor = NumericRegressor(robot)
        model = pin.buildModelFromUrdf(str(path))
        data = model.createData()
        pi = prior_parameters(robot, regressor.symbolic)
        n_body = 10 * len(regressor.symbolic.bodies)
        for _ in range(4):
            q, u, a = rng.uniform(-2, 2, (3, model.nq))
            Y = regressor(q[None], u[None], a[None])[0]
            reference = pin.computeJointTorqueRegressor(model, data, q, u, a)
            for b, carrier in enumerate(regressor.symbolic.bodies):
                joint = model.frames[model.getFrameId(carrier)].parentJoint
                np.testing.assert_allclose(Y[:, 10 * b:10 * b + 10], reference[:, 10 * (joint - 1):10 * joint],
                                           rtol=0, atol=1e-10, err_msg=f"{path.name}: body {carrier}")
            np.testing.assert_allclose(Y[:, :n_body] @ pi[:n_body], pin.rnea(model, data, q, u, a), rtol=0,
                                       atol=1e-10 * max(1.0, np.abs(pin.rnea(model, data, q, u, a)).max()))


def test_regressor_times_parameters_is_the_simulators_inverse_dynamics():
    """With the URDF's damping and friction: Y pi = M u' - F of the compiled model."""
    from mb_sim.sim import Simulator

    rng = np.random.default_rng(1)
    for path in (ARM6, PLANAR):
        sim, robot = Simulator(path), load_urdf(path)
        regressor = NumericRegressor(robot)
        pi, n = prior_parameters(robot, regressor.symbolic), len(sim.u)
        for _ in range(5):
            q, u, a = rng.uniform(-1, 1, (3, n))
            e = sim.model.evaluate(q, u, np.zeros(len(sim.efforts)))
            expected = e["mass_matrix"].reshape(n, n) @ a - e["forcing"].ravel()
            np.testing.assert_allclose(regressor(q[None], u[None], a[None])[0] @ pi, expected, rtol=0, atol=1e-11)


def _relative_errors(result) -> tuple[float, float]:
    """Largest relative error of the nonzero base parameters, and of the zero ones' share of the efforts."""
    truth = result.base.of(result.prior)
    error = np.abs(result.fit.values - truth)
    nonzero = np.abs(truth) > 1e-9 * np.abs(truth).max()
    return float((error[nonzero] / np.abs(truth[nonzero])).max()), float(error[~nonzero].max(initial=0.0))


@pytest.mark.parametrize("path", [ARM6, PLANAR], ids=["arm6", "planar_arm3"])
def test_noise_free_recording_gives_every_base_parameter(path, tmp_path):
    """Exact motion, efforts from the model: each base parameter (friction included) to 1e-6
    (a 10 ms window: without noise, the narrower the better)."""
    recording = inverse_dynamics_recording(path, tmp_path / "clean.mcap", duration=10.0)
    result = identify(path, recording, window=0.01)
    relative, absolute = _relative_errors(result)
    assert relative < 1e-6, relative
    assert absolute < 1e-7, absolute  # parameters that are zero (a symmetric link's off-diagonal inertia)
    assert len(result.fit.values) == {"arm6": 48, "planar_arm3": 15}[load_urdf(path).name]
    assert result.agreement < 1.0
    np.testing.assert_allclose(result.base.of(result.parameters), result.fit.values, rtol=1e-5, atol=1e-8)


def test_noisy_recording_is_within_three_sigma(tmp_path):
    """1 % noise on positions, velocities and efforts: every base parameter within 3 reported sigma."""
    recording = inverse_dynamics_recording(PLANAR, tmp_path / "noisy.mcap", duration=20.0, noise=0.01)
    result = identify(PLANAR, recording, window=0.2)
    truth = result.base.of(result.prior)
    z = np.abs(result.fit.values - truth) / result.fit.deviations
    assert z.max() < 3.0, dict(zip((result.base.describe(i) for i in range(len(z))), z.round(2)))
    assert z.max() > 0.05  # the deviations are not absurdly large either


def test_wrongly_massed_urdf_is_corrected(tmp_path):
    """Masses +30 % in the URDF: the corrected URDF replays the recorded efforts >= 10x closer."""
    recording = simulated_recording(PLANAR, tmp_path / "run.mcap", duration=20.0)
    heavy = tmp_path / "heavy.urdf"
    heavy.write_text(re.sub(r'<mass value="([0-9.]+)"/>', lambda m: f'<mass value="{1.3 * float(m.group(1)):g}"/>',
                            PLANAR.read_text()))
    result = identify(heavy, recording)
    corrected = tmp_path / "corrected.urdf"
    corrected.write_text(result.urdf_text)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InertiaRepairWarning)  # every body realizable as printed
        load_urdf(corrected)
    signals = read_joint_states(recording)
    before, after = replay_error(heavy, signals), replay_error(corrected, signals)
    assert before.total > 10 * after.total, (before.total, after.total)
    truth = prior_parameters(load_urdf(PLANAR), result_regressor(PLANAR))
    friction = slice(30, 36)
    np.testing.assert_allclose(result.parameters[friction], truth[friction], rtol=0.05)
    changed = [line for line in _diff(heavy.read_text(), result.urdf_text)]
    assert changed and all(re.search(r"<(mass|origin|inertia|dynamics)\b", line) for line in changed), changed


def result_regressor(path):
    return NumericRegressor(load_urdf(path)).symbolic


def _diff(old: str, new: str) -> list[str]:
    import difflib

    return [line for line in difflib.ndiff(old.splitlines(), new.splitlines()) if line[:2] in ("- ", "+ ")]


def test_efforts_from_a_controllers_command_topic(tmp_path):
    """A ros2_control robot's bag: /joint_states without efforts, the efforts commanded on a
    Float64MultiArray topic (joints named by the user, in reverse order), the first command 0.5 s
    in: the samples before it are left out, and the fit is as from the efforts themselves."""
    from identify_recordings import command_topic_recording

    source = inverse_dynamics_recording(PLANAR, tmp_path / "clean.mcap", duration=8.0)
    bag = command_topic_recording(source, tmp_path / "bag.mcap", first=500)
    result = identify(PLANAR, bag, window=0.01, effort_topic="/effort_controller/commands",
                      effort_joints=["joint3", "joint2", "joint1"])
    relative, _ = _relative_errors(result)
    assert relative < 1e-6
    with pytest.raises(RecordingError, match="name their joints in order"):
        identify(PLANAR, bag, effort_topic="/effort_controller/commands")
    with pytest.raises(RecordingError, match="carry no efforts"):
        identify(PLANAR, bag)

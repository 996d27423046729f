"""The example-robot-data corpus: every URDF the wheel ships loads or is refused for a listed reason,
and every robot that loads has Pinocchio's mass matrix and forward dynamics (crba, aba) to 1e-9.

Mobile robots (legged, humanoid, wheeled, flying) get a floating base, Pinocchio's free-flyer; arms,
hands and pendulums stay fixed to the world.  States are random with every bounded joint inside its
limits; joint damping, friction and stops are switched off at run time (Pinocchio's aba has none).

Robots above ``DEFAULT_MAX_DOF`` degrees of freedom (floating base included) take minutes to derive
and compile cold: they carry the ``slow`` marker and run with ``pytest -m slow``; without ``-m`` they
are skipped.  All compiled models share the tests' model cache (variants of one topology compile
once); ``MB_SIM_CORPUS_CACHE=<dir>`` puts them elsewhere.  Cold times: ``bench/bench_corpus.py``.
"""
from __future__ import annotations

import functools
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from mb_sim import URDFError, load_urdf
from mb_sim.codegen import load_numeric_model
from mb_sim.model import Robot
from mb_sim.model.loads import JointDissipation, JointLimitStop
from pinocchio_reference import (
    actuated_joints, coordinates_inside_limits, example_robot_data_dir, mimic_constraint_rows, pinocchio_configuration,
    pinocchio_efforts, relative_error, velocity_map, with_floating_base,
)

ROBOTS = example_robot_data_dir()
RELATIVE_TOLERANCE = 1e-9
#: u' is only as accurate as cond(M) x rounding: where M is ill-conditioned u' is compared to
#: cond(M) x this instead (icub: point-mass neck links, cond(M) up to 2e10, u' of two correct solvers
#: 9e-9 apart; M and the forcing still agree to 1e-15 there).
CONDITIONED_TOLERANCE = 1e-15
#: Robots up to this many DoF (floating base included) are compared by default, the rest are `slow`:
#: 16 keeps the default set's cold derivations at about 2 minutes (bench/bench_corpus.py at 7a42adb:
#: 124 s on 2 cores; the 18-DoF quadrupeds would add 11-99 s each).
DEFAULT_MAX_DOF = 16
STATES_PER_ROBOT = 3

#: Files refused on purpose: {path: (why a user would accept it, a substring of the URDFError)}.
REFUSED = {
    "alex_description/urdf/alex_psyonic_hands.urdf": (
        "its finger joints mimic 'index_q1', 'middle_q1', ..., joints the file does not have (it names them "
        "'Left_index_q1', 'Right_index_q1', ...)",
        "mimics unknown joint 'index_q1'"),
    "romeo_description/urdf/romeo.urdf": (
        "hand and finger joints move links of zero mass and zero inertia: a singular mass matrix (Pinocchio's aba "
        "returns NaN)",
        "whose subtree has no mass or rotational inertia"),
    "romeo_description/urdf/romeo_laas_small.urdf": (
        "the gripper joints move links without <inertial>: a singular mass matrix (Pinocchio's aba returns NaN)",
        "whose subtree has no mass or rotational inertia"),
    "ur_description/urdf/ur3.urdf": (
        "an empty <robot> (a xacro output with everything left out)",
        "no <link> elements"),
}

#: Robot folders (or single files) of mobile robots: legged, humanoid, wheeled or flying.
MOBILE = (
    "a1_description", "alexander_description", "anymal_b_simple_description", "anymal_c_simple_description",
    "b1_description", "bolt_description", "borinot_description", "centauro_description", "g1_description",
    "go1_description", "go2_description", "hector_description", "hextilt_description", "human_description",
    "hyq_description", "icub_description", "iris_description", "laikago_description", "pr2_description",
    "quadruped_description", "romeo_description", "simple_humanoid_description", "solo_description",
    "talos_data/robots/talos_full_v2.urdf", "talos_data/robots/talos_full_v2_box.urdf",
    "talos_data/robots/talos_reduced.urdf", "talos_data/robots/talos_reduced_box.urdf",
    "talos_data/robots/talos_reduced_corrected.urdf", "tiago_description", "tiago_pro_description",
)
#: DoF of each URDF joint type.
JOINT_DOF = {"revolute": 1, "continuous": 1, "prismatic": 1, "planar": 3, "floating": 6}

pytestmark = [pytest.mark.filterwarnings("ignore::mb_sim.urdf.URDFWarning"), pytest.mark.slow]  # the whole corpus against Pinocchio (minutes cold; test_dynamics_vs_pinocchio keeps six robots in make test): make test-slow


# --- The corpus ------------------------------------------------------------------------------------

def corpus_files() -> list[str]:
    """Every shipped URDF, by path relative to the robots folder, sorted."""
    return sorted(p.relative_to(ROBOTS).as_posix() for p in ROBOTS.rglob("*.urdf"))


def is_mobile(path: str) -> bool:
    """Whether the robot of `path` moves freely (it then gets a floating base)."""
    return any(path == entry or path.startswith(entry + "/") for entry in MOBILE)


def root_link(xml: str) -> str:
    """The URDF's root link: the one link no joint has as child."""
    tree = ET.fromstring(xml)
    children = {joint.find("child").get("link") for joint in tree.iter("joint") if joint.find("child") is not None}
    (root,) = [link.get("name") for link in tree.findall("link") if link.get("name") not in children]
    return root


def corpus_xml(path: str) -> str:
    """The URDF text of `path` as compared: with a floating base for mobile robots."""
    xml = (ROBOTS / path).read_text()
    return with_floating_base(xml, root_link(xml)) if is_mobile(path) else xml


def corpus_dof(path: str) -> int:
    """Degrees of freedom of `path` as compared, counted from the XML (no SymPy: for collection)."""
    tree = ET.parse(ROBOTS / path).getroot()
    joints = sum(JOINT_DOF.get(joint.get("type"), 0) for joint in tree.iter("joint"))
    return joints + (6 if is_mobile(path) else 0)


@functools.cache
def load_corpus_robot(path: str) -> Robot:
    """`path` loaded as compared (once per session: loading the big ones takes seconds)."""
    return load_urdf(corpus_xml(path) if is_mobile(path) else ROBOTS / path)


FILES = corpus_files()


# --- Every file loads or is refused for its listed reason --------------------------------------

def test_the_corpus_is_there():
    """The wheel ships the robots this module was written against (about 69 files)."""
    assert len(FILES) >= 60 and set(REFUSED) <= set(FILES), (len(FILES), set(REFUSED) - set(FILES))


@pytest.mark.parametrize("path", FILES)
def test_loads_or_is_refused_for_its_listed_reason(path: str):
    """Loads as compared (mobile robots with their floating base; repairs are warnings), or raises
    the URDFError its REFUSED entry expects."""
    if path in REFUSED:
        reason, expected = REFUSED[path]
        with pytest.raises(URDFError) as refused:
            load_corpus_robot(path)
        assert expected in str(refused.value), f"refused, but not because {reason}: {refused.value}"
        return
    robot = load_corpus_robot(path)
    assert len(robot.system.u) == corpus_dof(path)


# --- Dynamics against Pinocchio --------------------------------------------------------------------

def comparison_params() -> list:
    """The loadable files, heavy ones (above DEFAULT_MAX_DOF) marked slow, the most DoF first: the
    workers of a parallel run take the longest derivations and compiles first, so none is left
    with a humanoid while the others are done."""
    files = sorted((p for p in FILES if p not in REFUSED), key=lambda p: -corpus_dof(p))
    return [pytest.param(p, marks=[pytest.mark.slow] if corpus_dof(p) > DEFAULT_MAX_DOF else []) for p in files]


@pytest.fixture(scope="session")
def corpus_cache(model_cache) -> Path:
    """The tests' shared model cache (conftest's ``model_cache``), or ``$MB_SIM_CORPUS_CACHE``."""
    directory = os.environ.get("MB_SIM_CORPUS_CACHE")
    if not directory:
        return model_cache
    Path(directory).mkdir(mode=0o700, parents=True, exist_ok=True)
    return Path(directory)


def without_dissipation(robot: Robot) -> np.ndarray:
    """The robot's parameter values with joint damping, friction and stops set to zero."""
    switched_off = set()
    for joint in robot.joints.values():
        for group in joint.load_groups:
            if isinstance(group, JointDissipation):
                switched_off |= {group.d, group.f}
            elif isinstance(group, JointLimitStop):
                switched_off |= {group.k, group.c}
    return np.array([0.0 if symbol in switched_off else value for symbol, value in robot.parameters.items()])


def pinocchio_model(xml: str) -> pin.Model:
    """Pinocchio's model of `xml` (mimic ignored: independent joints), with no armature, damping or
    friction."""
    model = pin.buildModelFromXML(xml)
    model.armature[:] = 0.0
    model.damping[:] = 0.0
    model.friction[:] = 0.0
    return model


def with_documented_repairs(model: pin.Model, robot: Robot) -> pin.Model:
    """`model` with the inertia changes of mb_sim's repairs (``Repair.inertia_change``: about the
    centre of mass, in the frame of link ``Repair.body``) added to the joint body that link is part of."""
    for repair in robot.repairs:
        if repair.inertia_change is None:
            continue
        frame = model.frames[model.getFrameId(repair.body, pin.FrameType.BODY)]
        rotation, index = frame.placement.rotation, frame.parentJoint
        inertia = model.inertias[index]
        model.inertias[index] = pin.Inertia(inertia.mass, inertia.lever,
                                            inertia.inertia + rotation @ repair.inertia_change @ rotation.T)
    return model


def random_efforts(robot: Robot, rng: np.random.Generator) -> np.ndarray:
    """Efforts inside each joint's URDF effort limit (10 where it has none)."""
    limits = [joint.joint_description.limit.effort for joint in actuated_joints(robot)]
    return np.array([rng.uniform(-e, e) if 0 < e < np.inf else rng.uniform(-10, 10) for e in limits])


def expected_accelerations(M: np.ndarray, F: np.ndarray, A: np.ndarray) -> np.ndarray:
    """u' of M u' = F + A^T lambda with A u' = 0 (mimic rows: no acceleration bias)."""
    n_c = len(A)
    kkt = np.block([[M, A.T], [A, np.zeros((n_c, n_c))]])
    return np.linalg.solve(kkt, np.concatenate([F, np.zeros(n_c)]))[:len(F)]


def u_tolerance(M: np.ndarray) -> float:
    """The tolerance of u': 1e-9, or cond(M) x 1e-15 where M is ill-conditioned."""
    return max(RELATIVE_TOLERANCE, CONDITIONED_TOLERANCE * np.linalg.cond(M))


def errors_at_one_state(robot: Robot, compiled, model: pin.Model, params: np.ndarray,
                        rng: np.random.Generator) -> dict[str, tuple[float, float]]:
    """(relative error, tolerance) of M, the forcing and u' (zero and random efforts) at one random state."""
    data, A = model.createData(), mimic_constraint_rows(robot)
    q = coordinates_inside_limits(robot, rng)
    q_pin = pinocchio_configuration(robot, model, q)
    v = rng.normal(size=model.nv)
    G, G_dot = velocity_map(robot, model, q, v)
    u = G @ v
    M_pin = pin.crba(model, data, q_pin)
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    expected_M = G @ M_pin @ G.T
    errors = {}
    for case, efforts in (("no effort", np.zeros(compiled.n_inputs)), ("efforts", random_efforts(robot, rng))):
        tau = pinocchio_efforts(robot, model, efforts)
        out = compiled.evaluate(q, u, efforts, params)
        expected_F = G @ (tau - pin.nle(model, data, q_pin, v) - M_pin @ G_dot.T @ u)
        if len(A):
            np.testing.assert_allclose(out["constraint_matrix"], A, atol=1e-14)
            expected_udot = expected_accelerations(expected_M, expected_F, A)
        else:
            expected_udot = G_dot @ v + G @ pin.aba(model, data, q_pin, v, tau)
        _, udot = compiled.forward_dynamics(q, u, efforts, params)
        errors[f"forcing ({case})"] = (relative_error(out["forcing"].ravel(), expected_F), RELATIVE_TOLERANCE)
        errors[f"u' ({case})"] = (relative_error(udot, expected_udot), u_tolerance(expected_M))
    return {"mass matrix": (relative_error(out["mass_matrix"], expected_M), RELATIVE_TOLERANCE), **errors}


@pytest.mark.parametrize("path", comparison_params())
def test_dynamics_match_pinocchio(path: str, corpus_cache: Path):
    """M (crba, mapped through G), the forcing and u' with zero and with random efforts (aba; with
    mimic joints the constrained problem on Pinocchio's M and bias) agree to 1e-9 relative (u': or
    cond(M) x 1e-15).  Where a repair changed an inertia, Pinocchio's model gets the documented
    change (romeo_small's arms)."""
    robot = load_corpus_robot(path)
    compiled = load_numeric_model(robot, cache_dir=corpus_cache)
    model = with_documented_repairs(pinocchio_model(corpus_xml(path)), robot)
    assert compiled.n_inputs == len(actuated_joints(robot)) and compiled.n_constraints == len(mimic_constraint_rows(robot))
    params, rng = without_dissipation(robot), np.random.default_rng(15)
    states = [errors_at_one_state(robot, compiled, model, params, rng) for _ in range(STATES_PER_ROBOT)]
    worst = {key: max((errors[key] for errors in states), key=lambda pair: pair[0] / pair[1]) for key in states[0]}
    print(f"{path}: " + ", ".join(f"{key} {error:.1e}" + (f" (tolerance {tolerance:.0e})"
                                                          if tolerance != RELATIVE_TOLERANCE else "")
                                  for key, (error, tolerance) in worst.items()))
    failing = {key: pair for key, pair in worst.items() if pair[0] >= pair[1]}
    assert not failing, f"(error, tolerance) beyond tolerance: {failing}"

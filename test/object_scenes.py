"""Scenes of objects for mb_sim and the same scenes for MuJoCo, side by side (test/test_objects.py,
bench/bench_objects.py): cubes stacked or dropped on each other, and urdf/gripper_lift.urdf
picking up a 20 mm box.  Same shapes, masses, friction (mu 1), 1 ms steps, RK4 in both."""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mb_sim.sim import Simulator
from mb_sim.urdf.scene import SceneObject

if TYPE_CHECKING:
    import mujoco

REPO = Path(__file__).resolve().parent.parent
#: A robot with nothing but the ground: a scene of objects only.
EMPTY = '<robot name="objects"><link name="world"/><mb_sim><ground/></mb_sim></robot>'
CUBE, CUBE_MASS, DT = 0.1, 1.0, 1e-3
#: The gripper scene's box: 20 mm, 50 g, on the ground under the open fingers.
BOX, BOX_MASS = 0.02, 0.05
#: The gripper test's slide servo [N/m, N s/m]: stiff (the load sags it 0.4 mm), a plain PD law
#: (mb_sim leaves the feed-forward off for a robot with contacts), clamped to the URDF's 60 N.
LIFT_KP, LIFT_KD = 20000.0, 300.0


def cubes(heights: list[float], xs: list[float] | None = None) -> list[SceneObject]:
    """0.1 m cubes of 1 kg at the given heights of their centres (and x offsets)."""
    xs = xs or [0.0] * len(heights)
    return [SceneObject(f"cube{k}", "box", (CUBE,) * 3, CUBE_MASS, xyz=(x, 0.0, z))
            for k, (x, z) in enumerate(zip(xs, heights))]


def cube_scene(heights: list[float], cache, xs: list[float] | None = None) -> Simulator:
    """mb_sim: the cubes on the default ground (its defaults, friction 1)."""
    return Simulator(EMPTY, objects=cubes(heights, xs), cache_dir=cache, dt=DT)


def cube_heights(sim: Simulator) -> np.ndarray:
    """World heights of the cubes' centres (their joints' origins were their starts)."""
    names = sim.coordinate_names
    return np.array([sim.outputs(dynamics=False).link_poses[f"cube{k}"][2, 3]
                     for k in range(sum(1 for n in names if n.endswith("_joint_z")))])


def mujoco_cubes(heights: list[float], xs: list[float] | None = None):
    """MuJoCo: the same cubes (free joints) on a plane, friction 1, RK4 at 1 ms; (model, data)."""
    import mujoco

    xs = xs or [0.0] * len(heights)
    half = CUBE / 2
    bodies = "".join(f'<body name="cube{k}" pos="{x} 0 {z}"><freejoint/><geom type="box" size="{half} {half} {half}" '
                     f'mass="{CUBE_MASS}" friction="1 0.005 0.0001"/></body>' for k, (x, z) in enumerate(zip(xs, heights)))
    xml = (f'<mujoco><option timestep="{DT}" integrator="RK4"/><worldbody>'
           f'<geom type="plane" size="5 5 0.1" friction="1 0.005 0.0001"/>{bodies}</worldbody></mujoco>')
    model = mujoco.MjModel.from_xml_string(xml)
    return model, mujoco.MjData(model)


def mujoco_heights(model, data) -> np.ndarray:
    return np.array([data.xpos[model.body(f"cube{k}").id][2] for k in range(model.nbody - 1)])


def gripper_scene(cache) -> Simulator:
    """mb_sim: urdf/gripper_lift.urdf with the 20 mm box on the ground between its open fingers."""
    box = SceneObject("box", "box", (BOX,) * 3, BOX_MASS, xyz=(0.0, 0.0, BOX / 2), friction=1.0)
    return Simulator(REPO / "urdf" / "gripper_lift.urdf", objects=[box], cache_dir=cache, dt=DT)


def lift_sequence(advance: Callable[[float], None], hold_lift: Callable[[float], None],
                  squeeze_with: Callable[[float], None], box_z: Callable[[], float], lift_q: Callable[[], float],
                  lift: float = 0.05, squeeze: float = 8.0) -> dict[str, float]:
    """The gripper test's commands, whichever simulator runs them: settle 0.3 s (slide held at 0,
    driver free), push the driver with `squeeze` N for 0.5 s, raise the slide's target to `lift` in
    5 steps of 0.1 s, wait 0.5 s, hold 5 s: the box's rise from its grasped start and its slip in
    the grip (relative to the slide) during the 5 s hold [m]."""
    hold_lift(0.0)
    advance(0.3)
    squeeze_with(squeeze)
    advance(0.5)
    start = box_z()
    for k in range(1, 6):
        hold_lift(lift * k / 5)
        advance(0.1)
    advance(0.5)
    held = box_z() - lift_q()
    advance(5.0)
    return {"rise": box_z() - start, "slip": held - (box_z() - lift_q())}


def grip_and_lift(sim: Simulator, lift: float = 0.05, squeeze: float = 8.0) -> dict[str, float]:
    """mb_sim: `lift_sequence` on `gripper_scene` (the slide servoed, the driver's effort input
    `squeeze` N): the box's rise, its slip in the grip while held [m] and the pads' grip [N]."""
    lift_q, box_z = sim.coordinate_names.index("lift_joint_q"), sim.coordinate_names.index("box_joint_z")
    sim.servos.set_gains("lift_joint", LIFT_KP, LIFT_KD)
    result = lift_sequence(sim.advance, lambda target: sim.servos.hold_position("lift_joint", target, now=sim.time),
                           lambda effort: sim.set_efforts({"driver_joint": effort}),
                           lambda: float(sim.q[box_z]), lambda: float(sim.q[lift_q]), lift, squeeze)
    return {**result, "grip": float(sum(c.normal_force for c in sim.outputs().contacts.values() if "@" in c.name))}


def _quat_y(angle: float) -> str:
    """MJCF quaternion of a turn by `angle` about y (a URDF rpy "0 angle 0")."""
    return f"{math.cos(angle / 2)} 0 {math.sin(angle / 2)} 0"


def mujoco_gripper() -> tuple[mujoco.MjModel, mujoco.MjData]:
    """MuJoCo: urdf/gripper_lift.urdf and the box of `gripper_scene`, transcribed body by body
    (same frames, joints, limits, masses, inertias, pads; friction 1, RK4 at 1 ms); (model, data).

    Actuators apply what `grip_and_lift` commands: ``lift`` a position actuator on the slide with
    the test's PD gains (MuJoCo's force ``kp (ctrl - q) - kv qdot``, mb_sim's servo law without
    feed-forward), clamped to 60 N; ``driver`` a motor on driver_joint (ctrl = effort [N]),
    clamped to 20 N as mb_sim clamps efforts to the URDF limit.  The two ``<loop_joint>`` pins are
    ``connect`` equalities (every axis is y, so the pin's point is the whole constraint).

    Where it differs from mb_sim: MuJoCo's contacts and joint limits are soft constraints at its
    default solref/solimp (mb_sim: its contact law and stops): the pads' lower edges sink 0.9 mm
    into the held box (mb_sim 0.45 mm; 4 points a pad, mb_sim 2), the box 0.25-0.3 mm into the
    ground before the lift (0.01 mm), the slide 0.19 mm into its lower limit (0.14 mm); the loop
    pins stretch by 0.01 mm (mb_sim: exact)."""
    import mujoco

    friction = "1 0.005 0.0001"

    def link(name: str, angle: float) -> str:
        return (f'<body name="{name}" quat="{_quat_y(angle)}"><joint name="{name}_joint" axis="0 1 0"/>'
                f'<inertial pos="0.0223607 0 0" mass="0.02" diaginertia="1e-7 3.4e-6 3.4e-6"/></body>')

    def finger(name: str, x: float, pad_x: float) -> str:
        return (f'<body name="{name}" pos="{x} 0 0.06"><joint name="{name}_joint" axis="0 1 0" range="-0.8 0.8"/>'
                f'<inertial pos="0 0 0.04" mass="0.05" diaginertia="2.7e-5 2.7e-5 1e-6"/>'
                f'<geom name="{name}_pad" type="box" pos="{pad_x} 0 0.07" size="0.003 0.01 0.015"/></body>')

    # MuJoCo's options for a grasp, each documented, none fitted to mb_sim's figures.  Measured
    # here: with MuJoCo's defaults throughout the box stays on the ground; with the loop pins as
    # below, its slip in the 5 s hold is 10.6 mm at the default options (it creeps out of the
    # grip), 5.2 mm with elliptic cones, 0.54 mm with impratio 10 too, 0.004 mm with noslip too.
    # * cone="elliptic": the Coulomb cone itself (mb_sim's friction), not the pyramid, which mixes
    #   normal and friction forces in its edges; impratio is meant for it.
    # * impratio="10": friction constraints 10 times harder than the normal ones (MuJoCo's soft
    #   friction lets a load below mu N slide at a rate set by the softness: the creep).
    # * noslip_iterations="10": MuJoCo's post-pass that removes the soft model's slip in the
    #   friction dimensions: mb_sim's friction holds a sticking point below mu N (no creep), and this
    #   is MuJoCo's way to the same (3 iterations: -0.010 mm; 30: as 10).
    # * condim stays 3 (point friction, as mb_sim's contact points): each pad touches the box at
    #   points spread along y, which resist the twist; condim 4 changed nothing without noslip
    #   (0.54 mm) and 0.004 to 0.0003 mm with it.
    # * Contacts keep the default solref/solimp (not fitted to mb_sim's stiffness).
    # * The pins: solref="0.002 1" (timeconst 2 steps, the stiffest MuJoCo takes at 1 ms without
    #   clamping it) and solimp="0.99 0.99 0.001", as mb_sim's loop joints are exact; at the
    #   defaults the 8 N squeeze stretched them 2.9 mm, pushed the driver past its 12 mm stop and
    #   gripped with 4.1 N instead of 7 N.
    # * compiler angle="radian": the URDF's limits are radians (MJCF's default is degrees).
    pin = 'solref="0.002 1" solimp="0.99 0.99 0.001"'
    xml = f'''<mujoco model="gripper_lift"><compiler angle="radian"/>
<option timestep="{DT}" integrator="RK4" cone="elliptic" impratio="10" noslip_iterations="10"/>
<default><geom friction="{friction}"/></default>
<worldbody><geom name="ground" type="plane" size="1 1 0.1"/>
<body name="carriage" pos="0 0 0.15"><joint name="lift_joint" type="slide" axis="0 0 1" range="0 0.2"/>
<inertial pos="0 0 0" mass="0.5" diaginertia="5e-4 5e-4 5e-4"/>
<body name="palm" quat="0 1 0 0">
<body name="driver" pos="0 0 0.02"><joint name="driver_joint" type="slide" axis="0 0 1" range="-0.012 0.012"/>
<inertial pos="0 0 0" mass="0.1" diaginertia="2e-5 2e-5 2e-5"/>
{link("left_link", -2.677945044588987)}{link("right_link", -0.4636476090008061)}</body>
{finger("left_finger", -0.02, 0.003)}{finger("right_finger", 0.02, -0.003)}</body></body>
<body name="box" pos="0 0 {BOX / 2}"><freejoint name="box_joint"/>
<geom name="box" type="box" size="{BOX / 2} {BOX / 2} {BOX / 2}" mass="{BOX_MASS}"/></body></worldbody>
<contact><exclude body1="left_finger" body2="right_finger"/></contact>
<equality><connect body1="left_finger" body2="left_link" anchor="-0.02 0 -0.02" {pin}/>
<connect body1="right_finger" body2="right_link" anchor="0.02 0 -0.02" {pin}/></equality>
<actuator><position name="lift" joint="lift_joint" kp="{LIFT_KP}" kv="{LIFT_KD}" forcerange="-60 60"/>
<motor name="driver" joint="driver_joint" ctrlrange="-20 20"/></actuator></mujoco>'''
    model = mujoco.MjModel.from_xml_string(xml)
    return model, mujoco.MjData(model)


def mujoco_grip_and_lift(model: mujoco.MjModel, data: mujoco.MjData, lift: float = 0.05,
                         squeeze: float = 8.0) -> dict[str, float]:
    """MuJoCo: `lift_sequence` on `mujoco_gripper` (the ``lift`` actuator's target, the ``driver``
    motor's effort): the box's rise, its slip in the grip while held [m] and the pads' grip [N]."""
    import mujoco

    lift_q, box_z = model.joint("lift_joint").qposadr[0], model.joint("box_joint").qposadr[0] + 2

    def set_ctrl(actuator: str) -> Callable[[float], None]:
        index = model.actuator(actuator).id

        def write(value: float) -> None:
            data.ctrl[index] = value
        return write

    result = lift_sequence(lambda duration: mujoco.mj_step(model, data, round(duration / DT)), set_ctrl("lift"),
                           set_ctrl("driver"), lambda: float(data.qpos[box_z]), lambda: float(data.qpos[lift_q]),
                           lift, squeeze)
    pads, box = {model.geom("left_finger_pad").id, model.geom("right_finger_pad").id}, model.geom("box").id
    force, grip = np.zeros(6), 0.0
    for k in range(data.ncon):
        touching = {data.contact[k].geom1, data.contact[k].geom2}
        if box in touching and touching & pads:
            mujoco.mj_contactForce(model, data, k, force)
            grip += force[0]  # the normal force, in the contact's frame
    return {**result, "grip": float(grip)}

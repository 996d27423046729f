"""Scenes of objects for mb_sim and the same scenes for MuJoCo, side by side (test/test_objects.py,
bench/bench_objects.py): cubes stacked or dropped on each other, and urdf/gripper_lift.urdf
picking up a 20 mm box.  Same shapes, masses, friction (mu 1), 1 ms steps, RK4 in both."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mb_sim.sim import Simulator
from mb_sim.urdf.scene import SceneObject

REPO = Path(__file__).resolve().parent.parent
#: A robot with nothing but the ground: a scene of objects only.
EMPTY = '<robot name="objects"><link name="world"/><mb_sim><ground/></mb_sim></robot>'
CUBE, CUBE_MASS, DT = 0.1, 1.0, 1e-3
#: The gripper scene's box: 20 mm, 50 g, on the ground under the open fingers.
BOX, BOX_MASS = 0.02, 0.05


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


def grip_and_lift(sim: Simulator, lift: float = 0.05, squeeze: float = 8.0) -> dict[str, float]:
    """Settle 0.3 s, close the fingers (`squeeze` N on the driver) for 0.5 s, raise the slide to
    `lift` over 0.5 s, hold 5 s: the box's rise and its slip in the grip while held [m]."""
    lift_q, box_z = sim.coordinate_names.index("lift_joint_q"), sim.coordinate_names.index("box_joint_z")
    sim.servos.set_gains("lift_joint", 20000.0, 300.0)  # stiff: the load sags it 0.4 mm
    sim.servos.hold_position("lift_joint", 0.0, now=sim.time)
    sim.advance(0.3)
    sim.set_efforts({"driver_joint": squeeze})
    sim.advance(0.5)
    start = sim.q[box_z]
    for k in range(1, 6):
        sim.servos.hold_position("lift_joint", lift * k / 5, now=sim.time)
        sim.advance(0.1)
    sim.advance(0.5)
    held = sim.q[box_z] - sim.q[lift_q]
    sim.advance(5.0)
    return {"rise": float(sim.q[box_z] - start), "slip": float(held - (sim.q[box_z] - sim.q[lift_q])),
            "grip": float(sum(c.normal_force for c in sim.outputs().contacts.values() if "@" in c.name))}

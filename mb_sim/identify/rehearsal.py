"""A rehearsal of an identification experiment on the model: the robot of a URDF run through an
excitation trajectory, recorded as the real robot's run would be.

The simulator stands in for the robot: RK4 at the recording's step, efforts from a computed-torque
controller (the URDF's own inverse dynamics along the trajectory, through the regressor) plus a PD
correction with gains scaled by each joint's inertia at the start (a discrete PD stable whatever
the link's size), held over each step and clamped to the effort limits as the simulator clamps
them.  The effort recorded at t_k is what a measurement at that instant means for a held effort:
the mean of the efforts held before and after it (the state's acceleration there, as a centred
filter estimates it, is the mean of the two).  Identifying from it tells whether the trajectory excites every base
parameter before the real robot moves; identifying a deliberately wrong URDF from it shows what
the correction does (docs/identify.md).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mb_sim.identify.excitation import ExcitationTrajectory
from mb_sim.identify.parameters import prior_parameters
from mb_sim.identify.regressor import NumericRegressor
from mb_sim.model import load_urdf
from mb_sim.sim import Simulator
from mb_sim.sim.recording import Recording, write_mcap

__all__ = ["rehearse", "write_joint_states"]


def write_joint_states(path: str | Path, times: np.ndarray, joints: list[str], positions: np.ndarray,
                       velocities: np.ndarray, efforts: np.ndarray) -> Path:
    """An MCAP of ``/joint_states`` (mb_sim's recording format) with these samples."""
    samples = len(times)
    write_mcap(path, Recording(np.asarray(times, dtype=float), list(joints), positions, velocities, efforts, [],
                               np.zeros((samples, 0, 4, 4)), []))
    return Path(path)


def rehearse(urdf: str | Path, trajectory: ExcitationTrajectory, path: str | Path, dt: float = 1e-3,
             bandwidth: float = 20.0, command_topic: str | None = None) -> Path:
    """Run the robot of `urdf` through `trajectory` (module docstring) and write the MCAP at `path`;
    with `command_topic`, as a ros2_control robot's bag: /joint_states without efforts and each
    held effort as a ``std_msgs/Float64MultiArray`` command on that topic (joints in trajectory order)."""
    robot = load_urdf(urdf)
    regressor = NumericRegressor(robot)
    joints = trajectory.joint_names
    times = np.arange(0.0, trajectory.duration, dt)
    q_ref, u_ref, a_ref = trajectory.sample(times)
    arranged = regressor.arrange(joints, q_ref, u_ref, a_ref, np.zeros_like(q_ref))
    feed_forward = np.einsum("skp,p->sk", regressor(*arranged[:3]), prior_parameters(robot, regressor.symbolic))
    feed_forward = feed_forward[:, [regressor.speed_of[j] for j in joints]]
    sim = Simulator(urdf, dt=dt)
    qi, ui = [sim.joint_indices[j][0] for j in joints], [sim.joint_indices[j][1] for j in joints]
    sim.set_state(dict(zip(joints, q_ref[0])), dict(zip(joints, u_ref[0])))
    n = len(sim.u)
    mass = sim.model.evaluate(sim.q, sim.u, np.zeros(len(sim.efforts)))["mass_matrix"].reshape(n, n)
    inertia = np.diag(mass)[ui]
    kp, kd = bandwidth ** 2 * inertia, 1.4 * bandwidth * inertia
    q, u, efforts = (np.zeros_like(q_ref) for _ in range(3))
    for k in range(len(times)):
        q[k], u[k] = sim.q[qi], sim.u[ui]
        sim.set_efforts(dict(zip(joints, feed_forward[k] + kp * (q_ref[k] - q[k]) + kd * (u_ref[k] - u[k]))))
        applied = dict(zip(sim.actuated_joints, sim.efforts))  # after the effort limits' clamp
        efforts[k] = [applied[j] for j in joints]
        sim.step()
    if command_topic is not None:
        return _write_commanded(path, times, joints, q, u, efforts, command_topic)
    held = efforts.copy()  # held over [t_k, t_k+1): at t_k the mean of the efforts before and after
    efforts[1:] = 0.5 * (held[:-1] + held[1:])
    return write_joint_states(path, times, joints, q, u, efforts)


def _write_commanded(path, times, joints, q, u, commands, topic: str) -> Path:
    from mcap_ros2.writer import Writer

    from mb_sim.sim.recording import message_definition

    with open(path, "wb") as stream, Writer(stream) as writer:
        states = writer.register_msgdef("sensor_msgs/msg/JointState", message_definition("sensor_msgs/msg/JointState"))
        arrays = writer.register_msgdef("std_msgs/msg/Float64MultiArray",
                                        message_definition("std_msgs/msg/Float64MultiArray"))
        for k, t in enumerate(times):
            ns = round(float(t) * 1e9)
            stamp = {"sec": ns // 10 ** 9, "nanosec": ns % 10 ** 9}
            writer.write_message("/joint_states", states, {
                "header": {"stamp": stamp, "frame_id": ""}, "name": list(joints), "position": q[k].tolist(),
                "velocity": u[k].tolist(), "effort": []}, log_time=ns, publish_time=ns)
            writer.write_message(topic, arrays, {"layout": {"dim": [], "data_offset": 0}, "data": commands[k].tolist()},
                                 log_time=ns, publish_time=ns)
    return Path(path)

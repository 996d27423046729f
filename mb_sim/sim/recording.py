"""Recordings of a simulation run: a CSV table, or an MCAP file as ROS 2 bags write them.

CSV format
----------
Comma-separated text, one header line, then one row per sample in time order::

    time,shoulder_q,elbow_q,shoulder_u,elbow_u
    0,0.5,0,0,0
    0.01,0.49951,0.00021,-0.0981,0.0419
    ...

``time`` is the simulation time [s]; then one column per generalized coordinate, then one per
generalized speed (then the motor currents, and ``mb-sim simulate`` adds each spring-damper's
``<spring>_length`` [m], ``<spring>_length_rate`` [m/s] and ``<spring>_force`` [N, tension
positive], as Exudyn's connector outputs), named and ordered as the simulator's ``coordinate_names`` and ``speed_names``
(named after their joint: ``elbow_q``, ``elbow_u``; a floating joint ``base_joint`` gives
``base_joint_x .. base_joint_z``, the quaternion ``base_joint_qw .. base_joint_qz`` and the speeds
``base_joint_vx .. base_joint_wz``).  Values are SI (rad, m, rad/s, m/s), printed with 17
significant digits so they read back bit for bit.

MCAP format
-----------
ROS 2 profile, CDR-encoded messages, each schema the complete ``ros2msg`` definition (the
message's ``.msg`` text and its dependencies', as ``ros2 bag record`` stores them), so Foxglove,
``ros2 bag play`` and ``mcap_ros2`` decode them without a ROS install.  One message per sample on
each topic, log time = publish time = header stamp = simulation time (from 0):

- ``/joint_states`` (``sensor_msgs/msg/JointState``): name, position, velocity and commanded
  effort (0 for a joint without an actuator) of every one-DoF joint;
- ``/tf`` (``tf2_msgs/msg/TFMessage``): for every joint the pose of its child link frame in its
  parent link frame, and ``world -> root link`` (identity) unless the root link is ``world``;
- ``/mb_sim/springs`` (``sensor_msgs/msg/JointState``, a model with spring-dampers only): each
  spring-damper's name, length [m] as position, length rate [m/s] as velocity and force [N,
  tension positive] as effort, so any JointState plotter shows them.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from transforms3d.quaternions import mat2quat

from mb_sim.model import symbol_name
from mb_sim.sim.frames import Edge, edge_poses, frame_tree
from mb_sim.sim.outputs import Trajectory

if TYPE_CHECKING:
    from mb_sim.codegen import NumericModel
    from mb_sim.sim.simulator import Simulator

__all__ = ["Recording", "SPRINGS_TOPIC", "sampled_outputs", "spring_columns", "write_csv", "write_mcap", "recording_of", "message_definition", "relative_transforms"]

_PRIMITIVES = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
               "int64", "uint64", "string", "wstring"}
_SEPARATOR = "=" * 80
#: The MCAP topic of the spring-dampers' outputs (a model with some).
SPRINGS_TOPIC = "/mb_sim/springs"


def write_csv(path: str | os.PathLike, trajectory: Trajectory, extra: dict[str, np.ndarray] | None = None) -> None:
    """Write `trajectory` as the CSV table described in the module docstring, with the `extra`
    columns (one value per sample, e.g. :func:`spring_columns`) after the states."""
    extra = extra or {}
    header = ",".join(["time", *trajectory.coordinate_names, *trajectory.speed_names,
                       *trajectory.electrical_state_names, *extra])
    z = trajectory.z if trajectory.z is not None else np.zeros((len(trajectory.times), 0))
    table = np.column_stack([trajectory.times, trajectory.q, trajectory.u, z,
                             *(np.reshape(v, (len(trajectory.times), 1)) for v in extra.values())])
    np.savetxt(path, table, fmt="%.17g", delimiter=",", header=header, comments="")


@dataclass(frozen=True)
class Recording:
    """What an MCAP file records: sampled one-DoF joints and link poses.

    ``positions``, ``velocities``, ``efforts`` are (samples, joints) in ``joint_names`` order;
    ``link_poses`` (samples, links, 4, 4) are world poses in ``link_names`` order; ``edges`` are
    the TF tree's edges (:func:`mb_sim.sim.frames.frame_tree`, world frame ``world``).
    """

    times: np.ndarray
    joint_names: list[str]
    positions: np.ndarray
    velocities: np.ndarray
    efforts: np.ndarray
    link_names: list[str]
    link_poses: np.ndarray
    edges: list[Edge]
    spring_names: list[str] = field(default_factory=list)
    spring_states: np.ndarray | None = None  # (samples, springs, 12): rows of the spring_states block


def recording_of(simulator: Simulator, trajectory: Trajectory) -> Recording:
    """The recording of `trajectory`, run by `simulator` with its current efforts held throughout.

    Link poses come from the generated code at every sample; the simulator's state is restored.
    """
    robot = simulator.robot
    tree = frame_tree(robot)
    one_dof = [joint for joint in robot.joints.values() if len(joint.q) == 1]
    q_index = [trajectory.coordinate_names.index(symbol_name(joint.q[0])) for joint in one_dof]
    u_index = [trajectory.speed_names.index(symbol_name(joint.u[0])) for joint in one_dof]
    applied = dict(zip(simulator.actuated_joints, simulator.efforts))
    efforts = np.array([applied.get(joint.name, 0.0) for joint in one_dof])
    sampled = sampled_outputs(simulator.model, trajectory,
                              ["link_poses", *(["spring_states"] if simulator.model.spring_names else [])])
    return Recording(
        times=trajectory.times, joint_names=[joint.name for joint in one_dof],
        positions=trajectory.q[:, q_index], velocities=trajectory.u[:, u_index],
        efforts=np.tile(efforts, (len(trajectory.times), 1)),
        link_names=list(simulator.model.link_names), link_poses=_link_poses(sampled["link_poses"]),
        edges=[*tree.static, *tree.moving], spring_names=list(simulator.model.spring_names),
        spring_states=sampled.get("spring_states"),
    )


def _link_poses(rows: np.ndarray) -> np.ndarray:
    """World poses (samples, links, 4, 4) from the samples of the link_poses block."""
    poses = np.tile(np.eye(4), (*rows.shape[:2], 1, 1))
    poses[:, :, :3, :3] = rows[:, :, :9].reshape(*rows.shape[:2], 3, 3)
    poses[:, :, :3, 3] = rows[:, :, 9:]
    return poses


def sampled_outputs(model: NumericModel, trajectory: Trajectory, blocks: Sequence[str]) -> dict[str, np.ndarray]:
    """Output `blocks` of `model` at every sample of `trajectory` (samples, rows, cols), the
    inputs and parameters as they are in the buffers; the model's state is restored."""
    b = model.buffers
    saved = b.q.copy(), b.u.copy(), b.z.copy()
    sampled = {name: np.empty((len(trajectory.times), *model.layout.view(b.out, name).shape)) for name in blocks}
    z = trajectory.z if trajectory.z is not None and trajectory.z.shape[1] == len(b.z) else None
    try:
        for k, (t, q, u) in enumerate(zip(trajectory.times, trajectory.q, trajectory.u)):
            b.q[:], b.u[:] = q, u
            if z is not None:
                b.z[:] = z[k]
            model.evaluate_into(float(t))
            for name in blocks:
                sampled[name][k] = model.layout.view(b.out, name)
    finally:
        b.q[:], b.u[:], b.z[:] = saved
    return sampled


def spring_columns(model: NumericModel, trajectory: Trajectory) -> dict[str, np.ndarray]:
    """Every spring-damper's length [m], length rate [m/s] and force (tension positive) [N] at
    each sample, as CSV columns ``<spring>_length``, ``<spring>_length_rate``, ``<spring>_force``."""
    if not model.spring_names:
        return {}
    rows = sampled_outputs(model, trajectory, ["spring_states"])["spring_states"]
    columns = {}
    for i, name in enumerate(model.spring_names):
        columns.update({f"{name}_length": rows[:, i, 9], f"{name}_length_rate": rows[:, i, 10],
                        f"{name}_force": rows[:, i, 11]})
    return columns


def relative_transforms(recording: Recording, sample: int) -> list[tuple[str, str, np.ndarray]]:
    """(parent frame, child frame, 4x4 pose of child in parent) for every TF edge at `sample`."""
    world = dict(zip(recording.link_names, recording.link_poses[sample]))
    return [(edge.parent_frame, edge.child_frame, pose) for edge, pose in edge_poses(recording.edges, world)]


def write_mcap(path: str | os.PathLike, recording: Recording) -> None:
    """Write `recording` as the MCAP file described in the module docstring."""
    from mcap_ros2.writer import Writer

    with open(path, "wb") as stream, Writer(stream) as writer:
        joint_schema = writer.register_msgdef("sensor_msgs/msg/JointState",
                                              message_definition("sensor_msgs/msg/JointState"))
        tf_schema = writer.register_msgdef("tf2_msgs/msg/TFMessage", message_definition("tf2_msgs/msg/TFMessage"))
        for k, t in enumerate(recording.times):
            nanoseconds = round(float(t) * 1e9)
            stamp = {"sec": nanoseconds // 10**9, "nanosec": nanoseconds % 10**9}
            writer.write_message("/joint_states", joint_schema, _joint_state(recording, k, stamp),
                                 log_time=nanoseconds, publish_time=nanoseconds, sequence=k)
            writer.write_message("/tf", tf_schema, {"transforms": _transforms(recording, k, stamp)},
                                 log_time=nanoseconds, publish_time=nanoseconds, sequence=k)
            if recording.spring_states is not None:
                writer.write_message(SPRINGS_TOPIC, joint_schema, _spring_message(recording, k, stamp),
                                     log_time=nanoseconds, publish_time=nanoseconds, sequence=k)


def _spring_message(recording: Recording, sample: int, stamp: dict) -> dict:
    """The spring-dampers of `sample` as a ``sensor_msgs/msg/JointState``: name, length, length
    rate, force (see the module docstring)."""
    rows = recording.spring_states[sample]
    return {"header": {"stamp": stamp, "frame_id": ""}, "name": recording.spring_names,
            "position": rows[:, 9].tolist(), "velocity": rows[:, 10].tolist(), "effort": rows[:, 11].tolist()}


def _joint_state(recording: Recording, sample: int, stamp: dict) -> dict:
    """A ``sensor_msgs/msg/JointState`` of `sample`."""
    return {"header": {"stamp": stamp, "frame_id": ""}, "name": recording.joint_names,
            "position": recording.positions[sample].tolist(), "velocity": recording.velocities[sample].tolist(),
            "effort": recording.efforts[sample].tolist()}


def _transforms(recording: Recording, sample: int, stamp: dict) -> list[dict]:
    """The ``geometry_msgs/msg/TransformStamped`` list of `sample`."""
    transforms = []
    for parent, child, pose in relative_transforms(recording, sample):
        w, x, y, z = mat2quat(pose[:3, :3])
        translation = dict(zip("xyz", pose[:3, 3].tolist()))
        transforms.append({"header": {"stamp": stamp, "frame_id": parent}, "child_frame_id": child,
                           "transform": {"translation": translation,
                                         "rotation": {"x": x, "y": y, "z": z, "w": w}}})
    return transforms


def message_definition(type_name: str, share_directories: Sequence[Path] | None = None) -> str:
    """The complete ``ros2msg`` definition of `type_name` (e.g. ``sensor_msgs/msg/JointState``).

    The type's ``.msg`` text, then each dependency's (recursively, once each) after a line of 80
    ``=`` and a line ``MSG: pkg/msg/Type``, as rosbag2 stores them.  The ``.msg`` files are looked
    up in `share_directories` (default :func:`_share_directories`).

    Raises
    ------
    FileNotFoundError
        A definition is not installed.
    """
    directories = list(share_directories) if share_directories is not None else _share_directories()
    texts: dict[str, str] = {}
    _collect(type_name, directories, texts)
    (_, main), *dependencies = texts.items()
    return "\n".join([main, *(f"{_SEPARATOR}\nMSG: {name}\n{text}" for name, text in dependencies)]) + "\n"


def _share_directories() -> list[Path]:
    """Where ROS 2 packages keep ``<pkg>/msg/*.msg``: this Python's prefix (ROS wheels) and every
    ``$AMENT_PREFIX_PATH`` entry (ROS installs)."""
    prefixes = [sys.prefix, *filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep))]
    return [Path(prefix) / "share" for prefix in prefixes]


def _collect(type_name: str, directories: list[Path], texts: dict[str, str]) -> None:
    """Add the ``.msg`` text of `type_name`, then of its dependencies depth first, to `texts`."""
    package, _, message = type_name.partition("/msg/")
    candidates = [directory / package / "msg" / f"{message}.msg" for directory in directories]
    found = next((path for path in candidates if path.is_file()), None)
    if found is None:
        raise FileNotFoundError(f"no definition of {type_name} in {', '.join(map(str, directories))} "
                                "(install the ROS 2 message packages, or source a ROS 2 install)")
    texts[type_name] = found.read_text().rstrip("\n")
    for dependency in _field_types(texts[type_name], package):
        if dependency not in texts:
            _collect(dependency, directories, texts)


def _field_types(text: str, package: str) -> list[str]:
    """The non-primitive field types of a ``.msg`` text, as ``pkg/msg/Type``."""
    types = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        base = re.sub(r"<=\d+$", "", re.sub(r"\[[^\]]*\]$", "", words[0]))
        if base in _PRIMITIVES:
            continue
        parts = base.split("/")
        types.append(f"{parts[0] if len(parts) > 1 else package}/msg/{parts[-1]}")
    return types

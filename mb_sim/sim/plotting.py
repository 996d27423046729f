"""Plots of a simulated trajectory: coordinates and speeds against time, and the x-y path of
mobile bases (planar or floating joints out of the world), as a PNG file.  Given the robot, each
axes holds one unit (rad, m, m/s...) and a mobile base's pose is apart from the joint angles.

Matplotlib's Agg canvas is used directly (no pyplot, no display), so plotting works headless
and leaves matplotlib's global state alone.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mb_sim.sim.outputs import Trajectory

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from mb_sim.model import Robot

__all__ = ["Panel", "panels", "planar_paths", "plot_trajectory", "trajectory_figure"]

#: What a quantity of each unit is called on an axis label.
_KINDS = {"rad": "angle", "m": "position", "1": "orientation quaternion", "rad/s": "angular rate",
          "m/s": "velocity", "A": "current"}


@dataclass(frozen=True)
class Panel:
    """One axes of the plot: the coordinates or speeds it draws (by name), all in `unit`, of `group`
    (``joint`` or ``base 'name'``)."""

    group: str
    unit: str
    names: list[str]

    @property
    def label(self) -> str:
        """The y-axis label: ``joint angles [rad]``, ``base position [m]``..."""
        kind = _KINDS.get(self.unit, "value")
        kind = f"{kind}s" if self.group == "joint" and len(self.names) > 1 else kind
        return f"{self.group} {kind} [{self.unit}]" if self.unit else f"{self.group} {kind}"


def panels(robot: Robot, names: list[str], speeds: bool) -> list[Panel]:
    """`names` (the trajectory's coordinates, or speeds if `speeds`) in panels of one unit each,
    read from the robot's descriptions: a mobile base's (a planar or floating joint out of the root)
    first, per base, then the other joints'."""
    from mb_sim.model import symbol_name

    base = {symbol_name(s): f"base '{joint.name}'" for joint in _bases(robot) for s in (joint.u if speeds else joint.q)}
    system = robot.system.u if speeds else robot.system.q
    units = {symbol_name(s): _unit(robot.descriptions.get(s, "")) for s in system}
    grouped: dict[tuple[str, str], list[str]] = {}
    for name in sorted(names, key=lambda n: n not in base):  # stable: the bases first, in order
        grouped.setdefault((base.get(name, "joint"), units.get(name, "")), []).append(name)
    return [Panel(group, unit, members) for (group, unit), members in grouped.items()]


def _unit(description: str) -> str:
    """The unit a description ends with (``... [rad/s]`` -> ``rad/s``), else empty."""
    match = re.search(r"\[([^\]]*)\]\s*$", description)
    return match.group(1) if match else ""


def _bases(robot: Robot) -> list:
    """The planar and floating joints out of the root link: mobile bases."""
    from mb_sim.model import FloatingJoint, PlanarJoint

    root = robot.root_link.name
    return [joint for joint in robot.joints.values()
            if isinstance(joint, (FloatingJoint, PlanarJoint)) and joint.parent.name == root]


def planar_paths(robot) -> list[tuple[str, str, str]]:
    """``(x coordinate, y coordinate, joint)`` of each planar or floating joint out of the root
    link (a mobile base), whose path is worth a map view."""
    from mb_sim.model import symbol_name

    return [(symbol_name(joint.q[0]), symbol_name(joint.q[1]), joint.name) for joint in _bases(robot)]


def plot_trajectory(path: str | os.PathLike, trajectory: Trajectory, title: str,
                    paths: list[tuple[str, str, str]] = (), robot: Robot | None = None) -> None:
    """Save :func:`trajectory_figure` as a PNG."""
    trajectory_figure(trajectory, title, paths, robot).savefig(path, format="png", dpi=100)


def trajectory_figure(trajectory: Trajectory, title: str, paths: list[tuple[str, str, str]] = (),
                      robot: Robot | None = None) -> Figure:
    """A figure of coordinates and speeds against time with legends, and for each of `paths`
    (:func:`planar_paths`; the robot's by default) the base's x-y path beside them.  Given the
    `robot`, coordinates (left) and speeds (right) are drawn in :func:`panels` of one unit each;
    without, in one axes each."""
    if robot is None:
        return _stacked_figure(trajectory, title, paths)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    paths = paths or planar_paths(robot)
    columns = (panels(robot, trajectory.coordinate_names, speeds=False),
               panels(robot, trajectory.speed_names, speeds=True))
    rows = max(1, *map(len, columns))
    figure = Figure(figsize=(18 if paths else 14, max(5.0, 2.4 * rows + 1.0)), layout="constrained")
    FigureCanvasAgg(figure)
    left = figure
    if paths:
        left, right = figure.subfigures(1, 2, width_ratios=(3, 1))
        _path(right.subplots(), trajectory, paths)
    grid = left.add_gridspec(rows, 2)
    for column, (column_panels, values, names) in enumerate(((columns[0], trajectory.q, trajectory.coordinate_names),
                                                             (columns[1], trajectory.u, trajectory.speed_names))):
        shared = None
        for row, panel in enumerate(column_panels):
            axes = left.add_subplot(grid[row, column], sharex=shared)
            shared = shared or axes
            picked = [names.index(name) for name in panel.names]
            _lines(axes, trajectory.times, values[:, picked], panel.names, panel.label)
            if row == len(column_panels) - 1:
                axes.set_xlabel("time [s]")
            else:
                axes.tick_params(labelbottom=False)
    figure.suptitle(title)
    return figure


def _stacked_figure(trajectory: Trajectory, title: str, paths: list[tuple[str, str, str]]) -> Figure:
    """Coordinates above speeds, one axes each (no robot to read units from)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(16 if paths else 10, 7), layout="constrained")
    FigureCanvasAgg(figure)
    if paths:
        left, right = figure.subfigures(1, 2, width_ratios=(3, 2))
        coordinates, speeds = left.subplots(2, 1, sharex=True)
        _path(right.subplots(), trajectory, paths)
    else:
        coordinates, speeds = figure.subplots(2, 1, sharex=True)
    _lines(coordinates, trajectory.times, trajectory.q, trajectory.coordinate_names, "coordinates [rad or m]")
    _lines(speeds, trajectory.times, trajectory.u, trajectory.speed_names, "speeds [rad/s or m/s]")
    speeds.set_xlabel("time [s]")
    figure.suptitle(title)
    return figure


def _path(axes, trajectory: Trajectory, paths: list[tuple[str, str, str]]) -> None:
    """The x-y path of each base (equal axes), its start marked."""
    for x_name, y_name, joint in paths:
        x = trajectory.q[:, trajectory.coordinate_names.index(x_name)]
        y = trajectory.q[:, trajectory.coordinate_names.index(y_name)]
        axes.plot(x, y, label=f"{joint} path")
        axes.plot(x[:1], y[:1], "o", label=f"{joint} start")
    axes.set_xlabel("x [m]")
    axes.set_ylabel("y [m]")
    axes.set_aspect("equal", adjustable="datalim")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best", fontsize="small")


def _lines(axes, times: np.ndarray, values: np.ndarray, names: list[str], label: str) -> None:
    """One line per column of `values`, named in a legend beside the axes labelled `label`."""
    for column, name in zip(values.T, names):
        axes.plot(times, column, label=name)
    axes.set_ylabel(label)
    axes.grid(True, alpha=0.3)
    if names:
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", ncols=1 + len(names) // 16)

"""Plots of a simulated trajectory: coordinates and speeds against time, and the x-y path of
mobile bases (planar or floating joints out of the world), as a PNG file.

Matplotlib's Agg canvas is used directly (no pyplot, no display), so plotting works headless
and leaves matplotlib's global state alone.
"""
from __future__ import annotations

import os

import numpy as np

from mb_sim.sim.outputs import Trajectory

__all__ = ["planar_paths", "plot_trajectory"]


def planar_paths(robot) -> list[tuple[str, str, str]]:
    """``(x coordinate, y coordinate, joint)`` of each planar or floating joint out of the root
    link (a mobile base), whose path is worth a map view."""
    from mb_sim.model import FloatingJoint, PlanarJoint, symbol_name

    root = robot.root_link.name
    return [(symbol_name(joint.q[0]), symbol_name(joint.q[1]), joint.name) for joint in robot.joints.values()
            if isinstance(joint, (FloatingJoint, PlanarJoint)) and joint.parent.name == root]


def plot_trajectory(path: str | os.PathLike, trajectory: Trajectory, title: str,
                    paths: list[tuple[str, str, str]] = ()) -> None:
    """Save stacked axes, coordinates and speeds against time, with legends, and for each of
    `paths` (:func:`planar_paths`) the base's x-y path beside them, as a PNG."""
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
    _lines(coordinates, trajectory.times, trajectory.q, trajectory.coordinate_names, "coordinates [rad, m]")
    _lines(speeds, trajectory.times, trajectory.u, trajectory.speed_names, "speeds [rad/s, m/s]")
    speeds.set_xlabel("time [s]")
    figure.suptitle(title)
    figure.savefig(path, format="png", dpi=100)


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

"""Plots of a simulated trajectory: coordinates and speeds against time, as a PNG file.

Matplotlib's Agg canvas is used directly (no pyplot, no display), so plotting works headless
and leaves matplotlib's global state alone.
"""
from __future__ import annotations

import os

import numpy as np

from mb_sim.sim.outputs import Trajectory

__all__ = ["plot_trajectory"]


def plot_trajectory(path: str | os.PathLike, trajectory: Trajectory, title: str) -> None:
    """Save two stacked axes, coordinates and speeds against time, with legends, as a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 7), layout="constrained")
    FigureCanvasAgg(figure)
    coordinates, speeds = figure.subplots(2, 1, sharex=True)
    _lines(coordinates, trajectory.times, trajectory.q, trajectory.coordinate_names, "coordinates [rad, m]")
    _lines(speeds, trajectory.times, trajectory.u, trajectory.speed_names, "speeds [rad/s, m/s]")
    speeds.set_xlabel("time [s]")
    figure.suptitle(title)
    figure.savefig(path, format="png", dpi=100)


def _lines(axes, times: np.ndarray, values: np.ndarray, names: list[str], label: str) -> None:
    """One line per column of `values`, named in a legend beside the axes labelled `label`."""
    for column, name in zip(values.T, names):
        axes.plot(times, column, label=name)
    axes.set_ylabel(label)
    axes.grid(True, alpha=0.3)
    if names:
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", ncols=1 + len(names) // 16)

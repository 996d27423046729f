"""The validation plot: recorded joint positions against the replays on the URDF and the corrected URDF."""
from __future__ import annotations

import os

import numpy as np

from mb_sim.identify.signals import JointSignals
from mb_sim.identify.validation import ReplayComparison

__all__ = ["plot_replays"]


def plot_replays(path: str | os.PathLike, signals: JointSignals, before: ReplayComparison,
                 after: ReplayComparison) -> None:
    """One panel per joint: recorded, replayed on the URDF, replayed on the corrected URDF (PNG at `path`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n = len(signals.joint_names)
    figure = Figure(figsize=(9, 1.8 * n + 0.6), layout="constrained")
    FigureCanvasAgg(figure)
    axes = np.atleast_1d(figure.subplots(n, 1, sharex=True))
    for k, (ax, name) in enumerate(zip(axes, signals.joint_names)):
        ax.plot(signals.times, signals.positions[:, k], color="black", linewidth=1.6, label="recorded")
        ax.plot(before.times, before.simulated[:, k], color="tab:red", linewidth=0.9,
                label=f"URDF (RMS {before.rms[k]:.2g})")
        ax.plot(after.times, after.simulated[:, k], color="tab:blue", linewidth=0.9, linestyle="--",
                label=f"corrected (RMS {after.rms[k]:.2g})")
        ax.set_ylabel(f"{name}\n[rad or m]")
        ax.legend(loc="upper right", fontsize="small")
    axes[-1].set_xlabel("time [s]")
    figure.suptitle(f"recorded efforts replayed, each segment from the recorded state (RMS error: URDF {before.total:.3g}, "
                    f"corrected {after.total:.3g})")
    figure.savefig(path, dpi=100)

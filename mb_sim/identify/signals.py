"""Measured joint signals: read from an MCAP recording, smoothed and differentiated.

Positions, velocities and efforts come from ``sensor_msgs/msg/JointState`` messages (mb_sim's own
recordings, the node's recorder and ``ros2 bag record`` in MCAP all store them), by joint name and
in header-stamp order.  Differentiation and smoothing use Savitzky-Golay filters (local
polynomial fits over a centred window, so zero-phase): positions give velocities where the
recording has none, velocities give accelerations.  The efforts and the regressor's columns then
pass through one same filter (:class:`FilteredSignals`), so the equation they satisfy is kept.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from struct import error as struct_error
from pathlib import Path

import numpy as np
from scipy.signal import savgol_filter

__all__ = ["FilteredSignals", "JointSignals", "RecordingError", "read_joint_states", "differentiate"]

POLYNOMIAL_ORDER = 5


class RecordingError(ValueError):
    """A recording that cannot be identified from (names the file and what is missing)."""


@dataclass
class JointSignals:
    """Samples at ``times`` (n,): ``positions``, ``velocities`` (or None), ``efforts`` (n, joints)."""

    times: np.ndarray
    joint_names: list[str]
    positions: np.ndarray
    velocities: np.ndarray | None
    efforts: np.ndarray
    source: str = ""

    def uniform(self) -> tuple["JointSignals", str]:
        """Evenly spaced samples: the longest stretch without a gap (a step over 1.5 times the
        median: lost messages), resampled onto the median step where stamps jitter (linear
        interpolation); and a line saying what was done ('' if nothing)."""
        steps = np.diff(self.times)
        if len(steps) == 0 or steps.min() <= 0:
            raise RecordingError(f"{self.source}: the time stamps do not increase (repeated or out of order: "
                                 "a reset or a restart in the recording?)")
        dt = float(np.median(steps))
        cuts = np.flatnonzero(steps > 1.5 * dt)
        bounds = np.concatenate([[0], cuts + 1, [len(self.times)]])
        longest = int(np.argmax(np.diff(bounds)))
        part = slice(bounds[longest], bounds[longest + 1])
        notes = []
        if len(cuts):
            notes.append(f"{len(cuts)} gaps (lost messages): kept the longest stretch without one, "
                         f"{part.stop - part.start} of {len(self.times)} samples")
        times = self.times[part]
        grid = times[0] + dt * np.arange(int(np.floor((times[-1] - times[0]) / dt + 1e-9)) + 1)
        if np.abs(np.diff(times) - dt).max(initial=0.0) <= 1e-6 * dt:
            grid = times
        else:
            notes.append(f"stamps jitter by up to {np.abs(np.diff(times) - dt).max():.2g} s: resampled every {dt:.6g} s")

        def resample(x):
            return x[part] if grid is times else np.column_stack([np.interp(grid, times, x[part][:, k])
                                                                  for k in range(x.shape[1])])
        velocities = None if self.velocities is None else resample(self.velocities)
        return (JointSignals(grid, self.joint_names, resample(self.positions), velocities, resample(self.efforts),
                             self.source), "; ".join(notes))

    def check_efforts(self) -> "JointSignals":
        """Refuse efforts that cannot carry the dynamics (all zero: a driver without torque sensing)."""
        silent = [j for k, j in enumerate(self.joint_names) if not np.any(self.efforts[:, k])]
        if silent:
            raise RecordingError(f"{self.source}: the efforts of joints {', '.join(silent)} are zero throughout "
                                 "(a driver that reports no torque?): identification needs the applied efforts")
        return self

    def finite(self) -> "JointSignals":
        """The longest stretch of samples where every value is a number (before a controller's
        first command the efforts are not), or RecordingError naming the joints that have none."""
        values = [self.positions, self.efforts] + ([] if self.velocities is None else [self.velocities])
        empty = [j for k, j in enumerate(self.joint_names) if any(np.isnan(x[:, k]).all() for x in values)]
        if empty:
            raise RecordingError(f"{self.source}: no values of joints {', '.join(empty)} (positions, velocities or "
                                 "efforts missing throughout)")
        good = np.all([np.isfinite(x).all(axis=1) for x in values], axis=0)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], good.astype(int), [0]])))
        starts, ends = edges[::2], edges[1::2]
        longest = int(np.argmax(ends - starts))
        kept = slice(starts[longest], ends[longest])
        velocities = None if self.velocities is None else self.velocities[kept]
        return JointSignals(self.times[kept], self.joint_names, self.positions[kept], velocities, self.efforts[kept],
                            self.source)

    def select(self, joints: list[str]) -> "JointSignals":
        """The columns of `joints`, in that order."""
        index = [self.joint_names.index(j) for j in joints]
        velocities = None if self.velocities is None else self.velocities[:, index]
        return JointSignals(self.times, list(joints), self.positions[:, index], velocities, self.efforts[:, index],
                            self.source)


def read_joint_states(path: str | Path, topic: str = "/joint_states", effort_topic: str | None = None,
                      effort_joints: list[str] | None = None) -> JointSignals:
    """The JointState messages on `topic` of the MCAP file `path`, as arrays.

    With `effort_topic`, the efforts come from a controller's command topic instead: a
    ``std_msgs/msg/Float64MultiArray`` (``forward_command_controller``; one value per joint of
    `effort_joints`, in that order) or a JointState (efforts by name).  A command holds until the
    next one; a sample takes the mean of the commands held just before and just after it (its
    acceleration, as a centred filter estimates it, is the mean of the two).
    """
    path = Path(path)
    rows: dict[str, list] = {}
    stamps, logged = [], []
    for message, decoded in _messages(path, topic, "sensor_msgs/msg/JointState"):
        stamps.append(_nanoseconds(decoded.header.stamp))
        logged.append(int(message.log_time))
        _append(rows, decoded, len(stamps) - 1)
    if not stamps:
        raise RecordingError(f"{path}: no JointState messages on topic {topic}")
    nanoseconds = np.array(stamps if any(stamps) else logged, dtype=np.int64)  # header stamps, else log times
    signals = _arrays(path, nanoseconds * 1e-9, rows, require_efforts=effort_topic is None)
    if effort_topic is not None:
        order = np.argsort(nanoseconds, kind="stable")
        signals.efforts = _commanded_efforts(path, effort_topic, effort_joints, signals,
                                             np.array(logged, dtype=np.int64)[order])
    return signals


def _nanoseconds(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _messages(path: Path, topic: str, kind: str):
    """(message, decoded) on `topic`, or RecordingError naming the file."""
    from mcap.exceptions import McapError
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    try:
        with open(path, "rb") as stream:
            reader = make_reader(stream, decoder_factories=[DecoderFactory()])
            for _, _, message, decoded in reader.iter_decoded_messages(topics=[topic]):
                yield message, decoded
    except FileNotFoundError:
        raise RecordingError(f"{path}: no such file") from None
    except (McapError, ValueError, KeyError, AttributeError, EOFError, OSError, struct_error) as err:
        raise RecordingError(f"{path}: not a readable MCAP recording of {kind} on {topic} "
                             f"({type(err).__name__}: {err})") from None


def _commanded_efforts(path: Path, topic: str, joints: list[str] | None, signals: JointSignals,
                       logged: np.ndarray) -> np.ndarray:
    """The efforts commanded on `topic`, held from each command to the next, at the samples: matched
    by log time (the recorder's clock for both topics; a command topic has no header stamp)."""
    times, rows = [], []
    for message, decoded in _messages(path, topic, "std_msgs/msg/Float64MultiArray or sensor_msgs/msg/JointState"):
        if hasattr(decoded, "name") and hasattr(decoded, "effort"):  # a JointState: by name
            values = dict(zip(decoded.name, decoded.effort))
        elif not hasattr(decoded, "data") or not all(isinstance(v, float) for v in decoded.data):
            raise RecordingError(f"{path}: {topic} carries neither std_msgs/msg/Float64MultiArray nor "
                                 f"sensor_msgs/msg/JointState messages ({type(decoded).__name__})")
        else:
            if not joints or len(decoded.data) != len(joints):
                raise RecordingError(f"{path}: {topic} carries {len(decoded.data)} efforts per message: name their "
                                     f"joints in order (--effort-joints j1,j2,...)")
            values = dict(zip(joints, decoded.data))
        times.append(int(message.log_time))  # integer ns: exact comparisons
        rows.append([float(values.get(j, np.nan)) for j in signals.joint_names])
    if not times:
        raise RecordingError(f"{path}: no commands on topic {topic}")
    order = np.argsort(times, kind="stable")
    times, rows = np.array(times, dtype=np.int64)[order], np.array(rows)[order]

    def held(side: str) -> np.ndarray:
        last = np.searchsorted(times, logged, side=side) - 1
        return np.where(last[:, None] >= 0, rows[np.maximum(last, 0)], np.nan)

    efforts = 0.5 * (held("left") + held("right"))  # the commands held just before and just after each sample
    if np.isnan(efforts).all(axis=0).all():
        raise RecordingError(f"{path}: the commands on {topic} name none of the joints of {signals.joint_names}")
    return efforts


def _append(rows: dict, decoded, sample: int) -> None:
    for i, name in enumerate(decoded.name):
        entry = rows.setdefault(name, [])
        entry.append((sample, _at(decoded.position, i), _at(decoded.velocity, i), _at(decoded.effort, i)))


def _at(values, i: int) -> float:
    return float(values[i]) if len(values) > i else math.nan


def _arrays(path: Path, times: np.ndarray, rows: dict, require_efforts: bool = True) -> JointSignals:
    """Joints present in every message, samples in time order; NaN where a field was empty."""
    n = len(times)
    names = [name for name, entries in rows.items() if len(entries) == n]
    order = np.argsort(times, kind="stable")
    data = {name: np.array([e[1:] for e in rows[name]])[order] for name in names}
    positions = np.column_stack([data[n_][:, 0] for n_ in names]) if names else np.zeros((n, 0))
    velocities = np.column_stack([data[n_][:, 1] for n_ in names]) if names else np.zeros((n, 0))
    efforts = np.column_stack([data[n_][:, 2] for n_ in names]) if names else np.zeros((n, 0))
    if require_efforts and names and np.isnan(efforts).all():
        raise RecordingError(f"{path}: the JointState messages carry no efforts: identification needs the "
                             "applied efforts (record /joint_states with effort, or give the controller's command topic: --effort-topic)")
    return JointSignals(times[order], names, positions, None if np.isnan(velocities).any() else velocities,
                        efforts, str(path))


@dataclass
class FilteredSignals:
    """Smoothed states and their derivatives at every sample, and the parallel filter.

    The fit filters both sides of ``tau = Y pi`` with the same linear filter (:meth:`parallel`):
    ``filter(tau) = filter(Y) pi`` holds exactly whatever Y's nonlinearity, so the efforts' noise
    is smoothed without the bias smoothing them alone would leave (Coulomb friction turning at a
    reversal).  Filtered samples are kept one window apart (decimation), so their residuals are
    nearly independent, as the least squares' standard deviations assume (they measure noise, not
    systematic error such as an unmodelled load).
    """

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    efforts: np.ndarray
    window: int  # samples

    def parallel(self, x: np.ndarray) -> np.ndarray:
        """`x` (samples first) smoothed like the states, one sample per window, without the ends."""
        smoothed = savgol_filter(x, self.window, POLYNOMIAL_ORDER, axis=0, mode="interp")
        return smoothed[self.window:len(self.times) - self.window:self.window]


def differentiate(signals: JointSignals, window: float) -> FilteredSignals:
    """Smoothed positions, velocities and accelerations (zero-phase, `window` seconds wide)."""
    times = signals.times
    dt = _uniform_step(signals)
    samples = max((POLYNOMIAL_ORDER + 1) | 1, int(round(window / dt)) | 1)
    if 4 * samples > len(times):
        raise RecordingError(f"{signals.source}: {len(times)} samples ({times[-1] - times[0]:.3g} s) are too few "
                             f"for the filter window of {samples} samples ({window:g} s): record longer")

    def smooth(x, deriv=0):
        return savgol_filter(x, samples, POLYNOMIAL_ORDER, deriv=deriv, delta=dt, axis=0, mode="interp")

    q = smooth(signals.positions)
    u = smooth(signals.positions, 1) if signals.velocities is None else smooth(signals.velocities)
    a = smooth(signals.positions, 2) if signals.velocities is None else smooth(signals.velocities, 1)
    return FilteredSignals(times, q, u, a, signals.efforts, samples)


def _uniform_step(signals: JointSignals) -> float:
    steps = np.diff(signals.times)
    if len(steps) == 0 or steps.min() <= 0:
        raise RecordingError(f"{signals.source}: the time stamps do not increase")
    dt = float(np.median(steps))
    if np.abs(steps - dt).max() > 0.05 * dt:
        raise RecordingError(f"{signals.source}: samples are not evenly spaced in time (steps from "
                             f"{steps.min():g} s to {steps.max():g} s): identification needs a fixed rate "
                             "(JointSignals.uniform resamples)")
    return dt

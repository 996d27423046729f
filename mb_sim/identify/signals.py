"""Measured joint signals: read from an MCAP recording, smoothed and differentiated.

Positions, velocities and efforts come from ``sensor_msgs/msg/JointState`` messages (mb_sim's own
recordings, the node's recorder and ``ros2 bag record`` in MCAP all store them), by joint name and
in header-stamp order.  Differentiation and smoothing use Savitzky-Golay filters (local
polynomial fits over a centred window, so zero-phase): positions give velocities where the
recording has none, velocities give accelerations.  The efforts are left as measured: least
squares averages their noise without bias, while smoothing them would smear what is not smooth
(Coulomb friction turning at a reversal) and leave a bias the regressor, evaluated on smoothed
states, cannot follow.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
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

    def select(self, joints: list[str]) -> "JointSignals":
        """The columns of `joints`, in that order."""
        index = [self.joint_names.index(j) for j in joints]
        velocities = None if self.velocities is None else self.velocities[:, index]
        return JointSignals(self.times, list(joints), self.positions[:, index], velocities, self.efforts[:, index],
                            self.source)


def read_joint_states(path: str | Path, topic: str = "/joint_states") -> JointSignals:
    """The JointState messages on `topic` of the MCAP file `path`, as arrays."""
    from mcap.exceptions import McapError
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    path = Path(path)
    rows: dict[str, list] = {}
    times = []
    try:
        with open(path, "rb") as stream:
            reader = make_reader(stream, decoder_factories=[DecoderFactory()])
            for _, channel, message, decoded in reader.iter_decoded_messages(topics=[topic]):
                stamp = decoded.header.stamp
                times.append(stamp.sec + 1e-9 * stamp.nanosec if (stamp.sec or stamp.nanosec) else message.log_time * 1e-9)
                _append(rows, decoded, len(times) - 1)
    except FileNotFoundError:
        raise RecordingError(f"{path}: no such file") from None
    except (McapError, ValueError, KeyError, AttributeError, EOFError, OSError) as err:
        raise RecordingError(f"{path}: not a readable MCAP recording of sensor_msgs/msg/JointState on {topic} "
                             f"({type(err).__name__}: {err})") from None
    if not times:
        raise RecordingError(f"{path}: no JointState messages on topic {topic}")
    return _arrays(path, np.array(times), rows)


def _append(rows: dict, decoded, sample: int) -> None:
    for i, name in enumerate(decoded.name):
        entry = rows.setdefault(name, [])
        entry.append((sample, _at(decoded.position, i), _at(decoded.velocity, i), _at(decoded.effort, i)))


def _at(values, i: int) -> float:
    return float(values[i]) if len(values) > i else math.nan


def _arrays(path: Path, times: np.ndarray, rows: dict) -> JointSignals:
    """Joints present in every message, samples in time order; NaN where a field was empty."""
    n = len(times)
    names = [name for name, entries in rows.items() if len(entries) == n]
    order = np.argsort(times, kind="stable")
    data = {name: np.array([e[1:] for e in rows[name]])[order] for name in names}
    positions = np.column_stack([data[n_][:, 0] for n_ in names]) if names else np.zeros((n, 0))
    velocities = np.column_stack([data[n_][:, 1] for n_ in names]) if names else np.zeros((n, 0))
    efforts = np.column_stack([data[n_][:, 2] for n_ in names]) if names else np.zeros((n, 0))
    if names and np.isnan(efforts).all():
        raise RecordingError(f"{path}: the JointState messages carry no efforts: identification needs the "
                             "applied efforts (record /joint_states with effort, or the command topic)")
    return JointSignals(times[order], names, positions, None if np.isnan(velocities).any() else velocities,
                        efforts, str(path))


@dataclass
class FilteredSignals:
    """Smoothed states and their derivatives at every sample, and the parallel filter.

    The fit filters both sides of ``tau = Y pi`` with the same linear filter (:meth:`parallel`):
    ``filter(tau) = filter(Y) pi`` holds exactly whatever Y's nonlinearity, so the efforts' noise
    is smoothed without the bias smoothing them alone would leave (Coulomb friction turning at a
    reversal).  Filtered samples are kept one window apart (decimation), so their residuals are
    nearly independent and the least squares' standard deviations honest.
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
                             f"{steps.min():g} s to {steps.max():g} s): identification needs a fixed rate")
    return dt

"""A sweep's results: one row per sample (its values, status, error, times, outputs), as a table
that writes itself to CSV or JSON lines and plots a column against another.  Trajectories are
not kept here: :class:`TrajectoryWriter` streams them to an MCAP file as the samples end."""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["SweepResults", "TrajectoryWriter"]


@dataclass
class SweepResults:
    """The rows of a sweep, ordered by sample, and the sweep's wall time [s]."""

    rows: list[dict[str, Any]]
    wall_time: float = 0.0
    sim_time: float = field(default=0.0)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    @property
    def columns(self) -> list[str]:
        """Every column any row has, in the order they first appear."""
        return list(dict.fromkeys(key for row in self.rows for key in row))

    def column(self, name: str) -> np.ndarray:
        """Column `name` as an array (NaN or "" where a row lacks it)."""
        values = [row.get(name) for row in self.rows]
        numeric = all(v is None or isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        return np.array([math.nan if v is None else v for v in values] if numeric else
                        ["" if v is None else v for v in values])

    @property
    def failed(self) -> list[dict[str, Any]]:
        """The rows whose sample did not run to its end (status "diverged" or "failed")."""
        return [row for row in self.rows if row.get("status") != "ok"]

    @property
    def robot_seconds_per_second(self) -> float:
        """Simulated seconds (all samples) per wall second of the sweep."""
        return sum(row.get("sim_time", 0.0) for row in self.rows) / self.wall_time if self.wall_time > 0 else math.nan

    def to_csv(self, path: str | Path) -> None:
        """One line per row, a column per :attr:`columns` (empty where a row lacks it)."""
        with open(path, "w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=self.columns, restval="")
            writer.writeheader()
            writer.writerows(self.rows)

    def to_jsonl(self, path: str | Path) -> None:
        """One JSON object per line per row."""
        with open(path, "w") as file:
            for row in self.rows:
                file.write(json.dumps(row) + "\n")

    def plot(self, x: str, y: str, path: str | Path, title: str | None = None) -> None:
        """Column `y` against column `x` as a PNG, the failed samples marked."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ok = np.array([row.get("status") == "ok" for row in self.rows])
        xs, ys = self.column(x), self.column(y)
        figure, axes = plt.subplots(figsize=(6, 4))
        axes.plot(xs[ok], ys[ok], "o", markersize=4, label="ok")
        if (~ok).any():
            axes.plot(xs[~ok], np.where(np.isfinite(ys[~ok].astype(float)), ys[~ok], np.nanmin(ys[ok]) if ok.any() else 0),
                      "x", color="red", label="failed")
        axes.set_xlabel(x)
        axes.set_ylabel(y)
        axes.set_title(title or f"{len(self.rows)} samples")
        axes.grid(True, alpha=0.3)
        axes.legend()
        figure.tight_layout()
        figure.savefig(path, format="png", dpi=100)
        plt.close(figure)


class TrajectoryWriter:
    """Trajectories to an MCAP file as samples end: channel ``/sample_<index>`` per sample, one
    JSON message per recorded state (``t``, ``q`` and ``u`` by name), logged at its sim time."""

    def __init__(self, path: str | Path, coordinate_names: list[str], speed_names: list[str]) -> None:
        from mcap.writer import Writer

        self._file = open(path, "wb")
        self._writer = Writer(self._file)
        self._writer.start(profile="", library="mb_sim sweep")
        schema = {"type": "object", "properties": {"t": {"type": "number"},
                                                   "q": {"type": "object"}, "u": {"type": "object"}}}
        self._schema = self._writer.register_schema("mb_sim.SweepState", "jsonschema", json.dumps(schema).encode())
        self._names = coordinate_names, speed_names

    def write(self, index: int, trajectory: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        """Sample `index`'s trajectory (times, q, u)."""
        channel = self._writer.register_channel(f"/sample_{index}", "json", self._schema)
        for t, q, u in zip(*trajectory):
            data = {"t": float(t), "q": dict(zip(self._names[0], map(float, q))),
                    "u": dict(zip(self._names[1], map(float, u)))}
            stamp = int(round(float(t) * 1e9))
            self._writer.add_message(channel, log_time=stamp, data=json.dumps(data).encode(), publish_time=stamp)

    def close(self) -> None:
        self._writer.finish()
        self._file.close()

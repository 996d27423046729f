"""The robot's named constraints (mimic joints, loop joints, rolling wheels...): which rows of the
velocity constraints belong to each, enabling and releasing them at run time (Karana's SubGraph
``enableConstraint`` / ``disableConstraint``), and the degrees of freedom where the robot is.
"""
from __future__ import annotations

import numpy as np

from mb_sim.codegen.errors import FACTORIZATION_FAILURES, FactorizationError
from mb_sim.sim.constraint_kinematics import ConstraintKinematics
from mb_sim.sim.errors import SimulationError
from mb_sim.sim.outputs import ConstraintSystem
from mb_sim.sim.state import SimulationState
from mb_sim.symbolic.rank import independent_rows

__all__ = ["NamedConstraints"]


class NamedConstraints:
    """The named constraints of one run: rows, switches (kept in the run's state: released names)."""

    def __init__(self, model, kinematics: ConstraintKinematics, state: SimulationState) -> None:
        self.model, self.kinematics, self.state = model, kinematics, state
        self.names = list(dict.fromkeys(model.constraint_names))

    def rows(self, name: str) -> np.ndarray:
        """The row indices of constraint `name` (ValueError naming the constraints otherwise)."""
        rows = np.flatnonzero([n == name for n in self.model.constraint_names])
        if not len(rows):
            known = ", ".join(self.names) or "none: this robot has no constraints"
            raise ValueError(f"unknown constraint {name!r}; constraints: {known}")
        return rows

    def enabled(self, name: str) -> bool:
        """Whether constraint `name` is enforced."""
        self.rows(name)
        return name not in self.state.released

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Enforce or release `name`.  Enabling projects the state onto the constraint (dependent
        coordinates by Gauss-Newton, then the projection); where that fails it stays released and
        SimulationError says so."""
        self.rows(name)
        released = self.state.released
        if enabled == (name not in released):
            return
        if not enabled:
            released.add(name)
            self.apply()
            return
        released.discard(name)
        self.apply()
        b, t = self.model.buffers, self.state.time
        state = b.q.copy(), b.u.copy()
        try:  # the dependent coordinates onto it (the projection alone would move every one a little)
            q = self.kinematics.solve_positions(state[0], state[0], set(), t)
            b.q[:], b.u[:] = q, state[1]  # (the solver's evaluations load their own speeds)
            self.model.project_into(t)
        except (FactorizationError, ValueError) as err:
            b.q[:], b.u[:] = state
            released.add(name)
            self.apply()
            reason = FACTORIZATION_FAILURES.get(err.code, err) if isinstance(err, FactorizationError) else err
            raise SimulationError(f"cannot enable constraint {name!r}: the state is too far from satisfying it "
                                  f"({reason})", t) from None

    def on_link(self, link: str, constraint_links) -> list[str]:
        """The constraints whose forces act on `link` (`constraint_links`: the facts' (name, links)
        pairs), in derivation order; ValueError naming the links for an unknown one."""
        if link not in self.model.link_names:
            raise ValueError(f"unknown link {link!r}; links: {', '.join(self.model.link_names)}")
        joined = {name for name, links in constraint_links if link in links}
        return [name for name in self.names if name in joined]

    def enabled_names(self) -> list[str]:
        """The constraints enforced now, in derivation order."""
        return [name for name in self.names if name not in self.state.released]

    def system(self) -> ConstraintSystem:
        """The rows as the last evaluation left them in the buffers (A, b, c, and the multipliers
        of the last forward dynamics): call after the forward dynamics."""
        b, view = self.model.buffers, self.model.layout.view
        matrix = view(b.out, "constraint_matrix").copy()
        multipliers = b.lam[:len(matrix)].copy()
        return ConstraintSystem(list(self.model.constraint_names), b.enabled[:len(matrix)] != 0.0, matrix,
                                view(b.out, "constraint_bias")[:, 0].copy(),
                                view(b.out, "acceleration_bias")[:, 0].copy(), multipliers, -matrix.T @ multipliers)

    def apply(self) -> None:
        """Row flags: every row of the constraints not released (which of them are independent is
        judged by the dynamics wherever the robot is)."""
        released = self.state.released
        self.model.buffers.enabled[:] = [0.0 if name in released else 1.0 for name in self.model.constraint_names]

    def degrees_of_freedom(self) -> int:
        """The speeds less the enforced constraint rows independent at the current configuration."""
        b, view = self.model.buffers, self.model.layout.view
        self.model.evaluate_into(self.state.time)
        matrix = view(b.out, "constraint_matrix")
        return self.model.n_u - len(independent_rows(matrix, np.flatnonzero(b.enabled != 0.0).tolist()))

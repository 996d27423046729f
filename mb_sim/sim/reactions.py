"""Noncontributing forces at the current state: the reactions components registered with the
auxiliary data handler (seed 000), from the exact accelerations of the model.

Per force ``s_i a_i`` on the side S_i (the points positioned from its point), the generated
outputs give the right side of its auxiliary equation as ``J_i u' + b_i`` and the coupling row
``N_i`` (``a_i . a_j`` for the forces j at the same point), see
:mod:`mb_sim.symbolic.noncontributing`.  Contact forces on S_i's links come from the
``contact_states`` rows (as for the force-torque sensors); then ``N s = J u' + b - a . f_contact``.
"""
from __future__ import annotations

import numpy as np

from mb_sim.sim.force_torque import contact_wrench_on
from mb_sim.sim.robot_facts import RobotFacts, as_facts

__all__ = ["NoncontributingForces"]


class NoncontributingForces:
    """The noncontributing forces of one simulator's robot, solved at the state in the buffers."""

    def __init__(self, robot: RobotFacts, model) -> None:
        robot = as_facts(robot)
        self.model = model
        self.names = [name for name, _ in robot.noncontributing]
        if list(model.noncontributing_names) != self.names:
            raise ValueError(f"the compiled model has noncontributing forces {model.noncontributing_names}, the robot "
                             f"{self.names}; rebuild it (another cache_dir)")
        self.sides = [frozenset(links) for _, links in robot.noncontributing]
        self.contacts = [list(row) for row in robot.contact_loads] if self.names else []

    def read(self, time: float) -> dict[str, float]:
        """Every noncontributing force's value [N] by its symbol's name: one evaluation of the
        outputs and one of the forward dynamics (which write ``buffers.udot``)."""
        if not self.names:
            return {}
        model, view = self.model, self.model.layout.view
        b = model.buffers
        model.evaluate_into(time)
        jacobians = view(b.out, "noncontributing_jacobians").copy()
        states = view(b.out, "noncontributing_states").copy()
        contacts = view(b.out, "contact_states").copy()
        model.forward_dynamics_into(time)
        right = jacobians @ b.udot + states[:, 0]
        for i, side in enumerate(self.sides):
            right[i] -= states[i, 1:4] @ self._contact_force(side, contacts)
        coupling = states[:, 4:]
        for cut in self._cuts(coupling):
            if np.linalg.matrix_rank(coupling[np.ix_(cut, cut)]) < len(cut):
                raise ValueError(f"noncontributing forces {', '.join(self.names[k] for k in cut)}: their axes at one "
                                 "point are dependent (parallel, or three in a plane) at this state, so the reactions "
                                 "are not determined")
        return dict(zip(self.names, np.linalg.solve(coupling, right).tolist()))

    @staticmethod
    def _cuts(coupling: np.ndarray) -> list[list[int]]:
        """The groups of forces coupled directly or through others (at one point), each as its
        indices: x and z are in one group with an axis between them."""
        linked = (coupling != 0) | (coupling.T != 0)
        groups, seen = [], set()
        for start in range(len(coupling)):
            if start in seen:
                continue
            group, frontier = [], [start]
            seen.add(start)
            while frontier:
                i = frontier.pop()
                group.append(i)
                for j in np.flatnonzero(linked[i]).tolist():
                    if j not in seen:
                        seen.add(j)
                        frontier.append(j)
            groups.append(sorted(group))
        return groups

    def _contact_force(self, side: frozenset[str], contacts: np.ndarray) -> np.ndarray:
        """The sum of the contact forces on the links of `side` (world)."""
        return contact_wrench_on(side, contacts, self.contacts, np.zeros(3))[:3]

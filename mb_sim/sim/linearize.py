"""Linearization of the constrained equations of motion in minimal coordinates, and equilibria.

The state x = [q; u; z] (coordinates, speeds, electrical states) moves by x' = f(x, r) on the
constraint manifold Phi(q) = 0, A(q) u + b(q) = 0 (r: the inputs, efforts then voltages).  About
an operating point the manifold is parametrized by independent coordinates q_I and independent
speeds u_I (as SymPy's ``Linearizer`` does):

    dq = E dq_I,  E = [I; -Phi_D^-1 Phi_I]          (Phi_q split into dependent/independent columns)
    du = H du_I + G dq_I,  H = [I; -A_D^-1 A_I],  G = [0; -A_D^-1 (d(A u + b)/dq) E]

and the minimal system x_m = [q_I; u_I; z] has ``A = P [f_q E + f_u G, f_u H, f_z]``,
``B = P f_r`` (P picks the rows of q_I', u_I', z').  The Jacobians of f are exact: complex-step
derivatives (f(x + i h e_j) has imaginary part h f_j' to rounding, nothing is subtracted) through
the model's generated NumPy programs, whose expressions are analytic; the constrained
accelerations are solved as the simulator solves them (the Schur complement of the enabled rows).

A floating base's unit quaternion Q is replaced by a rotation vector r in its child frame,
Q = Q0 (x) exp(r / 2) about the point's Q0 (the tangent chart: dQ = 1/2 L(Q0) [0; I] dr, and
dr = 2 vec(Q0* (x) dQ)), so the minimal system has as many coordinates as speeds and a floating
body's orientation error is a small rotation about its own axes (``<joint>_rx``, ``_ry``, ``_rz``).

Equilibria: at u = 0 with q given, the inputs r (and electrical states z) that make u' = 0 and
z' = 0 solve F(q, 0, z, r) = A^T lam, z'(q, 0, z, r) = 0, linear in (r, z, lam).
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from mb_sim.codegen.numpy_backend import NumpyModel
from mb_sim.symbolic import derive_equations
from mb_sim.symbolic.rank import independent_rows

__all__ = ["Linearization", "LinearizationError", "linearize", "equilibrium", "Equilibrium", "input_names"]

#: The complex step: far below rounding, so the derivative is exact to rounding.
STEP = 1e-30


class LinearizationError(ValueError):
    """An operating point or model the linearization cannot handle; the message says why."""


@dataclass
class Linearization:
    """``x_m' = A x_m + B r`` about an operating point, in minimal coordinates.

    ``states`` names the minimal state (independent coordinates, independent speeds, electrical
    states), ``inputs`` the columns of B; the dependent coordinates and speeds are the ones the
    constraints determine at the point.  ``C``, ``D`` give the chosen ``outputs`` (deviations from
    their values at the point): ``y = C x_m + D r``.
    """

    A: np.ndarray
    B: np.ndarray
    states: list[str]
    inputs: list[str]
    independent_coordinates: list[str]
    dependent_coordinates: list[str]
    independent_speeds: list[str]
    dependent_speeds: list[str]
    point: dict = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    C: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    D: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    #: The chart's picks: per minimal state, ("q", index in q) or ("r", quaternion start, axis), ("u", index), ("z", index).
    picks: list = field(default_factory=list)

    def deviation(self, q: Sequence[float], u: Sequence[float], z: Sequence[float] = ()) -> np.ndarray:
        """The minimal state of the full state (q, u, z) less the point's, through the chart: a
        quaternion's deviation as the rotation vector 2 vec(Q0* (x) Q) (sign chosen so the
        rotation is the short way)."""
        q0, values, out = np.array(list(self.point["q"].values())), {"q": q, "u": u, "z": z}, []
        for pick in self.picks:
            if pick[0] != "r":
                kind, k = pick
                base = np.array(list(self.point[kind].values()))
                out.append(float(values[kind][k]) - float(base[k]))
                continue
            _, start, axis = pick
            relative = _left(_conjugate(q0[start:start + 4])) @ np.asarray(q[start:start + 4], dtype=float)
            out.append(2.0 * float(np.copysign(1.0, relative[0]) * relative[1 + axis]))
        return np.array(out)

    @property
    def eigenvalues(self) -> np.ndarray:
        return np.linalg.eigvals(self.A)

    @property
    def controllability_rank(self) -> int:
        """Dimension of the reachable subspace span[B, AB, ..., A^(n-1) B], by block Arnoldi
        iteration with reorthogonalization (raw powers of A lose rank numerically when the time
        scales differ, e.g. motor currents against the mechanics)."""
        n = len(self.A)
        if not n or not self.B.size:
            return 0
        scale = max(np.linalg.norm(self.A, 2), np.linalg.norm(self.B, 2), 1e-300)
        basis = _orthonormal(self.B, 1e-10 * scale)
        block = basis
        while block.shape[1] and basis.shape[1] < n:
            candidate = self.A @ block
            candidate -= basis @ (basis.T @ candidate)
            candidate -= basis @ (basis.T @ candidate)  # twice is enough (Kahan)
            block = _orthonormal(candidate, 1e-10 * scale)
            basis = np.hstack([basis, block])
        return int(basis.shape[1])

    def as_dict(self) -> dict:
        """JSON-able: matrices as nested lists."""
        return {"A": self.A.tolist(), "B": self.B.tolist(), "C": self.C.tolist(), "D": self.D.tolist(),
                "states": self.states, "inputs": self.inputs, "outputs": self.outputs,
                "independent_coordinates": self.independent_coordinates,
                "dependent_coordinates": self.dependent_coordinates,
                "independent_speeds": self.independent_speeds, "dependent_speeds": self.dependent_speeds,
                "point": self.point, "eigenvalues_real": self.eigenvalues.real.tolist(),
                "eigenvalues_imag": self.eigenvalues.imag.tolist(),
                "controllability_rank": self.controllability_rank}

    def save(self, path: str | os.PathLike) -> None:
        """Write ``.json`` (as :meth:`as_dict`) or ``.npz`` (A, B and the names)."""
        path = os.fspath(path)
        if path.endswith(".json"):
            with open(path, "w") as stream:
                json.dump(self.as_dict(), stream, indent=1)
        elif path.endswith(".npz"):
            np.savez(path, A=self.A, B=self.B, C=self.C, D=self.D, states=np.array(self.states),
                     inputs=np.array(self.inputs), outputs=np.array(self.outputs))
        else:
            raise ValueError(f"{path}: write .json or .npz")


@dataclass
class Equilibrium:
    """Inputs (and electrical states) that hold a configuration still; ``residual`` is how far
    the best inputs leave the accelerations from zero (0: an equilibrium)."""

    inputs: dict[str, float]
    electrical_states: dict[str, float]
    residual: float


def _orthonormal(matrix: np.ndarray, tolerance: float) -> np.ndarray:
    """An orthonormal basis of the columns of `matrix`, dropping directions below `tolerance`."""
    if not matrix.size:
        return np.zeros((matrix.shape[0], 0))
    left, singular, _ = np.linalg.svd(matrix, full_matrices=False)
    return left[:, singular > tolerance]


def _left(quaternion) -> np.ndarray:
    """L(Q) with Q (x) P = L(Q) P, quaternions as (w, x, y, z)."""
    w, x, y, z = quaternion
    return np.array([[w, -x, -y, -z], [x, w, -z, y], [y, z, w, -x], [z, -y, x, w]])


def _conjugate(quaternion) -> np.ndarray:
    w, x, y, z = quaternion
    return np.array([w, -x, -y, -z])


class _Chart:
    """The tangent chart of the coordinates at `q` (see the module docstring): ``to_q`` (n_q x
    n_c) maps chart deviations to coordinate deviations, ``from_q`` (n_c x n_q) coordinate rates
    to chart rates; ``names`` and ``picks`` name and locate each chart coordinate."""

    def __init__(self, q: np.ndarray, quaternion_starts: Sequence[int], coordinate_names: Sequence[str]) -> None:
        starts = set(quaternion_starts)
        n_q = len(q)
        n_c = n_q - len(starts)
        self.to_q, self.from_q = np.zeros((n_q, n_c)), np.zeros((n_c, n_q))
        self.names, self.picks, self.chart_index = [], [], {}
        k = c = 0
        while k < n_q:
            if k in starts:
                q0 = np.real(np.asarray(q[k:k + 4], dtype=complex))
                self.to_q[k:k + 4, c:c + 3] = 0.5 * _left(q0)[:, 1:]
                self.from_q[c:c + 3, k:k + 4] = 2.0 * _left(_conjugate(q0))[1:, :]
                stem = coordinate_names[k].removesuffix("qw").removesuffix("_")
                self.names += [f"{stem}_r{a}" for a in "xyz"]
                self.picks += [("r", k, a) for a in range(3)]
                k, c = k + 4, c + 3
                continue
            self.to_q[k, c] = self.from_q[c, k] = 1.0
            self.names.append(coordinate_names[k])
            self.picks.append(("q", k))
            self.chart_index[k] = c
            k, c = k + 1, c + 1


class _Rates:
    """f(q, u, z, r) of one simulator's model, complex-capable (see the module docstring)."""

    def __init__(self, sim) -> None:
        self.sim = sim
        self.model = NumpyModel(derive_equations(sim.robot))
        self.params = sim.model.buffers.params.copy()
        self.enabled = sim.model.buffers.enabled != 0.0
        view = self.model.layout.view
        self.view = lambda flat, name: view(flat, name)

    def keep_independent_rows(self, q, u, z, r) -> None:
        """Enforce only the enabled constraint rows independent at this point (the simulator's
        dynamics leave a row that depends on the others there to them; here it would make the
        solves singular)."""
        matrix = np.real(self.view(self.outputs(q, u, z, r), "constraint_matrix"))
        rows = independent_rows(matrix, np.flatnonzero(self.enabled).tolist())
        self.enabled = np.isin(np.arange(len(self.enabled)), rows)

    def outputs(self, q, u, z, r) -> np.ndarray:
        return self.model.outputs_at(q, u, z, r, self.params, self.sim.time)

    def rates(self, q, u, z, r) -> np.ndarray:
        """[q'; u'; z'] with the constrained accelerations."""
        flat, v, on = self.outputs(q, u, z, r), self.view, self.enabled
        m, forcing = v(flat, "mass_matrix"), v(flat, "forcing")[:, 0]
        udot = np.linalg.solve(m, forcing)
        if on.any():
            a = v(flat, "constraint_matrix")[on]
            y = np.linalg.solve(m, a.T)
            lam = np.linalg.solve(a @ y, a @ udot + v(flat, "acceleration_bias")[on, 0])
            udot = udot - y @ lam
        return np.concatenate([v(flat, "qdot")[:, 0], udot, v(flat, "electrical_rates")[:, 0]])

    def jacobian(self, function, arguments: list[np.ndarray], which: int) -> np.ndarray:
        """d function / d arguments[which] by complex steps (one evaluation per column)."""
        base = [np.asarray(a, dtype=complex) for a in arguments]
        columns = []
        for j in range(len(base[which])):
            shifted = [a.copy() for a in base]
            shifted[which][j] += 1j * STEP
            columns.append(np.imag(function(*shifted)) / STEP)
        rows = len(np.atleast_1d(function(*base)))
        return np.array(columns).T if columns else np.zeros((rows, 0))


def _split(matrix: np.ndarray, preferred: Sequence[int], what: str) -> list[int]:
    """Columns of `matrix` (full row rank) to solve for: `preferred` ones first if they are
    independent, else chosen by QR with column pivoting."""
    rows = matrix.shape[0]
    if rows == 0:
        return []
    preferred = [k for k in preferred if k < matrix.shape[1]][:rows]
    if len(preferred) == rows and np.linalg.matrix_rank(matrix[:, preferred]) == rows:
        return sorted(preferred)
    _, r, pivots = scipy.linalg.qr(matrix, pivoting=True)
    if abs(r[rows - 1, rows - 1]) < 1e-10 * max(1.0, abs(r[0, 0])):
        raise LinearizationError(f"the {what} constraints are singular here (a dead point or redundant rows): "
                                 "choose a regular configuration")
    return sorted(pivots[:rows].tolist())


def _state_at(sim, positions: Mapping[str, float] | None, velocities: Mapping[str, float] | None):
    """q, u, z of the operating point: the simulator's state with the given joints set (the
    constraints solve the others); the simulator's own state is restored."""
    saved = (sim.q, sim.u, sim.z, sim.time)
    try:
        if positions or velocities:
            sim.set_state(positions=dict(positions or {}), velocities=dict(velocities or {}), as_initial=False)
        return sim.q, sim.u, sim.z
    finally:
        sim.restore(*saved)


def linearize(sim, positions: Mapping[str, float] | None = None, velocities: Mapping[str, float] | None = None,
              inputs: Mapping[str, float] | None = None, input_kind: str = "all",
              outputs: Sequence[str] = ()) -> Linearization:
    """Linearize `sim`'s robot about the state with `positions`/`velocities` (joint or coordinate
    names; the rest: the simulator's current state) and `inputs` (efforts by joint, voltages by
    motor, wrench components by :func:`input_names`; others 0).  `input_kind` "effort",
    "voltage", "wrench" or "all" picks the columns of B.  A floating base's orientation is three
    rotation coordinates in its tangent chart (see the module docstring).
    `outputs` (rows of C, D): joint names (their position), coordinate or speed names, dependent
    ones included, or ``<link>.x``, ``.y``, ``.z`` (a link frame's origin in the world)."""
    rates = _Rates(sim)
    q, u, z = _state_at(sim, positions, velocities)
    r = _inputs(sim, inputs or {})
    rates.keep_independent_rows(q, u, z, r)
    chart = _Chart(q, sim.model.projection.quaternion_starts, sim.coordinate_names)
    n_c, n_u = len(chart.names), len(u)
    f = rates.rates
    in_chart = scipy.linalg.block_diag(chart.from_q, np.eye(n_u + len(z)))  # coordinate rates -> chart rates
    jq, ju, jz, jr = (in_chart @ rates.jacobian(f, [q, u, z, r], k) for k in range(4))
    e_q, h_u, g_u, iq, iu, dq, du = _embedding(rates, sim, q, u, z, r, chart)
    rows = iq + [n_c + k for k in iu] + [n_c + n_u + k for k in range(len(z))]
    a = np.hstack([jq @ e_q + ju @ g_u, ju @ h_u, jz])[rows]
    columns = _input_columns(sim, input_kind)
    names = input_names(sim)
    coordinate, speed = chart.names, sim.speed_names
    c, d = _output_matrices(rates, sim, list(outputs), [q, u, z, r], e_q, h_u, g_u)
    return Linearization(
        A=np.real(a), B=np.real(jr[rows][:, columns]),
        states=[coordinate[k] for k in iq] + [speed[k] for k in iu] + list(sim.electrical_state_names),
        inputs=[names[k] for k in columns],
        independent_coordinates=[coordinate[k] for k in iq], dependent_coordinates=[coordinate[k] for k in dq],
        independent_speeds=[speed[k] for k in iu], dependent_speeds=[speed[k] for k in du],
        point={"q": dict(zip(sim.coordinate_names, np.real(q).tolist())), "u": dict(zip(speed, u.tolist())),
               "z": dict(zip(sim.electrical_state_names, z.tolist())), "inputs": dict(zip(names, r.tolist()))},
        outputs=list(outputs), C=c, D=d[:, columns],
        picks=[chart.picks[k] for k in iq] + [("u", k) for k in iu] + [("z", k) for k in range(len(z))])


def _output_matrices(rates: _Rates, sim, outputs: list[str], point: list[np.ndarray], e_q, h_u, g_u):
    """C and D (all inputs) of the named outputs (see :func:`linearize`)."""
    selectors = [_output_selector(sim, name) for name in outputs]
    n_x = e_q.shape[1] + h_u.shape[1] + len(point[2])
    if not selectors:
        return np.zeros((0, n_x)), np.zeros((0, len(point[3])))

    def values(qc, uc, zc, rc):
        flat = rates.outputs(qc, uc, zc, rc) if any(kind == "link" for kind, _ in selectors) else None
        return np.array([_select(kind, where, qc, uc, flat, rates) for kind, where in selectors])

    yq, yu, yz, yr = (np.real(rates.jacobian(values, point, k)) for k in range(4))
    return np.hstack([yq @ e_q + yu @ g_u, yu @ h_u, yz]), yr


def _output_selector(sim, name: str) -> tuple[str, object]:
    """What output `name` reads: ("q", index), ("u", index) or ("link", (row, axis))."""
    if name in sim.joint_indices:
        return "q", sim.joint_indices[name][0]
    if name in sim.coordinate_names:
        return "q", sim.coordinate_names.index(name)
    if name in sim.speed_names:
        return "u", sim.speed_names.index(name)
    link, _, axis = name.rpartition(".")
    if link in sim.model.link_names and axis in ("x", "y", "z"):
        return "link", (sim.model.link_names.index(link), "xyz".index(axis))
    raise LinearizationError(f"unknown output {name!r}: a joint, coordinate or speed name, or <link>.x|y|z; "
                             f"joints: {', '.join(sim.joint_indices) or 'none'}")


def _select(kind: str, where, q, u, flat, rates: _Rates):
    if kind == "q":
        return q[where]
    if kind == "u":
        return u[where]
    row, axis = where
    return rates.view(flat, "link_poses")[row, 9 + axis]


def _embedding(rates: _Rates, sim, q, u, z, r, chart: _Chart):
    """E (dq/dq_I, q_I in the chart), H (du/du_I), G (du/dq_I) and the index splits, chart
    indices for the coordinates (see the module docstring)."""
    n_c, n_u = len(chart.names), len(u)
    flat = np.real(rates.outputs(q, u, z, r))
    on = rates.enabled
    n_h = sim.model.layout.blocks["phi"].shape[0]
    holonomic = on[:n_h]
    phi_c = rates.view(flat, "phi_jacobian")[holonomic] @ chart.to_q
    preferred = [chart.chart_index[k] for k in sim.model.dependent_coordinates if k in chart.chart_index]
    dq = _split(phi_c, preferred, "holonomic")
    iq = [k for k in range(n_c) if k not in dq]
    e_c = np.zeros((n_c, len(iq)))
    e_c[iq, range(len(iq))] = 1.0
    if dq:
        e_c[dq] = -np.linalg.solve(phi_c[:, dq], phi_c[:, iq])
    e_q = chart.to_q @ e_c
    a = rates.view(flat, "constraint_matrix")[on]
    du = _split(a, dq, "velocity")  # a one-DoF joint's coordinate and speed share their index
    iu = [k for k in range(n_u) if k not in du]
    h_u, g_u = np.zeros((n_u, len(iu))), np.zeros((n_u, len(iq)))
    h_u[iu, range(len(iu))] = 1.0
    if du:
        def residual(qc, uc, zc, rc):
            out = rates.outputs(qc, uc, zc, rc)
            return rates.view(out, "constraint_matrix")[on] @ uc + rates.view(out, "constraint_bias")[on, 0]

        c_q = np.real(rates.jacobian(residual, [q, u, z, r], 0))
        h_u[du] = -np.linalg.solve(a[:, du], a[:, iu])
        g_u[du] = -np.linalg.solve(a[:, du], c_q @ e_q)
    return e_q, h_u, g_u, iq, iu, dq, du


def input_names(sim) -> list[str]:
    """The names of the model's inputs, in its order: efforts by joint, voltages by motor, wrench
    components as ``<link>.force_x`` ... ``<link>.torque_z``."""
    return [*sim.actuated_joints, *sim.motors, *(i.name for i in sim.facts.wrenches)]


def _inputs(sim, values: Mapping[str, float]) -> np.ndarray:
    """The input vector (efforts, voltages, wrenches) with `values` by name (:func:`input_names`)."""
    r = np.zeros(len(input_names(sim)))
    for name, value in values.items():
        r[_input_index(sim, name)] = float(value)
    return r


def _input_index(sim, name: str) -> int:
    names = input_names(sim)
    if name not in names:
        raise LinearizationError(f"{name!r} takes no input; inputs: {', '.join(names) or 'none'}")
    return names.index(name)


def _input_columns(sim, kind: str) -> list[int]:
    n_a, n_m, n_w = len(sim.actuated_joints), len(sim.motors), len(sim.facts.wrenches)
    columns = {"all": range(n_a + n_m + n_w), "effort": range(n_a), "voltage": range(n_a, n_a + n_m),
               "wrench": range(n_a + n_m, n_a + n_m + n_w)}
    if kind not in columns:
        raise LinearizationError(f"unknown inputs {kind!r}: effort, voltage, wrench or all")
    if not columns[kind] and kind != "all":  # with none at all, B has no columns (A alone: stability)
        raise LinearizationError(f"robot '{sim.robot.name}' has no {kind} inputs")
    return list(columns[kind])


def equilibrium(sim, positions: Mapping[str, float] | None = None, input_kind: str = "effort",
                inputs: Sequence[str] | None = None) -> Equilibrium:
    """The inputs of `input_kind` ("effort", "voltage" or "wrench"; or the named `inputs`) and
    electrical states that hold `sim`'s robot still at `positions` (the rest: the current
    configuration), by least squares; the residual says whether they do."""
    rates = _Rates(sim)
    q, _, _ = _state_at(sim, positions, None)
    u = np.zeros(len(sim.u))
    z, r = np.zeros(len(sim.z)), np.zeros(len(input_names(sim)))
    columns = _input_columns(sim, input_kind) if inputs is None else [_input_index(sim, name) for name in inputs]
    rates.keep_independent_rows(q, u, z, r)
    on = rates.enabled

    def balance(zc, rc):
        flat = rates.outputs(q, u, zc, rc)
        return np.concatenate([rates.view(flat, "forcing")[:, 0], rates.view(flat, "electrical_rates")[:, 0]])

    base = np.real(balance(z, r))
    jz = np.real(rates.jacobian(lambda zc, rc: balance(zc, rc), [z, r], 0))
    jr = np.real(rates.jacobian(lambda zc, rc: balance(zc, rc), [z, r], 1))[:, columns]
    constraint = np.real(rates.view(rates.outputs(q, u, z, r), "constraint_matrix"))[on]
    reaction = np.vstack([-constraint.T, np.zeros((len(z), len(constraint)))])
    system = np.hstack([jr, jz, reaction])
    solution, *_ = np.linalg.lstsq(system, -base, rcond=None)
    residual = float(np.max(np.abs(system @ solution + base), initial=0.0))
    names = input_names(sim)
    n_r = len(columns)
    return Equilibrium({names[k]: float(v) for k, v in zip(columns, solution[:n_r])},
                       dict(zip(sim.electrical_state_names, solution[n_r:n_r + len(z)].tolist())),
                       residual if math.isfinite(residual) else math.inf)

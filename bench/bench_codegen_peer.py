"""Benchmark: a peer code generator's cold start, robot by robot, for comparison with mb_sim's own
(bench_cold.py): Featherstone's articulated-body algorithm in CasADi SX over a Pinocchio model, CasADi's
C code generation and gcc.

pinocchio.casadi (Pinocchio's templated algorithms on CasADi scalars) is not in the ``pin`` wheel, so
its engine is done here by hand the same way: forward dynamics u' = ABA(q, v, tau) (local frames,
Pinocchio's (linear, angular) order, its free-flyer q = (x, y, z, qx, qy, qz, qw) and body-frame v)
written with CasADi SX scalars over ``pinocchio.buildModelFromUrdf`` of the URDF, so that the joint
placements, axes, inertias and gravity are the model's numbers.  Each robot runs in a fresh process
(stages: import of casadi and pinocchio, the model, derive: the SX expressions and the casadi.Function,
generate: CodeGenerator to C, gcc -O0, then gcc -O2 (``gcc -shared -fPIC -O<n> file.c -lm``, one
after the other, -O2 stopped after 600 s); total: the process's wall time to a first call of the -O0
library through casadi.external, the -O2 build excluded; SX instr.: the Function's instructions).
Checked against ``pinocchio.aba`` at 3 random states (random q within the limits clipped to +-3, v in
+-1, tau in +-10) on the Function and both libraries: the largest |difference|, beside the largest |u'|.

Robots: as bench_cold.py, n-link chains (bench_dynamics.chain_urdf) of 8 to 64 links on a fixed base
and the humanoids bench_cold.py finds (G1, Talos full, JVRC-1, iCub) on a free flyer; mimic joints are
independent joints, as in Pinocchio's URDF parser (and in mb_sim's DoF count).

Run: ``.venv/bin/python -W ignore bench/bench_codegen_peer.py [--quick] [--markdown PATH]`` (--quick:
chains of 8 to 32 and the first humanoid found, G1).  Prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported in the child, where their import is timed
    import casadi

COLUMNS = ("robot", "DoF", "SX instr.", "import [s]", "model [s]", "derive [s]", "generate [s]", "compile -O0 [s]",
           "compile -O2 [s]", "total to first call (-O0) [s]", "C [MB]", "max abs(u' - pinocchio.aba)", "max abs(u')")
#: Seconds after which gcc -O2 is stopped (the table then says "> 600").
O2_TIMEOUT = 600
#: The child: this module imported in a fresh process, its clock started first.
CHILD = ("import time; started = time.perf_counter(); import sys; sys.path.insert(0, sys.argv[1]); "
         "import bench_codegen_peer as peer; peer.child(started, sys.argv[2], sys.argv[3] == 'floating', sys.argv[4])")


def skew(p) -> casadi.SX:
    """The cross-product matrix of a 3-vector."""
    import casadi as ca
    return ca.vertcat(ca.horzcat(0, -p[2], p[1]), ca.horzcat(p[2], 0, -p[0]), ca.horzcat(-p[1], p[0], 0))


def joint_motion(joint, q: casadi.SX) -> tuple:
    """(R, p, S) of a joint: its transform (child to parent frame: x = R x' + p) at q and its constant
    6 x nv motion subspace in (linear, angular) order.  Raises for the joint types not implemented."""
    import casadi as ca
    import numpy as np
    kind, eye = joint.shortname(), ca.SX.eye(3)
    if kind == "JointModelFreeFlyer":
        x, y, z, w = q[3], q[4], q[5], q[6]
        R = ca.vertcat(ca.horzcat(1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
                       ca.horzcat(2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
                       ca.horzcat(2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)))
        return R, q[0:3], ca.DM.eye(6)
    axes = {"X": np.array([1.0, 0, 0]), "Y": np.array([0, 1.0, 0]), "Z": np.array([0, 0, 1.0])}
    if kind[:-1] in ("JointModelR", "JointModelP"):
        axis = axes[kind[-1]]
    elif kind in ("JointModelRevoluteUnaligned", "JointModelPrismaticUnaligned"):
        axis = np.array(joint.extract().axis).ravel()
    else:
        raise NotImplementedError(f"joint type {kind} (joint {joint.id}) is not implemented in the CasADi ABA")
    S = np.zeros((6, 1))
    if kind.startswith("JointModelR"):
        S[3:, 0] = axis
        K = ca.DM(skew(ca.DM(axis)))  # Rodrigues: R = I + sin q K + (1 - cos q) K^2
        return eye + ca.sin(q[0]) * K + (1 - ca.cos(q[0])) * ca.mtimes(K, K), ca.SX.zeros(3), ca.DM(S)
    S[:3, 0] = axis
    return eye, q[0] * ca.DM(axis), ca.DM(S)


def ldl_solve(A: casadi.SX, B: casadi.SX) -> casadi.SX:
    """A^-1 B for a symmetric positive definite A, by LDL^T without pivoting (no square roots)."""
    import casadi as ca
    n = A.shape[0]
    L, d = [[None] * n for _ in range(n)], [None] * n
    for j in range(n):
        d[j] = A[j, j] - sum((L[j][k] * L[j][k] * d[k] for k in range(j)), ca.SX(0))
        for i in range(j + 1, n):
            L[i][j] = (A[i, j] - sum((L[i][k] * L[j][k] * d[k] for k in range(j)), ca.SX(0))) / d[j]
    x = [B[i, :] for i in range(n)]
    for i in range(n):
        x[i] = x[i] - sum((L[i][k] * x[k] for k in range(i)), ca.SX.zeros(1, B.shape[1]))
    for i in range(n):
        x[i] = x[i] / d[i]
    for i in reversed(range(n)):
        x[i] = x[i] - sum((L[k][i] * x[k] for k in range(i + 1, n)), ca.SX.zeros(1, B.shape[1]))
    return ca.vertcat(*x)


def aba_function(model) -> casadi.Function:
    """casadi.Function 'aba' (q, v, tau) -> u': Featherstone's ABA in local frames over a Pinocchio model."""
    import casadi as ca
    q, v, tau = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("tau", model.nv)
    n, Z3 = model.njoints, ca.SX(3, 3)

    def act_inv(R, p, m):  # motion from the parent frame to the child's
        w = ca.mtimes(R.T, m[3:])
        return ca.vertcat(ca.mtimes(R.T, m[:3] - ca.cross(p, m[3:])), w)

    def cross_motion(a, b):  # a x b
        return ca.vertcat(ca.cross(a[3:], b[:3]) + ca.cross(a[:3], b[3:]), ca.cross(a[3:], b[3:]))

    def cross_force(a, f):  # a x* f
        return ca.vertcat(ca.cross(a[3:], f[:3]), ca.cross(a[3:], f[3:]) + ca.cross(a[:3], f[:3]))

    X, S, vel, c, Ia, pA = [None] * n, [None] * n, [ca.SX.zeros(6)] * n, [None] * n, [None] * n, [None] * n
    for i in range(1, n):  # velocities, bias terms, rigid-body inertias
        joint, placement, inertia = model.joints[i], model.jointPlacements[i], model.inertias[i]
        Rj, pj, S[i] = joint_motion(joint, q[joint.idx_q:joint.idx_q + joint.nq])
        R0, p0 = ca.DM(placement.rotation), ca.DM(placement.translation)
        X[i] = (ca.mtimes(R0, Rj), p0 + ca.mtimes(R0, pj))
        vJ = ca.mtimes(S[i], v[joint.idx_v:joint.idx_v + joint.nv])
        vel[i] = act_inv(*X[i], vel[model.parents[i]]) + vJ
        c[i] = cross_motion(vel[i], vJ)
        m, h, Ic = inertia.mass, ca.DM(skew(ca.DM(inertia.lever))), ca.DM(inertia.inertia)
        Ia[i] = ca.SX(ca.blockcat([[m * ca.DM.eye(3), -m * h], [m * h, Ic - m * ca.mtimes(h, h)]]))
        pA[i] = cross_force(vel[i], ca.mtimes(Ia[i], vel[i]))
    U, Dinv_u, Dinv_Ut = [None] * n, [None] * n, [None] * n
    for i in reversed(range(1, n)):  # articulated inertias and bias forces
        joint, parent = model.joints[i], model.parents[i]
        U[i] = ca.mtimes(Ia[i], S[i])
        D = ca.mtimes(S[i].T, U[i])
        u = tau[joint.idx_v:joint.idx_v + joint.nv] - ca.mtimes(S[i].T, pA[i])
        solve = (lambda B: B / D) if joint.nv == 1 else (lambda B: ldl_solve(D, B))
        Dinv_u[i], Dinv_Ut[i] = solve(u), solve(U[i].T)
        if parent > 0:
            Ia_a = Ia[i] - ca.mtimes(U[i], Dinv_Ut[i])
            pa = pA[i] + ca.mtimes(Ia_a, c[i]) + ca.mtimes(U[i], Dinv_u[i])
            R, p = X[i]
            F = ca.blockcat([[R, Z3], [ca.mtimes(skew(p), R), R]])  # force transform child -> parent
            Ia[parent] = Ia[parent] + ca.mtimes([F, Ia_a, F.T])
            pA[parent] = pA[parent] + ca.mtimes(F, pa)
    acc, ddq = [ca.vertcat(-ca.DM(model.gravity.linear), ca.DM.zeros(3))] + [None] * (n - 1), [None] * n
    for i in range(1, n):  # accelerations
        a = act_inv(*X[i], acc[model.parents[i]]) + c[i]
        ddq[i] = Dinv_u[i] - ca.mtimes(Dinv_Ut[i], a)
        acc[i] = a + ca.mtimes(S[i], ddq[i])
    return ca.Function("aba", [q, v, tau], [ca.vertcat(*ddq[1:])], ["q", "v", "tau"], ["ddq"])


def gcc(source: Path, level: str, timeout: float | None = None) -> tuple[Path, float | None]:
    """(library, wall seconds) of ``gcc -shared -fPIC -O<level>``; seconds None when stopped by the timeout."""
    library = source.with_name(f"{source.stem}_O{level}.so")
    started = time.perf_counter()
    process = subprocess.Popen(["gcc", "-shared", "-fPIC", f"-O{level}", str(source), "-o", str(library), "-lm"],
                               start_new_session=True)  # its own process group: cc1 is stopped with it
    try:
        if process.wait(timeout=timeout) != 0:
            raise RuntimeError(f"gcc -O{level} failed on {source}")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()
        return library, None
    return library, time.perf_counter() - started


def child(started: float, path: str, floating: bool, workdir: str) -> None:
    """One robot in a fresh process: time each stage, check the libraries, print a JSON line."""
    times = {}
    import casadi as ca
    import numpy as np
    import pinocchio as pin
    times["import"] = time.perf_counter() - started
    t = time.perf_counter()
    model = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    times["model"], t = time.perf_counter() - t, time.perf_counter()
    function = aba_function(model)
    times["derive"], t = time.perf_counter() - t, time.perf_counter()
    generator = ca.CodeGenerator("aba_peer.c")
    generator.add(function)
    source = Path(generator.generate(workdir + os.sep))
    times["generate"] = time.perf_counter() - t
    quick, times["O0"] = gcc(source, "0")
    library = ca.external("aba", str(quick))
    library(pin.neutral(model), np.zeros(model.nv), np.zeros(model.nv))
    times["total"] = time.perf_counter() - started
    optimized, times["O2"] = gcc(source, "2", O2_TIMEOUT)
    libraries = [library] + ([ca.external("aba", str(optimized))] if times["O2"] is not None else [])
    data, rng, worst, scale = model.createData(), np.random.default_rng(0), 0.0, 0.0
    pin.seed(0)
    for _ in range(3):
        q = pin.randomConfiguration(model, np.clip(model.lowerPositionLimit, -3, 3),
                                    np.clip(model.upperPositionLimit, -3, 3))
        v, tau = rng.uniform(-1, 1, model.nv), rng.uniform(-10, 10, model.nv)
        reference = pin.aba(model, data, q, v, tau)
        scale = max(scale, float(np.abs(reference).max()))
        for f in [function] + libraries:
            worst = max(worst, float(np.abs(np.asarray(f(q, v, tau)).ravel() - reference).max()))
    print(json.dumps({"times": times, "dof": model.nv, "instructions": function.n_instructions(),
                      "c_mb": source.stat().st_size / 1e6, "error": worst, "scale": scale,
                      "joints": sorted({j.shortname() for j in model.joints[1:]})}))


def measure(name: str, path: str, floating: bool) -> tuple[list[str], dict | None]:
    """One robot's row (and the child's result) from a fresh process in a scratch directory."""
    with tempfile.TemporaryDirectory() as workdir:
        done = subprocess.run([sys.executable, "-W", "ignore", "-c", CHILD, str(Path(__file__).resolve().parent),
                               path, "floating" if floating else "fixed", workdir], capture_output=True, text=True)
    if done.returncode != 0:
        return [name, "-", "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1][:80],
                *[""] * (len(COLUMNS) - 3)], None
    r = json.loads(done.stdout.strip().splitlines()[-1])
    s = r["times"]
    fmt = lambda v: f"> {O2_TIMEOUT}" if v is None else f"{v:.2f}"  # noqa: E731
    return [name, str(r["dof"]), str(r["instructions"]), fmt(s["import"]), fmt(s["model"]), fmt(s["derive"]),
            fmt(s["generate"]), fmt(s["O0"]), fmt(s["O2"]), fmt(s["total"]), f"{r['c_mb']:.2f}",
            f"{r['error']:.1e}", f"{r['scale']:.1e}"], r


def main() -> None:
    """Every robot in a fresh process of its own; print the table (and write it with --markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="chains of 8 to 32 links and the first humanoid (G1)")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    args = parser.parse_args()
    from bench_cold import humanoids
    from bench_dynamics import chain_urdf
    from bench_report import machine, machine_line, versions

    started, report = time.monotonic(), {"machine": machine(compiler=True)}
    sizes = (8, 16, 24, 32) if args.quick else (8, 12, 16, 24, 32, 48, 64)
    rows, joints = [], set()
    with tempfile.TemporaryDirectory() as scratch:
        robots = []
        for n in sizes:
            chain = Path(scratch) / f"chain{n}.urdf"
            chain.write_text(chain_urdf(n))
            robots.append((f"chain{n}", str(chain), False))
        robots += [(name, path, True) for name, path, _ in humanoids()[:1 if args.quick else None]]
        print("| " + " | ".join(COLUMNS) + " |", flush=True)
        for name, path, floating in robots:
            row, result = measure(name, path, floating)
            rows.append(row)
            joints |= set(result["joints"]) if result else set()
            print("| " + " | ".join(row) + " |", flush=True)
    report["machine"]["load_average_at_end"] = os.getloadavg()
    report["wall_seconds"] = time.monotonic() - started
    lines = [machine_line(report), "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS),
             *("| " + " | ".join(row) + " |" for row in rows),
             "", "Joint types met: " + ", ".join(sorted(joints)) + ".", "",
             "Versions: " + ", ".join(f"{name} {v}" for name, v in versions(("casadi", "pin")).items()) + "."]
    print(lines[0], *lines[-3:], sep="\n")
    if args.markdown:
        args.markdown.write_text("# Code-generation peer: ABA in CasADi SX, C and gcc (pinocchio.casadi's way)\n\n"
                                 + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""Human-readable equations of motion: every symbol listed with its description."""
from __future__ import annotations

from sympy import Matrix, latex, pretty

from mb_sim.symbolic.equations import EquationsOfMotion

__all__ = ["format_equations"]

_SHOWN = (("mass_matrix", "Mass matrix M(q)"), ("forcing", "Forcing F(q, u, inputs, t), M u' = F"),
          ("qdot", "Kinematic differential equations q' ="),
          ("electrical_rates", "Electrical states (motor currents) z' ="),
          ("phi", "Holonomic constraints Phi(q) = 0"),
          ("constraint_matrix", "Velocity constraints: A(q) in A u + b = 0"),
          ("constraint_bias", "Velocity constraints: b(q, t)"),
          ("acceleration_bias", "Acceleration constraints: c in A u' + c = 0"))


def _show(expr, style: str) -> str:
    return f"$$ {latex(expr)} $$" if style == "latex" else pretty(expr, use_unicode=False, wrap_line=False)


def format_equations(eom: EquationsOfMotion, style: str = "pretty") -> str:
    """The symbols, temporaries (in evaluation order) and outputs of `eom` as text or LaTeX."""
    electrical = f"{eom.n_z} electrical states, " if eom.n_z else ""
    lines = [f"Equations of motion of '{eom.name}' ({eom.n_q} coordinates, {eom.n_u} speeds, {electrical}"
             f"{len(eom.inputs)} inputs, {eom.n_constraints} constraints)", "", "Symbols:"]
    values = dict(zip(eom.parameters, eom.parameter_values))
    for group, symbols in (("coordinate", eom.q), ("speed", eom.u), ("electrical state", eom.z), ("input", eom.inputs),
                           ("parameter", eom.parameters)):
        for symbol in symbols:
            value = f" = {values[symbol]:.6g}" if symbol in values else ""
            lines.append(f"  {symbol}{value} ({group}): {eom.descriptions.get(symbol, '')}")
    lines += ["", f"Temporaries ({len(eom.temporaries)}, in evaluation order):"]
    for symbol, expr in eom.temporaries:
        meaning = eom.descriptions.get(symbol, "")
        shown = f"{latex(symbol)} = {latex(expr)}" if style == "latex" else f"{symbol} = {expr}"
        lines.append(f"  {shown}" + (f"    [{meaning}]" if meaning else ""))
    for key, title in _SHOWN:
        matrix: Matrix = eom.outputs[key]
        if matrix.shape[0] == 0:
            continue
        lines += ["", f"{title}:", _show(matrix, style)]
    return "\n".join(lines)

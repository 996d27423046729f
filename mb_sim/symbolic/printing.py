"""Human-readable equations of motion: a summary a person can read (every symbol with its
description and unit, sizes, operation counts, M and F entry by entry when small), the temporaries
on request, and the full listing; LaTeX keeps symbol names readable (q_{\\mathrm{elbow}}, not
elbow_{q})."""
from __future__ import annotations

import re
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterable

from sympy import Basic, Expr, Matrix, Symbol, count_ops, expand, latex, pretty, trigsimp

from mb_sim.symbolic.equations import EquationsOfMotion

__all__ = ["format_equations", "format_summary", "latex_names", "ENTRY_NODES", "SIMPLIFY_NODES"]

#: Largest entry of M or F the summary prints, in expression-tree nodes once the temporaries are
#: substituted (a double pendulum's entries have 170-320; arm6's 6,700-365,000).
ENTRY_NODES = 600
#: Largest entry the summary simplifies (expand, trigsimp) before printing: under a second each at
#: this size for most robots, 7 s for a four-bar's 488-node entry.
SIMPLIFY_NODES = 600
#: Wall time after which the summary stops simplifying entries (checked between entries) [s].
SIMPLIFY_SECONDS = 20.0
#: Line width of the summary's wrapped expressions.
WIDTH = 100

_SHOWN = (("mass_matrix", "Mass matrix M(q)"), ("forcing", "Forcing F(q, u, inputs, t), M u' = F"),
          ("qdot", "Kinematic differential equations q' ="),
          ("electrical_rates", "Further states z (motor currents, stiction anchors) z' ="),
          ("phi", "Holonomic constraints Phi(q) = 0"),
          ("constraint_matrix", "Velocity constraints: A(q) in A u + b = 0"),
          ("constraint_bias", "Velocity constraints: b(q, t)"),
          ("acceleration_bias", "Acceleration constraints: c in A u' + c = 0"))


def _show(expr, style: str, names: dict[Symbol, str] | None = None) -> str:
    """`expr` as a LaTeX display (readable symbol `names`) or as ASCII-art text."""
    if style == "latex":
        return f"$$ {latex(expr, symbol_names=names or {})} $$"
    return pretty(expr, use_unicode=False, wrap_line=False)


def format_equations(eom: EquationsOfMotion, style: str = "pretty") -> str:
    """The symbols, temporaries (in evaluation order) and outputs of `eom` as text or LaTeX."""
    electrical = f"{eom.n_z} further states (motor currents, stiction anchors), " if eom.n_z else ""
    lines = [f"Equations of motion of '{eom.name}' ({eom.n_q} coordinates, {eom.n_u} speeds, {electrical}"
             f"{len(eom.inputs)} inputs, {eom.n_constraints} constraints)", "", "Symbols:"]
    values = dict(zip(eom.parameters, eom.parameter_values))
    names = latex_names(eom) if style == "latex" else {}
    for group, symbols in (("coordinate", eom.q), ("speed", eom.u), ("further state", eom.z), ("input", eom.inputs),
                           ("parameter", eom.parameters)):
        for symbol in symbols:
            value = f" = {values[symbol]:.6g}" if symbol in values else ""
            shown = f" ${names[symbol]}$" if names else ""
            lines.append(f"  {symbol}{value} ({group}){shown}: {eom.descriptions.get(symbol, '')}")
    lines += ["", f"Temporaries ({len(eom.temporaries)}, in evaluation order):"]
    for symbol, expr in eom.temporaries:
        meaning = eom.descriptions.get(symbol, "")
        shown = (f"{names[symbol]} = {latex(expr, symbol_names=names)}" if style == "latex"
                 else f"{symbol} = {expr}")
        lines.append(f"  {shown}" + (f"    [{meaning}]" if meaning else ""))
    for key, title in _SHOWN:
        matrix: Matrix = eom.outputs[key]
        if matrix.shape[0] == 0:
            continue
        lines += ["", f"{title}:", _show(matrix, style, names)]
    return "\n".join(lines)


# --- LaTeX names ---------------------------------------------------------------------------------

#: Quantities (the end of a symbol's name after its element's) with a conventional letter.
_LETTERS = {"effort": r"\tau", "voltage": "v", "theta": r"\theta", "phi": r"\phi", "psi": r"\psi"}
_LATEX_SPECIAL = re.compile(r"[\\{}_^#$%&~]")
#: Characters that escape with a backslash in math mode; the others become symbols.
_LATEX_SYMBOLS = {"\\": r"\backslash{}", "^": r"\hat{}", "~": r"\sim{}"}


def _latex_text(text: str) -> str:
    """`text` upright, its LaTeX specials escaped (``shoulder_pan`` -> ``\\mathrm{shoulder\\_pan}``)."""
    escaped = _LATEX_SPECIAL.sub(lambda m: _LATEX_SYMBOLS.get(m.group(0), "\\" + m.group(0)), text)
    return rf"\mathrm{{{escaped}}}"


def _latex_name(name: str, description: str) -> str:
    """A symbol named ``<element>_<quantity>`` (the element quoted first in its description) as the
    quantity subscripted by the element: ``elbow_q`` -> ``q_{\\mathrm{elbow}}``; else upright."""
    if match := re.fullmatch(r"_tmp(\d+)", name):
        return rf"\mathrm{{tmp}}_{{{match.group(1)}}}"
    element = re.search(r"'([^']+)'", description)
    if not element or not name.startswith(element.group(1) + "_"):
        return _latex_text(name)
    quantity = name[len(element.group(1)) + 1:]
    letter = _LETTERS.get(quantity) or (quantity if re.fullmatch(r"[A-Za-z]", quantity) else _latex_text(quantity))
    return f"{letter}_{{{_latex_text(element.group(1))}}}"


def latex_names(eom: EquationsOfMotion) -> dict[Symbol, str]:
    """Per symbol of `eom` (coordinates, speeds, states, inputs, parameters, temporaries) its LaTeX
    name, for ``latex(..., symbol_names=...)``; names two symbols would share stay in full."""
    symbols = [*eom.q, *eom.u, *eom.z, *eom.inputs, *eom.parameters, *(s for s, _ in eom.temporaries)]
    names = {symbol: _latex_name(str(symbol), eom.descriptions.get(symbol, "")) for symbol in symbols}
    shared = {name for name, count in Counter(names.values()).items() if count > 1}
    return {symbol: _latex_text(str(symbol)) if name in shared else name for symbol, name in names.items()}


# --- The summary -------------------------------------------------------------------------------

def format_summary(eom: EquationsOfMotion, style: str = "pretty", temporaries: bool = False,
                   entry_nodes: int = ENTRY_NODES, progress: Callable[[str], None] | None = None) -> str:
    """What a person reads first: the symbols (descriptions, units, values), the sizes of M and F,
    the temporaries' count and operations, then M and F entry by entry: with the temporaries
    substituted (and simplified) where an entry has at most `entry_nodes` nodes, or with
    `temporaries` in terms of them, listed before.  `progress` hears of the simplification."""
    names = latex_names(eom) if style == "latex" else {}
    lines = [f"Equations of motion of '{eom.name}': M(q) u' = F(q, u, inputs, t)"
             + (", subject to the constraints (mb-sim eom --full lists them)" if eom.n_constraints else ""), ""]
    lines += _symbol_table(eom, names)
    lines += ["", *_sizes(eom)]
    expansion = None if temporaries else _Expansion(eom)
    if temporaries:
        lines += ["", f"Temporaries ({len(eom.temporaries)}, in evaluation order):"]
        lines += [_equation(names.get(s, str(s)), e, names, eom.descriptions.get(s, "")) for s, e in eom.temporaries]
    lines += ["", *_entries(eom, expansion, names, entry_nodes, progress)]
    return "\n".join(lines)


def _split_unit(description: str) -> tuple[str, str]:
    """A description ``'mass of link 'a' [kg]'`` as its text and its unit ``('mass of link 'a'', 'kg')``."""
    match = re.fullmatch(r"(.*?)\s*\[([^\]]*)\]", description)
    return (match.group(1), match.group(2)) if match else (description, "")


def _symbol_table(eom: EquationsOfMotion, names: dict[Symbol, str]) -> list[str]:
    """The coordinates, speeds, electrical states, inputs and parameters: name (LaTeX name), value,
    unit and description, one a line, in groups."""
    values = dict(zip(eom.parameters, eom.parameter_values))
    lines: list[str] = []
    for title, symbols in (("Coordinates q", eom.q), ("Speeds u", eom.u), ("Electrical states z", eom.z),
                           ("Inputs", eom.inputs), ("Parameters", eom.parameters)):
        if not symbols:
            continue
        lines.append(f"{title} ({len(symbols)}" + (", values from the URDF):" if symbols is eom.parameters else "):"))
        rows = []
        for symbol in symbols:
            text, unit = _split_unit(eom.descriptions.get(symbol, ""))
            value = f"= {values[symbol]:.6g} {unit}".rstrip() if symbol in values else f"[{unit}]" if unit else ""
            rows.append((str(symbol) + (f"  ${names[symbol]}$" if names else ""), value, text))
        name_width, value_width = (max(len(row[k]) for row in rows) for k in (0, 1))
        lines += [f"  {name:{name_width}}  {value:{value_width}}  {text}".rstrip() for name, value, text in rows]
    return lines


def _wrap(text: str, indent: int = 6) -> str:
    """`text` wrapped to WIDTH at spaces, continuation lines indented by `indent`."""
    return textwrap.fill(text, WIDTH, subsequent_indent=" " * min(indent, WIDTH // 2), break_long_words=False,
                         break_on_hyphens=False)


def _operations(expressions: Iterable[Basic]) -> Counter:
    """Operations of `expressions` by kind (``ADD``, ``MUL``, ``SIN``...), as SymPy counts them."""
    total: Counter = Counter()
    for expr in expressions:
        counted = count_ops(expr, visual=True)
        for kind, number in counted.as_coefficients_dict().items():
            if kind != 1:
                total[str(kind).lower()] += int(number)
    return total


def _describe_operations(counts: Counter) -> str:
    """``1,234 operations (mul 600, add 400, ...)``, the commonest kinds first."""
    kinds = ", ".join(f"{kind} {number:,}" for kind, number in counts.most_common())
    return f"{sum(counts.values()):,} operations" + (f" ({kinds})" if kinds else "")


def _sizes(eom: EquationsOfMotion) -> list[str]:
    """Sizes of M and F (and the constraints), the temporaries and what evaluating them costs."""
    mass, forcing = eom.outputs["mass_matrix"], eom.outputs["forcing"]
    electrical = f", {eom.n_z} further states (motor currents, stiction anchors)" if eom.n_z else ""
    lines = [f"Sizes: {eom.n_q} coordinates, {eom.n_u} speeds{electrical}, {len(eom.inputs)} inputs, "
             f"{len(eom.parameters)} parameters, {eom.n_constraints} constraint rows",
             f"  M: {mass.rows} x {mass.cols} (symmetric), F: {forcing.rows} x {forcing.cols}",
             f"  temporaries: {len(eom.temporaries):,}, {_describe_operations(_operations(e for _, e in eom.temporaries))}",
             f"  M and F from the temporaries: {_describe_operations(_operations([*mass, *forcing]))}"]
    return [_wrap(line) for line in lines]


class _Expansion:
    """M and F entries with the temporaries substituted, built only for entries whose expansion is
    small: each temporary's expanded tree size is counted first (cheap), then expanded on demand."""

    def __init__(self, eom: EquationsOfMotion) -> None:
        self.definitions = dict(eom.temporaries)
        self.nodes: dict[Symbol, int] = {}
        for symbol, expr in eom.temporaries:  # in evaluation order: earlier ones are counted already
            self.nodes[symbol] = self.size(expr)
        self.expanded: dict[Symbol, Expr] = {}

    def size(self, expr: Basic) -> int:
        """Nodes of `expr`'s tree with every temporary counted as its expansion."""
        if expr in self.nodes:
            return self.nodes[expr]
        return 1 + sum(self.size(arg) for arg in expr.args)

    def expand(self, expr: Basic) -> Expr:
        """`expr` with the temporaries substituted (call only for a small :meth:`size`)."""
        used = [s for s in expr.free_symbols if s in self.definitions]
        for symbol in used:
            if symbol not in self.expanded:
                self.expanded[symbol] = self.expand(self.definitions[symbol])
        return expr.xreplace({symbol: self.expanded[symbol] for symbol in used})


def _simplified(expr: Expr) -> Expr:
    """`expr` expanded and trig-simplified if that is smaller (it mostly is: sin^2 + cos^2 = 1,
    products of sums collapse), else as it is (quaternion products only grow when expanded)."""
    simpler = trigsimp(expand(expr))
    return simpler if count_ops(simpler) <= count_ops(expr) else expr


def _equation(label: str, expr: Basic, names: dict[Symbol, str], note: str = "") -> str:
    """``label = expr`` wrapped to WIDTH (text), or one LaTeX display line."""
    if names:
        return f"$$ {label} = {latex(expr, symbol_names=names)} $$" + (f"  % {note}" if note else "")
    return _wrap_expression(f"  {label} = {expr}" + (f"    [{note}]" if note else ""))


def _wrap_expression(text: str, indent: int = 6) -> str:
    """`text` in lines of at most WIDTH, broken at spaces and after a product's ``*`` (never
    inside a name or a number, never between the two stars of ``**``)."""
    pieces = re.findall(r"[^ *]*(?:\*\*[^ *]*)*(?:\*| +|$)", text)
    lines, line = [], ""
    for piece in filter(None, pieces):
        if line.strip() and len(line) + len(piece.rstrip()) > WIDTH:
            lines.append(line.rstrip())
            line = " " * indent
        line += piece
    return "\n".join([*lines, line.rstrip()])


def _entries(eom: EquationsOfMotion, expansion: _Expansion | None, names: dict[Symbol, str],
             entry_nodes: int, progress: Callable[[str], None] | None = None) -> list[str]:
    """M's upper triangle and F, an entry each, labelled by the speeds they belong to; expanded
    ones simplified while SIMPLIFY_SECONDS last."""
    mass, forcing = eom.outputs["mass_matrix"], eom.outputs["forcing"]
    speeds = [str(u) for u in eom.u]
    entries = [(f"M[{speeds[i]}, {speeds[j]}]", f"M_{{{i + 1},{j + 1}}}", mass[i, j])
               for i in range(mass.rows) for j in range(i, mass.cols)]
    entries += [(f"F[{speeds[i]}]", f"F_{{{i + 1}}}", forcing[i, 0]) for i in range(forcing.rows)]
    if not entries:
        return ["M and F are empty: the robot has no speeds (no moving joint)."]
    how = ("in terms of the temporaries above" if expansion is None
           else f"the temporaries substituted and simplified (entries up to {entry_nodes:,} nodes)")
    lines = [_wrap(f"M (upper triangle: M is symmetric) and F, entry by entry, {how}:", 0)]
    skipped, unsimplified = [], 0
    sizes = [expansion.size(expr) if expansion is not None else 0 for _, _, expr in entries]
    if expansion is not None and progress is not None and any(n <= min(entry_nodes, SIMPLIFY_NODES) for n in sizes):
        progress(f"simplifying the entries of M and F up to {SIMPLIFY_NODES} nodes (at most {SIMPLIFY_SECONDS:g} s)")
    deadline = time.monotonic() + SIMPLIFY_SECONDS
    for (label, latex_label, expr), nodes in zip(entries, sizes):
        if expansion is not None:
            if nodes > entry_nodes:
                skipped.append(nodes)
                continue
            expr = expansion.expand(expr)
            if nodes <= SIMPLIFY_NODES and time.monotonic() < deadline:
                expr = _simplified(expr)
            elif nodes <= SIMPLIFY_NODES:
                unsimplified += 1
        lines.append(_equation(latex_label if names else label, expr, names))
    if unsimplified:
        lines.append(f"  ({unsimplified} small entries left unsimplified: {SIMPLIFY_SECONDS:g} s of simplification spent)")
    if skipped:
        lines.append(_wrap(f"  {len(skipped)} of {len(entries)} entries too large to print expanded "
                           f"({min(skipped):,} to {max(skipped):,} nodes): mb-sim eom --temporaries prints "
                           "them in terms of the temporaries"))
    return lines

"""The generated C's printer (mb_sim/codegen/c_printer.py): expressions printed as C, compiled by the
real compiler and run, agree with SymPy's own evaluation; the traps of printing by hand (integer
division, a sum's minus signs, powers, guards, infinities) included."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest
from sympy import Add, Float, Max, Min, Mul, Piecewise, Pow, Rational, S, atan2, cos, exp, oo, sin, sqrt, symbols

from sympy.printing.codeprinter import PrintMethodNotImplementedError

from mb_sim.codegen.c_printer import CPrinter

x, y, z = symbols("x y z", real=True)
VALUES = {x: 0.7, y: -1.3, z: 2.1}

EXPRESSIONS = [
    x + y - z,
    -x - 2 * y,
    x * y - 3 * z * x,
    Rational(1, 3) * x,
    Mul(2, Pow(3, -1, evaluate=False), evaluate=False) * x,  # unevaluated: 2/3 must not be integer division
    Add(x, Mul(-1, Add(y, z, evaluate=False), evaluate=False), evaluate=False),
    x ** 2 + y ** 3 - z ** 4,
    1 / (x * x + 1),
    (x + y) ** -2,
    sqrt(z) - 1 / sqrt(z),
    z ** Rational(3, 2),
    x ** z,
    sin(x + y) * cos(z) - sin(x) ** 2,
    -Float("0.25") * x + Float("1e-20"),
    Max(x, y, z) - Min(x, -y),
    Piecewise((x * y, x > 0), (S.Zero, True)),
    exp(-x) + atan2(y, x),
    Mul(-1, Pow(y, -1), evaluate=False),
]


def _compiled(tmp_path: Path, texts: list[str]):
    """The printed expressions as one C function writing out[k], compiled and loaded."""
    body = "\n".join(f"    out[{k}] = {text};" for k, text in enumerate(texts))
    source = tmp_path / "printed.c"
    source.write_text("#include <math.h>\n"
                      "static inline double mb_fmax(double a, double b) { return a > b ? a : b; }\n"
                      "static inline double mb_fmin(double a, double b) { return a < b ? a : b; }\n"
                      "static inline double mb_pow(double a, double b) { return pow(a, b); }\n"
                      "void printed(const double *v, double *out) {\n"
                      "    const double x = v[0], y = v[1], z = v[2];\n" + body + "\n}\n")
    library = tmp_path / "printed.so"
    subprocess.run(["cc", "-std=c99", "-O2", "-shared", "-fPIC", "-o", str(library), str(source), "-lm"],
                   check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(library)).printed


def test_printed_c_computes_what_sympy_computes(tmp_path):
    printer = CPrinter({x: "x", y: "y", z: "z"})
    texts = [printer.doprint(e) for e in EXPRESSIONS]
    function = _compiled(tmp_path, texts)
    values = (ctypes.c_double * 3)(*VALUES.values())
    out = (ctypes.c_double * len(texts))()
    function(values, out)
    for text, expression, value in zip(texts, EXPRESSIONS, out):
        expected = float(expression.subs(VALUES).evalf(30))
        assert value == pytest.approx(expected, rel=1e-14, abs=1e-300), (text, expression)


def test_numbers_are_double_literals_and_infinities_are_named():
    printer = CPrinter({x: "x"})
    assert printer.doprint(Rational(1, 2) * x) == "(1.0/2.0)*x"
    assert printer.doprint(S(3)) == "3.0"
    assert printer.doprint(-oo) in ("-INFINITY", "-HUGE_VAL")  # not Python's 'inf'
    with pytest.raises(PrintMethodNotImplementedError):  # SymPy's refusal, not a TypeError from float()
        printer.doprint(S.ComplexInfinity)

"""A large generated model split into translation units the compiler builds side by side.

The generated file is one translation unit (the runtime sees the dynamics whole, and a reader
has one file); gcc's time grows faster than a function's length, and one compiler uses one core.
Where the file is large, :func:`translation_units` cuts each marked function into a unit of its own
(the file's macros, the runtime's declarations, that function): ``mb_dynamics`` (M, F and the
kinematic map: the longest, half of a chain's compile time), ``mb_other_outputs`` (link poses,
energies, contact and sensor outputs) and ``mb_constraints``; a function cut into parts
(:mod:`mb_sim.codegen.parts`) into several units of about PARTS_UNIT_BYTES, its parts shared out in
order.  The rest (the mass matrix's factorization, the runtime) stays the main unit.  All are
compiled, one per core at a time, and linked into the one library
(:func:`mb_sim.codegen.compiler.compile_shared_library`); the arithmetic is the same, so are the
results, bit for bit.
"""
from __future__ import annotations

import re

__all__ = ["HEADER_END", "PARTS_UNIT_BYTES", "SPLIT_ABOVE", "UNIT_FUNCTIONS", "begin_marker", "end_marker", "translation_units"]

HEADER_END = "/* mb_sim: macros end */"
#: Sources at least this long [bytes] are split (chain12, 0.13 MB: 4.0-4.3 s in one unit, 3.3-3.7 s in three).
SPLIT_ABOVE = 60_000
#: The generated functions that go to units of their own in a split source.
UNIT_FUNCTIONS = ("mb_dynamics", "mb_other_outputs", "mb_constraints")
#: A function cut into parts (mb_sim.codegen.parts) longer than this [bytes] is compiled as several
#: units of about this size, its parts shared out in order, so both cores work on the longest.
PARTS_UNIT_BYTES = 80_000
_PART_DEFINITION = re.compile(r"^MB_PART void \w+\([^;{]*\{", re.MULTILINE)
_PART_PROTOTYPE = re.compile(r"^MB_PART void \w+\([^;{]*\);$", re.MULTILINE)


def begin_marker(function: str) -> str:
    """The C comment the generator puts before `function` (one of UNIT_FUNCTIONS)."""
    return f"/* mb_sim: {function} begins */"


def end_marker(function: str) -> str:
    return f"/* mb_sim: {function} ends */"


def translation_units(source: str) -> list[str]:
    """`source` as the units to compile: itself alone, or the main unit and one per marked
    function (for a large source with the markers and no user force law, which the functions would
    call into the main unit for)."""
    header_end = source.find(HEADER_END)
    if len(source) < SPLIT_ABOVE or "#define MB_HAS_FORCE_LAW 1" in source or header_end < 0:
        return [source]
    header = source[:header_end].replace('#include "mb_runtime.h"',
                                         '#define MB_OUTPUTS_ONLY 1\n#include "mb_runtime.h"')
    main, units = source, []
    for function in UNIT_FUNCTIONS:
        begin, end = main.find(begin_marker(function)), main.find(end_marker(function))
        if not header_end < begin < end:
            continue
        end += len(end_marker(function))
        units += [header + "\n" + text + "\n" for text in _parts_in_units(main[begin:end])]
        main = main[:begin] + main[end:]
    return [main, *units]


def _parts_in_units(function: str) -> list[str]:
    """A marked function's text as one unit's, or, cut into parts, as several: its parts in order
    in units of about PARTS_UNIT_BYTES, the last with the parts' prototypes and the caller."""
    starts = [m.start() for m in _PART_DEFINITION.finditer(function)]
    callers = _PART_PROTOTYPE.search(function)
    if len(function) <= PARTS_UNIT_BYTES or not starts or callers is None:
        return [function]
    texts, begin = [], starts[0]
    for start in [*starts[1:], callers.start()]:
        if start - begin >= PARTS_UNIT_BYTES:
            texts.append(function[begin:start])
            begin = start
    return [function[:starts[0]] + text for text in texts] + [function[:starts[0]] + function[begin:]]

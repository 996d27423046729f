"""A large generated model split into translation units the compiler builds side by side.

The generated file is one translation unit (the runtime sees the dynamics whole, and a reader
has one file); gcc's time grows faster than the file, and it uses one core.  Where the file is
large, :func:`translation_units` cuts ``mb_other_outputs`` (link poses, energies, contact and
sensor outputs: as long as the dynamics for a robot with contacts, and off the integrator's path)
into a unit of its own: the file's macros, the runtime's declarations, that function.  The rest
stays one unit, so the step's code is compiled as before.  Both are compiled at once and linked
into the one library (:func:`mb_sim.codegen.compiler.compile_shared_library`).
"""
from __future__ import annotations

__all__ = ["OUTPUTS_BEGIN", "OUTPUTS_END", "HEADER_END", "SPLIT_ABOVE", "translation_units"]

#: Markers the generator puts around mb_other_outputs and after the macros (C comments).
OUTPUTS_BEGIN = "/* mb_sim: mb_other_outputs begins */"
OUTPUTS_END = "/* mb_sim: mb_other_outputs ends */"
HEADER_END = "/* mb_sim: macros end */"
#: Sources at least this long [bytes] are split (smaller ones compile in a second or two).
SPLIT_ABOVE = 150_000


def translation_units(source: str) -> list[str]:
    """`source` as the units to compile: itself alone, or the main unit and the outputs unit (for a
    large source with the markers and no user force law, which the outputs would call into the
    main unit for)."""
    if len(source) < SPLIT_ABOVE or "#define MB_HAS_FORCE_LAW 1" in source:
        return [source]
    header_end, begin, end = source.find(HEADER_END), source.find(OUTPUTS_BEGIN), source.find(OUTPUTS_END)
    if not 0 <= header_end < begin < end:
        return [source]
    outputs = source[begin:end + len(OUTPUTS_END)]
    main = source[:begin] + source[end + len(OUTPUTS_END):]
    unit = (source[:header_end].replace('#include "mb_runtime.h"', '#define MB_OUTPUTS_ONLY 1\n#include "mb_runtime.h"')
            + "\n" + outputs + "\n")
    return [main, unit]

"""A long generated function cut into parts the C compiler optimizes one at a time.

gcc's time on straight-line code grows faster than its length: register allocation and partial
redundancy elimination see every temporary of the function at once (G1's dynamics, 4,300 lines in one
function, spent half of its 20 s compile in the register allocator).  So a function longer than
:data:`PARTS_ABOVE` statements becomes a call of parts in order, each a function of its own
that the compiler may not inline back (``MB_PART``, in mb_runtime.h).  A value one part computes
and a later part reads (a temporary, a guarded result, a sum still accumulating) lives in a slot
``w[k]`` of a scratch array on the caller's stack, everywhere it is named; the parts' pointers are
``restrict``, so within a part the compiler keeps it in a register as it would a local.  The
arithmetic is the same, operation for operation, so are the results, bit for bit; the cost is a
store per value passed on and a load where it is read (L1 traffic, as the allocator's own spills
were), and the source grows only by the parts' signatures.
"""
from __future__ import annotations

import re

__all__ = ["PARTS_ABOVE", "PART_STATEMENTS", "function_in_parts"]

#: Functions of more statements (an assignment, an output, a guarded block) than this are cut: a
#: humanoid's dynamics (G1: 4,000), not a quadruped's (1,600-2,000), whose calls stay as they were
#: (the parts cost a humanoid's calls 15-30 %: values passed through memory, common subexpressions
#: no longer shared across parts; see docs/equations.md).
PARTS_ABOVE = 3000
#: Statements per part.  G1's dynamics: 16-20 s of gcc in one function, 8 s in parts of 200-300.
PART_STATEMENTS = 300

_LOCAL = re.compile(r"\bv(\d+)\b")
_DECLARED = re.compile(r"^ *(?:const )?double (v\d+) = ")  # with its value: one local
_DECLARED_LIST = re.compile(r"^ *double (v\d+(?:, v\d+)*);$")  # without: a guarded block's results


def function_in_parts(name: str, doc: str, signature: str, preamble: str,
                      statements: list[list[str]]) -> str:
    """C function `name` whose body is `statements` (each a list of lines, never cut), as one
    function or, when long, as parts called in order (see the module docstring)."""
    head = [f"/* {doc} */", f"void {name}({signature}, double *out)", "{", f"    {preamble}"]
    if len(statements) <= max(PARTS_ABOVE, PART_STATEMENTS):
        return "\n".join([*head, *(line for s in statements for line in s), "}", ""])
    chunks = [[line for s in statements[i:i + PART_STATEMENTS] for line in s]
              for i in range(0, len(statements), PART_STATEMENTS)]
    declared = [_declared(chunk) for chunk in chunks]
    used = [set(_LOCAL.findall("\n".join(chunk))) for chunk in chunks]
    read_later = [set() for _ in chunks]  # what the parts after each one name
    for i in range(len(chunks) - 2, -1, -1):
        read_later[i] = read_later[i + 1] | used[i + 1]
    slots: dict[str, int] = {}
    for defined, later in zip(declared, read_later):
        for v in sorted(defined & later, key=int):
            slots[v] = len(slots)
    restricted = signature.replace("*", "*restrict ")  # w and out are nothing else: values stay in registers
    parts, prototypes, calls = [], [], []
    for i, chunk in enumerate(chunks):
        part = f"MB_PART void {name}_part{i}({restricted}, double *restrict w, double *restrict out)"
        lines = [line for line in (_in_slots(line, slots) for line in chunk) if line is not None]
        parts.append("\n".join([part, "{", f"    {preamble}", "    (void)w;", *lines, "}", ""]))
        prototypes.append(part + ";")
        calls.append(f"    {name}_part{i}(q, u, z, inputs, params, t, w, out);")
    return "\n".join([*parts, *prototypes, *head, f"    double w[{max(1, len(slots))}];", *calls, "}", ""])


def _in_slots(line: str, slots: dict[str, int]) -> str | None:
    """`line` with the locals that cross parts as their slots ``w[k]``: a declaration with a value
    becomes an assignment, one without drops them (None if nothing is left to declare)."""
    declaration = _DECLARED.match(line)
    if declaration and declaration.group(1)[1:] in slots:
        line = line[:declaration.start(1)].replace("const double ", "").replace("double ", "") + line[declaration.start(1):]
    listed = _DECLARED_LIST.match(line)
    if listed:
        kept = [v for v in listed.group(1).split(", ") if v[1:] not in slots]
        if not kept:
            return None
        line = line[:listed.start(1)] + ", ".join(kept) + ";"
    return _LOCAL.sub(lambda m: f"w[{slots[m.group(1)]}]" if m.group(1) in slots else m.group(0), line)


def _declared(lines: list[str]) -> set[str]:
    """The locals (as their numbers) `lines` declare, inside blocks or not."""
    found = set()
    for line in lines:
        match = _DECLARED.match(line) or _DECLARED_LIST.match(line)
        if match:
            found.update(_LOCAL.findall(match.group(1)))
    return found

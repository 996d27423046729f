"""Entity-name filters (simulation_interfaces ``EntityFilters.filter``) matched in linear time.

A client's regular expression is untrusted input: Python's backtracking engine takes exponential
time on patterns such as ``((.?){14}){14}X`` (a 40 s freeze of the node's executor).  Here the
pattern is parsed by Python's own parser (so the syntax and meaning are ``re``'s) and matched by a
Thompson automaton: the set of automaton states is advanced one character at a time, so the work
is at most (automaton size) x (name length), and the automaton's size is bounded
(:data:`MAX_STATES`).  What a finite automaton cannot do (backreferences, lookaround, atomic
groups, possessive repeats, conditional groups) and flags are refused with a one-line
:class:`NameFilterError`.  No dependency (google-re2 has no rosdep key).
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

try:  # Python >= 3.11
    from re import _constants as sre
    from re import _parser as sre_parse
except ImportError:  # Python 3.10
    import sre_constants as sre  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

__all__ = ["NameFilter", "NameFilterError", "MAX_PATTERN_LENGTH", "MAX_STATES"]

#: Longest pattern accepted [characters].
MAX_PATTERN_LENGTH = 1000
#: Most automaton states a pattern may expand to (counted repeats are unrolled).
MAX_STATES = 5000

_CATEGORIES: dict[object, Callable[[str], bool]] = {
    sre.CATEGORY_DIGIT: str.isdecimal,
    sre.CATEGORY_NOT_DIGIT: lambda c: not c.isdecimal(),
    sre.CATEGORY_SPACE: str.isspace,
    sre.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
    sre.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    sre.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
}
_BEGIN = (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING)
_END = (sre.AT_END, sre.AT_END_STRING)  # ``$`` (also before a final newline, as in re) and ``\Z``
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT)  # greedy or lazy: the same set of matches
#: What a finite automaton cannot do, in words, by the parser's name for it.
_UNSUPPORTED = {"GROUPREF": "a backreference", "GROUPREF_EXISTS": "a conditional group", "ASSERT": "lookaround",
                "ASSERT_NOT": "lookaround", "ATOMIC_GROUP": "an atomic group", "POSSESSIVE_REPEAT": "a possessive repeat",
                "AT": r"a word-boundary anchor (\b, \B)"}


class NameFilterError(ValueError):
    """A pattern that is not a regular expression, or that this matcher refuses (the message says why)."""


@dataclass
class _State:
    """One automaton state: ``char`` (consumes a character satisfying ``test``), ``split``
    (epsilon moves to ``out``), ``begin``, ``end``, ``end of string`` (anchors) or ``match``."""

    kind: str
    out: list[int] = field(default_factory=list)
    test: Callable[[str], bool] | None = None


class NameFilter:
    """``pattern`` compiled for :meth:`fullmatch` (raises :class:`NameFilterError`)."""

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_PATTERN_LENGTH:
            raise NameFilterError(f"filter of {len(pattern)} characters: at most {MAX_PATTERN_LENGTH}")
        self.pattern = pattern
        self._states: list[_State] = []
        try:
            with warnings.catch_warnings():  # re's FutureWarnings (a "[[" that may become a nested set)
                warnings.simplefilter("ignore")
                parsed = sre_parse.parse(pattern)
        except RecursionError:
            raise NameFilterError(f"filter {pattern[:40]!r}: nested too deeply") from None
        except Exception as err:  # re.error and anything the parser raises on odd text
            raise NameFilterError(f"filter {pattern[:80]!r}: not a regular expression ({err})") from None
        if parsed.state.flags & ~sre.SRE_FLAG_UNICODE:  # str patterns are unicode; anything else was asked for
            raise NameFilterError(f"filter {pattern[:80]!r}: flags such as (?i) are not supported")
        match = self._new("match")
        self.start = self._sequence(list(parsed), match)

    # -- building (from the end of the pattern backwards: each piece knows its successor) ---------
    def _new(self, kind: str, out: list[int] | None = None, test: Callable[[str], bool] | None = None) -> int:
        if len(self._states) >= MAX_STATES:
            raise NameFilterError(f"filter {self.pattern[:80]!r}: expands to more than {MAX_STATES} states "
                                  f"(large counted repeats); simplify it")
        self._states.append(_State(kind, list(out or []), test))
        return len(self._states) - 1

    def _sequence(self, items: list, successor: int) -> int:
        for op, argument in reversed(items):
            successor = self._item(op, argument, successor)
        return successor

    def _item(self, op, argument, successor: int) -> int:
        if op is sre.LITERAL:
            return self._new("char", [successor], lambda c, code=argument: ord(c) == code)
        if op is sre.NOT_LITERAL:
            return self._new("char", [successor], lambda c, code=argument: ord(c) != code)
        if op is sre.ANY:
            return self._new("char", [successor], lambda c: c != "\n")
        if op is sre.IN:
            return self._new("char", [successor], self._class(argument))
        if op is sre.BRANCH:
            return self._new("split", [self._sequence(list(alt), successor) for alt in argument[1]])
        if op is sre.SUBPATTERN:
            _, add_flags, del_flags, body = argument
            if add_flags or del_flags:
                raise self._unsupported("a group with flags, such as (?i:...),")
            return self._sequence(list(body), successor)
        if op in _REPEATS:
            return self._repeat(*argument, successor)
        if op is sre.AT and argument in _BEGIN + _END:
            kind = "begin" if argument in _BEGIN else "end" if argument is sre.AT_END else "end of string"
            return self._new(kind, [successor])
        raise self._unsupported(_UNSUPPORTED.get(str(op), str(op).lower().replace("_", " ")))

    def _repeat(self, low: int, high: int, body, successor: int) -> int:
        """``body{low,high}``: `low` copies, then `high - low` optional ones (or a loop)."""
        if high is sre.MAXREPEAT or high == sre.MAXREPEAT:
            loop = self._new("split")
            self._states[loop].out = [self._sequence(list(body), loop), successor]
            current = loop
        else:
            current = successor
            for _ in range(high - low):
                current = self._new("split", [self._sequence(list(body), current), successor])
        for _ in range(low):
            current = self._sequence(list(body), current)
        return current

    def _class(self, items) -> Callable[[str], bool]:
        """A character class ``[...]``'s test."""
        negate = bool(items) and items[0][0] is sre.NEGATE
        tests = []
        for op, argument in items[1:] if negate else items:
            if op is sre.LITERAL:
                tests.append(lambda c, code=argument: ord(c) == code)
            elif op is sre.RANGE:
                tests.append(lambda c, bounds=argument: bounds[0] <= ord(c) <= bounds[1])
            elif op is sre.CATEGORY and argument in _CATEGORIES:
                tests.append(_CATEGORIES[argument])
            else:
                raise self._unsupported(f"{str(op).lower().replace('_', ' ')} in a character class")
        return lambda c: any(test(c) for test in tests) != negate

    def _unsupported(self, what: str) -> NameFilterError:
        return NameFilterError(f"filter {self.pattern[:80]!r}: {what} is not supported (plain regular "
                               f"expressions only, matched in linear time)")

    # -- matching -----------------------------------------------------------------------------------
    def fullmatch(self, name: str) -> bool:
        """Whether the whole of `name` matches (``re.fullmatch`` semantics)."""
        current = self._closure([self.start], 0, name)
        for position, character in enumerate(name):
            moved = [out for k in current if self._states[k].kind == "char" and self._states[k].test(character)
                     for out in self._states[k].out]
            current = self._closure(moved, position + 1, name)
            if not current:
                return False
        return any(self._states[k].kind == "match" for k in current)

    def _closure(self, states: list[int], position: int, name: str) -> set[int]:
        """The states reachable from `states` without consuming a character, at `position` of `name`."""
        at_end = position == len(name)
        anchors = {"split": True, "begin": position == 0, "end of string": at_end,
                   "end": at_end or (position == len(name) - 1 and name[-1] == "\n")}
        seen: set[int] = set()
        stack = list(states)
        while stack:
            k = stack.pop()
            if k in seen:
                continue
            seen.add(k)
            state = self._states[k]
            if anchors.get(state.kind, False):
                stack.extend(state.out)
        return {k for k in seen if self._states[k].kind in ("char", "match")}

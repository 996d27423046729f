"""The linear-time entity-name filter (issue 24: a GetEntities filter froze the node for 40 s)
against Python's own ``re.fullmatch`` as the reference, on random patterns and names."""
from __future__ import annotations

import random
import re

import pytest

from mb_sim.session.name_filter import MAX_STATES, NameFilter, NameFilterError

ATOMS = ["a", "b", ".", "[ab]", "[^a]", r"\d", r"\w", r"\s", "[a-c_0-9]", "(a|b)", "(ab|a)", "()", "x", "$", r"\Z", r"\A", "\n"]
REPEATS = ["", "", "*", "+", "?", "{2}", "{0,2}", "{1,}", "*?", "??"]
NAMES = ["", "a", "b", "ab", "ba", "aab", "abab", "a_1", "x", "arm6", "a b", "bbbx", "é9", "a\n", "\n", "ab\n\n"]


def random_pattern(rng: random.Random, depth: int = 0) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        atom = rng.choice(ATOMS) if depth > 1 or rng.random() < 0.7 else f"({random_pattern(rng, depth + 1)})"
        parts.append(atom + rng.choice(REPEATS))
    pattern = "".join(parts)
    if rng.random() < 0.2:
        pattern += "|" + random_pattern(rng, depth + 1)
    if rng.random() < 0.1:
        pattern = "^" + pattern + "$"
    return pattern


def test_agrees_with_python_re_on_random_patterns():
    rng = random.Random(24)
    compared = 0
    for _ in range(1500):
        pattern = random_pattern(rng)
        try:
            re.compile(pattern)
        except re.error:  # an anchor repeated: refused by both
            with pytest.raises(NameFilterError):
                NameFilter(pattern)
            continue
        name_filter = NameFilter(pattern)
        for name in NAMES:
            assert name_filter.fullmatch(name) == (re.fullmatch(pattern, name) is not None), (pattern, name)
            compared += 1
    assert compared > 700 * len(NAMES)  # the rest were refused by both


def test_the_catastrophic_pattern_is_answered():
    # Python's re takes about 40 s on this pattern against a short name; the automaton has a few
    # hundred states and answers at once (no timing asserted: that it returns is the test).
    name_filter = NameFilter(r"((.?){14}){14}X")
    assert not name_filter.fullmatch("arm6" * 8)
    assert name_filter.fullmatch("a" * 30 + "X")


@pytest.mark.parametrize("pattern, says", [
    (r"(a)\1", "a backreference is not supported"),
    ("(?=a)a", "lookaround is not supported"),
    ("(?<!a)b", "lookaround is not supported"),
    ("(a)?(?(1)b|c)", "a conditional group is not supported"),
    ("(?>a)", "an atomic group is not supported"),
    ("a*+", "a possessive repeat is not supported"),
    ("(?i)arm", "flags such as (?i) are not supported"),
    ("(?i:arm)", "a group with flags, such as (?i:...), is not supported"),
    ("(", "not a regular expression"),
    (r"\barm", r"a word-boundary anchor (\b, \B) is not supported"),
    ("(" * 5000 + ")" * 5000, "filter"),
    ("a" * 1001, "at most 1000"),
    ("((a{50}){50}){50}", f"more than {MAX_STATES} states"),
])
def test_what_it_refuses_gets_one_line(pattern, says):
    with pytest.raises(NameFilterError) as err:
        NameFilter(pattern)
    assert says in str(err.value) and "\n" not in str(err.value)

"""Numbers read from URDF attribute text: the one reader every element uses, so each says the same
thing about the same mistake (a word, a wrong count, NaN, a magnitude no robot has)."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import NoReturn

__all__ = ["read_numbers"]


def read_numbers(raw: str, count: int, fail: Callable[[str], NoReturn], bound: float | None = None,
                 unit: str = "", commas: bool = False) -> list[float]:
    """`count` finite numbers from `raw` (separated by white space, and by commas with `commas`),
    each of magnitude at most `bound` (in `unit`, named in the message) if given; else `fail`
    with the problem (it raises: the caller's error names the file and the element)."""
    try:
        values = [float(v) for v in (raw.replace(",", " ") if commas else raw).split()]
    except ValueError:
        fail("not a number")
    if len(values) != count:
        fail(f"expected {count} number(s), got {len(values)}")
    if not all(math.isfinite(v) for v in values):
        fail("NaN or infinite value")
    if bound is not None and values and max(abs(v) for v in values) > bound:
        fail(f"magnitude above {bound:g}: no robot's" + (f" ({unit})" if unit else ""))
    return values

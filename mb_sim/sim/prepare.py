"""Derive and compile a robot's equations into the cache in a process of its own, ``python -m
mb_sim.sim.prepare``: the node spawns or deletes an object this way, building the new scene while it
goes on simulating the old one; loading the result from the cache afterwards takes milliseconds.

The request is one JSON object on stdin: ``{"urdf": text, "load": load_urdf's keywords,
"simulator": Simulator's keywords}``.  Each progress line goes to stdout as it comes; a failure is
one line on stderr, exit status 2 for a URDF the loader refuses and 1 for anything else.
Warnings are not printed: the caller's own load from the cache gives them again.
"""
from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Callable

__all__ = ["NICENESS", "prepare", "main"]

#: How much lower the building process's priority is than its caller's.
NICENESS = 10


def prepare(urdf: str, load: dict, simulator: dict, progress: Callable[[str], None] | None = None) -> None:
    """Load `urdf` with `load` and build its :class:`~mb_sim.sim.Simulator` with `simulator`
    (the cache filled on the way), `progress` told what is being done."""
    from mb_sim.model import load_urdf
    from mb_sim.sim import Simulator

    robot = load_urdf(urdf, **load)
    Simulator(robot, progress=progress, **simulator)


def main() -> int:
    """Read the request, prepare it, report as the module docstring says; at a lower priority
    (``nice`` NICENESS, the compiler's too): the process that waits for it is simulating."""
    from mb_sim.urdf import URDFError

    try:
        os.nice(NICENESS)
    except OSError:
        pass  # (not allowed here: the same priority)

    try:
        request = json.loads(sys.stdin.read())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prepare(request["urdf"], request.get("load", {}), request.get("simulator", {}),
                    lambda line: print(line, flush=True))
    except URDFError as err:
        print(err, file=sys.stderr, flush=True)
        return 2
    except Exception as err:  # noqa: BLE001 (one line for the caller, whatever failed)
        print(f"{type(err).__name__}: {err}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

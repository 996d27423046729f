"""User force laws of spring-dampers (:func:`mb_sim.model.register_force_law`), handed to the
generated code, which calls back into Python for them."""
from __future__ import annotations

__all__ = ["connect_force_laws"]


def connect_force_laws(model) -> None:
    """Hand `model` (a numeric model) the registered force laws its user-law springs name;
    ValueError naming the spring for a law not registered."""
    if not model.force_laws:
        return
    from mb_sim.model import force_law

    laws = []
    for spring, name in model.force_laws:
        try:
            laws.append((spring, force_law(name)))
        except KeyError as err:
            raise ValueError(f"spring-damper {spring!r}: {err.args[0]}") from None

    def evaluate(index: int, t: float, delta: float, rate: float, k: float, d: float, f: float) -> float:
        spring, law = laws[index]
        return law(t, spring, delta, rate, k, d, f)

    model.set_force_law(evaluate)

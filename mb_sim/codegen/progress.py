"""Progress reports of long steps (CSE, compiling): Python logging plus an optional callback."""
from __future__ import annotations

import logging
from typing import Callable, Optional

__all__ = ["Progress", "report"]

Progress = Optional[Callable[[str], None]]

logger = logging.getLogger("mb_sim.codegen")


def report(progress: Progress, message: str) -> None:
    """Log `message` at INFO level and pass it to `progress` if given."""
    logger.info(message)
    if progress is not None:
        progress(message)

"""mb_sim: a multibody simulator for ROS 2 with symbolically derived equations of motion.

Pipeline (one subpackage per stage, dependencies pointing one way):
``urdf`` -> ``model`` -> ``symbolic`` -> ``codegen`` -> ``sim`` -> ``ros``.
Nothing below ``ros`` imports rclpy.
"""
from __future__ import annotations

__all__ = ["__version__", "load_urdf", "URDFError"]

__version__ = "0.1.0"


def __getattr__(name: str):
    """Lazy access to ``load_urdf`` and ``URDFError`` so ``import mb_sim`` stays light."""
    if name == "load_urdf":
        from mb_sim.model import load_urdf

        return load_urdf
    if name == "URDFError":
        from mb_sim.urdf import URDFError

        return URDFError
    raise AttributeError(f"module 'mb_sim' has no attribute {name!r}")

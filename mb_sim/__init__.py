"""mb_sim: a multibody simulator for ROS 2 with symbolically derived equations of motion.

Pipeline (one subpackage per stage, dependencies pointing one way):
``urdf`` -> ``model`` -> ``symbolic`` -> ``codegen`` -> ``sim`` -> ``ros``.
Nothing below ``ros`` imports rclpy.
"""
from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"

"""The version of the code generator: part of every cache key, so cached models of another
generator are rebuilt, not reused (a light module: loading a cached model reads it)."""
from __future__ import annotations

__all__ = ["GENERATOR_VERSION"]

# Bump whenever the generated code changes for the same equations (invalidates cached builds).
GENERATOR_VERSION = "24"

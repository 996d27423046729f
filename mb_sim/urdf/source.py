"""Where a URDF comes from: a file, or its text given directly (a light module: the cache of
compiled robots keys them by this text)."""
from __future__ import annotations

import os
from pathlib import Path

from mb_sim.urdf.errors import URDFError

__all__ = ["read_source"]


def read_source(path_or_xml: str | os.PathLike) -> tuple[str, str]:
    """The URDF text and a name for messages (the path, or ``<string>``)."""
    if isinstance(path_or_xml, str) and path_or_xml.lstrip("\ufeff \t\r\n").startswith("<"):
        return path_or_xml, "<string>"
    path = Path(path_or_xml)
    try:
        return path.read_text(), str(path)
    except FileNotFoundError:
        raise URDFError(str(path), "", "file not found") from None
    except (OSError, UnicodeDecodeError) as err:
        raise URDFError(str(path), "", f"cannot read: {err}") from None

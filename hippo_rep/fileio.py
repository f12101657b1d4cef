"""Atomic file writes shared by checkpoints, recordings, analyses and task outputs, and the
quoting of file values in error messages (no torch)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: Longest value taken from a file (or argument) that an error message quotes, in characters.
MAX_QUOTE = 200


def quote(value, limit: int = MAX_QUOTE) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages that quote a file."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def atomic_write(path: str | Path, write) -> None:
    """Call ``write(tmp_path)`` then rename onto ``path``: a crash leaves the old file intact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise

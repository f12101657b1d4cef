"""Atomic file and folder writes shared by checkpoints, recordings, analyses and task
outputs, and the quoting of file values in error messages (no torch)."""

from __future__ import annotations

import csv
import glob
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path

#: Longest value taken from a file (or argument) that an error message quotes, in characters.
MAX_QUOTE = 200


def quote(value, limit: int = MAX_QUOTE) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages that quote a file."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def read_json(path: str | Path, error: type[Exception], what: str = "file"):
    """The JSON value in ``path``; a missing, unreadable, non-UTF-8 or invalid file raises
    ``error`` naming ``what`` and the file (the message quotes nothing from the file)."""
    path = Path(path)
    if not path.is_file():
        raise error(f"{what} {str(path)!r} not found" if not path.exists()
                    else f"{what} {str(path)!r} is not a file")
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise error(f"{what} {str(path)!r} is not a UTF-8 JSON file") from None
    except json.JSONDecodeError as err:
        raise error(f"{what} {str(path)!r} is not valid JSON ({err.msg} at line {err.lineno}, "
                    f"column {err.colno})") from None
    except RecursionError:
        raise error(f"{what} {str(path)!r} is nested too deeply") from None
    except OSError as err:
        raise error(f"{what} {str(path)!r} cannot be read ({err.strerror})") from None


#: Suffixes of the hidden temporary siblings (``.NAME.<random>.<suffix>``) that writers use.
TEMP_SUFFIXES = (".tmp", ".partial", ".old")


def clean_stale(path: str | Path) -> list[Path]:
    """Remove the temporary siblings of ``path`` left by killed writes; returns them.

    ``.NAME.*.tmp`` / ``.NAME.*.partial`` (unfinished new outputs) are deleted; a
    ``.NAME.*.old`` (an old output set aside for a swap) is put back when ``path`` itself is
    missing, else deleted. Call it only when about to write ``path`` (a second writer of the
    same output at the same time would lose its temporary file).
    """
    path = Path(path)
    if not path.parent.is_dir():
        return []
    stale = [p for p in path.parent.glob(f".{glob.escape(path.name)}.*")
             if p.suffix in TEMP_SUFFIXES]
    olds = sorted((p for p in stale if p.suffix == ".old"), key=lambda p: p.stat().st_mtime)
    if olds and not (path.exists() or path.is_symlink()):
        os.replace(olds.pop(), path)
    for p in stale:
        if p in olds or p.suffix != ".old":
            remove_path(p)
    return stale


def remove_path(path: str | Path) -> None:
    """Remove a file, a link or a folder (with its contents), if there is one."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()


def atomic_folder(path: str | Path, write) -> None:
    """Call ``write(tmp_path)`` (a fresh sibling path, ``.NAME.<random>.tmp``, that does not
    exist yet; ``write`` creates it, e.g. a zarr store) then :func:`swap_in` it onto ``path``;
    a failed ``write`` leaves ``path`` as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(tmp)
    except BaseException:
        remove_path(tmp)
        raise
    swap_in(tmp, path)


def swap_in(tmp: str | Path, path: str | Path) -> None:
    """Rename the complete output ``tmp`` onto ``path``.

    Whatever is at ``path`` is first renamed aside (``.NAME.<random>.old``) and removed only
    after the swap, so a crash leaves either the old or the new output (a killed swap's
    ``.old`` is put back by the next :func:`clean_stale` of ``path``); a failed swap puts the
    old output back. ``tmp`` is gone afterwards either way.
    """
    path = Path(path)
    aside = None
    try:
        if path.exists() or path.is_symlink():
            aside = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.old")
            os.replace(path, aside)
        os.replace(tmp, path)
    except BaseException:
        if aside is not None and not (path.exists() or path.is_symlink()):
            os.replace(aside, path)
            aside = None
        raise
    finally:
        remove_path(tmp)
        if aside is not None:
            remove_path(aside)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: The process umask at import (reading it means setting it, so read it once).
_UMASK = _current_umask()


def write_json(path: str | Path, data, indent: int = 2) -> None:
    """Write ``data`` as JSON to ``path`` atomically (:func:`atomic_write`)."""
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(data, indent=indent)))


def write_csv(path: str | Path, fields, rows=(), **options) -> None:
    """Write a header of ``fields``, then ``rows`` (dicts), as CSV to ``path`` atomically
    (:func:`atomic_write`); ``options`` go to :class:`csv.DictWriter` (e.g.
    ``extrasaction="ignore"``, ``lineterminator="\\n"``)."""
    def write(tmp) -> None:
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fields, **options)
            w.writeheader()
            w.writerows(rows)

    atomic_write(path, write)


def atomic_write(path: str | Path, write) -> None:
    """Call ``write(tmp_path)`` then rename onto ``path``: a crash leaves the old file intact
    (and its temporary file is removed by the next write of ``path``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        # mkstemp creates 0600; give the file the permissions a plain open() would (umask)
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


class OutputError(ValueError):
    """An output path that cannot be used (:func:`check_output_path`, before any work)."""


def check_output_path(path, flag: str, *, inputs=(), overwrite: bool | None = None,
                      folder: bool = False) -> Path:
    """Refuse an output before any work: empty, the input itself (or inside it), a folder where
    a file is expected (or a file where a folder is), an existing file when ``overwrite`` is
    False (None: not checked), or a place that cannot be written.

    ``flag`` names the output in the message (``"--out"``, ``"figures"``); ``inputs`` are the
    paths it must not be; ``folder`` says the output is a folder (a ``.zarr`` store counts as a
    file). Returns ``path`` as a :class:`~pathlib.Path`.

    Raises
    ------
    OutputError, FileExistsError
        Naming ``flag`` and the path.
    """
    path = Path(path)
    if not str(path).strip():
        raise OutputError(f"{flag} is empty")
    shown = quote(str(path))
    target = path.expanduser().resolve()
    for src in (Path(i).expanduser().resolve() for i in inputs if i is not None):
        if target == src or src in target.parents:
            raise OutputError(f"{flag} {shown} is the input {quote(str(src))} itself (or inside "
                              "it); choose another output")
    if path.exists():
        if folder and not path.is_dir():
            raise OutputError(f"{flag} {shown} is a file; a folder is expected")
        if not folder and path.suffix.lower() != ".zarr" and path.is_dir():
            raise OutputError(f"{flag} {shown} is a folder; a file is expected")
        if not folder and overwrite is False:
            raise FileExistsError(f"{flag} {shown} exists; pass --overwrite to replace it")
    parent = path if folder and path.exists() else path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"{flag} {shown}: {quote(str(parent))} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {shown}: folder {quote(str(parent))} is not writable")
    return path


def atomic_write_nwb(path: str | Path, nwbfile) -> None:
    """Write a ``pynwb.NWBFile`` to ``path`` through :func:`atomic_write` (pynwb warns that
    the temporary sibling does not end in ``.nwb``; that warning is silenced)."""
    import warnings

    import pynwb

    def write(tmp) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not end in '.nwb'")
            with pynwb.NWBHDF5IO(str(tmp), "w") as io:
                io.write(nwbfile)

    atomic_write(path, write)

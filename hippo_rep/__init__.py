"""hippo_rep: grid-like and place-like cells in transformer models of the hippocampal formation."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hippo_rep")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

#: Names imported on first use, so that ``import hippo_rep`` stays light (no torch, no xarray).
_LAZY = {"open_recording": "hippo_rep.recording", "validate": "hippo_rep.schema",
         "open_sweep": "hippo_rep.sweep"}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hippo_rep' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

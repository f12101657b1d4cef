"""hippo_rep: grid-like and place-like cells in transformer models of the hippocampal formation."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hippo_rep")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]

"""Pure plotting panels: ``fn(data, ax=None) -> ax``; no savefig, no global style changes.

Use :func:`paper_style` as a context manager to draw in the project's paper style.
"""

from contextlib import contextmanager
from importlib import resources

from hippo_rep.plotting.learning import accuracy_by_step_type, accuracy_curve

#: Okabe-Ito colours by role, shared by every figure.
COLORS = {"temt": "#0072B2", "sinusoidal": "#D55E00", "node_agent": "#000000",
          "edge_agent": "#999999"}


@contextmanager
def paper_style():
    """Matplotlib style context of the shipped paper style sheet."""
    import matplotlib.pyplot as plt

    path = resources.files("hippo_rep.plotting").joinpath("paper.mplstyle")
    with resources.as_file(path) as p, plt.style.context(str(p)):
        yield


__all__ = ["COLORS", "accuracy_by_step_type", "accuracy_curve", "paper_style"]

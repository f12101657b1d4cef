"""Panels of learning: accuracy from evaluation results (``hippo-rep evaluate`` JSON)."""

from __future__ import annotations

import numpy as np

#: Line styles and colours of the two ideal agents.
AGENT_STYLE = {"node_agent": dict(color="#000000", ls="--", label="node agent (limit)"),
               "edge_agent": dict(color="#999999", ls=":", label="edge agent")}
#: Step types shown as bars, with axis labels.
STEP_LABELS = {"first_visit": "first\nvisit", "revisit_known_edge": "known\nedge",
               "revisit_new_edge": "new edge\n(loop closure)",
               "revisit_unseen_edge": "unseen edge\n(zero-shot)"}


def _ax(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.gca()
    return ax


def accuracy_curve(results: dict[str, dict], ax=None, colors: dict | None = None):
    """Accuracy against the proportion of nodes visited.

    Parameters
    ----------
    results : dict
        Label → evaluation result (``evaluate`` output); the ideal agents are drawn from the
        first one.
    ax : matplotlib Axes, optional
    colors : dict, optional
        Label → colour.
    """
    ax = _ax(ax)
    colors = colors or {}
    first = next(iter(results.values()))
    x = np.asarray(first["curve"]["proportion_visited"])
    for agent, style in AGENT_STYLE.items():
        ax.plot(x, _values(first["curve"][agent]), **style)
    for label, res in results.items():
        ax.plot(x, _values(res["curve"]["model"]), marker="o", ms=3, label=label,
                color=colors.get(label))
    ax.set_xlabel("proportion of nodes visited")
    ax.set_ylabel("prediction accuracy (fraction)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right")
    return ax


def accuracy_by_step_type(results: dict[str, dict], ax=None, colors: dict | None = None):
    """Grouped bars: accuracy by step type for each model and the ideal agents."""
    ax = _ax(ax)
    colors = colors or {}
    first = next(iter(results.values()))
    groups = [(label, res["model"], colors.get(label)) for label, res in results.items()]
    groups += [(AGENT_STYLE[a]["label"], first[a], AGENT_STYLE[a]["color"])
               for a in AGENT_STYLE]
    keys = list(STEP_LABELS)
    width = 0.8 / len(groups)
    for i, (label, acc, color) in enumerate(groups):
        vals = [acc[k] if acc[k] is not None else np.nan for k in keys]
        ax.bar(np.arange(len(keys)) + (i - (len(groups) - 1) / 2) * width, vals, width,
               label=label, color=color)
    chance = first.get("meta", {}).get("chance")
    if chance:
        ax.axhline(chance, color="k", lw=0.6, ls="-", alpha=0.5)
    ax.set_xticks(np.arange(len(keys)), [STEP_LABELS[k] for k in keys])
    ax.set_ylabel("prediction accuracy (fraction)")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncols=len(groups))
    return ax


def _values(seq):
    return np.array([np.nan if v is None else v for v in seq], dtype=float)

"""Panels of learning: accuracy from evaluation results (``hippo-rep evaluate`` JSON) and
learning speed (``benchmarks/bench_tem_vs_temt.py --learning`` JSON)."""

from __future__ import annotations

import numpy as np

from hippo_rep.plotting.axes import get_ax, legend_below
from hippo_rep.plotting.style import (
    BLACK,
    BLUE,
    BLUISH_GREEN,
    GREY,
    MEDIUM_FONT_SIZE,
    ORANGE,
    REDDISH_PURPLE,
    REFERENCE_LINE_WIDTH,
    SKY_BLUE,
    VERMILLION,
)

#: Line styles and colours of the two ideal agents.
AGENT_STYLE = {"node_agent": dict(color=BLACK, ls="--", label="node agent (limit)"),
               "edge_agent": dict(color=GREY, ls=":", label="edge agent")}
#: Drop of the legends of :func:`accuracy_curve` and :func:`accuracy_by_step_type` below
#: their axes (:func:`~hippo_rep.plotting.axes.legend_below`), points: clear of the step
#: types' three-line tick labels (about 34 pt at the paper style's sizes), and the same for
#: both so the two legends of the ``learning`` figure sit level.
LEARNING_LEGEND_DROP_PT = 38.0
#: Step types shown as bars, with axis labels.
STEP_LABELS = {"first_visit": "first\nvisit", "revisit_known_edge": "known\nedge",
               "revisit_new_edge": "new edge\n(loop\nclosure)",
               "revisit_unseen_edge": "unseen edge\n(zero-shot)"}
#: The step types' axis labels in a narrow panel (a single-column figure): at most one word
#: a line.
STEP_LABELS_NARROW = {"first_visit": "first\nvisit", "revisit_known_edge": "known\nedge",
                      "revisit_new_edge": "new\nedge\n(loop\nclosure)",
                      "revisit_unseen_edge": "unseen\nedge\n(zero-\nshot)"}


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
    ax = get_ax(ax)
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
    # below the axes: inside, wherever it sat, it hid some curve (a model near chance at the
    # bottom, the agents above it)
    legend_below(ax, LEARNING_LEGEND_DROP_PT, ncols=2, fontsize=MEDIUM_FONT_SIZE)
    return ax


def accuracy_by_step_type(results: dict[str, dict], ax=None, colors: dict | None = None,
                          narrow: bool = False):
    """Grouped bars: accuracy by step type for each model and the ideal agents (``narrow``:
    the step types' labels a word a line, :data:`STEP_LABELS_NARROW`, and the legend in two
    columns, for a panel a single column wide)."""
    ax = get_ax(ax)
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
        ax.axhline(chance, color="k", lw=REFERENCE_LINE_WIDTH, ls="-", alpha=0.5)
    labels = STEP_LABELS_NARROW if narrow else STEP_LABELS
    ax.set_xticks(np.arange(len(keys)), [labels[k] for k in keys])
    ax.set_ylabel("prediction accuracy (fraction)")
    ax.set_ylim(0, 1.02)
    legend_below(ax, LEARNING_LEGEND_DROP_PT, ncols=2 if narrow else len(groups))
    return ax


#: The ``kind`` field of a learning-speed JSON (``bench_tem_vs_temt.py --learning``).
LEARNING_SPEED_KIND = "learning_speed"
#: Display names and colours (Okabe-Ito) of the models of a learning-speed JSON.
SPEED_MODELS = {"temt": ("TEM-t", BLUE), "tem": ("TEM", ORANGE),
                "tem_lr3e-4": ("TEM, lr 3e-4", BLACK),
                "tem_per_walk": ("TEM, update per walk, loss at every step", REDDISH_PURPLE),
                "tem_per_chunk": ("TEM, update per chunk, loss at every step", VERMILLION),
                "temt_per_chunk": ("TEM-t, update per chunk, lr 9.4e-4", GREY),
                "temt_per_chunk_lr3e-4": ("TEM-t, update per chunk, lr 3e-4", SKY_BLUE),
                "temt_per_chunk_lr1e-4": ("TEM-t, update per chunk, lr 1e-4", BLUISH_GREEN)}
#: The axes of :func:`learning_speed`: JSON field → axis label.
SPEED_AXES = {"updates": "gradient updates", "seconds": "training wall-clock time (s)",
              "walk_steps": "steps walked per environment"}


def learning_speed(data: dict, x: str = "updates", ax=None, thresholds=(0.5, 0.9)):
    """Held-out zero-shot accuracy against gradient updates or training seconds (Fig. 4 of
    the TEM-t paper), one line per model, the node agent as the ceiling.

    Parameters
    ----------
    data : dict
        A learning-speed JSON: ``runs`` {model kind: list of evaluations, each with
        ``updates`` (count), ``seconds`` (training wall-clock, evaluation excluded),
        optionally ``walk_steps`` (steps walked per batch environment: samples, whatever a
        model's updates per walk) and ``zero_shot`` (fraction of revisits through a
        never-crossed edge predicted correctly, 0-1, or None)}, ``node_agent`` (the
        ceiling, 0-1).
    x : {"updates", "seconds", "walk_steps"}
        The abscissa (logarithmic; update 0 / second 0 is drawn at half the smallest
        positive value of any model).
    ax : matplotlib Axes, optional
    thresholds : sequence of float
        Accuracies drawn as dotted reference lines.
    """
    if x not in SPEED_AXES:
        raise ValueError(f"x must be one of {sorted(SPEED_AXES)}; got {x!r}")
    ax = get_ax(ax)
    every = np.array([r[x] for rows in data["runs"].values() for r in rows], dtype=float)
    floor = every[every > 0].min() / 2 if (every > 0).any() else 1.0  # where 0 is drawn
    for kind, rows in data["runs"].items():
        label, color = SPEED_MODELS.get(kind, (kind, None))
        xs = np.array([r[x] for r in rows], dtype=float)
        ys = _values([r["zero_shot"] for r in rows])
        ax.plot(np.where(xs > 0, xs, floor), ys, marker="o", ms=2.5, color=color, label=label)
    ax.axhline(data["node_agent"], **{**AGENT_STYLE["node_agent"], "lw": 0.8})
    for t in thresholds:
        ax.axhline(t, color="0.6", ls=":", lw=REFERENCE_LINE_WIDTH)
    ax.set_xscale("log")
    ax.set_xlabel(SPEED_AXES[x])
    ax.set_ylabel("zero-shot accuracy (fraction)")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="upper left")
    return ax


def _values(seq):
    return np.array([np.nan if v is None else v for v in seq], dtype=float)

"""Learning figures: ``learning`` and ``learning_speed``.

``learning``: accuracy against the proportion of nodes visited and by step type, from
evaluation JSONs. ``learning_speed``: zero-shot accuracy of TEM and TEM-t against gradient
updates, training seconds and steps walked (``benchmarks/bench_tem_vs_temt.py --learning``).
Panels: :mod:`hippo_rep.plotting.learning`.
"""

from __future__ import annotations

from hippo_rep.figures._common import _label_panels, _panel_row, _size
from hippo_rep.figures.inputs import FigureInputs, MissingInput
from hippo_rep.figures.registry import register
from hippo_rep.plotting import COLORS, accuracy_by_step_type, accuracy_curve
from hippo_rep.plotting.axes import figure_title
from hippo_rep.plotting.learning import SPEED_MODELS, learning_speed
from hippo_rep.plotting.style import (
    DEFAULT_COLUMN,
    FONT_SIZE,
    FULL_WIDTH,
    MEDIUM_FONT_SIZE,
    SMALL_FONT_SIZE,
    column_width,
    new_figure,
)


@register("learning")
def learning_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """Accuracy against the proportion of nodes visited (TEM-t, baseline, ideal agents), and
    accuracy by step type."""
    evals = inputs.need_evals()
    colors = {label: COLORS.get(_kind(res), None) for label, res in evals.items()}
    fig, axes = _panel_row(width, 2, 2.9, 5.0, width_ratios=[1, 1.4])
    accuracy_curve(evals, ax=axes[0], colors=colors)
    accuracy_by_step_type(evals, ax=axes[1], colors=colors, narrow=width == "single")
    first = next(iter(evals.values()))
    meta = first.get("meta", {})
    figure_title(fig, f"held-out {meta.get('world', '')}: {meta.get('envs', '?')} environments "
                   f"× {meta.get('steps', '?')} steps", _size(FONT_SIZE, width))
    _label_panels(axes)
    return fig


@register("learning_speed")
def learning_speed_figure(inputs: FigureInputs, width: str = DEFAULT_COLUMN):
    """The TEM-t paper's Fig. 4: held-out zero-shot accuracy of TEM and TEM-t against
    gradient updates, training wall-clock seconds and (where the rows have them) steps
    walked, node agent as the ceiling."""
    data = inputs.learning_speed
    if data is None:
        raise MissingInput("needs a learning-speed JSON (--learning-speed FILE, from "
                           "benchmarks/bench_tem_vs_temt.py --learning)")
    # Samples as a third abscissa when every row has them (older files lack them): models
    # with an update per chunk make several updates per walk.
    xs = ["updates", "seconds"] + (["walk_steps"] if all(
        "walk_steps" in r for rows in data["runs"].values() for r in rows) else [])
    single = width == "single"
    if single:  # the panels one above the other
        fig = new_figure(column_width(width), 1.9 * len(xs) + 1.3)
        axes = fig.subplots(len(xs), 1)
    else:
        fig = new_figure(FULL_WIDTH, 3.0)
        axes = fig.subplots(1, len(xs))
    for x, ax in zip(xs, axes, strict=True):
        learning_speed(data, x, ax=ax)
        ax.get_legend().remove()
    # one legend for all panels, below them (it would hide the curves inside a panel); at
    # double width in the small size, its three columns clear of the figure's edges (at
    # 7 pt they were as wide as the column, and wider where drawn at 110 dpi)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=1 if single else 3,
               fontsize=_size(MEDIUM_FONT_SIZE, width) if single else SMALL_FONT_SIZE,
               frameon=False)
    worlds = ", ".join(data.get("worlds", []))
    figure_title(fig, f"zero-shot accuracy on {data.get('eval_envs', '?')} held-out walks of "
                   f"{worlds} (same worlds, seed, batch {data.get('batch_size', '?')}; "
                   f"{data.get('threads', '?')} CPU thread(s); TEM schedule "
                   f"{data.get('tem_schedule', '?')})"
                   + ("" if data.get("complete", True) else " — partial: run still going or "
                      "stopped early") + _resumed(data))
    _label_panels(axes)
    return fig


def _resumed(data: dict) -> str:
    """Where a learning-speed run was continued from its checkpoint (its seconds then add
    up runs made at different times, under whatever load each had)."""
    parts = [f"{SPEED_MODELS.get(k, (k,))[0]} at update{'s' if len(v) > 1 else ''} "
             f"{', '.join(str(u) for u in v)}"
             for k, v in sorted((data.get("resumed_at") or {}).items()) if v]
    return f"\nresumed from a checkpoint: {'; '.join(parts)}" if parts else ""


def _kind(result: dict) -> str:
    return result.get("meta", {}).get("model_kind", "")

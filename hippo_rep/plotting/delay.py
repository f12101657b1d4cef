"""Panels of the long-delay loop-closure task (:func:`hippo_rep.tasks.delay.delay_experiment`:
a Dataset with ``accuracy(variant, delay)``, ``chance``, ``node_agent``) and of the per-step
cost of the memory variants (``benchmarks/bench_memory_variants.py --json``)."""

from __future__ import annotations

import numpy as np

from hippo_rep.plotting.axes import get_ax
from hippo_rep.plotting.style import (
    BLUE,
    BLUISH_GREEN,
    REDDISH_PURPLE,
    TINY_FONT_SIZE,
    VERMILLION,
)

#: Okabe-Ito colour per memory variant.
VARIANT_COLORS = {"full": BLUE, "window": VERMILLION, "fam": BLUISH_GREEN,
                  "hebbian": REDDISH_PURPLE}
#: Axis labels of the cost rows' measures.
COST_LABELS = {"ms_per_step": "time per step (ms)",
               "kb_per_step": "state read per step (KB per environment)",
               "keys_per_step": "keys attended per step"}


def plot_delay(ds, ax=None):
    """Accuracy on the first return visits home against excursion length, per variant.

    Parameters
    ----------
    ds : xarray.Dataset
        ``accuracy`` (variant, delay) as fractions, delay in steps, optionally with a ``run``
        dim (one trained model per run, e.g. seeds: drawn as points, the line is their mean);
        ``chance`` and ``node_agent`` scalars; attrs ``memory_block``/``memory_blocks`` shade
        the window.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    ax = get_ax(ax)
    delays = np.asarray(ds["delay"].values, dtype=float)
    for v in ds["variant"].values:
        acc = ds["accuracy"].sel(variant=v)
        color = VARIANT_COLORS.get(str(v), None)
        if "run" in acc.dims:
            for run in acc.transpose("run", "delay").values:
                ax.plot(delays, run, "o", ms=2.5, alpha=0.6, mew=0, color=color)
            acc = acc.mean("run")
        ax.plot(delays, acc.values, "-" if "run" in ds.dims else "o-", ms=3, lw=1,
                label=str(v), color=color)
    ax.axhline(float(ds["chance"]), color="0.5", ls=":", lw=0.8, label="chance")
    if "node_agent" in ds:
        ax.axhline(float(ds["node_agent"]), color="k", ls="--", lw=0.8, label="node agent")
    if "memory_block" in ds.attrs and "memory_blocks" in ds.attrs:
        b, m = int(ds.attrs["memory_block"]), int(ds.attrs["memory_blocks"])
        ax.axvspan(m * b, (m + 1) * b, color="0.9", zorder=0, label="window length")
    ax.set_xscale("symlog", linthresh=16)
    ax.set_xlabel("excursion length D (steps, symlog scale)")
    ax.set_ylabel("accuracy on return home (fraction correct)")
    ax.set_ylim(-0.02, 1.05)
    ax.legend(fontsize=TINY_FONT_SIZE, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax


def plot_delay_cost(rows, key: str = "ms_per_step", ax=None):
    """Per-step cost of each memory variant against walk length D (log-log).

    Parameters
    ----------
    rows : list of dict
        The ``rows`` of ``benchmarks/bench_memory_variants.py --json``: ``variant``, ``delay``
        (steps) and ``key`` (a list per delay).
    key : str
        ``ms_per_step`` (milliseconds), ``kb_per_step`` (KB of memory state read per step and
        environment) or ``keys_per_step`` (:data:`COST_LABELS`).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    ax = get_ax(ax)
    for r in rows:
        ax.plot(r["delay"], r[key], "o-", ms=3, lw=1, label=r["variant"],
                color=VARIANT_COLORS.get(r["variant"], None))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sorted({d for r in rows for d in r["delay"]}))
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    for axis in (ax.xaxis, ax.yaxis):  # plain numbers, not powers
        axis.set_major_formatter(ScalarFormatter())
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("walk length D (steps, log scale)")
    ax.set_ylabel(COST_LABELS.get(key, key))
    return ax

"""Panels of the PassKey sweep (rows of :func:`hippo_rep.tasks.results.read_sweep`: dicts with
``variant``, ``filler`` (tokens), ``accuracy`` and ``std`` (fractions over seeds))."""

from __future__ import annotations

import numpy as np

from hippo_rep.plotting.axes import get_ax
from hippo_rep.plotting.style import MEDIUM_FONT_SIZE, TINY_FONT_SIZE, new_figure
from hippo_rep.tasks import PASSKEY_VARIANTS

#: Fillers at least this long (tokens) count as "long" in :func:`passkey_long_filler`;
#: the PassKey summary of docs/findings.md averages over 512-2,048.
LONG_FILLER = 512
#: Size (inches) of the figure :func:`plot_passkey_sweep` makes when given no axes (a bare
#: Figure, :func:`~hippo_rep.plotting.style.new_figure`): wider than a single column, for the
#: legend of every variant.
SWEEP_FIGSIZE = (6, 3.6)
#: Line style of each variant family in :func:`plot_passkey_sweep` (FAM also drawn thicker).
FAMILY_STYLES = {"bswa": "-", "fm": "--", "sum": "-.", "fam": "-", "full": ":"}


def plot_passkey_sweep(rows: list[dict], ax=None, chance: float | None = None):
    """Seed-averaged accuracy against filler length (symlog x), one line per variant, with
    chance; error bars are the rows' 95% Wilson intervals (``ci_low``/``ci_high``, prompts of
    all seeds pooled), or the SD over seeds for rows without them. Returns the axes (no saving
    here). Panel a of the ``passkey`` figure (:func:`passkey_curves`).

    Parameters
    ----------
    rows : list of dict
        Sweep rows (``variant``, ``filler`` in tokens, ``accuracy``, ``std``, optionally
        ``ci_low``, ``ci_high``).
    ax : matplotlib Axes, optional
        Default: a new figure of :data:`SWEEP_FIGSIZE`, outside pyplot (``ax.figure``).
    chance : float, optional
        Chance accuracy (fraction), drawn as a line.
    """
    if ax is None:
        ax = new_figure(*SWEEP_FIGSIZE).subplots()
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    for v in variants:
        rs = sorted((r for r in rows if r["variant"] == v), key=lambda r: r["filler"])
        family = PASSKEY_VARIANTS[v]["variant"] if v in PASSKEY_VARIANTS else v.split("_")[0]
        yerr = np.array([[r["accuracy"] - r["ci_low"], r["ci_high"] - r["accuracy"]]
                         if "ci_low" in r else [r["std"], r["std"]] for r in rs]).T
        ax.errorbar([r["filler"] for r in rs], [r["accuracy"] for r in rs],
                    yerr=yerr, label=v, marker="o", ms=3, capsize=2,
                    ls=FAMILY_STYLES.get(family, "-"), lw=2 if family == "fam" else 1)
    if chance is not None:
        ax.axhline(chance, color="0.5", ls=":", lw=1, label="chance")
    ax.set_xscale("symlog", linthresh=16)
    ax.set_xlim(left=0)
    ax.set_xlabel("filler length (tokens)")
    ax.set_ylabel("PassKey accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=MEDIUM_FONT_SIZE, ncol=2)
    return ax


def passkey_curves(rows: list[dict], ax=None, chance: float | None = None):
    """Seed-averaged accuracy against filler length, one line per variant, with chance.

    Draws with :func:`plot_passkey_sweep` and states the units on both axes.

    Parameters
    ----------
    rows : list of dict
        Sweep rows (``variant``, ``filler`` in tokens, ``accuracy``, ``std``).
    ax : matplotlib Axes, optional
    chance : float, optional
        Chance accuracy (fraction), drawn as a line.
    """
    ax = plot_passkey_sweep(rows, ax=get_ax(ax), chance=chance)
    ax.set_xlabel("filler length (tokens, symlog scale)")
    ax.set_ylabel("PassKey accuracy (fraction correct)")
    ax.legend(fontsize=TINY_FONT_SIZE, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax


def long_filler_means(rows: list[dict], min_filler: int = LONG_FILLER
                      ) -> tuple[dict[str, float], list[int]]:
    """Mean accuracy per variant over the fillers >= ``min_filler`` tokens (or the longest
    filler of the sweep if none is that long), and those fillers."""
    fillers = sorted({int(r["filler"]) for r in rows})
    long = [f for f in fillers if f >= min_filler] or fillers[-1:]
    means: dict[str, float] = {}
    for v in dict.fromkeys(r["variant"] for r in rows):
        acc = [float(r["accuracy"]) for r in rows
               if r["variant"] == v and int(r["filler"]) in long]
        means[v] = float(np.mean(acc)) if acc else np.nan
    return means, long


def passkey_long_filler(rows: list[dict], ax=None, min_filler: int = LONG_FILLER,
                        chance: float | None = None):
    """Bars: each variant's mean accuracy over long fillers (see :func:`long_filler_means`).

    Bar i takes colour i of the active colour cycle, as line i does in
    :func:`passkey_curves`, so the two panels match.

    Parameters
    ----------
    rows : list of dict
        Sweep rows.
    ax : matplotlib Axes, optional
    min_filler : int
        Shortest filler (tokens) averaged.
    chance : float, optional
        Chance accuracy (fraction), drawn as a line.
    """
    ax = get_ax(ax)
    means, long = long_filler_means(rows, min_filler)
    names = list(means)
    import matplotlib as mpl

    cycle = mpl.rcParams["axes.prop_cycle"].by_key().get("color", ["0.5"])
    colors = [cycle[i % len(cycle)] for i in range(len(names))]
    ax.bar(np.arange(len(names)), [means[v] for v in names], color=colors, width=0.7)
    if chance is not None:
        ax.axhline(chance, color="0.5", ls=":", lw=1, label="chance")
        ax.legend(loc="upper left")
    ax.set_xticks(np.arange(len(names)), names, rotation=60, ha="right")
    ax.set_ylim(0, 1.02)
    span = f"{long[0]}" if len(long) == 1 else f"{long[0]}–{long[-1]}"
    ax.set_ylabel(f"mean accuracy (fraction correct)\nfillers {span} tokens")
    ax.set_xlabel("variant")
    return ax

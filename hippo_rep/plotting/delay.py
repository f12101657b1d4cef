"""Panel of the long-delay loop-closure task (:func:`hippo_rep.tasks.delay.delay_experiment`:
a Dataset with ``accuracy(variant, delay)``, ``chance``, ``node_agent``)."""

from __future__ import annotations

import numpy as np

#: Okabe-Ito colour per memory variant.
VARIANT_COLORS = {"full": "#0072B2", "window": "#D55E00", "fam": "#009E73",
                  "hebbian": "#CC79A7"}


def plot_delay(ds, ax=None):
    """Accuracy on the first return visits home against excursion length, per variant.

    Parameters
    ----------
    ds : xarray.Dataset
        ``accuracy`` (variant, delay) as fractions, delay in steps; ``chance`` and
        ``node_agent`` scalars; attrs ``memory_block``/``memory_blocks`` shade the window.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.gca()
    delays = np.asarray(ds["delay"].values, dtype=float)
    for v in ds["variant"].values:
        acc = ds["accuracy"].sel(variant=v).values
        ax.plot(delays, acc, "o-", ms=3, lw=1, label=str(v),
                color=VARIANT_COLORS.get(str(v), None))
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
    ax.legend(fontsize=5.5, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax

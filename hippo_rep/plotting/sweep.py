"""Panel of a sweep (:func:`hippo_rep.sweep.open_sweep`): one statistic by grid value, seeds as
points."""

from __future__ import annotations

import numpy as np

from hippo_rep.plotting.axes import get_ax

#: Selection applied to a variable's non-grid dims when the caller does not choose: the
#: model's loop-closure accuracy (a revisit through a directed edge never taken).
DEFAULT_SELECT = {"agent": "model", "step_type": "revisit_new_edge"}
#: Opacity of the bars of the mean over seeds (the seeds are drawn on top as points).
MEAN_BAR_ALPHA = 0.35
#: Size of the seed points, in points.
POINT_SIZE = 4.0
#: Seaborn palette of the hue (a colour-blind-safe one).
PALETTE = "colorblind"
#: Horizontal jitter of the seed points, in category widths.
JITTER = 0.15
#: Seed of the jitter, drawn here (seaborn's own comes from numpy's global generator), so
#: the same sweep gives the same figure and the global generator is left alone.
JITTER_SEED = 0
#: Variable drawn when none is named.
DEFAULT_VARIABLE = "accuracy"


def sweep_frame(ds, y: str = DEFAULT_VARIABLE, select: dict | None = None):
    """A tidy ``pandas.DataFrame`` of ``ds[y]``: one row per run, a column per grid dim,
    ``seed`` and ``y``.

    Parameters
    ----------
    ds : xarray.Dataset
        From :func:`~hippo_rep.sweep.open_sweep`.
    y : str
        A variable of ``ds``.
    select : dict, optional
        Labels of the variable's dims that are neither grid dims nor ``seed`` (default
        :data:`DEFAULT_SELECT` for those it names, e.g. ``{"step_type": "revisit"}``).

    Raises
    ------
    ValueError
        An unknown variable, or a dim left unselected.
    """
    if y not in ds.data_vars:
        raise ValueError(f"the sweep has no variable {y!r}; it has "
                         f"{', '.join(map(str, ds.data_vars))}")
    da = ds[y]
    sel = {**{k: v for k, v in DEFAULT_SELECT.items() if k in da.dims}, **(select or {})}
    da = da.sel({k: v for k, v in sel.items() if k in da.dims})
    run_dims = {*_grid_dims(ds), "seed"}
    extra = [d for d in da.dims if d not in run_dims]
    if extra:
        raise ValueError(f"{y}: choose a label of dim(s) {', '.join(extra)} with select=")
    return da.to_dataframe(name=y).reset_index()[[*da.dims, y]]


def _grid_dims(ds) -> list[str]:
    import json

    dims = ds.attrs.get("dims")
    if isinstance(dims, str):
        return list(json.loads(dims))
    return [d for d in ds[next(iter(ds.data_vars))].dims if d not in ("seed",)]


def _label(ds, y: str, select: dict) -> str:
    long = ds[y].attrs.get("long_name", y)
    if y == "accuracy":
        sel = {**DEFAULT_SELECT, **select}
        return f"{sel['agent'].replace('_', ' ')}: {sel['step_type'].replace('_', ' ')}"
    return long if len(long) <= 40 else y.replace("_", " ")


def plot_sweep(ds, y: str = DEFAULT_VARIABLE, ax=None, x: str | None = None, hue: str | None = None,
               select: dict | None = None):
    """One statistic of a sweep by grid value: bars = mean over seeds, points = seeds.

    Parameters
    ----------
    ds : xarray.Dataset
        From :func:`~hippo_rep.sweep.open_sweep`.
    y : str
        Variable to plot (e.g. ``accuracy``, ``grid_fraction``, ``place_fraction``).
    ax : matplotlib Axes, optional
    x : str, optional
        Grid dim along the x axis (default the first; ``seed`` if the grid is empty).
    hue : str, optional
        Grid dim shown by colour (default the second grid dim, if any). Further grid dims
        are pooled (their runs are drawn as more points).
    select : dict, optional
        Labels of ``y``'s other dims (:func:`sweep_frame`; default :data:`DEFAULT_SELECT`).

    Returns
    -------
    matplotlib Axes
    """
    import seaborn as sns

    ax = get_ax(ax)
    select = select or {}
    df = sweep_frame(ds, y, select).dropna(subset=[y])
    grid = _grid_dims(ds)
    x = x or (grid[0] if grid else "seed")
    if hue is None:
        rest = [d for d in grid if d != x]
        hue = rest[0] if rest else None
    kw = dict(data=df, x=x, y=y, hue=hue, ax=ax)
    if hue is not None:
        kw["palette"] = PALETTE
    if not df.empty:
        sns.barplot(**kw, errorbar=None, alpha=MEAN_BAR_ALPHA, legend=False)
        before = len(ax.collections)
        # seaborn (0.13) draws a zero-width jitter from numpy's global generator even with
        # jitter=False: its state is put back, so the plot leaves the global stream alone
        state = np.random.get_state()  # noqa: NPY002
        try:
            sns.stripplot(**kw, dodge=hue is not None, size=POINT_SIZE, jitter=False,
                          edgecolor="black", linewidth=0.4, legend=hue is not None)
        finally:
            np.random.set_state(state)  # noqa: NPY002
        # seaborn's jitter: ±JITTER of a category, divided among the hue levels when dodged
        width = JITTER / (df[hue].nunique() if hue is not None else 1)
        rng = np.random.default_rng(JITTER_SEED)
        for points in ax.collections[before:]:
            xy = np.asarray(points.get_offsets(), dtype=float)
            if len(xy):
                xy[:, 0] += rng.uniform(-width, width, len(xy))
                points.set_offsets(xy)
    ax.set_ylabel(_label(ds, y, select))
    ax.set_xlabel(x.replace("_", " "))
    n_seeds = ds.sizes.get("seed", 1)
    ax.set_title(f"{n_seeds} seed{'s' if n_seeds != 1 else ''} as points, bars = mean",
                 fontsize="small")
    if hue is not None and ax.get_legend() is not None:
        ax.legend(title=hue.replace("_", " "), fontsize="small", title_fontsize="small")
    return ax

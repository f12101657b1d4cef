"""Publication figures: a registry of named builders, each writing PDF, SVG and 300-dpi PNG.

A builder takes :class:`FigureInputs` and returns a matplotlib Figure; :func:`build_figures`
writes each in every requested format (atomically) and reports, per figure, the files written
or the reason it was skipped (a missing input, named). Plot panels live in
:mod:`hippo_rep.plotting` and never save anything themselves.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Formats written by default.
DEFAULT_FORMATS = ("pdf", "svg", "png")
#: PNG resolution, dots per inch.
PNG_DPI = 300
#: Figure width of a two-column paper figure, inches.
FULL_WIDTH = 7.0


class FigureError(ValueError):
    """Unknown figure name or format, or unreadable input."""


class MissingInput(Exception):
    """A figure cannot be built because an input or variable is missing (the reason)."""


@dataclass
class FigureInputs:
    """Everything a figure may draw from; each is optional.

    ``evals`` maps a model label (e.g. "TEM-t", "sinusoidal") to an evaluation result (the JSON
    of ``hippo-rep evaluate``). ``analysis`` and ``recording`` are xarray Datasets.
    """

    evals: dict[str, dict] = field(default_factory=dict)
    analysis: object | None = None
    recording: object | None = None

    def need_evals(self) -> dict[str, dict]:
        if not self.evals:
            raise MissingInput("needs an evaluation JSON (--eval EVAL.json)")
        return self.evals

    def need(self, dataset: str, *variables: str):
        ds = getattr(self, dataset)
        if ds is None:
            raise MissingInput(f"needs the {dataset} dataset")
        missing = [v for v in variables if v not in ds.variables]
        if missing:
            raise MissingInput(f"the {dataset} dataset lacks variable(s) {', '.join(missing)}")
        return ds


FIGURES: dict[str, Callable[[FigureInputs], object]] = {}


def register(name: str):
    """Decorator: add a builder ``fn(inputs) -> matplotlib.figure.Figure`` to the registry."""

    def deco(fn):
        FIGURES[name] = fn
        return fn

    return deco


def _label_panels(axes) -> None:
    for letter, ax in zip("abcdefghijklmnop", axes, strict=False):
        ax.text(-0.12, 1.04, letter, transform=ax.transAxes, fontweight="bold", fontsize=10,
                va="bottom", ha="right")


@register("learning")
def learning_figure(inputs: FigureInputs):
    """Accuracy against the proportion of nodes visited (TEM-t, baseline, ideal agents), and
    accuracy by step type."""
    import matplotlib.pyplot as plt

    from hippo_rep.plotting import COLORS, accuracy_by_step_type, accuracy_curve

    evals = inputs.need_evals()
    colors = {label: COLORS.get(_kind(res), None) for label, res in evals.items()}
    fig, axes = plt.subplots(1, 2, figsize=(FULL_WIDTH, 2.6),
                             gridspec_kw={"width_ratios": [1, 1.4]})
    accuracy_curve(evals, ax=axes[0], colors=colors)
    accuracy_by_step_type(evals, ax=axes[1], colors=colors)
    first = next(iter(evals.values()))
    meta = first.get("meta", {})
    fig.suptitle(f"held-out {meta.get('world', '')}: {meta.get('envs', '?')} environments × "
                 f"{meta.get('steps', '?')} steps", fontsize=8, y=1.08)
    _label_panels(axes)
    return fig


#: Units shown per map figure.
N_UNITS_SHOWN = 6


def _units_of(analysis, variable: str):
    if "variable" not in analysis.coords:
        raise MissingInput("the analysis dataset lacks the 'variable' coordinate")
    sel = analysis.sel(unit=analysis["variable"] == variable)
    if sel.sizes["unit"] == 0:
        raise MissingInput(f"the analysis dataset holds no {variable!r} units")
    return sel


@register("grid_cells")
def grid_cells_figure(inputs: FigureInputs):
    """Rate maps of the most grid-like positional units (ranked in the first environment) with
    their autocorrelograms, gridness and spacing, in two environments."""
    import matplotlib.pyplot as plt

    from hippo_rep.analysis import autocorrelogram as sac_of
    from hippo_rep.plotting.maps import autocorrelogram, rate_map

    ds = _units_of(inputs.need("analysis", "rate_map", "gridness_60", "spacing"), "g")
    envs = ds["env"].values[:2]
    score = ds["gridness_60"].sel(env=envs[0]).fillna(-np.inf)
    top = ds["unit"].values[np.argsort(-score.values)[:N_UNITS_SHOWN]]
    rows = [("map", envs[0]), ("sac", envs[0])] + [("map", e) for e in envs[1:]]
    fig, axes = plt.subplots(len(rows), len(top), figsize=(FULL_WIDTH, 1.25 * len(rows)),
                             squeeze=False)
    for j, u in enumerate(top):
        for i, (what, env) in enumerate(rows):
            m = ds["rate_map"].sel(env=env, unit=u)
            g60 = float(ds["gridness_60"].sel(env=env, unit=u))
            sp = float(ds["spacing"].sel(env=env, unit=u))
            if what == "map":
                idx = int(ds["unit_index"].sel(unit=u))
                rate_map(m, ax=axes[i, j], title=f"env {env}, unit {idx}\n"
                         f"g60 {g60:.2f}, spacing {sp:.1f}")
            else:
                autocorrelogram(sac_of(m), ax=axes[i, j], title="autocorrelogram")
    fig.suptitle("most grid-like positional units g (ranked by gridness-60 in env "
                 f"{envs[0]}; method {ds.attrs.get('grid_method', 'deepmind')}; spacing in bins)",
                 fontsize=8, y=1.02)
    fig.subplots_adjust(hspace=0.55)
    return fig


@register("place_cells")
def place_cells_figure(inputs: FigureInputs):
    """Memory-neuron rate maps with their fields outlined (most place-like per environment)."""
    import matplotlib.pyplot as plt

    from hippo_rep.plotting.maps import rate_map

    ds = _units_of(inputs.need("analysis", "rate_map", "place_score", "n_fields"),
                   "memory_activity")
    envs = ds["env"].values[:2]
    fig, axes = plt.subplots(len(envs), N_UNITS_SHOWN, figsize=(FULL_WIDTH, 1.35 * len(envs)),
                             squeeze=False)
    for i, env in enumerate(envs):
        score = ds["place_score"].sel(env=env).fillna(-np.inf)
        # ties in place score (1 = all mass in one field) broken by spatial information
        info = ds["spatial_info"].sel(env=env).fillna(-np.inf) if "spatial_info" in ds \
            else score
        top = ds["unit"].values[np.lexsort((-info.values, -score.values))[:N_UNITS_SHOWN]]
        for j, u in enumerate(top):
            rate_map(ds["rate_map"].sel(env=env, unit=u), ax=axes[i, j], outline_fields=True,
                     cmap="magma",
                     title=f"env {env}, memory {int(ds['unit_index'].sel(unit=u))}\n"
                           f"place score {float(score.sel(unit=u)):.2f}")
    fig.suptitle("memory neurons (softmax units), fields outlined at 20% of the peak; "
                 "white = unvisited", fontsize=8, y=1.03)
    fig.subplots_adjust(hspace=0.45)
    return fig


def _kind(result: dict) -> str:
    return result.get("meta", {}).get("model_kind", "")


def read_eval(path) -> dict:
    """An evaluation JSON, checked for the keys figures use."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise FigureError(f"evaluation file {str(path)!r} cannot be read ({err})") from None
    for key in ("model", "node_agent", "edge_agent", "curve"):
        if key not in data:
            raise FigureError(f"{str(path)!r} is not an evaluation JSON (no {key!r})")
    return data


def build_figures(inputs: FigureInputs, out_dir, only=None,
                  formats=DEFAULT_FORMATS) -> dict[str, list[Path] | str]:
    """Build the registered figures (or those in ``only``) into ``out_dir``.

    Returns
    -------
    dict
        Figure name → list of written files, or the one-line reason it was skipped.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from hippo_rep.fileio import atomic_write
    from hippo_rep.plotting import paper_style

    names = list(FIGURES) if not only else list(only)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise FigureError(f"unknown figure(s) {', '.join(unknown)}; known: "
                          f"{', '.join(FIGURES)}")
    bad = [f for f in formats if f not in DEFAULT_FORMATS]
    if bad:
        raise FigureError(f"unknown format(s) {', '.join(bad)}; use {', '.join(DEFAULT_FORMATS)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, list[Path] | str] = {}
    for name in names:
        with paper_style():
            try:
                fig = FIGURES[name](inputs)
            except MissingInput as why:
                report[name] = f"skipped: {why}"
                continue
            paths = []
            for fmt in formats:
                path = out / f"{name}.{fmt}"
                atomic_write(path, lambda tmp, fig=fig, fmt=fmt: fig.savefig(
                    tmp, format=fmt, dpi=PNG_DPI))
                paths.append(path)
            plt.close(fig)
        report[name] = paths
    return report

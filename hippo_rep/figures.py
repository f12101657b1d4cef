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

    from hippo_rep.plotting import paper_style
    from hippo_rep.training.checkpoint import atomic_write

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

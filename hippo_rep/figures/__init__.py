"""Publication figures: a registry of named builders, each writing PDF, SVG and 300-dpi PNG.

A builder takes :class:`FigureInputs` and returns a matplotlib Figure; :func:`build_figures`
writes each in every requested format (atomically) and reports, per figure, the files written
or the reason it was skipped (a missing input, named). Plot panels live in
:mod:`hippo_rep.plotting` and never save anything themselves. No pyplot: every builder draws
a bare matplotlib Figure (:func:`~hippo_rep.plotting.style.new_figure`) in the paper style, so
building figures picks no backend, changes no rcParams and leaves pyplot without figures.

Every registered figure, drawn from the shipped data (or small synthetic inputs where the
shipped data lacks its input), passes :func:`hippo_rep.plotting.checks.check_figure`: no
texts over each other, into another panel or past the figure's edges, no note across the
edge of its panel or over its points, no empty panel that does not say why, a colour bar on
every map, no legend over data (``tests/test_figure_checks.py``).

The package, by responsibility:

- :mod:`~hippo_rep.figures.inputs`: reading and checking the files a figure draws from
  (:func:`load_inputs`, :class:`FigureInputs`, :class:`FigureError`,
  :class:`MissingInput`);
- :mod:`~hippo_rep.figures.registry`: the registry (:data:`FIGURES`, :func:`register`,
  :data:`WIDTHS`);
- one module per figure family, registering its builders: ``learning`` (``learning``,
  ``learning_speed``), ``compare`` (``tem_vs_temt``), ``transitions``, ``grid``
  (``grid_cells``), ``controls``, ``place`` (``place_cells``), ``fam`` (``fam_slots``),
  ``sessions`` (``session_cells``), ``scores``, ``remapping``, ``passkey``, ``delay``
  (``memory_delay``) and ``sweep``; the helpers they share are in ``_common``;
- this module: :func:`build_figures` (writing the figures to files), and the names taken
  from the package: the builders, the inputs' classes and readers, the registry.

The constants a builder reads (e.g. :data:`~hippo_rep.figures.scores.FULL_SCORE_PANELS`) are
read from its family module: change them there.
"""

from __future__ import annotations

from pathlib import Path

from hippo_rep.figures._common import MIN_PEAK_FRACTION, N_UNITS_SHOWN
from hippo_rep.figures.inputs import (
    MODEL_LABELS,
    FigureError,
    FigureInputs,
    MissingInput,
    load_inputs,
    read_eval,
    read_learning_speed,
)
from hippo_rep.figures.registry import FIGURES, WIDTHS, _check_width, register, settle_layout
from hippo_rep.fileio import atomic_write
from hippo_rep.plotting.maps import place_map  # a panel of several figures, found here too
from hippo_rep.plotting.style import DEFAULT_COLUMN, SAVE_DPI, paper_style
from hippo_rep.schema import SchemaError

# The family modules, imported in the order their figures are registered: the order of
# FIGURES, in which build_figures draws and reports them.
# isort: off
from hippo_rep.figures.learning import learning_figure, learning_speed_figure
from hippo_rep.figures.compare import tem_vs_temt_figure
from hippo_rep.figures.transitions import transitions_figure
from hippo_rep.figures.grid import grid_cells_figure
from hippo_rep.figures.controls import controls_figure
from hippo_rep.figures.place import place_cells_figure
from hippo_rep.figures.fam import fam_slots_figure
from hippo_rep.figures.sessions import session_cells_figure
from hippo_rep.figures.scores import scores_figure
from hippo_rep.figures.remapping import remapping_figure
from hippo_rep.figures.passkey import passkey_figure
from hippo_rep.figures.delay import memory_delay_figure
from hippo_rep.figures.sweep import sweep_figure
# isort: on

__all__ = [
    "DEFAULT_FORMATS", "FIGURES", "MIN_PEAK_FRACTION", "MODEL_LABELS", "N_UNITS_SHOWN", "PNG_DPI",
    "WIDTHS", "FigureError", "FigureInputs", "MissingInput", "build_figures", "controls_figure",
    "fam_slots_figure", "figure_format", "grid_cells_figure", "learning_figure",
    "learning_speed_figure", "load_inputs", "memory_delay_figure", "passkey_figure",
    "place_cells_figure", "place_map", "read_eval", "read_learning_speed", "register",
    "remapping_figure", "save_figure", "scores_figure", "session_cells_figure", "settle_layout",
    "sweep_figure", "tem_vs_temt_figure", "transitions_figure",
]

#: Formats written by default.
DEFAULT_FORMATS = ("pdf", "svg", "png")
#: PNG resolution, dots per inch (:data:`hippo_rep.plotting.style.SAVE_DPI`).
PNG_DPI = SAVE_DPI


def build_figures(inputs: FigureInputs, out_dir, only=None,
                  formats=DEFAULT_FORMATS,
                  width: str = DEFAULT_COLUMN) -> dict[str, list[Path] | str]:
    """Build the registered figures (or those in ``only``) into ``out_dir``, each at
    ``width``: "double" (a double column, the default) or "single" (a single column, each
    figure laid out for it; :data:`WIDTHS`).

    Each figure is a bare Figure (no pyplot, no backend chosen) drawn and saved in the paper
    style (:func:`~hippo_rep.plotting.style.paper_style`); ``matplotlib.rcParams`` is the
    same afterwards. Every file is written atomically (a temporary file renamed onto it).

    Returns
    -------
    dict
        Figure name → list of written files, or the one-line reason it was skipped.
    """
    names = list(FIGURES) if not only else list(only)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise FigureError(f"unknown figure(s) {', '.join(unknown)}; known: "
                          f"{', '.join(FIGURES)}")
    bad = [f for f in formats if f not in DEFAULT_FORMATS]
    if bad:
        raise FigureError(f"unknown format(s) {', '.join(bad)}; use {', '.join(DEFAULT_FORMATS)}")
    _check_width(width)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, list[Path] | str] = {}
    for name in names:
        try:
            fig = FIGURES[name](inputs, width=width)
        except (MissingInput, SchemaError) as why:  # an input lacking what it needs
            report[name] = f"skipped: {why}"
            continue
        report[name] = [save_figure(fig, out / f"{name}.{fmt}", width) for fmt in formats]
    return report


def figure_format(path) -> str:
    """The format of a figure file named ``path``: its suffix, one of :data:`DEFAULT_FORMATS`.

    Raises
    ------
    FigureError
        Another suffix (naming the file).
    """
    fmt = Path(path).suffix[1:].lower()
    if fmt not in DEFAULT_FORMATS:
        raise FigureError(f"{str(path)!r}: a figure file ends in "
                          f"{', '.join('.' + f for f in DEFAULT_FORMATS)}")
    return fmt


def save_figure(fig, path, width: str = DEFAULT_COLUMN) -> Path:
    """Write ``fig`` to ``path`` atomically, in the format of its suffix
    (:func:`figure_format`; PNG at :data:`PNG_DPI`), in the paper style at ``width`` (matplotlib
    reads ``savefig.*`` and the font types when saving). Returns the path."""
    fmt = figure_format(path)
    with paper_style(width):
        atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=PNG_DPI))
    return Path(path)

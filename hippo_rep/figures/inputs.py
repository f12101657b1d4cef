"""The inputs of the figures: reading the files a figure draws from, with clear errors.

:func:`load_inputs` reads each input given as a path (analysis and recording datasets,
evaluation JSONs, a PassKey sweep, a training sweep, long-delay results and their cost
benchmark, a learning-speed JSON, a TEM analysis) into a :class:`FigureInputs`;
:func:`read_eval` and :func:`read_learning_speed` read and check one JSON each. A file that
is not what it should be raises :class:`FigureError`, naming the file and the field. A
builder asks its :class:`FigureInputs` for what it draws (``need``, ``need_evals``,
``need_passkey``), which raises :class:`MissingInput` with the reason where that is absent;
:func:`hippo_rep.figures.build_figures` then skips the figure and says why.

The PassKey and delay readers (:mod:`hippo_rep.tasks.results`, torch-free) are imported where
those inputs are read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import xarray as xr

from hippo_rep.analysis.analysis_files import open_analysis
from hippo_rep.fileio import read_json
from hippo_rep.plotting.learning import LEARNING_SPEED_KIND
from hippo_rep.recording import open_recording
from hippo_rep.sweep.results import open_sweep

#: Keys every PassKey sweep row needs (:func:`hippo_rep.tasks.results.read_sweep`).
PASSKEY_ROW_KEYS = ("variant", "filler", "accuracy", "std")
#: Display labels of evaluation results by ``meta.model_kind``.
MODEL_LABELS = {"temt": "TEM-t"}


class FigureError(ValueError):
    """Unknown figure name or format, or unreadable input."""


class MissingInput(Exception):
    """A figure cannot be built because an input or variable is missing (the reason)."""


@dataclass
class FigureInputs:
    """Everything a figure may draw from; each is optional.

    ``evals`` maps a model label (e.g. "TEM-t", "sinusoidal") to an evaluation result (the JSON
    of ``hippo-rep evaluate``). ``analysis`` and ``recording`` are xarray Datasets.
    ``passkey`` holds the seed-averaged rows of a PassKey sweep
    (:func:`hippo_rep.tasks.results.read_sweep`: ``variant``, ``filler`` in tokens,
    ``accuracy`` and ``std`` as fractions). ``sweep`` is a sweep's table
    (:func:`hippo_rep.sweep.open_sweep`). ``delay`` is a long-delay loop-closure result
    (:func:`hippo_rep.tasks.delay.delay_experiment`; with a ``run`` dim when several were
    read) and ``delay_cost`` the rows of ``benchmarks/bench_memory_variants.py --json``.
    ``learning_speed`` is the JSON of ``benchmarks/bench_tem_vs_temt.py --learning``
    (:func:`read_learning_speed`). ``tem_analysis`` is the analysis of a TEM recording, shown
    beside ``analysis`` (TEM-t).
    """

    evals: dict[str, dict] = field(default_factory=dict)
    analysis: object | None = None
    recording: object | None = None
    passkey: list[dict] | None = None
    sweep: object | None = None
    delay: object | None = None
    learning_speed: dict | None = None
    tem_analysis: object | None = None
    delay_cost: list[dict] | None = None

    def need_evals(self) -> dict[str, dict]:
        if not self.evals:
            raise MissingInput("needs an evaluation JSON (--eval EVAL.json)")
        return self.evals

    def need_passkey(self) -> list[dict]:
        if not self.passkey:
            raise MissingInput("needs a PassKey sweep (--passkey SWEEP_DIR_OR_FILE)")
        for key in PASSKEY_ROW_KEYS:
            if any(key not in r for r in self.passkey):
                raise MissingInput(f"the PassKey sweep rows lack {key!r}")
        return self.passkey

    def need(self, dataset: str, *variables: str):
        ds = getattr(self, dataset)
        if ds is None:
            raise MissingInput(f"needs the {dataset} dataset")
        missing = [v for v in variables if v not in ds.variables]
        if missing:
            raise MissingInput(f"the {dataset} dataset lacks variable(s) {', '.join(missing)}")
        return ds


def read_eval(path) -> dict:
    """An evaluation JSON, checked for the keys figures use."""

    path = Path(path)
    data = read_json(path, FigureError, "evaluation file")
    for key in ("model", "node_agent", "edge_agent", "curve"):
        if not isinstance(data, dict) or key not in data:
            raise FigureError(f"{str(path)!r} is not an evaluation JSON (no {key!r})")
    for key in ("model", "node_agent", "edge_agent"):
        if not isinstance(data[key], dict):
            raise FigureError(f"{str(path)!r}: {key!r} is not a table of accuracies")
    return data


def read_learning_speed(path) -> dict:
    """A learning-speed JSON (``bench_tem_vs_temt.py --learning``), checked for what the
    ``learning_speed`` figure reads (FigureError naming the file and the field)."""
    path = Path(path)
    data = read_json(path, FigureError, "learning-speed file")
    if not isinstance(data, dict) or data.get("kind") != LEARNING_SPEED_KIND:
        raise FigureError(f"{str(path)!r} is not a learning-speed JSON (kind is not "
                          f"{LEARNING_SPEED_KIND!r})")
    runs = data.get("runs")
    if not isinstance(runs, dict) or not runs:
        raise FigureError(f"{str(path)!r}: 'runs' is not a table of models")
    for kind, rows in runs.items():
        if not isinstance(rows, list) or not rows or not all(
                isinstance(r, dict) and {"updates", "seconds", "zero_shot"} <= r.keys()
                for r in rows):
            raise FigureError(f"{str(path)!r}: runs.{kind} is not a list of evaluations with "
                              "updates, seconds and zero_shot")
    if not isinstance(data.get("node_agent"), (int, float)):
        raise FigureError(f"{str(path)!r}: 'node_agent' is not a number")
    return data


def load_inputs(analysis=None, recording=None, evals=(), passkey=None,
                missing_ok: bool = False, sweep=None, delay=None,
                learning_speed=None, tem_analysis=None, delay_cost=None) -> FigureInputs:
    """The figures' inputs, each read from its file or given as the data itself (a dataset,
    an evaluation dict, PassKey rows, ...; ``evals`` and ``delay`` lists may mix both).

    Parameters
    ----------
    analysis : path or xarray.Dataset, optional
        Analysis dataset (``hippo-rep analyse`` output, ``.nc`` or ``.zarr``).
    recording : path or xarray.Dataset, optional
        Recording (``.nc`` or ``.zarr``).
    evals : sequence of path or dict
        Evaluation JSONs of ``hippo-rep evaluate`` (or their dicts), labelled by their
        ``meta.model_kind`` (:data:`MODEL_LABELS`).
    passkey : path, optional
        A PassKey sweep folder or its ``sweep.json``.
    missing_ok : bool
        Leave out inputs whose path does not exist (their figures are then skipped with the
        reason) instead of raising FileNotFoundError.
    sweep : path, optional
        A training sweep folder (``hippo-rep sweep --out``), read by
        :func:`hippo_rep.sweep.open_sweep`.
    delay : path, xarray.Dataset or a sequence of them, optional
        ``hippo-rep delay`` results (``.nc`` or ``.json``), e.g. one per seed; several are
        stacked along a ``run`` dim.
    delay_cost : path, optional
        The JSON of ``benchmarks/bench_memory_variants.py --json`` (needs ``rows``).
    learning_speed : path, optional
        A learning-speed JSON (``benchmarks/bench_tem_vs_temt.py --learning``).
    tem_analysis : path, optional
        The analysis of a TEM recording (for ``tem_vs_temt``, beside ``analysis``).

    Returns
    -------
    FigureInputs
    """
    def is_path(value) -> bool:
        return isinstance(value, str | os.PathLike)

    def given(value, read):
        """``value`` itself (data), or read from its path (None: absent or left out)."""
        if value is None or (is_path(value) and (str(value) == "" or (
                missing_ok and not Path(value).exists()))):
            return None
        return read(value) if is_path(value) else value

    out = FigureInputs()
    delays = [delay] if is_path(delay) or isinstance(delay, xr.Dataset) else list(delay or ())
    if delays:
        from hippo_rep.tasks.results import read_delay

        runs = [r for r in (given(d, read_delay) for d in delays) if r is not None]
        if runs:
            out.delay = runs[0] if len(runs) == 1 else xr.concat(
                runs, dim="run", data_vars=["accuracy", "n_scored", "walk_steps"],
                coords="minimal", compat="override", combine_attrs="drop_conflicts")
    out.delay_cost = given(delay_cost, read_delay_cost)
    for res in (given(e, read_eval) for e in evals):
        if res is not None:
            kind = res.get("meta", {}).get("model_kind", "model")
            out.evals[MODEL_LABELS.get(kind, kind)] = res
    out.analysis = given(analysis, open_analysis)
    out.recording = given(recording, open_recording)
    if passkey is not None:
        from hippo_rep.tasks.results import read_sweep

        out.passkey = given(passkey, read_sweep)
    out.sweep = given(sweep, open_sweep)
    out.learning_speed = given(learning_speed, read_learning_speed)
    out.tem_analysis = given(tem_analysis, open_analysis)
    return out


def read_delay_cost(path) -> list[dict]:
    """The rows of a ``benchmarks/bench_memory_variants.py --json`` file, checked.

    Raises
    ------
    FigureError
        Naming the file, when it has no rows with ``variant``, ``delay``, ``ms_per_step`` and
        ``kb_per_step``.
    """
    data = read_json(path, FigureError, "delay cost")
    rows = data.get("rows") if isinstance(data, dict) else None
    if not rows or any(k not in r for r in rows for k in ("variant", "delay", "ms_per_step",
                                                            "kb_per_step")):
        raise FigureError(f"{str(path)!r} is not a bench_memory_variants JSON (needs rows with "
                          "variant, delay, ms_per_step, kb_per_step)")
    return rows

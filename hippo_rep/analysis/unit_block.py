"""Every per-unit computation of :func:`~hippo_rep.analysis.analyse` for one chunk of units,
in one task: the map kernels (grid, band, place fields, place score, border score, plane
waves), the per-node scores, the circular-shift nulls and the per-unit remapping correlations,
packed into one array per task (:class:`UnitBlock`), run over a dataset's units with
``xr.apply_ufunc(..., dask="parallelized")`` beside the population analyses
(:func:`compute_units`), with an optional progress bar (:func:`progress_bar`).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from dataclasses import dataclass, replace

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from hippo_rep.defaults import BLAS_THREADS

from .arena import RECTANGLE
from .bandscore import band_kernel
from .border import border_kernel
from .core import null_summary_arrays, pair_correlations
from .fields import place_fields_kernel, place_score_kernel
from .gridscore import grid_kernel
from .kernels import Kernel, Output
from .planewaves import WAVES
from .population import population_one
from .recordings import NODE_DIM, UNIT_DIM
from .remapping import PAIR_DIM, REMAP_MIN_NODES
from .sample_counts import SampleCounts
from .shuffle import (
    SHUFFLE_DIM,
    null_score_arrays,
    score_border_score,
    score_gridness_60,
    score_plane_wave_share,
    score_spatial_info,
)
from .spatial import selectivity, sparsity, spatial_information

#: Per-field outputs (``field`` dim) kept in the analysis dataset: the classification only
#: needs up to 3 fields, and every field is still counted in ``n_fields``.
ANALYSIS_MAX_FIELDS = 4

#: Dim and variable of the packed per-unit outputs (:class:`UnitBlock`).
PACKED_DIM, PACKED_VAR = "packed", "packed_outputs"


def unit_kernels(grid_method: str, min_field_area: int, arena_shape: str = RECTANGLE
                 ) -> tuple[tuple[Kernel, str, dict], ...]:
    """The map kernels of :func:`analyse`: (kernel, prefix of its attrs in the analysis'
    attrs, {declared output name: name in the analysis, None = not kept}); the border
    kernel's for ``arena_shape`` (a circle: NaN,
    :func:`~hippo_rep.analysis.border_score`)."""
    return (
        (grid_kernel(grid_method), "grid_", {"nan_reason": "grid_nan_reason"}),
        (band_kernel(), "band_", {"nan_reason": "band_nan_reason"}),
        (place_fields_kernel(min_area=min_field_area, max_fields=ANALYSIS_MAX_FIELDS),
         "place_field_", {"field_labels": None}),
        (place_score_kernel(), "", {}),
        (border_kernel(min_area=min_field_area, arena_shape=arena_shape), "border_", {}),
        (WAVES, "", {}),
    )


#: Per-node scores of :func:`analyse` (node_rate weighted by node_occupancy) and their attrs.
NODE_SCORES = {
    "spatial_info": {"long_name": "Skaggs spatial information per node (negative log terms "
                     "kept)", "units": "bits per unit activity"},
    "sparsity": {"long_name": "sparsity (sum p r)^2 / sum p r^2 per node", "units": "1"},
    "selectivity": {"long_name": "selectivity max / mean per node", "units": "1"},
}

#: Scores with circular-shift nulls in :func:`analyse`, in the order of its scorers, and
#: their units. The border score's null is scored with the analysis' own field minimum
#: (that of its border kernel), as the observed border score is.
NULL_SCORES = {"gridness_60": "1", "plane_wave_share": "1",
               "spatial_info": "bits per unit activity", "border_score": "1"}


@dataclass(frozen=True)
class UnitBlock:
    """Everything :func:`analyse` computes per unit, for one chunk of units (one dask task).

    Called by ``xr.apply_ufunc`` with arrays (unit, env, ...): rate maps (.., y, x), node
    rates (.., world_node), activity (.., time) (with ``counts``, a session's spike counts
    held sparsely: (unit,) the units' positions in them), node occupancy (1, env,
    world_node), node (1, env, time), shifts (1, env, shuffle). The map scores are the
    public functions' kernels (:mod:`~hippo_rep.analysis.kernels`) on numpy. All outputs
    are packed into one float64 array (unit, packed) — one result per task, which matters
    on dask.distributed, where every result key costs a message — and unpacked by
    :meth:`unpack` (small ints are exact).
    """

    kernels: tuple[tuple[Kernel, str, dict], ...]
    grid_method: str
    quantiles: tuple[float, ...]
    node_map: np.ndarray
    n_nodes: int
    sigma: float
    pairs: np.ndarray
    keep_null: bool
    counts: SampleCounts | None = None

    def outputs(self) -> list[Output]:
        """Every output (dims after ``unit``), in order."""
        env = ("env",)
        out = [replace(o, name=names.get(o.name, o.name), dims=env + o.dims)
               for kernel, _, names in self.kernels for o in kernel.outputs
               if names.get(o.name, o.name)]
        out += [Output(k, env, attrs=a) for k, a in NODE_SCORES.items()]
        for k, units in NULL_SCORES.items():
            out += [Output(f"{k}_null_q", ("env", "quantile"), attrs={
                        "long_name": f"quantiles of the {k} shuffle null", "units": units}),
                    Output(f"{k}_percentile", env, attrs={
                        "long_name": f"percent of finite shuffle {k} scores below the "
                                     "observed one", "units": "percent"})]
        if self.keep_null:
            out += [Output(f"{k}_null", ("env", SHUFFLE_DIM)) for k in NULL_SCORES]
        out += [Output("remap_corr", (PAIR_DIM,), attrs={
            "long_name": "per-unit Pearson r of node rates between two environments",
            "units": "1", "min_nodes": REMAP_MIN_NODES})]
        return out

    def border_options(self) -> dict:
        """The field minimum (bins) and arena shape of the border kernel among
        :attr:`kernels`, for the border score's null (scored as the observed one)."""
        for kernel, *_ in self.kernels:
            if "border_min_area_bins" in kernel.attrs:
                return {"min_area": int(kernel.attrs["border_min_area_bins"]),
                        "arena_shape": str(kernel.attrs["border_arena_shape"])}
        raise ValueError("UnitBlock.kernels has no border kernel (border_min_area_bins)")

    def __call__(self, maps, rates, act, occ, node, shifts) -> np.ndarray:
        with threadpool_limits(limits=BLAS_THREADS, user_api="blas"), \
                np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return self._run(maps, rates, act, occ, node, shifts)

    def _run(self, maps, rates, act, occ, node, shifts) -> np.ndarray:
        # arrays deserialised by dask.distributed may be unaligned (numpy's slow paths)
        maps, rates, act, occ, node, shifts = (
            np.require(a, None, ["C_CONTIGUOUS", "ALIGNED"])
            for a in (maps, rates, act, occ, node, shifts)
        )
        # the unit-less inputs come as (env, ...) or (1, env, ...) depending on the path
        occ, node, shifts = (a.reshape(a.shape[-2:]) for a in (occ, node, shifts))
        maps_eu = np.swapaxes(maps, 0, 1)  # (env, unit, y, x)
        res: dict[str, np.ndarray] = {}
        for kernel, _, names in self.kernels:
            for k, a in kernel.array(maps_eu).items():
                res[names.get(k, k)] = a
        rates_eu = np.swapaxes(rates, 0, 1)
        res.update(zip(NODE_SCORES, _node_scores(rates_eu, occ[:, None, :]), strict=True))
        scorers = [functools.partial(score_gridness_60, method=self.grid_method),
                   score_plane_wave_share, score_spatial_info,
                   functools.partial(score_border_score, **self.border_options())]
        bar = _BAR  # set by analyse(progress=True) in this process
        if bar is not None:  # one tick per block of units, shuffles and score
            scorers = [_ticking(fn, bar) for fn in scorers]
        # a session's spikes: ``act`` holds the units' positions in ``self.counts``
        act = (np.swapaxes(act, 0, 1) if self.counts is None
               else self.counts.take(act.reshape(-1)))
        nulls = null_score_arrays(act, node, shifts, node_map=self.node_map,
                           n_nodes=self.n_nodes, sigma=self.sigma, scorers=scorers,
                           names=list(NULL_SCORES))
        qs = np.asarray(self.quantiles)
        for k, null in zip(NULL_SCORES, nulls, strict=True):
            res[f"{k}_null_q"], res[f"{k}_percentile"] = null_summary_arrays(res[k], null, qs)
            res[f"{k}_null"] = null
        res["remap_corr"] = pair_correlations(rates, self.pairs, REMAP_MIN_NODES)  # (unit, P)
        n_unit = maps.shape[0]
        parts = []
        for o in self.outputs():
            a = res[o.name]
            if o.dims[0] == "env":  # computed as (env, unit, ...): unit first
                a = np.swapaxes(a, 0, 1)
            parts.append(np.asarray(a, dtype=np.float64).reshape(n_unit, -1))
        return np.concatenate(parts, axis=1)

    def packed_size(self, sizes: dict[str, int]) -> int:
        """Length of the packed output per unit."""
        return sum(int(np.prod([sizes[d] for d in o.dims])) for o in self.outputs())

    def unpack(self, packed: xr.DataArray, sizes: dict[str, int]) -> xr.Dataset:
        """The outputs as variables (unit, core dims...) with their dtypes and attrs."""
        values = np.asarray(packed.transpose(UNIT_DIM, PACKED_DIM).values)
        out, start = {}, 0
        for o in self.outputs():
            shape = tuple(sizes[d] for d in o.dims)
            n = int(np.prod(shape))
            block = values[:, start : start + n].reshape((values.shape[0],) + shape)
            block = (block.astype(o.dtype) if o.labels is None
                     else np.asarray(o.labels)[block.astype(np.int64)])
            out[o.name] = ((UNIT_DIM, *o.dims), block, dict(o.attrs))
            start += n
        return xr.Dataset(out, coords={UNIT_DIM: packed[UNIT_DIM].values})


def _node_scores(rates: np.ndarray, occ: np.ndarray) -> tuple[np.ndarray, ...]:
    """Spatial information, sparsity, selectivity of (..., node) rates (numpy, inside
    :meth:`UnitBlock.__call__`, which silences their warnings)."""
    dims = [f"d{i}" for i in range(rates.ndim - 1)] + [NODE_DIM]
    r = xr.DataArray(rates, dims=dims)
    o = xr.DataArray(np.broadcast_to(occ, rates.shape), dims=dims)
    return tuple(np.asarray(f(r, o, dims=(NODE_DIM,)).values, dtype=np.float64)
                 for f in (spatial_information, sparsity, selectivity))


def compute_units(spec: UnitBlock, inputs: list, sizes: dict, lazy: bool,
                              scheduler: str | None, pop_inputs: dict, steps: int
                              ) -> tuple[xr.Dataset, dict]:
    """The packed per-unit outputs (``spec`` over ``inputs``, one task per chunk of units)
    and the population analyses of ``pop_inputs`` (population -> arguments), computed."""
    act_dims = ["env", "time"] if spec.counts is None else []  # else: positions in counts
    packed = xr.apply_ufunc(
        spec,
        *inputs,
        input_core_dims=[["env", "y", "x"], ["env", NODE_DIM], act_dims,
                         ["env", NODE_DIM], ["env", "time"], ["env", SHUFFLE_DIM]],
        output_core_dims=[[PACKED_DIM]],
        dask="parallelized",
        output_dtypes=[np.float64],
        dask_gufunc_kwargs={"output_sizes": {PACKED_DIM: spec.packed_size(sizes)}},
    )
    out = xr.Dataset({PACKED_VAR: packed})
    if lazy:
        import dask

        task = dask.delayed(population_one, pure=True)
    else:
        task = population_one
    pop_tasks = {v: task(*args, max_steps=steps) for v, args in pop_inputs.items()}
    if lazy:
        out, pop_tasks = _compute(out, pop_tasks, scheduler)
    return out, pop_tasks


#: The bar of the :func:`analyse` running with ``progress=True`` in this process (None when
#: none): :meth:`UnitBlock._run` advances it as it scores shuffled maps. A module global,
#: not a context variable, so that the threads of dask's threaded scheduler see it.
_BAR = None


class _NoBar:
    """What :func:`progress_bar` yields when no bar is shown."""

    total = n = 0

    def update(self, n: float = 1) -> None:
        pass


@contextlib.contextmanager
def progress_bar(enabled: bool, total: int):
    """A tqdm bar of ``total`` shuffled-map scores, as :data:`_BAR` while the block runs (or
    a bar that shows nothing)."""
    global _BAR
    if not enabled:
        yield _NoBar()
        return
    from tqdm.auto import tqdm  # only when a bar is shown

    bar = tqdm(total=total, desc="analyse: shuffled maps scored", unit="score",
               unit_scale=True, dynamic_ncols=True)
    _BAR = bar
    try:
        yield bar
    finally:
        _BAR = None
        bar.close()


def _ticking(scorer, bar):
    """``scorer`` advancing ``bar`` by the number of shuffled maps it scored (units x
    shuffles of the block it is given)."""

    @functools.wraps(scorer)
    def run(ds: xr.Dataset):
        res = scorer(ds)
        bar.update(ds.sizes[UNIT_DIM] * ds.sizes.get(SHUFFLE_DIM, 1))
        return res

    return run


def _compute(ds: xr.Dataset, tasks: dict, scheduler: str | None) -> tuple[xr.Dataset, dict]:
    """Compute the dask arrays of ``ds`` and the delayed ``tasks`` in one graph.

    (``dask.compute(ds)`` on a Dataset whose variables share graph layers fails with
    "Missing dependency" in dask 2026.8; computing the variables' arrays does not.)
    """
    import dask

    names = [k for k in ds.data_vars if dask.is_dask_collection(ds[k].data)]
    kw = {} if scheduler is None else {"scheduler": scheduler}
    with warnings.catch_warnings():
        # distributed: the activity is part of the graph (it is sent once to the scheduler)
        warnings.filterwarnings("ignore", message="Sending large graph")
        arrays, tasks = dask.compute([ds[k].data for k in names], tasks, **kw)
    ds = ds.copy()
    for k, a in zip(names, arrays, strict=True):
        ds[k] = ds[k].copy(data=a)
    return ds, tasks

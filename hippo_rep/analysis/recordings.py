"""Reading activity out of recordings (their format: :mod:`hippo_rep.schema`), and rate maps
of recorded units.

Memory neurons do not exist before their memory is written: in TEM-t a memory written at step
``t`` (``memory_time``) is first available to the prediction at step ``t + 1`` (causal
attention over *earlier* steps), and the recording holds 0 until then. For rate maps and
scores, :func:`unit_activity` therefore sets ``memory_activity`` to NaN at every step
``t <= memory_time`` (and everywhere for unused slots), so that a memory neuron's map is its
tuning while it exists; NaN samples are skipped per unit. Decoding and PCA use the activity
as recorded (see :mod:`hippo_rep.analysis.population`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from hippo_rep.schema import (
    MEMORY_POPULATIONS,
    MEMORY_TIME,
    UNIT,
    UNIT_DIMS,
    WORLD_NODE,
    AnalysisError,
    G,
    require_recording,
)

from ._checks import check_positive_number
from .ratemaps import rate_maps_from_nodes, smooth

#: The world-node dim of recordings and of per-node outputs (schema ``WORLD_NODE``), and the
#: unit dim of every per-unit output (schema ``UNIT``).
NODE_DIM, UNIT_DIM = WORLD_NODE, UNIT


def unit_activity(recording: xr.Dataset, variable: str = G, mask_memory: bool = True, *,
                  checked: bool = False) -> xr.DataArray:
    """Activity of one population as ``(env, time, unit)`` float64.

    Parameters
    ----------
    recording : xarray.Dataset
        A recording (see :mod:`hippo_rep.schema`).
    variable : {"g", "g_pi", "memory_activity"}
        The population.
    mask_memory : bool
        For memory neurons, NaN at steps ``t <= memory_time`` (the memory does not exist yet)
        and everywhere for unused slots (``memory_time < 0``); ``time`` is compared as the
        position along the ``time`` dim.
    checked : bool
        The recording has just passed :func:`~hippo_rep.schema.require_recording` for
        ``variable`` (as in :func:`~hippo_rep.analysis.analyse`): not checked again.

    Returns
    -------
    xarray.DataArray, dims (env, time, unit)
        Activity units of the recording; coord ``unit`` = the original unit index (the
        recording's ``g_unit`` / ``memory`` coord, else 0..n-1); ``env`` coord kept; attr
        ``variable``.
    """
    if not checked:
        require_recording(recording, [variable])
    udim = UNIT_DIMS[variable]
    da = recording[variable].transpose("env", "time", udim)
    index = (
        np.asarray(recording[udim].values)
        if udim in recording.coords
        else np.arange(da.sizes[udim])
    )
    values = np.asarray(da.values, dtype=np.float64)
    if mask_memory and variable in MEMORY_POPULATIONS:
        mt = recording[MEMORY_TIME].transpose("env", udim).values.astype(np.int64)
        t = np.arange(values.shape[1])
        exists = (t[None, :, None] > mt[:, None, :]) & (mt[:, None, :] >= 0)
        values = np.where(exists, values, np.nan)
    coords = {"unit": (UNIT_DIM, index)}
    if "env" in recording.coords:
        coords["env"] = ("env", recording["env"].values)
    return xr.DataArray(
        values,
        dims=("env", "time", UNIT_DIM),
        coords=coords,
        name=variable,
        attrs={"variable": variable, "units": da.attrs.get("units", "activity units")},
    )


def node_index(recording: xr.Dataset) -> xr.DataArray:
    """The node occupied at every step, ``(env, time)`` int64 (negative = skip the step)."""
    node = recording["node"].transpose("env", "time")
    values = np.asarray(node.values)
    if not np.issubdtype(values.dtype, np.integer):
        if not np.all(np.isnan(values) | (values == np.round(values))):
            raise AnalysisError(f"recording coord 'node' must hold integers; got {values.dtype}")
        values = np.where(np.isnan(values), -1, values)
    values = values.astype(np.int64)
    n = recording.sizes[NODE_DIM]
    if values.size and values.max() >= n:
        raise AnalysisError(
            f"recording coord 'node' holds {int(values.max())} but there are {n} world nodes"
        )
    return xr.DataArray(values, dims=("env", "time"))


def rate_maps(
    recording: xr.Dataset,
    variable: str = G,
    smooth_sigma: float | None = None,
    resolution: float | None = None,
    activity: xr.DataArray | None = None,
    node: xr.DataArray | None = None,
) -> xr.Dataset:
    """Rate maps of one population of a recording: mean activity per world node, on a grid.

    Square worlds (integer node coordinates) get one bin per node; hexagonal worlds are
    rasterised at their true geometry (bins of ``resolution`` node spacings, default
    :data:`~hippo_rep.analysis.ratemaps.NODE_RESOLUTION`; each bin shows its nearest node),
    see :func:`~hippo_rep.analysis.rate_maps_from_nodes`. Memory neurons count only the steps
    after their memory was written (see :func:`unit_activity`).

    Parameters
    ----------
    recording : xarray.Dataset
        A recording.
    variable : {"g", "g_pi", "memory_activity"}
        The population.
    smooth_sigma : float, optional
        Occupancy-weighted, NaN-aware Gaussian smoothing of the maps, in bins
        (:func:`~hippo_rep.analysis.smooth` with ``weights=occupancy``). Default: none.
    resolution : float, optional
        Bin size in node spacings for worlds with non-integer node coordinates.
    activity, node : xarray.DataArray, optional
        ``unit_activity(recording, variable)`` and ``node_index(recording)`` when the caller
        has them already (default: read from the recording).

    Returns
    -------
    xarray.Dataset
        ``rate_map`` (env, unit, y, x): mean activity, NaN where unvisited / no node;
        ``occupancy`` (env, y, x): visits of the node each bin shows;
        ``node_rate`` (env, unit, world_node), ``node_occupancy`` (env, world_node);
        ``node_map`` (y, x): node index per bin (-1 = none). Coords ``unit`` (the original
        unit index), ``y``, ``x`` (bin centres, node spacings), ``node_x``/``node_y``.
        Attrs ``variable``, ``resolution`` (node spacings per bin), ``smooth_sigma_bins``.

    Raises
    ------
    AnalysisError
        If the recording lacks the variable or the coords ``node``, ``node_x``, ``node_y``.
    """
    require_recording(recording, [variable])
    ds = node_rate_maps(
        unit_activity(recording, variable) if activity is None else activity,
        node_index(recording) if node is None else node,
        recording["node_x"].values,
        recording["node_y"].values,
        smooth_sigma=smooth_sigma,
        resolution=resolution,
    )
    ds.attrs.update(variable=variable)
    return ds


def node_rate_maps(
    activity: xr.DataArray,
    node: xr.DataArray,
    node_x: np.ndarray,
    node_y: np.ndarray,
    smooth_sigma: float | None = None,
    resolution: float | None = None,
) -> xr.Dataset:
    """Rate maps of ``(env, time, unit)`` activity on nodes, smoothed as :func:`rate_maps`
    does (its work, for any activity: a recording's population or a session's cells).

    Parameters
    ----------
    activity : xarray.DataArray, dims (env, time, unit)
        Activity per step (NaN = missing sample for that unit).
    node : xarray.DataArray of int, dims (env, time)
        Node of every step (negative = skip the step).
    node_x, node_y : numpy.ndarray, (world_node,)
        Node coordinates (node spacings).
    smooth_sigma : float, optional
        Occupancy-weighted Gaussian smoothing in bins, ``G(activity sum) / G(occupancy)``
        (:func:`~hippo_rep.analysis.smooth` with ``weights=occupancy``). Default: none.
    resolution : float, optional
        Bin size in node spacings for non-integer node coordinates.

    Returns
    -------
    xarray.Dataset
        As :func:`rate_maps` (dims ``env``, ``unit`` first), attr ``smooth_sigma_bins``.
    """
    ds = rate_maps_from_nodes(activity, node, node_x, node_y, resolution=resolution,
                              node_dim=NODE_DIM)
    return smoothed_node_maps(ds, smooth_sigma)


def smoothed_node_maps(ds: xr.Dataset, smooth_sigma: float | None) -> xr.Dataset:
    """The maps of :func:`node_rate_maps` smoothed, from those of
    :func:`~hippo_rep.analysis.ratemaps.rate_maps_from_nodes` (its second half, shared with
    the sparse maps of a session's spike counts)."""
    sigma = (0.0 if smooth_sigma is None
             else check_positive_number(smooth_sigma, "smooth_sigma", allow_zero=True))
    if sigma > 0:
        attrs = ds["rate_map"].attrs
        ds["rate_map"] = smooth(ds["rate_map"], sigma, weights=ds["occupancy"])
        ds["rate_map"].attrs = {**attrs, "smooth_sigma_bins": sigma}
    ds = ds.transpose("env", UNIT_DIM, ...)
    ds.attrs.update(smooth_sigma_bins=sigma)
    return ds

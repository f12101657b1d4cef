"""The whole analysis of a recording or session in one dataset, dask-parallel over units.

:func:`analyse` checks its input once (:func:`validate_input`) and runs named steps, each a
function of labelled data (:func:`rate_map_step` ... :func:`attrs_step`); its options are one
:class:`~hippo_rep.analysis.settings.AnalysisSettings`. Every population's units go along one
``unit`` dim; the per-unit work is one ``xr.apply_ufunc(..., dask="parallelized")`` over
chunks of :data:`~hippo_rep.analysis.settings.DEFAULT_UNIT_CHUNK` units (the same code as the
public functions), so under a ``dask.distributed.Client`` the units spread over its workers
and the result is identical to the single-process one (without a Client: dask's synchronous
scheduler); the population analyses are one ``dask.delayed`` task per population.

Speed (``benchmarks/bench_analyse.py``): 16 environments x 278 units x 100 shuffles take
~50 s in one process; a 2-worker local cluster was 1.35x faster on a 2-CPU machine that
other jobs were also using. Workers started by :func:`~hippo_rep.cluster.dask_client`
do not inherit distributed's ``MALLOC_TRIM_THRESHOLD_=65536``, which made this workload ~3x
slower per worker.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from hippo_rep import __version__
from hippo_rep.defaults import BLAS_THREADS
from hippo_rep.schema import (
    ANALYSIS_KIND,
    G_PI,
    KIND_ATTR,
    POPULATIONS,
    G,
    place_population,
    require_recording,
)

from .arena import RECTANGLE
from .classify import BORDER_QUANTILE, GRID_QUANTILE, PLACE_QUANTILE, classify
from .methods import grid_method
from .planewaves import MAX_WAVES, WAVE_DIM
from .population import assemble, population_inputs
from .recordings import (
    NODE_DIM,
    UNIT_DIM,
    AnalysisError,
    node_index,
    node_rate_maps,
    unit_activity,
)
from .remapping import (
    PAIR_DIM,
    env_pairs,
    remapping_from_rates,
    stack_units,
)
from .sample_counts import SampleCounts
from .session_input import SessionInput, read_session, session_maps, session_variables
from .sessions import is_session, session_populations, validate_session
from .settings import DEFAULT_SCHEDULER, SESSION_OPTIONS, AnalysisSettings, analysis_settings
from .shuffle import (
    SHUFFLE_DIM,
    check_n_shuffles,
    circular_shifts,
)
from .unit_block import (
    ANALYSIS_MAX_FIELDS,
    NULL_SCORES,
    PACKED_VAR,
    UnitBlock,
    compute_units,
    progress_bar,
    unit_kernels,
)

#: Smallest place field :func:`analyse` counts, in world nodes. A TEM-t memory neuron fires at
#: the one (position, observation) conjunction it stores, so its field in a graph world is a
#: single node; with fields.MIN_FIELD_AREA (3 bins at one bin per node) no memory neuron of
#: the shipped 11x11 recording had a field, though their spatial information was near
#: log2(121) bits. Converted to bins with the map resolution.
FIELD_MIN_NODES = 1

#: Recording attrs copied to the analysis (provenance); ``seed`` and ``package_version``
#: become ``recording_seed`` and ``recording_package_version``.
PROVENANCE_ATTRS = (
    "checkpoint_sha256",
    "world",
    "n_steps",
    "model_config",
    "world_config",
    "recording_config",
    "controls_config",
)


def _active_client() -> object | None:
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def _prefixed(attrs: dict, prefix: str) -> dict:
    return {k if k.startswith(prefix) else f"{prefix}{k}": v for k, v in attrs.items()}


def analyse(recording: xr.Dataset, settings: AnalysisSettings | None = None,
            **options) -> xr.Dataset:
    """Analyse a recording or a session: maps, scores, shuffle nulls, classification,
    remapping, decoding.

    The input is checked once (:func:`validate_input`), then the steps run in order, each a
    function of labelled data: rate maps (:func:`rate_map_step`), the shuffles' shifts
    (:func:`shuffle_step`), every per-unit score with its nulls (:func:`unit_step`: grid,
    band, place-field and plane-wave kernels, per-node scores, circular-shift nulls and
    per-unit remapping, one dask task per chunk of units, with the population analyses),
    the classes (:func:`class_step`), the maps (:func:`map_step`), remapping
    (:func:`remap_step`), the population analyses (:func:`population_step`) and the attrs
    (:func:`attrs_step`). Runs with single-threaded BLAS
    (:data:`~hippo_rep.defaults.BLAS_THREADS`).

    A *session* (your own cells in a continuous arena, :mod:`~hippo_rep.analysis.sessions`)
    is validated once (not here with ``session_checked``: its reader did) and turned into
    the same inputs as a recording: its rate per tracking sample (spikes per sample / sample
    interval) as the activity, the square bin of every speed-filtered sample as its "node"
    (one bin per node), one environment. Every per-unit kernel, the shuffles (circular
    shifts of each cell's spike train, at least ``min_shift_s``) and the classification are
    then the recording's. Spikes are never made a dense (time, cell) array: their counts
    per sample are held sparsely (:class:`~hippo_rep.analysis.sample_counts.SampleCounts`)
    and every map, real or shifted, is a bincount of (shifted) sample indices, the same
    numbers as the dense products; a session of rates is held once, densely, and mapped
    ``chunk_units`` cells at a time. Shifts and scored maps go in blocks of bounded size
    (:data:`~hippo_rep.analysis.shuffle.NULL_BLOCK_ONEHOT`,
    :data:`~hippo_rep.analysis.shuffle.NULL_BLOCK_BINS`), so memory does not grow with the
    number of shuffles, and with a session's length only as its spikes and tracking do. Its
    analysis holds ``x``, ``y`` in cm, ``occupancy`` in seconds, ``rate_map`` in Hz,
    ``spacing_cm`` and ``wave_length_cm``, the coord ``cell_id`` on ``unit``, and its
    populations by their names; it has no decoding (needs environments) and no
    ``spacing_nodes``.

    Parameters
    ----------
    recording : xarray.Dataset
        A recording (``hippo_rep.recording``); needs ``node``, ``node_x``, ``node_y``, the
        variables, and ``x``/``y`` when ``decode``. Or a session.
    settings : AnalysisSettings, optional
        The options (default: :class:`AnalysisSettings`'s defaults).
    **options
        Any field of :class:`AnalysisSettings` (``shuffles``, ``seed``, ``variables``,
        ``grid_method``, ...), replacing that of ``settings``.

    Returns
    -------
    xarray.Dataset
        Dims ``env``, ``unit``, ``y``, ``x``, ``world_node``, ``quantile``, ``field``, ``wave``,
        ``env_pair``, ``population``, ``axis``, ``component``. Per (env, unit): everything of
        :func:`~hippo_rep.analysis.grid_scores` (``grid_nan_reason``), ``spacing_nodes``,
        :func:`~hippo_rep.analysis.band_scores` (``band_nan_reason``), ``n_fields`` and
        per-field ``field_*`` (env, unit, field), ``place_score``,
        :func:`~hippo_rep.analysis.border_score` (``border_score``, ``border_coverage``,
        ``border_distance``, ``border_wall``: the walls are the map's edges, a session's
        arena or the box of a world's nodes), ``spatial_info``,
        ``sparsity``, ``selectivity`` (per node), the plane-wave decomposition
        (:func:`~hippo_rep.analysis.plane_waves`: ``n_waves``, ``hexagonal``, ``square``,
        ``plane_wave_share``, ``plane_wave_explained``, ``plane_wave_reason`` and
        ``wave_length``, ``wave_angle``, ``wave_share`` (env, unit, wave), and the lattice
        outputs ``triad_phase``, ``lattice``, ``triad_phase_reason``, ``triad_closure``,
        ``hexagonal_angle_deviation``, ``wave_length_ratio``, ``nonnegative``,
        ``single_field``),
        ``gridness_60_null_q``, ``plane_wave_share_null_q``, ``spatial_info_null_q``,
        ``border_score_null_q`` (quantile, env, unit), ``*_percentile``, the classes of
        :mod:`~hippo_rep.schema` (``is_grid``, ``is_grid_threshold``,
        ``is_band``, ``is_two_wave``, ``is_square``, ``is_border``, ``is_place``);
        ``rate_map`` (env, unit, y, x),
        ``occupancy`` (env, y, x), ``node_rate`` (env, unit, world_node), ``node_occupancy``,
        ``node_map``; ``shuffle_shift`` (env, shuffle); the remapping variables
        (:func:`~hippo_rep.analysis.remapping`) and the population variables
        (:func:`~hippo_rep.analysis.population`). Attrs: every method and parameter, the
        seed, this package's version and the recording's provenance.

    Raises
    ------
    AnalysisError
        For a non-recording, a missing variable or coord, ``shuffles`` < 1, a
        ``grid_method`` that is not registered or bad ``chunk_units``; a session's options
        given with a recording or a recording's with a session; a malformed session
        (``SessionError``).
    TypeError
        For a keyword that is not a field of :class:`AnalysisSettings`.
    """
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
        data = validate_input(recording, analysis_settings(settings, **options))
        maps = rate_map_step(data)
        shifts = shuffle_step(data, maps)
        out, populations = unit_step(data, maps, shifts)
        out = class_step(out)
        out = map_step(out, maps, shifts)
        out = remap_step(out, data, maps)
        out = population_step(out, data, populations)
        return attrs_step(out, data, maps, shifts)


# --------------------------------------------------------------------------------------------
# the input, checked once
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnalysisInput:
    """A recording or session checked by :func:`validate_input`, and what the steps read
    from it.

    Attributes
    ----------
    source : xarray.Dataset
        The recording or session, as given.
    settings : AnalysisSettings
        Checked and resolved: ``variables`` a list, ``shuffles`` and ``seed`` ints,
        ``decode`` False for a session, ``scheduler`` chosen, a session's
        ``min_shift_fraction``.
    node : xarray.DataArray of int, dims (env, time)
        Node (a session: bin) of every step (negative = skip).
    activity : xarray.DataArray
        Every analysed unit's activity, dims (env, time, unit); a session of spikes: dims
        (unit,), each unit's position in ``counts``.
    counts : SampleCounts or None
        A session of spikes: spikes per tracking sample, held sparsely.
    population_activity : dict of str -> xarray.DataArray
        A recording: each population's activity, dims (env, time, unit) (empty for a session).
    session : SessionInput or None
        A session's options and labels.
    """

    source: xr.Dataset
    settings: AnalysisSettings
    node: xr.DataArray
    activity: xr.DataArray
    counts: SampleCounts | None
    population_activity: dict
    session: SessionInput | None


def validate_input(recording: object, settings: AnalysisSettings) -> AnalysisInput:
    """Check a recording or session and the settings once, and read what the steps need.

    Parameters
    ----------
    recording : xarray.Dataset
        A recording or a session.
    settings : AnalysisSettings
        The options.

    Returns
    -------
    AnalysisInput

    Raises
    ------
    AnalysisError
        As :func:`analyse`.
    """
    session = is_session(recording)
    s = (_session_settings if session else _recording_settings)(recording, settings)
    s = replace(s, shuffles=check_n_shuffles(s.shuffles, "shuffles"))
    if isinstance(s.seed, bool) or not isinstance(s.seed, (int, np.integer)) or s.seed < 0:
        raise AnalysisError(f"seed must be an int >= 0; got {s.seed!r}")
    try:
        grid_method(s.grid_method, "grid_method")
    except ValueError as err:
        raise AnalysisError(str(err)) from None
    if s.chunk_units is not None and (
        isinstance(s.chunk_units, bool) or not isinstance(s.chunk_units, (int, np.integer))
        or s.chunk_units < 1
    ):
        raise AnalysisError(f"chunk_units must be an int >= 1 or None; got {s.chunk_units!r}")
    if s.scheduler is None and _active_client() is None:
        s = replace(s, scheduler=DEFAULT_SCHEDULER)
    for q in (GRID_QUANTILE, PLACE_QUANTILE, BORDER_QUANTILE):
        if not np.isclose(np.asarray(s.quantiles, dtype=np.float64), q).any():
            raise AnalysisError(f"quantiles must include {q} (for the classification); "
                                f"got {s.quantiles!r}")
    check_n_shuffles(s.remap_shuffles, "remap_shuffles")
    steps = int(s.decode_max_steps_per_env)
    if steps < 1:
        raise AnalysisError(f"decode_max_steps_per_env must be >= 1; got {steps}")
    if session:
        sess = read_session(recording, s.variables, bin_size_cm=s.bin_size_cm,
                            smooth_cm=s.smooth_cm, min_speed_cm_s=s.min_speed_cm_s,
                            min_shift_s=s.min_shift_s)
        return AnalysisInput(source=recording, settings=replace(
                                 s, min_shift_fraction=sess.min_shift_fraction),
                             node=sess.node, activity=sess.activity, counts=sess.counts,
                             population_activity={}, session=sess)
    node = node_index(recording)
    acts = {v: unit_activity(recording, v, checked=True) for v in s.variables}
    return AnalysisInput(source=recording, settings=s, node=node, activity=stack_units(acts),
                         counts=None, population_activity=acts, session=None)


def _session_settings(session: xr.Dataset, s: AnalysisSettings) -> AnalysisSettings:
    """``s`` checked for a session: no recording options, the session valid (unless
    ``session_checked``), ``variables`` its populations, no decoding (it is one arena)."""
    for name, value in (("smooth_sigma", s.smooth_sigma), ("resolution", s.resolution)):
        if value is not None:
            raise AnalysisError(f"{name} is for recordings; a session takes "
                                + ("smooth_cm" if name == "smooth_sigma" else "bin_size_cm"))
    if not s.session_checked:
        validate_session(session)
    held = session_populations(session)
    variables = held if s.variables is None else list(dict.fromkeys(s.variables))
    missing = [v for v in variables if v not in held]
    if missing:
        raise AnalysisError(f"the session has no population {missing[0]!r} (populations: "
                            f"{', '.join(held)})")
    return replace(s, variables=variables, decode=False)


def _recording_settings(recording: object, s: AnalysisSettings) -> AnalysisSettings:
    """``s`` checked for a recording: no session options, ``variables`` the populations
    present by default, each required (with ``x``/``y`` when decoding)."""
    given = [k for k in SESSION_OPTIONS if getattr(s, k) is not None]
    given += ["session_checked"] if s.session_checked else []
    if given:
        raise AnalysisError(f"{given[0]} is for sessions; a recording takes smooth_sigma "
                            "and resolution")
    variables = s.variables
    if variables is None:
        if not isinstance(recording, xr.Dataset):
            require_recording(recording)
        variables = [v for v in POPULATIONS if v in recording.data_vars]
        if not variables:
            require_recording(recording, [G])
    variables = list(dict.fromkeys(variables))
    require_recording(recording, variables, need_xy=s.decode)
    return replace(s, variables=variables)


# --------------------------------------------------------------------------------------------
# the steps
# --------------------------------------------------------------------------------------------


def rate_map_step(data: AnalysisInput) -> dict[str, xr.Dataset]:
    """Rate maps of every population (one sparse product each; cheap, eager).

    Returns
    -------
    dict of str -> xarray.Dataset
        Per population, as :func:`~hippo_rep.analysis.rate_maps` (a recording) or
        :func:`~hippo_rep.analysis.session_rate_maps` (a session): ``rate_map`` (env, unit,
        y, x), ``occupancy``, ``node_rate`` (env, unit, world_node), ``node_occupancy``,
        ``node_map`` (y, x).
    """
    s, src, sess = data.settings, data.source, data.session
    if sess is None:
        maps = {}
        for v in s.variables:
            maps[v] = node_rate_maps(data.population_activity[v], data.node,
                                     src["node_x"].values, src["node_y"].values,
                                     smooth_sigma=s.smooth_sigma, resolution=s.resolution)
            maps[v].attrs.update(variable=v)
        return maps
    return session_maps(src, sess, s.variables, s.chunk_units)


def shuffle_step(data: AnalysisInput, maps: dict[str, xr.Dataset]) -> xr.DataArray:
    """The circular shifts of the nulls, dims (env, shuffle), in time steps (the first stream
    of ``SeedSequence(seed).spawn(2)``)."""
    s = data.settings
    n_env, n_time = ((data.activity.sizes["env"], data.activity.sizes["time"])
                     if data.counts is None else (1, data.counts.n_time))
    shift_ss = np.random.SeedSequence(int(s.seed)).spawn(2)[0]
    return xr.DataArray(
        circular_shifts(n_time, n_env, s.shuffles, np.random.default_rng(shift_ss),
                        s.min_shift_fraction),
        dims=("env", SHUFFLE_DIM),
        coords={"env": maps[s.variables[0]]["env"]},
    )


def unit_step(data: AnalysisInput, maps: dict[str, xr.Dataset], shifts: xr.DataArray
              ) -> tuple[xr.Dataset, dict]:
    """Every per-unit output, computed together: one task per chunk of units (lazy when
    chunked) runs the grid, band, place-field, place-score and plane-wave kernels, the
    per-node scores, the circular-shift nulls and the per-unit remapping correlations
    (:class:`~hippo_rep.analysis.unit_block.UnitBlock`); the population analyses are computed
    alongside.

    Returns
    -------
    (xarray.Dataset, dict)
        The per-unit outputs, dims (env, unit, ...) (``remap_corr`` (unit, env_pair), the
        null quantiles (quantile, env, unit)), with coords ``variable``, ``unit_index``,
        ``env`` (and the recording's per-env labels), ``quantile``, ``wave``, the env pairs;
        a recording's ``spacing_nodes`` (a session's lengths in cm come in
        :func:`attrs_step`); attrs the kernels' settings (prefixed). And the population
        results by population (empty without decoding).
    """
    s, sess = data.settings, data.session
    first = maps[s.variables[0]]
    res = float(first.attrs["resolution"])
    field_min_area = (max(1, int(round(FIELD_MIN_NODES / res**2))) if sess is None
                      else sess.field_min_area)  # FIELD_MIN_NODES: ~1 / resolution² bins each
    rate_map = stack_units({v: m["rate_map"] for v, m in maps.items()})
    node_rate = stack_units({v: m["node_rate"] for v, m in maps.items()})
    lazy = s.chunk_units is not None
    spec = UnitBlock(
        kernels=unit_kernels(s.grid_method, field_min_area,
                             RECTANGLE if sess is None else sess.arena_shape),
        grid_method=s.grid_method,
        quantiles=tuple(float(q) for q in s.quantiles),
        node_map=first["node_map"].values,
        n_nodes=first.sizes[NODE_DIM],
        sigma=float(first.attrs["smooth_sigma_bins"]),
        pairs=env_pairs(rate_map["env"])[1],
        keep_null=bool(s.keep_null),
        counts=data.counts,
    )
    # bare arrays in: chunking would also chunk the unit coords, which apply_ufunc would then
    # compute (with dask's default scheduler) to check that the inputs agree
    bare = [da.drop_vars(["variable", "unit_index"], errors="ignore")
            for da in (rate_map, node_rate, data.activity)]
    inputs = [*bare, first["node_occupancy"], data.node, shifts]
    if lazy:  # chunked along unit only
        inputs[:3] = [b.chunk({UNIT_DIM: int(s.chunk_units)}) for b in bare]
    n_env = shifts.sizes["env"]
    sizes = {"env": n_env, "field": ANALYSIS_MAX_FIELDS, "quantile": len(spec.quantiles),
             PAIR_DIM: len(spec.pairs), SHUFFLE_DIM: s.shuffles, WAVE_DIM: MAX_WAVES}
    pop_inputs = ({v: population_inputs(data.source, v, data.node, data.population_activity[v],
                                        maps[v]["node_rate"], checked=True)
                   for v in s.variables} if s.decode else {})
    total = n_env * data.activity.sizes[UNIT_DIM] * s.shuffles * len(NULL_SCORES)
    with progress_bar(s.progress, total) as bar:
        out, pop_tasks = compute_units(spec, inputs, sizes, lazy, s.scheduler,
                                                   pop_inputs,
                                                   int(s.decode_max_steps_per_env))
        bar.update(bar.total - bar.n)  # worker processes do not tick this process' bar
    out = spec.unpack(out[PACKED_VAR], sizes)
    out = out.assign_coords(variable=rate_map["variable"], unit_index=rate_map["unit_index"],
                            env=rate_map["env"], quantile=np.asarray(spec.quantiles))
    out = out.assign_coords(env_pairs(rate_map["env"])[0].coords)
    out = out.assign_coords({WAVE_DIM: np.arange(MAX_WAVES)})
    # the recording's labels of its environments (e.g. ``control`` of a controls recording)
    out = out.assign_coords({k: c for k, c in data.source.coords.items()
                             if c.dims == ("env",) and k != "env"})
    if sess is None:  # a session's lengths in cm: session_variables
        out["spacing_nodes"] = out["spacing"] * res
        out["spacing_nodes"].attrs = {"long_name": "grid spacing in node spacings (spacing x "
                                      "resolution)", "units": "node spacings"}
    for k in ("grid", "band"):
        out[f"{k}_nan_reason"].attrs["long_name"] = f"why the {k} scores are NaN ('' = defined)"
    out = out.transpose("env", UNIT_DIM, ...)
    out["remap_corr"] = out["remap_corr"].transpose(UNIT_DIM, PAIR_DIM)
    for k in NULL_SCORES:
        out[f"{k}_null_q"] = out[f"{k}_null_q"].transpose("quantile", ...)
    for kernel, prefix, _ in spec.kernels:
        out.attrs.update(_prefixed(kernel.attrs, prefix))
    return out, pop_tasks


def class_step(out: xr.Dataset) -> xr.Dataset:
    """``out`` with the classes of :func:`classify` and their rules in the attrs
    (``classify_*``)."""
    cls = classify(out)
    out.update(cls)
    out.attrs.update(_prefixed(cls.attrs, "classify_"))
    for k in cls.data_vars:
        out.attrs[f"classify_rule_{k}"] = cls[k].attrs.get("long_name", "")
    return out


def map_step(out: xr.Dataset, maps: dict[str, xr.Dataset], shifts: xr.DataArray
             ) -> xr.Dataset:
    """``out`` with the maps: ``rate_map`` (env, unit, y, x), ``occupancy`` (env, y, x),
    ``node_rate`` (env, unit, world_node), ``node_occupancy``, ``node_map`` (y, x) and the
    shuffles' ``shuffle_shift`` (env, shuffle)."""
    first = next(iter(maps.values()))
    out["rate_map"] = stack_units({v: m["rate_map"] for v, m in maps.items()})
    out["occupancy"] = first["occupancy"]
    out["node_rate"] = stack_units({v: m["node_rate"] for v, m in maps.items()})
    out["node_occupancy"] = first["node_occupancy"]
    out["node_map"] = first["node_map"]
    out["shuffle_shift"] = shifts
    return out


def remap_step(out: xr.Dataset, data: AnalysisInput, maps: dict[str, xr.Dataset]
               ) -> xr.Dataset:
    """``out`` with ``remap_corr_mean`` (unit) and the remapping between environments
    (:func:`~hippo_rep.analysis.remapping.remapping_from_rates`, permutations from the
    second stream of ``SeedSequence(seed).spawn(2)``; its attrs prefixed ``remap_``)."""
    s = data.settings
    tem_ss = np.random.SeedSequence(int(s.seed)).spawn(2)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out["remap_corr_mean"] = out["remap_corr"].mean(PAIR_DIM, skipna=True)
        remap = remapping_from_rates(
            {v: m["node_rate"] for v, m in maps.items()},
            s.variables,
            grid_variable=next((v for v in (G, G_PI) if v in s.variables), None),
            memory_variable=place_population(s.variables),  # memory neurons, or TEM's p
            n_shuffles=s.remap_shuffles,
            rng=np.random.default_rng(tem_ss),
            per_unit=False,
            rate_maps={v: m["rate_map"] for v, m in maps.items()},
            pair_shuffles=s.remap_shuffles,
        )
    out["remap_corr_mean"].attrs = {"long_name": "remap_corr averaged over environment pairs",
                                    "units": "1"}
    out = out.merge(remap, compat="override", join="outer")
    out.attrs.update(_prefixed(remap.attrs, "remap_"))
    return out


def population_step(out: xr.Dataset, data: AnalysisInput, populations: dict) -> xr.Dataset:
    """``out`` with the population analyses (:func:`~hippo_rep.analysis.population`:
    decoding and PCA, dim ``population``) and their attrs, when decoding."""
    if not data.settings.decode:
        return out
    pop = assemble(populations)
    pop.attrs["decode_max_steps_per_env"] = int(data.settings.decode_max_steps_per_env)
    out = out.merge(pop, compat="override", join="outer")
    out.attrs.update(pop.attrs)
    return out


def attrs_step(out: xr.Dataset, data: AnalysisInput, maps: dict[str, xr.Dataset],
               shifts: xr.DataArray) -> xr.Dataset:
    """``out`` with its attrs: every method and parameter, the seed, this package's version
    and the input's provenance, before the steps' own (kernels, ``classify_*``, ``remap_*``,
    decoding); a session's differ, and its analysis gains its lengths in cm and cell ids
    (:func:`~hippo_rep.analysis.session_input.session_variables`)."""
    s, src = data.settings, data.source
    first = maps[s.variables[0]]
    sigma, res = float(first.attrs["smooth_sigma_bins"]), float(first.attrs["resolution"])
    out["shuffle_shift"].attrs = {"long_name": "circular shift of the activity per shuffle",
                                  "units": "steps"}
    out["rate_map"].attrs = {"long_name": "mean activity per bin (NaN = unvisited / no node);"
                             " memory neurons only after their memory was written",
                             "units": "activity units", "smooth_sigma_bins": sigma}
    out["variable"].attrs = {"long_name": "population (recording variable) of each unit"}
    out["unit_index"].attrs = {"long_name": "index of the unit within its population"}
    attrs: dict[str, object] = {
        KIND_ATTR: ANALYSIS_KIND,
        "package_version": __version__,
        "seed": int(s.seed),
        "seed_use": "numpy SeedSequence(seed).spawn(2): shifts, TEM-test permutations",
        "variables": ",".join(s.variables),
        "map_convention": "rate maps indexed [row=y, col=x], row 0 at the smallest y; "
                          "lengths in bins (resolution node spacings per bin); angles in "
                          "degrees from +x towards +y; unvisited bins NaN",
        "map_resolution": res,
        "smooth_sigma_bins": sigma,
        "memory_masking": "memory neurons count only steps after memory_time (NaN before)",
        "per_node_scores": "spatial_info, sparsity, selectivity use node_rate weighted by "
                           "node_occupancy (textbook Skaggs form, negative log terms kept; "
                           "NaN for units with negative activity)",
        "n_shuffles": s.shuffles,
        "min_shift_fraction": float(s.min_shift_fraction),
        "min_shift_steps": int(shifts.values.min()),
        "null_method": "circular time shift of each environment's activity against its "
                       "trajectory (same shift for all units of an environment); scores "
                       "gridness_60, plane_wave_share, spatial_info and border_score",
        "dask_chunk_units": -1 if s.chunk_units is None else int(s.chunk_units),
    }
    attrs.update(out.attrs)  # the steps': kernels, classify_*, remap_*, decoding
    for k in PROVENANCE_ATTRS:
        if k in src.attrs:
            attrs[k] = src.attrs[k]
    for k in ("seed", "package_version"):
        if k in src.attrs:
            attrs[f"recording_{k}"] = src.attrs[k]
    out.attrs = attrs
    if data.session is not None:
        out = session_variables(out, data.session, first)
    return out


__all__ = [
    "FIELD_MIN_NODES", "PROVENANCE_ATTRS", "AnalysisInput", "analyse", "attrs_step",
    "class_step", "map_step", "population_step", "rate_map_step", "remap_step",
    "shuffle_step", "unit_step", "validate_input",
]

"""The options of :func:`~hippo_rep.analysis.analyse`, each with its documented default
(:class:`AnalysisSettings`), and :func:`analysis_settings`, which applies keyword options to
them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from hippo_rep.defaults import N_SHUFFLES

from .methods import DEFAULT_GRID_METHOD
from .population import DECODE_MAX_STEPS_PER_ENV
from .remapping import TEM_SHUFFLES
from .shuffle import NULL_QUANTILES, SHUFFLE_MIN_SHIFT_FRACTION

#: Units per dask chunk when the analysis runs on dask (a distributed Client is active or
#: ``chunk_units`` is given): small enough to balance a few workers, large enough that each
#: task scores a few thousand shuffled maps.
DEFAULT_UNIT_CHUNK = 16

#: Seed of :func:`~hippo_rep.analysis.analyse` by default (:attr:`AnalysisSettings.seed`).
DEFAULT_SEED = 0

#: Dask scheduler of the analysis when no ``dask.distributed.Client`` is active: one process,
#: one thread (the reference for "identical to single-process").
DEFAULT_SCHEDULER = "synchronous"

#: Grid-score family of the analysis (:data:`~hippo_rep.analysis.methods.GRID_METHODS`): the
#: one ML papers report (Banino et al. 2018, Nature; Sorscher et al. 2019, NeurIPS).
GRID_METHOD = DEFAULT_GRID_METHOD


@dataclass(frozen=True)
class AnalysisSettings:
    """Every option of :func:`~hippo_rep.analysis.analyse`, each with its default (pass one,
    or any field as a keyword of :func:`~hippo_rep.analysis.analyse`).

    Attributes
    ----------
    shuffles : int
        Circular-shift shuffles per environment (>= 1) for the gridness-60, plane-wave share,
        spatial-information and border-score nulls (default :data:`~hippo_rep.defaults.N_SHUFFLES`).
    seed : int
        Seed of all randomness (shifts, the TEM test's permutations), via
        ``numpy.random.SeedSequence(seed).spawn(2)`` (default :data:`DEFAULT_SEED`).
    variables : sequence of str, optional
        Populations to analyse (default: those of ``("g", "g_pi", "memory_activity")``
        present, or every population of a session; a named one that is missing is an error).
    grid_method : str
        Grid-score family, one of :data:`~hippo_rep.analysis.methods.GRID_METHODS` (default
        :data:`GRID_METHOD`; never compare scores across families).
    smooth_sigma : float, optional
        Occupancy-weighted smoothing of the rate maps in bins (default none), applied to the
        real and shuffled maps alike. Recordings only (sessions: ``smooth_cm``).
    resolution : float, optional
        Raster bin size in node spacings for non-square worlds (default
        :data:`~hippo_rep.analysis.ratemaps.NODE_RESOLUTION`). Recordings only (sessions:
        ``bin_size_cm``).
    quantiles : sequence of float
        Null quantiles to report; must include 0.95 and 0.99 for :func:`classify` (default
        :data:`~hippo_rep.analysis.shuffle.NULL_QUANTILES`).
    min_shift_fraction : float
        Smallest circular shift as a fraction of the walk (recordings; a session's is
        ``min_shift_s`` over its duration; default
        :data:`~hippo_rep.analysis.shuffle.SHUFFLE_MIN_SHIFT_FRACTION`).
    remap_shuffles : int
        Permutations in the TEM remapping test and in the cell-pair structure's nulls
        (default :data:`~hippo_rep.analysis.remapping.TEM_SHUFFLES`).
    decode : bool
        Run the population analyses (decoding and PCA; never for a session).
    decode_max_steps_per_env : int
        Time steps per environment used for decoding, evenly spaced (default
        :data:`~hippo_rep.analysis.population.DECODE_MAX_STEPS_PER_ENV`).
    keep_null : bool
        Keep the full null distributions (``*_null``, dims env, unit, shuffle).
    chunk_units : int or None
        Units per dask chunk (default :data:`DEFAULT_UNIT_CHUNK`). The result depends on
        the chunking only through floating-point round-off (~1e-12); for a given
        ``chunk_units`` it is identical whatever the scheduler. None: plain numpy, no dask.
    scheduler : str, optional
        Dask scheduler of the compute: default the active ``dask.distributed.Client`` if
        there is one (units spread over its workers), else :data:`DEFAULT_SCHEDULER`
        ("synchronous": one process, one thread); "threads" uses a thread pool.
    bin_size_cm, smooth_cm, min_speed_cm_s, min_shift_s : float, optional
        Sessions only: bin side (cm), Gaussian σ of BNT-style smoothing (cm, 0 = none),
        speed filter (cm/s) and smallest circular shift of the spike trains (s); defaults
        :data:`~hippo_rep.defaults.SESSION_BIN_SIZE_CM`, ``SESSION_SMOOTH_CM``,
        ``SESSION_MIN_SPEED_CM_S``, ``SESSION_MIN_SHIFT_S``.
    progress : bool
        Show a tqdm bar of the shuffled maps scored (the bulk of the time) on stderr (or a
        notebook widget). It advances as the chunks of units that run in this process are
        scored (the synchronous and threads schedulers, a Client of threads); with worker
        processes it fills when they are done. Off by default: library calls are quiet. The
        result is the same either way.
    session_checked : bool
        The session has just passed :func:`~hippo_rep.analysis.validate_session` (as what
        :func:`~hippo_rep.analysis.open_session` and :func:`~hippo_rep.analysis.read_nwb`
        return has, with errors naming the file): it is not checked again. Sessions only.
    """

    shuffles: int = N_SHUFFLES
    seed: int = DEFAULT_SEED
    variables: Sequence[str] | None = None
    grid_method: str = GRID_METHOD
    smooth_sigma: float | None = None
    resolution: float | None = None
    quantiles: Sequence[float] = NULL_QUANTILES
    min_shift_fraction: float = SHUFFLE_MIN_SHIFT_FRACTION
    remap_shuffles: int = TEM_SHUFFLES
    decode: bool = True
    decode_max_steps_per_env: int = DECODE_MAX_STEPS_PER_ENV
    keep_null: bool = False
    chunk_units: int | None = DEFAULT_UNIT_CHUNK
    scheduler: str | None = None
    bin_size_cm: float | None = None
    smooth_cm: float | None = None
    min_speed_cm_s: float | None = None
    min_shift_s: float | None = None
    progress: bool = False
    session_checked: bool = False


#: The options of :class:`AnalysisSettings` that only a session takes.
SESSION_OPTIONS = ("bin_size_cm", "smooth_cm", "min_speed_cm_s", "min_shift_s")


def analysis_settings(settings: AnalysisSettings | None = None, **options) -> AnalysisSettings:
    """``settings`` (default :class:`AnalysisSettings`) with the fields in ``options`` replaced.

    Raises
    ------
    TypeError
        For ``settings`` that is not an :class:`AnalysisSettings`, or an unknown option.
    """
    if settings is None:
        settings = AnalysisSettings()
    elif not isinstance(settings, AnalysisSettings):
        raise TypeError(f"settings must be an AnalysisSettings; got {type(settings).__name__}")
    known = {f.name for f in fields(AnalysisSettings)}
    unknown = [k for k in options if k not in known]
    if unknown:
        raise TypeError(f"analyse() got an unexpected keyword argument {unknown[0]!r}")
    return replace(settings, **options)

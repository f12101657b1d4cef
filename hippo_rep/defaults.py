"""Defaults shared by several modules and the ``hippo-rep`` command, each defined once.

Function signatures and the CLI's argparse defaults read these names (as opexebo keeps its
defaults in one module), so a default is changed here and nowhere else. Defaults that only
one module uses stay beside that module's code. No imports: the lowest layer.
"""

#: Sensory categories of the worlds' one-hot observations (TEM's 45; Whittington et al.
#: 2020, Cell, STAR Methods).
N_OBS = 45

#: Circular-shift shuffles per environment of ``hippo-rep analyse`` and
#: :func:`~hippo_rep.analysis.analyse` (at least 100 is the usual practice).
N_SHUFFLES = 100

#: Shuffles of the quick analyses of ``hippo-rep demo`` and ``hippo-rep sweep``.
QUICK_SHUFFLES = 20

#: Place-field threshold, as a fraction of the map's peak (0.2 is common in the literature);
#: also the level at which the plotted maps outline their fields.
PLACE_THRESHOLD = 0.2

#: The field's rule-of-thumb gridness-60 threshold (Whittington, Warren & Behrens 2022,
#: Fig. 9, quote 0.3-0.5): reported beside the shuffle rule, not a grid classification.
GRID_THRESHOLD = 0.3

#: BLAS threads inside the analysis (scores, shuffles, decoding): its matrices are small,
#: where several BLAS threads are slower than one; parallelism comes from dask, over units.
BLAS_THREADS = 1

#: Held-out environments of ``hippo-rep evaluate``, the demo and the sweep.
EVAL_ENVS = 32

#: Seed of the held-out environments (a stream no training batch uses; see
#: :func:`hippo_rep.random_streams.eval_rng`); the same for every run, so runs compare on
#: one set.
EVAL_SEED = 0

#: Environments of ``hippo-rep record`` (one walk each).
RECORD_ENVS = 16

#: Steps per forward chunk of ``hippo-rep record``, and the zarr chunk length along time.
RECORD_CHUNK = 512

#: Steps per recorded walk of the demo and the sweep (enough visits per node for rate maps
#: on 8x8-11x11 worlds).
RECORD_STEPS = 1000

#: Environments recorded by the demo (>= 2 for remapping).
DEMO_RECORD_ENVS = 8

#: zlib/gzip level of compressed netCDF variables, recordings' activity and analyses' numeric
#: variables alike (1: most of the gain, little of the time).
NETCDF_COMPLEVEL = 1

#: Environments the stage runner (``hippo-rep demo``, ``hippo-rep sweep``) records: few, so
#: that ``recording.nc`` stays small.
STAGE_RECORD_ENVS = 4

#: Seeds per grid combination of ``hippo-rep sweep``.
SWEEP_SEEDS = 1

#: Bin side of session rate maps (your own recorded cells, ``hippo_rep.analysis.sessions``),
#: cm: the common choice for ~1 m boxes (a 100 cm box gives 40 x 40 bins).
SESSION_BIN_SIZE_CM = 2.5

#: Gaussian smoothing sigma of session rate maps, cm: BNT's default of 2 bins at
#: :data:`SESSION_BIN_SIZE_CM` (spike and time maps smoothed alike, then divided).
SESSION_SMOOTH_CM = 5.0

#: Session tracking samples slower than this are dropped from maps and occupancy, cm/s
#: (resting and grooming; 2.5 cm/s as in Sargolini et al. 2006).
SESSION_MIN_SPEED_CM_S = 2.5

#: Smallest circular shift of a session's spike trains in the shuffle nulls, s (Langston et
#: al. 2010 use 20 s); the largest is the session's duration minus it.
SESSION_MIN_SHIFT_S = 20.0

#: Seconds per step of a model recording's walk written to NWB when no step duration is
#: given (``hippo-rep export-nwb``; the walk has no clock of its own).
EXPORT_STEP_DURATION_S = 1.0

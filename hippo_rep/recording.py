"""Record a trained model walking fresh environments into an xarray dataset (netCDF or zarr).

The dataset follows :mod:`hippo_rep.schema`. Three ways to get one:

- :func:`record_checkpoint` returns it in memory;
- :func:`record_to_file` writes ``.nc`` (built in memory, then written to a temporary file
  and renamed: an interrupted write leaves no file and never a damaged one) or streams
  ``.zarr`` chunk by chunk of time, so the walk's activity never needs to fit in memory;
- :class:`Recorder` gives the pieces (one dataset per chunk of time) to write elsewhere.

:func:`open_recording` opens either format lazily (dask-backed for zarr), validates it and
trims it to the steps it holds.

**The zarr guarantee.** A zarr recording is created in a hidden temporary folder beside the
output and renamed onto it once its first chunk is complete; each later chunk is appended
(the arrays are resized and new chunk files written; of the old ones only the small
per-memory coordinates are rewritten, each file atomically), then the consolidated
metadata and the ``n_steps`` attr are rewritten, each as one atomic file replacement. Readers
go through the consolidated metadata, so at every instant the store holds a valid recording
whose first ``n_steps`` steps are final (memories written after them are marked unused by
:func:`open_recording`): a run killed at any point leaves either no output
(killed during the first chunk: at most a hidden ``.NAME.*.partial`` folder) or a valid,
shorter recording whose ``n_steps`` attr says how many steps it holds (the
``recording_config`` attr keeps the number asked for). :func:`open_recording` trims a store
caught between a chunk's metadata and its ``n_steps`` update to ``n_steps``.

With ``overwrite``, an existing output is kept until the new recording is complete: the
new store is streamed into the hidden ``.NAME.*.partial`` folder and swapped in at the end
(the old one is set aside as ``.NAME.*.old`` for the instant of the swap), so a killed
overwrite leaves the old recording. Temporary siblings left by killed writes are removed (an
``.old`` one put back when the output is missing) the next time that output is written.

Every chunk of every array is written, even one that holds only the fill value, and the
store says so (attr :data:`~hippo_rep.datasets.CHUNKS_COMPLETE_ATTR`); :func:`open_recording`
then refuses a store with a missing or empty chunk file, naming the variable, instead of
reading zeros.

Zarr stores are written in zarr format 3 (zarr-python ≥ 3), chunked along ``time`` by the
recording chunk and along ``g_unit`` / ``memory`` in blocks of :data:`G_UNIT_CHUNK` /
:data:`MEMORY_CHUNK` units; :func:`open_recording` by default hands dask chunks that hold
whole walks of a block of units, the cut that ``xr.apply_ufunc(..., dask="parallelized")``
over ``time`` wants.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

# torch (checkpoints, models) and zarr are imported where used: reading a recording must not
# import torch (tests/test_recording.py checks), and netCDF files need no zarr.
from hippo_rep import __version__
from hippo_rep import schema as S
from hippo_rep.datasets import (
    CHUNKS_COMPLETE_ATTR,
    RecordingError,
    check_chunks,
    is_zarr_store,
    open_raw,
)
from hippo_rep.defaults import NETCDF_COMPLEVEL
from hippo_rep.defaults import RECORD_CHUNK as DEFAULT_CHUNK
from hippo_rep.defaults import RECORD_ENVS as DEFAULT_ENVS
from hippo_rep.fileio import atomic_write, clean_stale, remove_path, swap_in
from hippo_rep.random_streams import RECORD_STREAM, record_rng
from hippo_rep.worlds import random_observations, sample_episodes, step_types

#: Positional-encoding units per zarr chunk / per dask chunk of an opened recording.
G_UNIT_CHUNK = 8
#: Memory neurons per zarr chunk / per dask chunk of an opened recording.
MEMORY_CHUNK = 32
#: ``open_recording(chunks=UNIT_CHUNKS)``: dask chunks of whole walks × blocks of units.
UNIT_CHUNKS = "unit"
#: Output suffixes and their formats.
FORMATS = {".nc": "netcdf", ".zarr": "zarr"}
#: zstd level of zarr activity variables (1: as small as the default level, faster).
ZSTD_LEVEL = 1
#: netCDF chunk length along time (activity variables; chunked by unit like zarr).
NETCDF_TIME_CHUNK = 4096

# Zarr warns at every consolidation of a format-3 store that consolidated metadata is not yet
# in the v3 spec; the writer consolidates after every chunk, in a background thread where
# ``warnings.catch_warnings`` is not safe, so this one message is filtered for good.
warnings.filterwarnings("ignore", message="Consolidated metadata is currently not part")


@dataclass(frozen=True)
class RecordingConfig:
    """What was recorded; stored as JSON in the ``recording_config`` attr."""

    checkpoint: str
    world: str
    n_envs: int
    n_steps: int  # steps asked for (the ``n_steps`` attr says how many are held)
    seed: int
    same_observations: bool
    chunk: int
    n_obs: int
    keep_heading: float
    stay_prob: float
    training_worlds: tuple[str, ...]
    training_step: int
    random_stream: int


@dataclass
class Chunk:
    """Model outputs for steps [start, stop) of every walk (numpy, on the CPU)."""

    start: int
    stop: int
    g: np.ndarray  # (B, L, n_g) float32
    g_pi: np.ndarray  # (B, L, n_g) float32
    activity: np.ndarray | None  # (B, L, M) float32, M = max memories per env after the
    # chunk; None for TEM (no memory slots)
    prediction: np.ndarray  # (B, L) int64
    memory_time: np.ndarray | None  # (B, M) int64, -1 unused; None for TEM
    memory_observation: np.ndarray | None  # (B, M) int64, -1 unused; None for TEM
    fam_activity: np.ndarray | None = None  # (B, L, F) float32 (model.memory = "fam")
    p: np.ndarray | None = None  # (B, L, n_p) float32 (model.kind = "tem")


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RecordingError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


class Recorder:
    """A checkpoint and the fresh environments it will walk.

    Loading the checkpoint and sampling the walks happen here (all of them: nodes, actions
    and observations are small); the activity is computed chunk by chunk in
    :meth:`chunks`.

    Parameters
    ----------
    checkpoint : path
        A checkpoint written by ``hippo-rep train``.
    n_envs : int
        Environments, one walk each. All share the world's structure; each draws new random
        observations unless ``same_observations``.
    n_steps : int, optional
        Steps per walk (default: the training walk length).
    world : str, optional
        World spec (``square:11``, ``hex:6``, …); default: the (first) training world. Its
        action set must be the checkpoint's.
    seed : int
        Seed of the environments (observations and walks), drawn from a stream that no
        training or evaluation environment uses.
    same_observations : bool
        Every environment gets the same observation per node (one environment revisited,
        for stability analyses); otherwise each draws its own (for remapping).
    chunk : int
        Steps per forward chunk (and per zarr chunk along time). Results depend on it only
        through float rounding.
    device : str
        Torch device of the model.
    threads : int, optional
        Torch threads while the model runs (restored afterwards); default: the checkpoint's
        ``train.threads`` (0 there: torch's default). The model's matrices are small, so
        one thread is fastest, by far on a busy machine.

    Raises
    ------
    CheckpointError
        The checkpoint is missing, corrupt or not a checkpoint (naming the file).
    WorldError
        The world spec cannot be read.
    RecordingError
        Bad sizes, or a world whose action set is not the checkpoint's (naming both).
    """

    def __init__(self, checkpoint, n_envs: int = DEFAULT_ENVS, n_steps: int | None = None,
                 world: str | None = None, seed: int = 0, same_observations: bool = False,
                 chunk: int = DEFAULT_CHUNK, device: str = "cpu",
                 threads: int | None = None):
        from hippo_rep.models.registry import model_spec  # torch
        from hippo_rep.training.checkpoint import (
            check_actions,
            file_sha256,
            load_checkpoint,
        )

        n_envs = _positive("n_envs", n_envs)
        chunk = _positive("chunk", chunk)
        if n_steps is not None:
            n_steps = _positive("n_steps", n_steps)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise RecordingError(f"seed must be a non-negative integer; got {seed!r}")
        self.model, self.config, payload = load_checkpoint(checkpoint, device)
        cfg = self.config
        # TEM: g (raw, every module) and p (its conjunctive units) instead of memory slots.
        self.tem = model_spec(cfg.model.kind).recorded_units == "p"
        w = check_actions(cfg.world.worlds[0] if world is None else world,
                          payload["n_actions"], f"checkpoint {str(checkpoint)!r}", RecordingError)
        n_steps = cfg.world.walk_steps if n_steps is None else n_steps
        self.threads = cfg.train.threads if threads is None else int(threads)
        self.world, self.chunk, self.device = w, chunk, device
        self.n_envs, self.n_steps = n_envs, n_steps
        n_obs = payload["n_obs"]
        rng = record_rng(int(seed))
        maps = None
        if same_observations:
            maps = [random_observations(w, n_obs, rng)] * n_envs
        ep = sample_episodes(w, n_envs, n_steps, n_obs, rng, cfg.world.keep_heading,
                             cfg.world.stay_prob, observation_maps=maps)
        self.nodes, self.actions, self.observations = ep.nodes, ep.actions, ep.observations
        self.step_type = np.stack([step_types(ep.nodes[b], ep.actions[b])["code"]
                                   for b in range(n_envs)]).astype(np.int8)
        self.recording_config = RecordingConfig(
            checkpoint=str(checkpoint), world=w.spec, n_envs=n_envs, n_steps=n_steps,
            seed=int(seed), same_observations=bool(same_observations), chunk=chunk,
            n_obs=n_obs, keep_heading=cfg.world.keep_heading, stay_prob=cfg.world.stay_prob,
            training_worlds=tuple(cfg.world.worlds), training_step=int(payload["step"]),
            random_stream=RECORD_STREAM)
        world_cfg = dataclasses.replace(cfg.world, worlds=(w.spec,), walk_steps=n_steps)
        self.attrs = {
            S.KIND_ATTR: S.KIND,
            S.SCHEMA_VERSION_ATTR: S.SCHEMA_VERSION,
            S.MODEL_CONFIG: json.dumps(dataclasses.asdict(cfg.model), sort_keys=True),
            S.WORLD_CONFIG: json.dumps(dataclasses.asdict(world_cfg), sort_keys=True),
            S.RECORDING_CONFIG: json.dumps(dataclasses.asdict(self.recording_config),
                                           sort_keys=True),
            S.WORLD: w.spec,
            S.CHECKPOINT_SHA256: file_sha256(checkpoint),
            S.PACKAGE_VERSION: __version__,
            S.SEED: int(seed),
            S.N_STEPS: 0,
            S.SAME_OBSERVATIONS: int(bool(same_observations)),
        }
        if getattr(self.model, "recurrent", False):
            from hippo_rep.models.transitions import transition_diagnostics

            self.attrs[S.TRANSITIONS] = json.dumps(
                transition_diagnostics(self.model, w.kind, seed=int(seed)), sort_keys=True)

    # ------------------------------------------------------------------ running
    def _model_chunks(self, return_activity: bool = False):
        from hippo_rep.training.evaluate import model_chunks  # torch

        return model_chunks(self.model, self.observations, self.actions, self.chunk,
                            self.device, return_activity, self.threads)

    def forward_only(self) -> None:
        """Run the bare forward pass over the walks (no activity kept); for benchmarks."""
        for _ in self._model_chunks():
            pass

    def chunks(self) -> Iterator[Chunk]:
        """Run the model chunk after chunk (carrying its memory) and yield the activity."""
        for s, e, out, state in self._model_chunks(return_activity=True):
            # Read-out cells (model.cells = "readout") are the positional population.
            g, g_pi = ((out.g, out.g_pi) if getattr(out, "cells", None) is None
                       else (out.cells, out.cells_pi))
            common = dict(start=s, stop=e, g=g.float().cpu().numpy(),
                          g_pi=g_pi.float().cpu().numpy(),
                          prediction=out.logits_pi.argmax(-1).cpu().numpy().astype(np.int64))
            if self.tem:  # TEM: p, no memory slots
                yield Chunk(**common, activity=None, memory_time=None, memory_observation=None,
                            p=out.p.float().cpu().numpy())
                continue
            m = int(state.count.max())
            yield Chunk(**common, activity=out.activity[:, :, :m].float().cpu().numpy(),
                        memory_time=state.T[:, :m].cpu().numpy().astype(np.int64),
                        memory_observation=state.X[:, :m].cpu().numpy().astype(np.int64),
                        fam_activity=(None if out.fam_activity is None
                                      else out.fam_activity.float().cpu().numpy()))

    # ----------------------------------------------------------------- datasets
    def dataset(self, c: Chunk) -> xr.Dataset:
        """The recording of the chunk's steps [start, stop) (attr ``n_steps`` = ``stop``); with
        ``fam_activity`` also the FAM slots' activity (dim ``fam_slot``); with ``p`` TEM's
        grounded locations (dim ``p_unit``) and no memory slots."""
        B, start, stop, activity, p, prediction = (self.n_envs, c.start, c.stop, c.activity,
                                                   c.p, c.prediction)
        memory_time, fam_activity = c.memory_time, c.fam_activity
        sl = slice(start, stop)
        mt = np.zeros((B, 0), np.int64) if memory_time is None else np.asarray(memory_time)
        used = mt >= 0
        memory_node = np.where(used, np.take_along_axis(self.nodes, np.where(used, mt, 0), 1),
                               S.UNUSED)
        if activity is None:
            activity = np.zeros((B, stop - start, 0), np.float32)
        xy = self.world.coords[self.nodes[:, sl]]
        observation = self.observations[:, sl]
        values = {
            S.G: c.g, S.G_PI: c.g_pi, S.MEMORY_ACTIVITY: activity, S.ENV: np.arange(B),
            S.TIME: np.arange(start, stop), S.G_UNIT: np.arange(c.g.shape[-1]),
            S.MEMORY: np.arange(activity.shape[-1]),
            S.WORLD_NODE: np.arange(self.world.n_nodes),
            S.NODE: self.nodes[:, sl], S.X: xy[..., 0], S.Y: xy[..., 1],
            S.ACTION: self.actions[:, sl], S.OBSERVATION: observation,
            S.PREDICTION: prediction, S.CORRECT: prediction == observation,
            S.STEP_TYPE: self.step_type[:, sl],
            S.MEMORY_NODE: memory_node, S.MEMORY_TIME: mt,
            S.MEMORY_OBSERVATION: c.memory_observation,
            S.NODE_X: self.world.coords[:, 0], S.NODE_Y: self.world.coords[:, 1],
        }
        variables = {name: xr.Variable(spec.dims, np.asarray(values[name], dtype=spec.dtype),
                                       S.var_attrs(name))
                     for name, spec in S.SPECS.items()
                     if p is None or name not in S.MEMORY_SLOT_NAMES}
        data = {n: v for n, v in variables.items() if n in S.DATA_VARS}
        coords = {n: v for n, v in variables.items() if n in S.COORDS}
        if p is not None:
            self._add_tem(data, coords, p)
        if getattr(self.config.model, "cells", "g") == "readout":
            act = self.config.model.cells_activation
            for name, of in ((S.G, "g_t"), (S.G_PI, "g_pi")):
                data[name].attrs["long_name"] = (
                    f"read-out cells r = {'relu' if act == 'relu' else 'identity'}(A {of} + b) "
                    "(model.cells = \"readout\"; g_unit indexes cells)")
        if fam_activity is not None:
            data[S.FAM_ACTIVITY] = _optional(S.FAM_ACTIVITY, fam_activity)
            coords[S.FAM_SLOT] = xr.Variable(
                (S.FAM_SLOT,), np.arange(fam_activity.shape[-1]),
                {"units": S.DIMENSIONLESS, "long_name": "FAM feedback slot index"})
        return xr.Dataset(data, coords=coords, attrs={**self.attrs, S.N_STEPS: int(stop)})

    def _add_tem(self, data: dict, coords: dict, p) -> None:
        """TEM's ``p`` and the module coords of g and p units (see :mod:`hippo_rep.schema`)."""
        long_names = {S.G: "TEM's inferred abstract location g_inf (raw, in [-1, 1]; not "
                           "TEM-t's unit RMS), every module",
                      S.G_PI: "TEM's generative abstract location g_gen (path integration; "
                              "raw, in [-1, 1])"}
        for name, text in long_names.items():
            data[name].attrs["long_name"] = text
        data[S.P] = _optional(S.P, p)
        unit_coords = {k: v.cpu().numpy() for k, v in self.model.unit_coords().items()}
        coords[S.MODULE] = _optional(S.MODULE, unit_coords[S.MODULE])
        coords[S.P_UNIT] = _optional(S.P_UNIT, np.arange(np.shape(p)[-1]))
        for name in (S.P_MODULE, S.P_G_UNIT, S.P_SENSORY):
            coords[name] = _optional(name, unit_coords[name])

    def pieces(self) -> Iterator[xr.Dataset]:
        """One dataset per chunk of time (memory dim = memories so far)."""
        for c in self.chunks():
            yield self.dataset(c)

    def record(self) -> xr.Dataset:
        """The whole recording, in memory."""
        chunks = list(self.chunks())
        last = chunks[-1]

        def cat(name):
            return np.concatenate([getattr(c, name) for c in chunks], 1)

        whole = Chunk(0, self.n_steps, cat("g"), cat("g_pi"), None, cat("prediction"),
                      last.memory_time, last.memory_observation)
        if self.tem:  # TEM: p, no memory slots
            return self.dataset(dataclasses.replace(whole, p=cat("p")))
        if last.fam_activity is not None:
            whole.fam_activity = cat("fam_activity")
        whole.activity = np.zeros((self.n_envs, self.n_steps, last.activity.shape[-1]),
                                  np.float32)
        for c in chunks:  # memory grows chunk by chunk; free each chunk once copied
            whole.activity[:, c.start:c.stop, :c.activity.shape[2]] = c.activity
            c.activity = None
        return self.dataset(whole)


def _optional(name: str, values) -> xr.Variable:
    """A variable of :data:`hippo_rep.schema.OPTIONAL_VARS` with its dims, dtype and attrs."""
    spec = S.OPTIONAL_VARS[name]
    return xr.Variable(spec.dims, np.asarray(values, dtype=spec.dtype),
                       {"units": spec.units, "long_name": spec.long_name})


# ----------------------------------------------------------------------- public API
def record_checkpoint(checkpoint, n_envs: int = DEFAULT_ENVS, n_steps: int | None = None,
                      world: str | None = None, seed: int = 0,
                      same_observations: bool = False, chunk: int = DEFAULT_CHUNK,
                      device: str = "cpu", threads: int | None = None) -> xr.Dataset:
    """Record ``checkpoint`` walking fresh environments; the dataset, in memory.

    See :class:`Recorder` for the parameters and errors and :mod:`hippo_rep.schema` for the
    dataset. The same arguments give the same values as :func:`record_to_file`.
    """
    return Recorder(checkpoint, n_envs, n_steps, world, seed, same_observations, chunk,
                    device, threads).record()


def check_output(out, overwrite: bool = False) -> str:
    """Check an output path before any work; returns its format (``netcdf`` or ``zarr``).

    Raises
    ------
    RecordingError
        Not ``.nc`` / ``.zarr``, or (with ``overwrite``) an existing path of the wrong kind:
        a folder that is not a zarr store is never removed.
    FileExistsError
        ``out`` exists and ``overwrite`` is False.
    """
    out = Path(out)
    fmt = FORMATS.get(out.suffix.lower())
    if fmt is None:
        raise RecordingError(f"output {str(out)!r} must end in .nc (netCDF) or .zarr (zarr)")
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise FileExistsError(f"output {str(out)!r} exists; pass --overwrite (overwrite="
                                  "True) to replace it, or choose another path")
        if out.is_dir() and not is_zarr_store(out):
            raise RecordingError(f"output {str(out)!r} is a folder that is not a zarr store; "
                                 "refusing to replace it")
        if fmt == "netcdf" and out.is_dir():
            raise RecordingError(f"output {str(out)!r} is a folder; refusing to replace it "
                                 "with a netCDF file")
    return fmt


def record_to_file(checkpoint, out, *, overwrite: bool = False, n_envs: int = DEFAULT_ENVS,
                   n_steps: int | None = None, world: str | None = None, seed: int = 0,
                   same_observations: bool = False, chunk: int = DEFAULT_CHUNK,
                   device: str = "cpu", threads: int | None = None) -> Path:
    """Record into ``out``: ``.nc`` (in memory, then an atomic write) or ``.zarr`` (streamed).

    An existing ``out`` is refused unless ``overwrite``; it is replaced only once the new
    recording is valid (netCDF: when complete; zarr: after its first chunk), so a failure
    before then leaves it untouched. See the module docstring for the zarr guarantee.

    Returns the output path. Errors: see :func:`check_output` and :class:`Recorder`.
    """
    out = Path(out)
    fmt = check_output(out, overwrite)
    rec = Recorder(checkpoint, n_envs, n_steps, world, seed, same_observations, chunk, device,
                   threads)
    if fmt == "netcdf":
        write_netcdf(rec.record(), out, overwrite=overwrite)
    else:
        writer = ZarrWriter(out, chunk=rec.chunk, overwrite=overwrite)
        try:
            stream(rec.pieces(), writer)
        except BaseException:
            writer.abandon()
            raise
        writer.finish()
    return out


def stream(pieces, writer: ZarrWriter) -> None:
    """Append ``pieces`` to ``writer`` in a background thread, one behind the producer.

    Writing chunk k (compression, files) overlaps computing chunk k + 1, and at most two
    pieces are alive at once. Appends stay sequential and in order; if the producer fails
    (or is interrupted), the append in flight is finished before the error propagates, so
    the store then holds every chunk produced before the failure. A writer error stops the
    producer at its next chunk and is raised.
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hippo_rep-zarr") as pool:
        pending = None
        for piece in pieces:
            if pending is not None:
                pending.result()
            pending = pool.submit(writer.append, piece)
        if pending is not None:
            pending.result()


def write_netcdf(ds: xr.Dataset, out, overwrite: bool = False) -> Path:
    """Write a recording to netCDF atomically (temporary file, then rename); needs no torch,
    so analysis code can save a (sub)recording with it too."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"output {str(out)!r} exists; pass overwrite=True to replace it")
    engine = _netcdf_engine()
    encoding = {}
    for name in ds.variables:
        enc = {}
        if ds[name].dtype.kind == "f":
            enc["_FillValue"] = None
        if name in S.DATA_VARS:
            enc.update(zlib=True, complevel=NETCDF_COMPLEVEL,
                       chunksizes=_chunk_shape(ds, name, NETCDF_TIME_CHUNK, True))
        if enc:
            encoding[name] = enc
    if engine == "h5netcdf":  # h5netcdf spells compression differently
        for enc in encoding.values():
            if enc.pop("zlib", False):
                enc["compression"] = "gzip"
                enc["compression_opts"] = enc.pop("complevel")
    atomic_write(out, lambda tmp: ds.to_netcdf(tmp, engine=engine, encoding=encoding))
    return out


def _netcdf_engine() -> str:
    try:
        import netCDF4  # noqa: F401

        return "netcdf4"
    except ImportError:
        return "h5netcdf"


def _chunk_shape(ds: xr.Dataset, name: str, time_chunk: int, clip: bool) -> tuple[int, ...]:
    """On-disk chunks: whole ``env`` / ``world_node``, ``time_chunk`` steps, unit blocks."""
    block = {S.TIME: time_chunk, S.G_UNIT: G_UNIT_CHUNK, S.MEMORY: MEMORY_CHUNK,
             S.P_UNIT: MEMORY_CHUNK}
    shape = []
    for dim in ds[name].dims:
        n = ds.sizes[dim]
        c = block.get(dim, n)
        shape.append(max(1, min(c, n)) if clip or dim not in (S.TIME, S.MEMORY) else c)
    return tuple(shape)


class ZarrWriter:
    """Stream a recording into a zarr store, one chunk of time (one dataset piece) at a time.

    The first :meth:`append` writes the store into a hidden temporary folder beside ``path``
    and renames it onto ``path`` (replacing an existing store only with ``overwrite``); later
    appends grow it. Pieces must be consecutive in time and, except the last, hold ``chunk``
    steps each (they do when they come from :meth:`Recorder.pieces`). See the module
    docstring for what a killed run leaves.
    """

    def __init__(self, path, chunk: int = DEFAULT_CHUNK, overwrite: bool = False):
        import zarr

        if int(zarr.__version__.split(".")[0]) < 3:
            raise RecordingError(f"streaming to zarr needs zarr-python ≥ 3 (found "
                                 f"{zarr.__version__}); write .nc instead or upgrade zarr")
        self.path = Path(path)
        self.chunk = _positive("chunk", chunk)
        self.overwrite = overwrite
        self.n_steps = 0
        self.created = False
        clean_stale(self.path)
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"output {str(self.path)!r} exists; pass --overwrite "
                                  "(overwrite=True) to replace it")
        # Replacing an output: stream into the temporary store, swap in :meth:`finish`.
        self.deferred = self.path.exists() or self.path.is_symlink()
        self.target = self.path  # where appends go (the temporary store while deferred)

    def append(self, piece: xr.Dataset) -> None:
        start = int(piece[S.TIME].values[0])
        if start != self.n_steps:
            raise RecordingError(f"{str(self.path)!r}: piece starts at step {start}, "
                                 f"expected {self.n_steps}")
        if self.n_steps % self.chunk:
            raise RecordingError(f"{str(self.path)!r}: cannot append after a short chunk "
                                 f"(holds {self.n_steps} steps, chunk {self.chunk})")
        import zarr

        with zarr.config.set({"array.write_empty_chunks": True}):
            if not self.created:
                self._create(piece)
            else:
                stop = self._write(piece)
                self._consolidate()
                self._set_n_steps(stop)
        self.n_steps = int(piece.attrs[S.N_STEPS])

    def finish(self) -> None:
        """Swap a complete replacement store onto the output (a no-op for a new output,
        which is in place since the first chunk)."""
        if not self.deferred or not self.created:
            return
        self._swap(self.target)
        self.deferred, self.target = False, self.path

    def abandon(self) -> None:
        """Drop an unfinished replacement store (the old output stays as it was)."""
        if self.deferred and self.created:
            remove_path(self.target)
            self.created = False

    def _swap(self, tmp: Path) -> None:
        """Put the complete store ``tmp`` at the output, setting an old one aside first."""
        if (self.path.exists() or self.path.is_symlink()) and not self.overwrite:
            remove_path(tmp)
            raise FileExistsError(f"output {str(self.path)!r} appeared while recording; not "
                                  "replacing it")
        swap_in(tmp, self.path)

    def _create(self, piece: xr.Dataset) -> None:
        from zarr.codecs import ZstdCodec

        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.path.parent, prefix=f".{self.path.name}.",
                                    suffix=".partial"))
        piece = piece.assign_attrs({CHUNKS_COMPLETE_ATTR: 1})
        try:
            encoding = {}
            for name in piece.variables:
                enc = {"chunks": _chunk_shape(piece, name, self.chunk, False)}
                if piece[name].dtype.kind == "f":
                    # zeros, not NaN, where memory_activity grows: a memory that did not
                    # exist yet has activity 0 (and no value is masked on reading).
                    enc.update(_FillValue=None, fill_value=0.0)
                if name in S.DATA_VARS:
                    enc["compressors"] = (ZstdCodec(level=ZSTD_LEVEL),)
                encoding[name] = enc
            piece.to_zarr(tmp, mode="w", zarr_format=3, consolidated=True, encoding=encoding,
                          write_empty_chunks=True)
        except BaseException:
            remove_path(tmp)
            raise
        if self.deferred:
            self.target = tmp
        else:
            self._swap(tmp)
        self.created = True

    def _write(self, piece: xr.Dataset) -> int:
        """Grow the arrays and write the piece; visible to readers only after the commit."""
        import zarr

        stop = int(piece.attrs[S.N_STEPS])
        n_memory = piece.sizes.get(S.MEMORY, 0)
        group = zarr.open_group(self.target, mode="r+", use_consolidated=False)
        for name, var in piece.variables.items():
            dims = var.dims
            if S.TIME not in dims and S.MEMORY not in dims:
                continue  # static: env, g_unit, world_node, node_x, node_y
            arr = group[name]
            shape = list(arr.shape)
            region = []
            for i, dim in enumerate(dims):
                if dim == S.TIME:
                    if shape[i] != self.n_steps:
                        raise RecordingError(f"{str(self.path)!r}: {name} holds {shape[i]} "
                                             f"steps, expected {self.n_steps}")
                    shape[i] = stop
                    region.append(slice(self.n_steps, stop))
                else:
                    if dim == S.MEMORY:
                        if n_memory < shape[i]:
                            raise RecordingError(f"{str(self.path)!r}: memories cannot "
                                                 "disappear")
                        shape[i] = n_memory
                    region.append(slice(None))
            if tuple(shape) != tuple(arr.shape):
                old = tuple(arr.shape)
                arr.resize(tuple(shape))
                self._fill_new_blocks(arr, dims, old)
            arr[tuple(region)] = np.asarray(var.values, dtype=arr.dtype)
        return stop

    def _fill_new_blocks(self, arr, dims, old: tuple) -> None:
        """Write the fill value into the chunks that growing ``memory`` added over the steps
        already stored (so every chunk exists; see the module docstring)."""
        if S.TIME not in dims or S.MEMORY not in dims:
            return
        t, m = dims.index(S.TIME), dims.index(S.MEMORY)
        block = arr.chunks[m]
        first = -(-old[m] // block) * block  # memory slots from here have no chunk yet
        if first >= arr.shape[m] or self.n_steps == 0:
            return
        for start in range(0, self.n_steps, arr.chunks[t]):
            region = [slice(None)] * len(dims)
            region[t] = slice(start, min(start + arr.chunks[t], self.n_steps))
            region[m] = slice(first, arr.shape[m])
            shape = [len(range(*r.indices(n))) for r, n in zip(region, arr.shape, strict=True)]
            arr[tuple(region)] = np.full(shape, arr.fill_value, dtype=arr.dtype)

    def _consolidate(self) -> None:
        import zarr

        zarr.consolidate_metadata(str(self.target))

    def _set_n_steps(self, stop: int) -> None:
        import zarr

        group = zarr.open_group(self.target, mode="r+", use_consolidated=True)
        group.attrs[S.N_STEPS] = int(stop)  # rewrites the root metadata in one file
        if group.metadata.consolidated_metadata is None:  # pragma: no cover (zarr change)
            zarr.consolidate_metadata(str(self.target))


# ----------------------------------------------------------------------- reading
def open_recording(path, chunks=UNIT_CHUNKS) -> xr.Dataset:
    """Open a recording (``.nc`` or ``.zarr``) lazily, validate it, trim it to ``n_steps``.

    Parameters
    ----------
    path : path
        A netCDF file or zarr store written by :func:`record_to_file`.
    chunks : "unit", dict, {} or None
        ``"unit"`` (default): zarr stores come dask-backed in chunks of whole walks
        (``env``, ``time``) × blocks of :data:`G_UNIT_CHUNK` / :data:`MEMORY_CHUNK` units;
        netCDF files open lazily without dask. Anything else is passed to xarray (``{}``:
        the on-disk chunks; ``None``: no dask).

    Returns
    -------
    xarray.Dataset
        Holding exactly the ``n_steps`` steps the file says are final (memories written
        later are dropped).

    Raises
    ------
    FileNotFoundError, RecordingError
        A missing path, or a file that is neither netCDF nor zarr.
    SchemaError
        Not a recording, or missing variables/coords/dims/attrs (all named, with the file).
    """
    path = Path(path)
    unit = isinstance(chunks, str) and chunks == UNIT_CHUNKS
    is_zarr = path.is_dir()
    if is_zarr and is_zarr_store(path):
        check_chunks(path)
    return checked_recording(open_raw(path, ({} if is_zarr else None) if unit else chunks),
                             path, chunks)


def checked_recording(ds: xr.Dataset, path, chunks=UNIT_CHUNKS) -> xr.Dataset:
    """A recording opened by :func:`~hippo_rep.datasets.open_raw` (with the chunks that
    :func:`open_recording` gives it), validated, trimmed to ``n_steps`` and, for zarr stores
    with ``chunks="unit"``, rechunked: the second half of :func:`open_recording`, for a
    caller that has opened the file already (to look at its kind). Closes ``ds`` on error.

    Raises
    ------
    SchemaError
        Not a recording, or missing variables/coords/dims/attrs (all named, with the file).
    """
    path = Path(path)
    unit = isinstance(chunks, str) and chunks == UNIT_CHUNKS
    is_zarr = path.is_dir()
    ds.attrs.pop(CHUNKS_COMPLETE_ATTR, None)
    try:
        S.validate(ds, path)
        n, held = int(ds.attrs[S.N_STEPS]), ds.sizes[S.TIME]
        if n > held:
            raise S.SchemaError(f"{str(path)!r}: attr {S.N_STEPS} = {n} but only {held} "
                                "steps are stored; the file is damaged")
    except BaseException:
        ds.close()
        raise
    # Always: an append caught before its commit may have filled slots of the committed
    # memory range (environments with fewer memories) with memories written later.
    raw = ds
    ds = trim(ds, n)
    if unit and is_zarr:
        chunks = {S.ENV: -1, S.TIME: -1, S.G_UNIT: G_UNIT_CHUNK, S.MEMORY: MEMORY_CHUNK,
                  S.P_UNIT: MEMORY_CHUNK, S.WORLD_NODE: -1}
        ds = ds.chunk({k: v for k, v in chunks.items() if k in ds.dims})
    ds.set_close(raw.close)  # ``with open_recording(...)`` / ``.close()`` close the file
    return ds


def trim(ds: xr.Dataset, n_steps: int) -> xr.Dataset:
    """The first ``n_steps`` steps of a recording, without memories written later (their
    ``memory_*`` coordinates become −1 and memory neurons no environment had are dropped)."""
    ds = ds.isel({S.TIME: slice(0, n_steps)})
    if S.MEMORY_TIME not in ds.variables:  # TEM: no memory slots
        ds.attrs[S.N_STEPS] = int(n_steps)
        return ds
    mt = np.asarray(ds[S.MEMORY_TIME].values)
    used = (mt >= 0) & (mt < n_steps)
    n_memory = int(used.sum(1).max()) if used.size else 0
    ds = ds.isel({S.MEMORY: slice(0, n_memory)})
    used = used[:, :n_memory]
    new = {}
    for name in S.MEMORY_COORDS:
        v = ds[name]
        new[name] = (v.dims, np.where(used, np.asarray(v.values), S.UNUSED).astype(v.dtype),
                     v.attrs)
    ds = ds.assign_coords(new)
    ds.attrs[S.N_STEPS] = int(n_steps)
    return ds

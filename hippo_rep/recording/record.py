"""Recording a trained model walking fresh environments into an xarray dataset.

The dataset follows :mod:`hippo_rep.schema`. :class:`Recorder` loads a checkpoint, samples the
walks and runs the model over them chunk by chunk of time, giving one dataset per chunk
(:meth:`Recorder.pieces`) or the whole recording (:meth:`Recorder.record`);
:func:`record_checkpoint` returns the recording in memory and :func:`record_to_file` writes it
to ``.nc`` or streams it to ``.zarr`` (:mod:`hippo_rep.recording.store`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

# torch (checkpoints, models) is imported where used: reading a recording must not import
# torch (tests/test_recording.py checks).
from hippo_rep import __version__
from hippo_rep import schema as S
from hippo_rep.config import check_walk_sizes
from hippo_rep.datasets import RecordingError
from hippo_rep.defaults import RECORD_CHUNK as DEFAULT_CHUNK
from hippo_rep.defaults import RECORD_ENVS as DEFAULT_ENVS
from hippo_rep.random_streams import RECORD_STREAM, record_rng
from hippo_rep.recording.store import ZarrWriter, check_output, stream, write_netcdf
from hippo_rep.worlds import random_observations, sample_episodes, step_types


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

        sizes = check_walk_sizes(RecordingError, n_envs=n_envs, n_steps=n_steps, chunk=chunk,
                                 seed=seed)
        n_envs, n_steps, chunk, seed = (sizes[k] for k in ("n_envs", "n_steps", "chunk", "seed"))
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


def record_to_file(checkpoint, out, *, overwrite: bool = False, n_envs: int = DEFAULT_ENVS,
                   n_steps: int | None = None, world: str | None = None, seed: int = 0,
                   same_observations: bool = False, chunk: int = DEFAULT_CHUNK,
                   device: str = "cpu", threads: int | None = None) -> Path:
    """Record into ``out``: ``.nc`` (in memory, then an atomic write) or ``.zarr`` (streamed).

    An existing ``out`` is refused unless ``overwrite``; it is replaced only once the new
    recording is valid (netCDF: when complete; zarr: after its first chunk), so a failure
    before then leaves it untouched. See :mod:`hippo_rep.recording.store` for the zarr
    guarantee.

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

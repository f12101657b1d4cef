"""Long-delay loop closure: how long does each TEM-t memory variant remember a place?

A walk tours a small *home* region until every home node is seen, makes an excursion of D
steps in the part of the world far from home, walks the shortest path back and tours home
again. Scored are the first return visits to each home node: the observation there was seen
only during the first tour, D + a few steps earlier, so predicting it needs a memory that
survived the excursion (path integration brings g back to the home positions; memory must
still hold them). "full" memory keeps every memory; "window" forgets after its window;
"fam" may keep a compressed trace in its feedback slots; "hebbian" keeps a decaying sum.

The walks are :func:`hippo_rep.worlds.delay_walk`. The result is an :class:`xarray.Dataset`
with dims ``(variant, delay)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import xarray as xr

from hippo_rep import __version__
from hippo_rep.config import check_walk_sizes
from hippo_rep.defaults import N_OBS
from hippo_rep.fileio import atomic_write, write_json
from hippo_rep.models.memory import load_across_memory
from hippo_rep.models.registry import build_model, model_spec
from hippo_rep.tasks import DELAY_DEFAULT_DELAYS as DEFAULT_DELAYS
from hippo_rep.tasks import DELAY_DEFAULT_ENVS as DEFAULT_ENVS
from hippo_rep.tasks import DELAY_DEFAULT_VARIANTS as DEFAULT_VARIANTS
from hippo_rep.tasks import DELAY_DEFAULT_WORLD as DEFAULT_WORLD
from hippo_rep.tasks.results import DelayTaskError, read_delay  # noqa: F401 (torch-free)
from hippo_rep.training.checkpoint import check_actions, file_sha256, load_checkpoint
from hippo_rep.training.evaluate import predictions
from hippo_rep.worlds import HOME_SIZE, delay_walk, random_observations

#: Chunk length when running the model (memory carried across chunks).
RUN_CHUNK = 256


def as_variant(model, memory: str, **overrides):
    """The same trained weights under another memory variant (a new model; weights shared
    where they exist, new FAM slot weights from the model's seed-free default init)."""
    if memory not in DEFAULT_VARIANTS:
        raise DelayTaskError(f"unknown memory variant {memory!r}; known: "
                             f"{', '.join(DEFAULT_VARIANTS)}")
    new = build_model(replace(model.config, memory=memory, **overrides), model.n_actions,
                      model.n_obs, seed=0)
    problems = load_across_memory(new, model.state_dict())
    if problems:
        raise DelayTaskError(f"weights do not fit the {memory} variant: {', '.join(problems)}")
    return new.to(next(model.parameters()).device).eval()


def pad_delay_walks(walks: Sequence[dict], env_obs: Sequence[np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Delay walks of unequal length as one batch.

    Parameters
    ----------
    walks : sequence of :func:`~hippo_rep.worlds.delay_walk` dicts
    env_obs : sequence of (n_nodes,) int arrays, the observation at each node of walk i's world

    Returns
    -------
    obs, actions : (B, T) int64, T the longest walk; after its end a walk stays at its last
        node (action 0, same observation)
    scored : (B, T) bool, the first return visits home (never in the padding)
    """
    T = max(len(x["nodes"]) for x in walks)
    B = len(walks)
    obs, act = np.zeros((B, T), np.int64), np.zeros((B, T), np.int64)
    scored = np.zeros((B, T), bool)
    for i, (x, m) in enumerate(zip(walks, env_obs, strict=True)):
        n = len(x["nodes"])
        obs[i, :n], obs[i, n:] = m[x["nodes"]], m[x["nodes"][-1]]
        act[i, :n] = x["actions"]
        scored[i, :n] = x["scored"]
    return obs, act, scored


@torch.no_grad()
def delay_accuracy(model, delays: Sequence[int] = DEFAULT_DELAYS, n_envs: int = DEFAULT_ENVS,
                   world: str = DEFAULT_WORLD, n_obs: int = N_OBS,
                   seed: int = 0) -> xr.Dataset:
    """Accuracy on first return visits to home against excursion length, for one model.

    The walks depend only on ``seed`` (not on the model), so variants are compared on the same
    walks. Returns a Dataset with dim ``delay``: ``accuracy`` (fraction of scored steps
    predicted), ``n_scored``, ``walk_steps`` (mean walk length), ``chance`` (1 / n_obs) and
    ``node_agent`` (1: every scored node was visited before).
    """
    w = check_actions(world, model.n_actions, "the model", DelayTaskError)
    if n_obs != model.n_obs:
        raise DelayTaskError(f"n_obs {n_obs} differs from the model's {model.n_obs}")
    check_walk_sizes(DelayTaskError, n_envs=n_envs, seed=seed)
    acc, n_sc, length = [], [], []
    for d in delays:
        rng = np.random.default_rng([seed, int(d)])
        walks = [delay_walk(w, int(d), rng) for _ in range(n_envs)]
        obs, act, scored = pad_delay_walks(
            walks, [random_observations(w, n_obs, rng) for _ in walks])
        correct = predictions(model, obs, act, chunk=RUN_CHUNK) == obs
        acc.append(float(correct[scored].mean()))
        n_sc.append(int(scored.sum()))
        length.append(float(np.mean([len(x["nodes"]) for x in walks])))
    coords = {"delay": ("delay", np.asarray(delays, dtype=np.int64), {"units": "steps"})}
    return xr.Dataset(
        {
            "accuracy": ("delay", acc, {"long_name": "accuracy on first return visits home",
                                        "units": "1"}),
            "n_scored": ("delay", n_sc, {"long_name": "scored steps", "units": "1"}),
            "walk_steps": ("delay", length, {"long_name": "mean walk length",
                                             "units": "steps"}),
            "chance": ((), 1.0 / n_obs, {"long_name": "chance accuracy", "units": "1"}),
            "node_agent": ((), 1.0, {"long_name": "node agent (the limit)", "units": "1"}),
        },
        coords=coords,
    )


def delay_experiment(checkpoint, variants: Sequence[str] = DEFAULT_VARIANTS,
                     delays: Sequence[int] = DEFAULT_DELAYS, n_envs: int = DEFAULT_ENVS,
                     world: str = DEFAULT_WORLD, seed: int = 0,
                     memory_block: int | None = None,
                     memory_blocks: int | None = None) -> xr.Dataset:
    """:func:`delay_accuracy` for one checkpoint's weights under each memory variant.

    Returns a Dataset with dims ``(variant, delay)``; attrs carry the checkpoint's SHA-256,
    its config, the window size and the task parameters.
    """
    model, cfg, _ = load_checkpoint(checkpoint)
    if not model_spec(cfg.model.kind).delay_task:
        raise DelayTaskError(f"checkpoint {str(checkpoint)!r} has model.kind = "
                             f"{cfg.model.kind!r}; the delay task compares TEM-t's memory "
                             "variants")
    over = {k: v for k, v in (("memory_block", memory_block),
                              ("memory_blocks", memory_blocks)) if v is not None}
    results = []
    for v in variants:
        m = model if v == cfg.model.memory and not over else as_variant(model, v, **over)
        results.append(delay_accuracy(m, delays, n_envs, world, cfg.world.n_obs, seed))
    per_delay = ["accuracy", "n_scored", "walk_steps"]
    ds = xr.concat([r[per_delay] for r in results],
                   dim=xr.DataArray(list(variants), dims="variant", name="variant"))
    ds["chance"], ds["node_agent"] = results[0]["chance"], results[0]["node_agent"]
    mc = replace(cfg.model, **over)
    ds.attrs = {
        "checkpoint_sha256": file_sha256(checkpoint),
        "config": cfg.to_json(),
        "hippo_rep_version": __version__,
        "seed": seed,
        "world": world,
        "home_size": HOME_SIZE,
        "window_steps": f"{mc.memory_blocks * mc.memory_block}-"
                        f"{(mc.memory_blocks + 1) * mc.memory_block}",
        "memory_block": mc.memory_block,
        "memory_blocks": mc.memory_blocks,
        "fam_slots": mc.fam_slots,
    }
    return ds


def write_delay(ds: xr.Dataset, path, overwrite: bool = False) -> Path:
    """Write a delay result as netCDF (``.nc``) or JSON (``.json``), atomically."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise DelayTaskError(f"{str(path)!r} exists; pass --overwrite to replace it")
    if path.suffix == ".json":
        write_json(path, ds.to_dict(data="list"), indent=1)
    elif path.suffix == ".nc":
        atomic_write(path, lambda tmp: ds.to_netcdf(tmp))
    else:
        raise DelayTaskError(f"output {str(path)!r} must end in .nc or .json")
    return path

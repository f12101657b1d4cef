"""Long-delay loop closure: how long does each TEM-t memory variant remember a place?

A walk tours a small *home* region until every home node is seen, makes an excursion of D
steps in the part of the world far from home, walks the shortest path back and tours home
again. Scored are the first return visits to each home node: the observation there was seen
only during the first tour, D + a few steps earlier, so predicting it needs a memory that
survived the excursion (path integration brings g back to the home positions; memory must
still hold them). "full" memory keeps every memory; "window" forgets after its window;
"fam" may keep a compressed trace in its feedback slots; "hebbian" keeps a decaying sum.

The result is an :class:`xarray.Dataset` with dims ``(variant, delay)``.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import xarray as xr

from hippo_rep.fileio import atomic_write
from hippo_rep.training.evaluate import predictions
from hippo_rep.worlds import Episodes, World, parse_world, random_observations, random_walk

#: World of the task: larger than the 8x8 training worlds so the excursion can stay away.
DEFAULT_WORLD = "square:10"
#: Side of the square home region, in nodes (a corner block of HOME_SIZE x HOME_SIZE).
HOME_SIZE = 3
#: Minimum length of the first home tour, in steps (it also runs until all home is seen).
HOME_STEPS = 32
#: Steps of the second home tour after the return (each home node is scored once).
RETURN_STEPS = 24
#: Excursion nodes are at least this many edges from the home region.
AWAY_DISTANCE = 2
#: Excursion lengths D, in steps.
DEFAULT_DELAYS = (0, 16, 32, 64, 128, 256, 512)
#: Walks per delay.
DEFAULT_ENVS = 32
#: Memory variants evaluated from one checkpoint's weights.
DEFAULT_VARIANTS = ("full", "window", "fam", "hebbian")
#: Observation categories of the task's environments (as the training worlds).
DEFAULT_N_OBS = 45
#: Chunk length when running the model (memory carried across chunks).
RUN_CHUNK = 256
#: Walk phases, stored per step.
PHASES = ("tour", "excursion", "return_path", "home_again")


class DelayTaskError(ValueError):
    """A world too small for the task, an unknown variant or a bad argument."""


def _bfs(world: World, sources: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Distance (edges) from the nearest source and the node it came from, per node."""
    dist = np.full(world.n_nodes, -1, dtype=np.int64)
    parent = np.full(world.n_nodes, -1, dtype=np.int64)
    queue = deque(int(s) for s in sources)
    dist[list(sources)] = 0
    while queue:
        u = queue.popleft()
        for v in world.transitions[u, 1:]:
            if v >= 0 and dist[v] < 0:
                dist[v], parent[v] = dist[u] + 1, u
                queue.append(int(v))
    return dist, parent


def _action(world: World, u: int, v: int) -> int:
    return int(np.flatnonzero(world.transitions[u] == v)[0])


def _path_to(world: World, start: int, targets: np.ndarray) -> list[int]:
    """Shortest path (nodes after ``start``) from ``start`` to the nearest of ``targets``."""
    if targets[start]:
        return []
    dist, parent = _bfs(world, [start])
    reach = np.flatnonzero(targets & (dist >= 0))
    end = int(reach[np.argmin(dist[reach])])
    path = [end]
    while parent[path[-1]] != start:
        path.append(int(parent[path[-1]]))
    return path[::-1]


def home_region(world: World, size: int = HOME_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """Home (the ``size`` x ``size`` corner at the smallest x, y) and away masks over nodes."""
    x, y = world.coords[:, 0], world.coords[:, 1]
    xs, ys = np.unique(np.round(x, 6)), np.unique(np.round(y, 6))
    if len(xs) < size + 2 * AWAY_DISTANCE + 1 or len(ys) < size + 2 * AWAY_DISTANCE + 1:
        raise DelayTaskError(f"world {world.spec!r} is too small for a {size}x{size} home and "
                             f"an excursion {AWAY_DISTANCE} edges away")
    home = (np.round(x, 6) <= xs[size - 1]) & (np.round(y, 6) <= ys[size - 1])
    dist, _ = _bfs(world, np.flatnonzero(home))
    return home, dist >= AWAY_DISTANCE


def _constrained_walk(world: World, start: int, allowed: np.ndarray, n: int,
                      rng: np.random.Generator, until_all: bool = False) -> list[int]:
    """Random moves that stay inside ``allowed`` (nodes after ``start``); with ``until_all``,
    continue past ``n`` until every allowed node has been visited."""
    path, node, seen = [], start, {start}
    while len(path) < n or (until_all and len(seen) < int(allowed.sum())):
        nxt = [int(v) for v in world.transitions[node, 1:] if v >= 0 and allowed[v]]
        node = nxt[int(rng.integers(len(nxt)))]
        path.append(node)
        seen.add(node)
    return path


def delay_walk(world: World, delay: int, rng: np.random.Generator,
               home_size: int = HOME_SIZE) -> dict[str, np.ndarray]:
    """One walk of the task.

    Returns
    -------
    dict with ``nodes`` and ``actions`` (T,) as in :func:`~hippo_rep.worlds.random_walk`,
    ``phase`` (T,) indices into :data:`PHASES`, and ``scored`` (T,) bool: the first visit to
    each home node after the return.
    """
    if delay < 0:
        raise DelayTaskError(f"delay must be ≥ 0; got {delay}")
    home, away = home_region(world, home_size)
    start = int(rng.choice(np.flatnonzero(home)))
    tour = [start] + _constrained_walk(world, start, home, HOME_STEPS - 1, rng, until_all=True)
    out_path = _path_to(world, tour[-1], away)
    excursion = _constrained_walk(world, out_path[-1], away, delay, rng) if delay else []
    back = _path_to(world, (out_path + excursion)[-1], home)
    again = _constrained_walk(world, back[-1], home, RETURN_STEPS - 1, rng)
    parts = [tour, out_path + excursion, back[:-1], [back[-1]] + again]
    nodes = np.array([n for p in parts for n in p], dtype=np.int64)
    phase = np.concatenate([np.full(len(p), i) for i, p in enumerate(parts)])
    actions = np.zeros(len(nodes), dtype=np.int64)
    for t in range(1, len(nodes)):
        actions[t] = _action(world, int(nodes[t - 1]), int(nodes[t]))
    scored = np.zeros(len(nodes), dtype=bool)
    seen: set[int] = set()
    for t in np.flatnonzero(phase == 3):
        if int(nodes[t]) not in seen:
            scored[t] = True
            seen.add(int(nodes[t]))
    return {"nodes": nodes, "actions": actions, "phase": phase, "scored": scored}


def sample_delay_episodes(worlds: Sequence[World], batch_size: int, n_steps: int, n_obs: int,
                          rng: np.random.Generator, max_delay: int = DEFAULT_DELAYS[-2]
                          ) -> Episodes:
    """Training batches of the task's walks (``world.walk = "delay"``).

    Per environment: a world (uniform from ``worlds``), fresh observations, a
    :func:`delay_walk` with ``D ~ U{0..max_delay}``, then a random walk from its last node up
    to ``n_steps`` (or the walk cut at ``n_steps``).
    """
    nodes = np.empty((batch_size, n_steps), dtype=np.int64)
    actions = np.empty_like(nodes)
    obs = np.empty_like(nodes)
    picked, maps = [], []
    for b in range(batch_size):
        w = worlds[int(rng.integers(len(worlds)))]
        m = random_observations(w, n_obs, rng)
        x = delay_walk(w, int(rng.integers(max_delay + 1)), rng)
        n, a = x["nodes"][:n_steps], x["actions"][:n_steps]
        if len(n) < n_steps:
            more_n, more_a = random_walk(w, n_steps - len(n) + 1, rng, start=int(n[-1]))
            n, a = np.concatenate([n, more_n[1:]]), np.concatenate([a, more_a[1:]])
        nodes[b], actions[b], obs[b] = n, a, m[n]
        picked.append(w)
        maps.append(m)
    return Episodes(picked, nodes, actions, obs, maps)


def as_variant(model, memory: str, **overrides):
    """The same trained weights under another memory variant (a new model; weights shared
    where they exist, new FAM slot weights from the model's seed-free default init)."""
    from hippo_rep.models.temt import TEMt, load_across_memory

    if memory not in DEFAULT_VARIANTS:
        raise DelayTaskError(f"unknown memory variant {memory!r}; known: "
                             f"{', '.join(DEFAULT_VARIANTS)}")
    cfg = replace(model.config, memory=memory, **overrides)
    torch.manual_seed(0)
    new = TEMt(cfg, model.n_actions, model.n_obs)
    problems = load_across_memory(new, model.state_dict())
    if problems:
        raise DelayTaskError(f"weights do not fit the {memory} variant: {', '.join(problems)}")
    return new.to(next(model.parameters()).device).eval()


@torch.no_grad()
def delay_accuracy(model, delays: Sequence[int] = DEFAULT_DELAYS, n_envs: int = DEFAULT_ENVS,
                   world: str = DEFAULT_WORLD, n_obs: int = DEFAULT_N_OBS,
                   seed: int = 0) -> xr.Dataset:
    """Accuracy on first return visits to home against excursion length, for one model.

    The walks depend only on ``seed`` (not on the model), so variants are compared on the same
    walks. Returns a Dataset with dim ``delay``: ``accuracy`` (fraction of scored steps
    predicted), ``n_scored``, ``walk_steps`` (mean walk length), ``chance`` (1 / n_obs) and
    ``node_agent`` (1: every scored node was visited before).
    """
    w = parse_world(world)
    if w.n_actions != model.n_actions:
        raise DelayTaskError(f"world {world!r} has {w.n_actions} actions; the model was "
                             f"trained with {model.n_actions}")
    if n_obs != model.n_obs:
        raise DelayTaskError(f"n_obs {n_obs} differs from the model's {model.n_obs}")
    if n_envs < 1:
        raise DelayTaskError(f"n_envs must be ≥ 1; got {n_envs}")
    acc, n_sc, length = [], [], []
    for d in delays:
        rng = np.random.default_rng([seed, int(d)])
        walks = [delay_walk(w, int(d), rng) for _ in range(n_envs)]
        T = max(len(x["nodes"]) for x in walks)
        obs = np.zeros((n_envs, T), np.int64)
        act = np.zeros((n_envs, T), np.int64)
        scored = np.zeros((n_envs, T), bool)
        for i, x in enumerate(walks):
            env_obs = random_observations(w, n_obs, rng)
            n = len(x["nodes"])
            # Padding after the walk: stay at the last node (never scored).
            obs[i, :n], obs[i, n:] = env_obs[x["nodes"]], env_obs[x["nodes"][-1]]
            act[i, :n] = x["actions"]
            scored[i, :n] = x["scored"]
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
    from hippo_rep import __version__
    from hippo_rep.training.checkpoint import file_sha256, load_checkpoint

    model, cfg, _ = load_checkpoint(checkpoint)
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
        text = json.dumps(ds.to_dict(data="list"), indent=1)
        atomic_write(path, lambda tmp: Path(tmp).write_text(text))
    elif path.suffix == ".nc":
        atomic_write(path, lambda tmp: ds.to_netcdf(tmp))
    else:
        raise DelayTaskError(f"output {str(path)!r} must end in .nc or .json")
    return path


def read_delay(path) -> xr.Dataset:
    """Read what :func:`write_delay` wrote; checks for the ``accuracy`` variable."""
    from hippo_rep.fileio import read_json

    path = Path(path)
    if not path.is_file():
        raise DelayTaskError(f"delay result {str(path)!r} not found" if not path.exists()
                             else f"delay result {str(path)!r} is not a file")
    try:
        if path.suffix == ".json":
            ds = xr.Dataset.from_dict(read_json(path, DelayTaskError, "delay result"))
        else:
            ds = xr.load_dataset(path)
    except DelayTaskError:
        raise
    except Exception as err:  # xarray/netCDF raise many types for damaged files
        raise DelayTaskError(f"cannot read delay result {str(path)!r} "
                             f"({type(err).__name__})") from None
    if "accuracy" not in ds or "delay" not in ds.dims:
        raise DelayTaskError(f"{str(path)!r} is not a delay result (needs accuracy(delay))")
    return ds

"""Synthetic recordings with planted grid, place and random units, for tests and benchmarks.

The dataset has the layout of a real recording (see :mod:`hippo_rep.analysis.recordings`)
and known ground truth: positional units (``g``) are planted hexagonal grids (sums of three
plane waves of the node coordinates), Gaussian place fields, or spatially random units; all
are stable across environments. Memory neurons are Gaussian bumps around the node where their
memory was written (the first visits of each walk), active only after that step; they remap
randomly between environments unless ``same_walk=True`` (every environment then has the same
walk and observations, so memory ``k`` sits at the same node everywhere).
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from hippo_rep import __version__
from hippo_rep import schema as S
from hippo_rep.defaults import N_OBS
from hippo_rep.worlds import (
    parse_world,
    random_observations,
    random_walk,
    step_types,
)

from .synthetic import plane_wave_sum

#: Peak-to-peak spacing range of planted grid units, in node spacings.
GRID_SPACING_RANGE = (4.0, 6.0)

#: Standard deviation of planted place fields, in node spacings.
PLACE_SIGMA = 1.2

#: Standard deviation of memory-neuron bumps, in node spacings.
MEMORY_SIGMA = 0.7

#: Standard deviation of the Gaussian noise added to every planted unit per step (activity
#: is then clipped at 0 so that spatial information is defined).
NOISE_STD = 0.1


def _hex_grid(x: np.ndarray, y: np.ndarray, spacing: float, orientation: float,
              phase: np.ndarray) -> np.ndarray:
    """:func:`~hippo_rep.analysis.hex_grid_map`'s pattern at node coordinates (x, y)."""
    k = 4 * np.pi / (np.sqrt(3) * spacing)
    return (plane_wave_sum(x, y, k, [orientation + 30.0 + 60.0 * i for i in range(3)], phase)
            + 1.5) / 4.5


def synthetic_recording(
    world: str = "square:11",
    n_env: int = 4,
    n_steps: int = 2000,
    n_grid: int = 6,
    n_place: int = 6,
    n_random: int = 6,
    n_memory: int = 30,
    same_walk: bool = False,
    seed: int = 0,
) -> xr.Dataset:
    """A recording-shaped dataset with planted ground truth.

    Parameters
    ----------
    world : str
        World spec (``hippo_rep.worlds.parse_world``), e.g. ``"square:11"`` or ``"hex:8"``.
    n_env, n_steps : int
        Environments and steps per walk.
    n_grid, n_place, n_random : int
        Planted positional units, in this order along ``g_unit``: hexagonal grids (spacing in
        :data:`GRID_SPACING_RANGE` node spacings, random orientation and phase), Gaussian
        place fields (:data:`PLACE_SIGMA`) at random nodes, and uniform noise in [0, 1].
    n_memory : int
        Memory slots; slot k is written at the k-th first visit of a node (unused if the
        walk visits fewer nodes: ``memory_node = memory_time = -1``).
    same_walk : bool
        Give every environment the same walk and observations.
    seed : int
        Seed of everything.

    Returns
    -------
    xarray.Dataset
        A valid recording (:func:`hippo_rep.schema.validate`): ``g``, ``g_pi`` (env, time,
        g_unit), ``memory_activity`` (env, time, memory), float32; the per-step, per-memory
        and per-node coords and the attrs of a recording; plus coord ``planted`` (g_unit):
        "grid", "place" or "random".
    """
    rng = np.random.default_rng(seed)
    w = parse_world(world)
    nx_, ny_ = w.coords[:, 0], w.coords[:, 1]
    n_g = n_grid + n_place + n_random
    # positional tuning per node, the same in every environment
    tuning = np.zeros((w.n_nodes, n_g))
    for j in range(n_grid):
        spacing = rng.uniform(*GRID_SPACING_RANGE)
        phase = rng.uniform(0, spacing, size=2)
        tuning[:, j] = _hex_grid(nx_, ny_, spacing, rng.uniform(0, 60), phase)
    for j in range(n_place):
        c = w.coords[rng.integers(w.n_nodes)]
        d2 = (nx_ - c[0]) ** 2 + (ny_ - c[1]) ** 2
        tuning[:, n_grid + j] = np.exp(-d2 / (2 * PLACE_SIGMA**2))
    nodes = np.empty((n_env, n_steps), dtype=np.int64)
    actions = np.empty_like(nodes)
    obs_maps = np.empty((n_env, w.n_nodes), dtype=np.int64)
    for e in range(n_env):
        if same_walk and e > 0:
            nodes[e], actions[e], obs_maps[e] = nodes[0], actions[0], obs_maps[0]
            continue
        obs_maps[e] = random_observations(w, N_OBS, rng)
        nodes[e], actions[e] = random_walk(w, n_steps, rng)
    g = tuning[nodes] + NOISE_STD * rng.standard_normal((n_env, n_steps, n_g))
    rand = slice(n_grid + n_place, n_g)
    g[:, :, rand] = rng.random((n_env, n_steps, n_random))
    g = np.clip(g, 0.0, None)
    g_pi = np.clip(g + 0.5 * NOISE_STD * rng.standard_normal(g.shape), 0.0, None)

    mem_node = np.full((n_env, n_memory), -1, dtype=np.int64)
    mem_time = np.full((n_env, n_memory), -1, dtype=np.int64)
    mem_obs = np.full((n_env, n_memory), -1, dtype=np.int64)
    mem = np.zeros((n_env, n_steps, n_memory))
    t = np.arange(n_steps)
    for e in range(n_env):
        _, first = np.unique(nodes[e], return_index=True)
        first = np.sort(first)[:n_memory]
        k = first.size
        mem_time[e, :k] = first
        mem_node[e, :k] = nodes[e, first]
        mem_obs[e, :k] = obs_maps[e, mem_node[e, :k]]
        pos = w.coords[nodes[e]]  # (T, 2)
        centre = w.coords[mem_node[e, :k]]  # (k, 2)
        d2 = ((pos[:, None, :] - centre[None, :, :]) ** 2).sum(-1)
        bump = np.exp(-d2 / (2 * MEMORY_SIGMA**2))
        bump = np.clip(bump + NOISE_STD * 0.2 * rng.standard_normal(bump.shape), 0.0, None)
        mem[e, :, :k] = np.where(t[:, None] > first[None, :], bump, 0.0)

    observation = np.take_along_axis(obs_maps, nodes, axis=1)
    correct = rng.random((n_env, n_steps)) < 0.9
    prediction = np.where(correct, observation, (observation + 1) % N_OBS)
    step_type = np.stack(
        [step_types(nodes[e], actions[e])["code"] for e in range(n_env)]
    ).astype(np.int8)
    planted = np.array(["grid"] * n_grid + ["place"] * n_place + ["random"] * n_random)
    env_t = ("env", "time")
    ds = xr.Dataset(
        {
            S.G: (S.DATA_VARS[S.G].dims, g.astype(np.float32)),
            S.G_PI: (S.DATA_VARS[S.G_PI].dims, g_pi.astype(np.float32)),
            S.MEMORY_ACTIVITY: (S.DATA_VARS[S.MEMORY_ACTIVITY].dims, mem.astype(np.float32)),
        },
        coords={
            "env": np.arange(n_env),
            "time": np.arange(n_steps),
            "g_unit": np.arange(n_g),
            "memory": np.arange(n_memory),
            "world_node": np.arange(w.n_nodes),
            "node": (env_t, nodes),
            "x": (env_t, w.coords[nodes, 0]),
            "y": (env_t, w.coords[nodes, 1]),
            "action": (env_t, actions),
            "observation": (env_t, observation),
            "prediction": (env_t, prediction),
            "correct": (env_t, correct),
            "step_type": (env_t, step_type),
            "memory_node": (("env", "memory"), mem_node),
            "memory_time": (("env", "memory"), mem_time),
            "memory_observation": (("env", "memory"), mem_obs),
            "node_x": ("world_node", nx_.astype(np.float64)),
            "node_y": ("world_node", ny_.astype(np.float64)),
            "planted": ("g_unit", planted, {"long_name": "planted kind of unit", "units": "1"}),
        },
        attrs={
            "hippo_rep_kind": "recording",
            "schema_version": S.SCHEMA_VERSION,
            "same_observations": int(same_walk),
            "world": world,
            "seed": seed,
            "n_steps": n_steps,
            "checkpoint_sha256": "synthetic",
            "package_version": __version__,
            "model_config": json.dumps({"synthetic": True}),
            "world_config": json.dumps({"spec": world}),
            "recording_config": json.dumps(
                {"n_env": n_env, "n_steps": n_steps, "seed": seed, "same_walk": same_walk}
            ),
        },
    )
    for name in S.SPECS:
        ds[name].attrs.update(S.var_attrs(name))
    return ds

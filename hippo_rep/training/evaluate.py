"""Accuracy on held-out environments, by step type, beside the ideal agents."""

from __future__ import annotations

import numpy as np
import torch

from hippo_rep import __version__
from hippo_rep.config import check_walk_sizes
from hippo_rep.models.temt_losses import walk_constant_power
from hippo_rep.models.transitions import transition_diagnostics
from hippo_rep.random_streams import eval_rng
from hippo_rep.training.checkpoint import CheckpointError, check_actions, load_checkpoint
from hippo_rep.worlds import (
    AGENTS,
    REPORTED,
    World,
    ideal_agents,
    proportion_visited,
    sample_episodes,
    step_types,
)

#: Bins of the proportion of nodes visited for the accuracy curve.
CURVE_BINS = 10
#: Steps per forward chunk at evaluation (no gradients, so only memory use depends on it).
EVAL_CHUNK = 512


def model_chunks(model, obs: np.ndarray, actions: np.ndarray, chunk: int = EVAL_CHUNK,
                 device=None, return_activity: bool = False, threads: int = 0):
    """Run ``model`` over whole walks chunk after chunk (carrying its memory); yields
    ``(start, stop, output, state)`` of each chunk of steps [start, stop).

    Each chunk runs under ``torch.no_grad`` with ``threads`` torch threads (0: torch's
    setting), both restored before the yield: a generator suspended inside them would leave
    gradients disabled (and the thread count changed) in the consumer's thread.
    """
    device = device or next(model.parameters()).device
    o = torch.as_tensor(obs, device=device)
    a = torch.as_tensor(actions, device=device)
    state = None
    for s in range(0, o.shape[1], chunk):
        before = torch.get_num_threads()
        if threads > 0:
            torch.set_num_threads(threads)
        try:
            with torch.no_grad():
                out, state = model(o[:, s:s + chunk], a[:, s:s + chunk], state,
                                   return_activity=return_activity)
        finally:
            torch.set_num_threads(before)
        yield s, min(s + chunk, o.shape[1]), out, state


def run_model(model, obs: np.ndarray, actions: np.ndarray, chunk: int = EVAL_CHUNK,
              device=None, return_activity: bool = False):
    """Run ``model`` over whole walks in chunks; returns a list of per-chunk ``Output``."""
    return [out for _, _, out, _ in model_chunks(model, obs, actions, chunk, device,
                                                  return_activity)]


def predictions(model, obs, actions, chunk: int = EVAL_CHUNK,
                return_written: bool = False):
    """Predicted observation (argmax of the g_pi prediction) at every step, (B, T); with
    ``return_written`` also whether each step wrote a new memory, (B, T) bool."""
    pred, written = _predicted(run_model(model, obs, actions, chunk))
    return (pred, written) if return_written else pred


def _predicted(outs) -> tuple[np.ndarray, np.ndarray]:
    """Predicted observation and whether a memory was written, (B, T) each, of the per-chunk
    outputs of :func:`run_model`."""
    return (torch.cat([o.logits_pi.argmax(-1) for o in outs], 1).cpu().numpy(),
            torch.cat([o.written for o in outs], 1).cpu().numpy())


def memories_per_node(written: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Memories written per distinct node visited, per walk: 1 is add-if-novel's ideal (one
    memory per (node, observation)); more means revisits were taken for new places.

    Parameters
    ----------
    written : (B, T) bool, step t wrote a memory
    nodes : (B, T) int, node visited at step t
    """
    distinct = np.array([len(np.unique(n)) for n in nodes])
    return written.sum(1) / distinct


def summarise(correct: dict[str, np.ndarray], types: dict[str, np.ndarray],
              visited: np.ndarray) -> dict:
    """Accuracy per step type and against the proportion of nodes visited.

    Parameters
    ----------
    correct : agent name → (n_steps_total,) float correctness (expected, in [0, 1])
    types : step type → (n_steps_total,) bool
    visited : (n_steps_total,) proportion of nodes visited before each step
    """
    result = {}
    for agent, c in correct.items():
        result[agent] = {k: (float(c[types[k]].mean()) if types[k].any() else None)
                         for k in REPORTED if k != "all"}
        result[agent]["all"] = float(c.mean())
    edges = np.linspace(0, 1, CURVE_BINS + 1)
    which = np.clip(np.digitize(visited, edges) - 1, 0, CURVE_BINS - 1)
    curve = {"proportion_visited": ((edges[:-1] + edges[1:]) / 2).round(4).tolist(),
             "n_steps": np.bincount(which, minlength=CURVE_BINS).tolist()}
    for agent, c in correct.items():
        curve[agent] = [float(c[which == i].mean()) if (which == i).any() else None
                        for i in range(CURVE_BINS)]
    result["curve"] = curve
    result["counts"] = {k: int(types[k].sum()) for k in REPORTED if k != "all"}
    result["counts"]["all"] = int(len(visited))
    return result


def evaluate(model, worlds: list[World] | World, n_envs: int, n_steps: int, n_obs: int,
             seed: int = 0, batch_size: int = 16, keep_heading: float = 0.25,
             stay_prob: float = 0.0) -> dict:
    """Accuracy of ``model`` and of the ideal agents on fresh held-out environments.

    Returns
    -------
    dict
        ``model``, ``node_agent``, ``edge_agent``: accuracy (fraction in [0, 1]) for each of
        :data:`REPORTED`; ``curve``: accuracy against the proportion of nodes visited;
        ``counts``: number of steps of each type; ``memory``: memories written per distinct
        node visited (mean and max over walks, :func:`memories_per_node`);
        ``walk_constant_power``: for ``g`` and (read-out models) ``cells``, the mean over
        walks of the share of the population's power constant along the walk (None where
        the model has no such population).
    """
    if n_envs < 1 or n_steps < 2:
        raise ValueError(f"need n_envs ≥ 1 and n_steps ≥ 2; got {n_envs}, {n_steps}")
    rng = eval_rng(seed)
    acc: dict[str, list] = {a: [] for a in AGENTS}
    kinds: dict[str, list] = {k: [] for k in REPORTED if k != "all"}
    visited, per_node = [], []
    constant: dict[str, list] = {"g": [], "cells": []}
    model.eval()
    for start in range(0, n_envs, batch_size):
        b = min(batch_size, n_envs - start)
        ep = sample_episodes(worlds, b, n_steps, n_obs, rng, keep_heading, stay_prob)
        outs = run_model(model, ep.observations, ep.actions)
        pred, written = _predicted(outs)
        for name in constant:
            if getattr(outs[0], name, None) is not None:
                x = torch.cat([getattr(o, name) for o in outs], 1).double()
                constant[name].append(walk_constant_power(x).numpy())
        per_node.append(memories_per_node(written, ep.nodes))
        for i in range(b):
            types = step_types(ep.nodes[i], ep.actions[i])
            ideal = ideal_agents(ep.nodes[i], ep.actions[i], n_obs)
            acc["model"].append((pred[i] == ep.observations[i]).astype(float))
            acc["node_agent"].append(ideal["node_agent"])
            acc["edge_agent"].append(ideal["edge_agent"])
            for k in kinds:
                kinds[k].append(types[k])
            visited.append(proportion_visited(ep.nodes[i], ep.worlds[i].n_nodes))
    cat = {a: np.concatenate(v) for a, v in acc.items()}
    result = summarise(cat, {k: np.concatenate(v) for k, v in kinds.items()},
                       np.concatenate(visited))
    per_node = np.concatenate(per_node)
    # TEM and the hebbian variant have no memory slots (nothing is ever written): no count,
    # rather than a misleading 0 memories per node
    result["memory"] = None if per_node.max() == 0 else {
        "memories_per_node": float(per_node.mean()),
        "memories_per_node_max": float(per_node.max()), "steps": int(n_steps)}
    result["walk_constant_power"] = {k: float(np.concatenate(v).mean()) if v else None
                                     for k, v in constant.items()}
    return result


def evaluate_checkpoint(path, n_envs: int = 32, world: str | None = None,
                        n_steps: int | None = None, seed: int = 0) -> dict:
    """Evaluate a checkpoint on held-out environments (see :func:`evaluate`).

    ``world`` is a spec (``square:8``, ``hex:6``, …); by default the training worlds.
    Adds ``meta`` (checkpoint, world, envs, steps, seed, package version, config) and, for
    TEM-t, ``transitions`` (:func:`hippo_rep.models.transitions.transition_diagnostics`).
    ``n_envs``, ``n_steps`` or ``seed`` out of range (:data:`~hippo_rep.config.WALK_SIZES`)
    is a CheckpointError, before the checkpoint is read.
    """
    check_walk_sizes(CheckpointError, n_envs=n_envs, n_steps=n_steps, seed=seed)
    model, cfg, payload = load_checkpoint(path)
    worlds = [check_actions(w, payload["n_actions"], f"checkpoint {str(path)!r}")
              for w in ([world] if world is not None else cfg.world.worlds)]
    n_steps = cfg.world.walk_steps if n_steps is None else n_steps
    result = evaluate(model, worlds, n_envs, n_steps, cfg.world.n_obs, seed=seed,
                      keep_heading=cfg.world.keep_heading, stay_prob=cfg.world.stay_prob)
    if getattr(model, "recurrent", False):
        result["transitions"] = transition_diagnostics(model, worlds[0].kind, seed=seed)
    result["meta"] = {"checkpoint": str(path), "world": ",".join(w.spec for w in worlds),
                      "envs": n_envs, "steps": n_steps, "seed": seed,
                      "model_kind": cfg.model.kind, "training_step": payload["step"],
                      "chance": 1.0 / cfg.world.n_obs, "package_version": __version__,
                      "config": cfg.to_dict()}
    return result


def evaluation_text(result: dict) -> str:
    """The table ``hippo-rep evaluate`` prints of :func:`evaluate_checkpoint`'s ``result``:
    accuracy by step type beside the ideal agents, then memories per node and the loop
    returns where the result has them."""
    meta = result["meta"]
    lines = [f"held-out: {meta['envs']} envs × {meta['steps']} steps of {meta['world']} "
             f"(seed {meta['seed']})",
             f"{'step type':22s}" + "".join(f"{a:>12s}" for a in AGENTS) + f"{'steps':>9s}"]
    for k in REPORTED:
        vals = "".join(f"{result[a][k]:12.3f}" if result[a][k] is not None else f"{'-':>12s}"
                       for a in AGENTS)
        lines.append(f"{k:22s}{vals}{result['counts'][k]:9d}")
    mem = result.get("memory")
    if mem:
        lines.append(f"memories per node visited: {mem['memories_per_node']:.2f} "
                     f"(max {mem['memories_per_node_max']:.2f}; add-if-novel's ideal is 1)")
    lr = (result.get("transitions") or {}).get("loop_returns")
    if lr:
        lines.append(f"loop return cosine: opposite moves ≥ {lr['pair_cosine_min']:.3f}, "
                     f"smallest loop {lr['loop_cosine']:.3f} (write threshold "
                     f"{lr['write_threshold']:g})")
    return "\n".join(lines)

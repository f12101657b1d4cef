"""Calibrating add-if-novel: the write threshold that tells a revisit from a new place.

TEM-t stores (g_t, x_t) only when no stored memory of the same observation sits at (nearly)
the same position: when the z-scored cosine similarity to every such memory is at most
``model.write_threshold`` (Whittington, Warren & Behrens 2022, ICLR, appendix A.2: memories
are added only for novel conjunctions). A fixed threshold assumes a similarity scale the model
does not promise: after a loop, path integration and the landmark correction bring g back only
approximately, so a revisit can fall below a strict threshold (and write a duplicate), while
distinct nodes holding the same observation can be nearly as similar when the code is
periodic. The two distributions measured on the shipped checkpoint are in the project's
findings (``docs/findings.md``).

This module measures both distributions on walks from the model's *training* worlds (a random
stream of their own, disjoint from training and held-out evaluation) and picks the threshold
as a decision criterion between them (signal-detection style): the one that minimises the
share of revisits written again plus the share of distinct nodes merged. Because the memory
contents depend on the threshold (fewer duplicates leave fewer near copies to match), the
choice is iterated to a fixed point.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from hippo_rep.config import check_walk_sizes, from_dict
from hippo_rep.models.registry import model_spec
from hippo_rep.random_streams import calibration_rng
from hippo_rep.training.checkpoint import file_sha256, load_checkpoint, write_payload
from hippo_rep.training.evaluate import memories_per_node, run_model
from hippo_rep.worlds import parse_world, sample_episodes

#: Environments walked for the calibration.
CALIBRATION_ENVS = 16
#: Steps per calibration walk: on 11×11 about 12 visits per node, so most revisits come after
#: long excursions, where path integration has drifted most.
CALIBRATION_STEPS = 1500
#: Fixed-point rounds at most: each round changes the memory contents the next one measures,
#: and a few rounds settle the threshold to within a few thousandths.
CALIBRATION_ROUNDS = 4
#: Stop when the threshold moves less than this between rounds.
CALIBRATION_TOL = 2e-3
#: Candidate thresholds (cosine similarity of z-scored g).
THRESHOLD_GRID = np.round(np.linspace(0.0, 1.0, 1001), 3)


class CalibrationError(ValueError):
    """The walks do not give what a calibration needs (no revisits, no distinct matches)."""


def novelty_similarities(g: torch.Tensor, written: np.ndarray, nodes: np.ndarray,
                         observations: np.ndarray,
                         window_start: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """What the add-if-novel test saw at every step of a walk that had a same-observation
    memory: the best similarity to one stored at this node and to one stored elsewhere.

    Parameters
    ----------
    g : (B, T, d) corrected positional encodings g_t (the stored keys are g at written steps)
    written : (B, T) bool, step t wrote a memory
    nodes, observations : (B, T) int, the node visited and the observation seen at step t
    window_start : (T,) int, optional
        Earliest step whose memory step t still sees (``TEMt.memory.window_start``: later
        than −1 for the bounded "window"/"fam"); None: every earlier memory.

    Returns
    -------
    dict
        ``revisit``: (n,) best z-cosine to a stored memory of this observation *at this node*,
        one per step that had one (a test above the threshold correctly skips the write);
        ``distinct``: (m,) best z-cosine to a stored memory of this observation at *another*
        node (above the threshold, a new place would be merged into it).
    """
    z = torch.nn.functional.layer_norm(g.detach().float(), g.shape[-1:]).cpu().numpy()
    d = z.shape[-1]
    revisit, distinct = [], []
    steps = np.arange(z.shape[1])
    for b in range(z.shape[0]):
        # only the written steps (columns s) can hold a stored memory: the masks are built
        # on those, T x n_written instead of T x T; the similarities are the same products
        cols = np.flatnonzero(written[b])
        sim = (z[b] @ z[b].T)[:, cols] / d
        earlier = steps[:, None] > cols[None, :]  # [t, s]: s < t
        if window_start is not None:
            earlier &= cols[None, :] >= np.asarray(window_start)[:, None]
        x = observations[b]
        seen = earlier & (x[:, None] == x[cols][None, :])
        same = nodes[b][:, None] == nodes[b][cols][None, :]
        for mask, out in ((seen & same, revisit), (seen & ~same, distinct)):
            has = mask.any(1)
            out.append(np.where(mask, sim, -np.inf).max(1, initial=-np.inf)[has])
    return {"revisit": np.concatenate(revisit), "distinct": np.concatenate(distinct)}


def choose_threshold(revisit: np.ndarray, distinct: np.ndarray,
                     grid: np.ndarray = THRESHOLD_GRID) -> dict:
    """The threshold τ minimising (share of revisits ≤ τ) + (share of distinct > τ).

    A step is a duplicate write when its best same-node similarity is ≤ τ and a merge when its
    best other-node similarity is > τ (the model skips the write when a similarity exceeds τ).
    Where several τ tie, the middle of the tied range is taken (the widest margin).

    Returns
    -------
    dict
        ``threshold``, ``duplicate_rate``, ``merge_rate`` (fractions at τ), ``n_revisit``,
        ``n_distinct``.
    """
    revisit, distinct = np.asarray(revisit, float), np.asarray(distinct, float)
    if revisit.size == 0 or distinct.size == 0:
        raise CalibrationError(
            f"calibration needs revisits and distinct nodes sharing an observation; the walks "
            f"gave {revisit.size} and {distinct.size} (use longer walks or a larger world)")
    r, s = np.sort(revisit), np.sort(distinct)
    dup = np.searchsorted(r, grid, side="right") / r.size  # share of revisits ≤ τ
    merge = 1.0 - np.searchsorted(s, grid, side="right") / s.size  # share of distinct > τ
    cost = dup + merge
    best = np.flatnonzero(cost <= cost.min() + 1e-12)
    i = int(best[len(best) // 2])
    return {"threshold": float(grid[i]), "duplicate_rate": float(dup[i]),
            "merge_rate": float(merge[i]), "n_revisit": int(r.size), "n_distinct": int(s.size)}


def calibrate_write_threshold(model, worlds, n_obs: int, n_envs: int = CALIBRATION_ENVS,
                              n_steps: int = CALIBRATION_STEPS, seed: int = 0,
                              rounds: int = CALIBRATION_ROUNDS) -> dict:
    """Set ``model.config.write_threshold`` to the calibrated criterion (in place) and report.

    Parameters
    ----------
    model : TEMt, in eval mode
    worlds : World or list of World, the model's training worlds
    n_obs : number of distinct observations
    n_envs, n_steps : calibration walks (fresh observations per environment)
    seed : seed of the calibration stream (``random_streams.calibration_rng``)
    rounds : fixed-point iterations at most

    Returns
    -------
    dict
        ``threshold`` (the new value), ``initial_threshold``, ``rounds``: per round the
        threshold used, the memories written per distinct node and :func:`choose_threshold`'s
        choice.
    """
    rng = calibration_rng(seed)
    ep = sample_episodes(worlds, n_envs, n_steps, n_obs, rng)
    initial = float(model.config.write_threshold)
    # a bounded memory ("window"/"fam") tests novelty only against the memories it still sees
    window = model.memory.window_start(np.arange(n_steps))
    history = []
    for _ in range(rounds):
        outs = run_model(model, ep.observations, ep.actions)
        g = torch.cat([o.g for o in outs], 1)
        written = torch.cat([o.written for o in outs], 1).cpu().numpy()
        sims = novelty_similarities(g, written, ep.nodes, ep.observations, window)
        choice = choose_threshold(sims["revisit"], sims["distinct"])
        used = float(model.config.write_threshold)
        history.append({"threshold_used": used,
                        "memories_per_node": float(memories_per_node(written, ep.nodes).mean()),
                        **choice})
        model.config = replace(model.config, write_threshold=choice["threshold"])
        if abs(choice["threshold"] - used) < CALIBRATION_TOL:
            break
    return {"threshold": float(model.config.write_threshold), "initial_threshold": initial,
            "envs": n_envs, "steps": n_steps, "seed": seed, "rounds": history}


def calibrate_checkpoint(path, out, n_envs: int = CALIBRATION_ENVS,
                         n_steps: int = CALIBRATION_STEPS, seed: int = 0) -> dict:
    """Write a copy of checkpoint ``path`` to ``out`` whose ``model.write_threshold`` is
    calibrated on the checkpoint's training worlds (:func:`calibrate_write_threshold`).

    The weights are unchanged (same ``weights_sha256``); the report is stored in the copy's
    ``extra["calibration"]`` with the source file's SHA-256. The file is written atomically
    (``out`` appears complete or not at all). Returns the report.

    Raises
    ------
    CheckpointError
        ``path`` is not a usable checkpoint.
    CalibrationError
        ``n_envs``, ``n_steps`` or ``seed`` out of range (:data:`~hippo_rep.config.WALK_SIZES`),
        a model without add-if-novel writes (the sinusoidal baseline), or walks that give no
        revisits.
    """
    check_walk_sizes(CalibrationError, n_envs=n_envs, n_steps=n_steps, seed=seed)
    model, config, payload = load_checkpoint(path)
    if not model_spec(config.model.kind).calibrates_write_threshold:
        raise CalibrationError(f"checkpoint {str(path)!r} is a {config.model.kind!r} model; "
                               "only TEM-t's add-if-novel memory has a write threshold to "
                               "calibrate")
    worlds = [parse_world(w) for w in config.world.worlds]
    report = calibrate_write_threshold(model, worlds, config.world.n_obs, n_envs, n_steps, seed)
    report["source_sha256"] = file_sha256(path)
    cfg = config.to_dict()
    cfg["model"]["write_threshold"] = report["threshold"]
    from_dict(cfg, "calibrated config")  # still a valid config
    payload = dict(payload, config=cfg,
                   extra={**(payload.get("extra") or {}), "calibration": report})
    write_payload(out, payload)
    return report


def calibration_text(report: dict) -> str:
    """What ``hippo-rep calibrate`` prints of :func:`calibrate_checkpoint`'s ``report``: the
    walks, each round's threshold and rates, and the threshold before and after."""
    lines = [f"calibration walks: {report['envs']} envs × {report['steps']} steps of the "
             f"training worlds (seed {report['seed']})"]
    lines += [f"threshold {r['threshold_used']:.3f}: {r['memories_per_node']:.2f} memories per "
              f"node; best criterion {r['threshold']:.3f} (revisits written again "
              f"{r['duplicate_rate']:.4f}, distinct nodes merged {r['merge_rate']:.4f})"
              for r in report["rounds"]]
    lines.append(f"write threshold {report['initial_threshold']:g} → {report['threshold']:g}")
    return "\n".join(lines)

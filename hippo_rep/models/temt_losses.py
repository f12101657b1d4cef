"""TEM-t's training losses (Whittington, Warren & Behrens 2022, appendix A.2) and the
constraints a run may add to them: read-out cells, conformal isometry of the grid modules, and
the inverse and loop errors of W_a.

The trainer reaches them through the model registry (:mod:`hippo_rep.models.registry`):
:func:`chunk_losses` for each chunk of a walk, :func:`walk_losses` once per walk. Loss 4 of
the paper (the weights) is AdamW's weight decay. TEM's losses are its own
(:meth:`hippo_rep.models.tem.TEM.training_losses`).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from hippo_rep.config import Config, world_kind
from hippo_rep.models.temt import Output
from hippo_rep.worlds import DIRECTIONS

#: Extra metrics of runs with read-out cells or a walk-constant penalty (:func:`cell_losses`).
CELL_METRIC_FIELDS = ("loss_cells_energy", "loss_cells_neg", "loss_g_const", "cells_weight")

#: ... and of runs with the cells' variance term (``train.loss_cells_var``).
CELL_VAR_FIELDS = ("loss_cells_var",)

#: Extra metrics of runs with an isometry or loop loss (:func:`isometry_loss`,
#: ``TEMt.loop_error``).
ISOMETRY_METRIC_FIELDS = ("loss_isometry", "loss_loop")


def has_cell_terms(cfg: Config) -> bool:
    """Whether the run adds the cell constraints (:func:`cell_losses`): read-out cells or a
    walk-constant penalty on g."""
    return cfg.model.cells == "readout" or cfg.train.loss_g_const > 0


def optional_metric_fields(cfg: Config) -> tuple[str, ...]:
    """The metrics.csv columns of the optional terms this config asks for: the cell terms
    (:data:`CELL_METRIC_FIELDS`) and the isometry and loop terms
    (:data:`ISOMETRY_METRIC_FIELDS`)."""
    return ((CELL_METRIC_FIELDS if has_cell_terms(cfg) else ())
            + (CELL_VAR_FIELDS if cfg.train.loss_cells_var > 0 else ())
            + (ISOMETRY_METRIC_FIELDS if cfg.train.loss_isometry > 0
               or cfg.train.loss_loop > 0 else ()))


def losses(out: Output, obs: torch.Tensor, cfg: Config,
           corrected_g: bool = True) -> dict[str, torch.Tensor]:
    """The prediction losses of TEM-t for one chunk: loss 1 (x_t from g_pi) always; with
    ``corrected_g`` (TEM-t, not its sinusoidal baseline) the total also holds loss 2 (x_t from
    the corrected g), loss 3 (g_pi towards the corrected g) and the L2 of g."""
    tc = cfg.train
    ce_pi = F.cross_entropy(out.logits_pi.flatten(0, 1), obs.flatten())
    ce_g = F.cross_entropy(out.logits_g.flatten(0, 1), obs.flatten())
    # g_t detached: the error pulls the path integrator towards the corrected position instead
    # of closing the gate.
    g_pi_err = (out.g.detach() - out.g_pi).pow(2).mean()
    l2_g = out.g.pow(2).mean()
    total = tc.loss_pi * ce_pi
    if corrected_g:
        total = total + tc.loss_g * ce_g + tc.loss_g_pi * g_pi_err + tc.loss_l2_g * l2_g
    return {"loss": total, "loss_pi": ce_pi, "loss_g": ce_g, "loss_g_pi": g_pi_err,
            "loss_l2_g": l2_g}


def walk_constant_power(x: torch.Tensor) -> torch.Tensor:
    """Per walk, the share of a population's power that is constant along the walk,
    ||mean_t x_t||² / mean_t ||x_t||²: x (B, T, n) → (B,) in [0, 1] (0: zero-mean over the
    walk, 1: constant). Differentiable (``train.loss_g_const``)."""
    return x.mean(1).pow(2).sum(-1) / x.pow(2).sum(-1).mean(1).clamp_min(1e-12)


def cells_weight(cfg: Config, iteration: int) -> float:
    """Weight of the cell constraints at ``iteration``: 0 before ``train.cells_ramp_start``,
    then linear to 1 over ``train.cells_ramp`` iterations."""
    tc = cfg.train
    if iteration < tc.cells_ramp_start:
        return 0.0
    if tc.cells_ramp == 0:
        return 1.0
    return min(1.0, (iteration - tc.cells_ramp_start + 1) / tc.cells_ramp)


def virtual_states(model, g: torch.Tensor, n: int, extent: float, seed: int) -> torch.Tensor:
    """``n`` states of ``g`` (..., n_g), detached and drawn at random, each moved by
    :meth:`TEMt.displace` to a displacement uniform in a square of ``extent`` nodes → (n, n_g).
    The draws come from ``seed`` alone (apart from the walks' random stream)."""
    gen = torch.Generator().manual_seed(seed)
    flat = g.detach().reshape(-1, g.shape[-1])
    idx = torch.randint(len(flat), (n,), generator=gen)
    x = torch.rand(n, 2, generator=gen) * extent
    return model.displace(flat[idx.to(g.device)], x.to(g))


def virtual_cells(model, g: torch.Tensor, cfg: Config, iteration: int) -> torch.Tensor:
    """The read-out cells at ``train.cells_virtual`` virtual places (:func:`virtual_states`
    of ``g`` (B, L, n_g) in a square of ``train.cells_virtual_extent`` nodes, drawn from
    ``(train.seed, iteration)``) → (cells_virtual, n_cells)."""
    tc = cfg.train
    return model.cell_activity(virtual_states(model, g, tc.cells_virtual,
                                              tc.cells_virtual_extent,
                                              tc.seed * 1_000_003 + iteration))


def cell_losses(out: Output, cfg: Config, weight: float,
                cells: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """The cell constraints for one chunk, unweighted (``loss_cells_energy``: mean r²;
    ``loss_cells_neg``: mean relu(−r)²; ``loss_g_const``: the mean over environments of
    :func:`walk_constant_power` of g over the chunk), and ``loss``: their sum with the
    ``train.loss_*`` weights times ``weight`` (:func:`cells_weight`). ``cells``: the cells
    the energy and non-negativity are taken on (default ``out.cells``, the walk's;
    :func:`virtual_cells` with ``train.cells_virtual``). With ``train.loss_cells_var`` also
    ``loss_cells_var``: the mean over cells of (variance over those places − 1)².
    """
    tc = cfg.train
    zero = out.g.new_zeros(())
    parts = {"loss_cells_energy": zero, "loss_cells_neg": zero,
             "loss_g_const": walk_constant_power(out.g).mean()}
    cells = out.cells if cells is None else cells
    if cells is not None:
        parts["loss_cells_energy"] = cells.pow(2).mean()
        parts["loss_cells_neg"] = torch.relu(-cells).pow(2).mean()
        if tc.loss_cells_var > 0:
            flat = cells.reshape(-1, cells.shape[-1])
            parts["loss_cells_var"] = (flat.var(0) - 1).pow(2).mean()
    parts["loss"] = weight * (tc.loss_cells_energy * parts["loss_cells_energy"]
                              + tc.loss_cells_neg * parts["loss_cells_neg"]
                              + tc.loss_g_const * parts["loss_g_const"]
                              + tc.loss_cells_var * parts.get("loss_cells_var", zero))
    return parts


def module_scales(cfg: Config) -> torch.Tensor:
    """(n_modules,) isometry scale s_m of each grid module: train.isometry_scale divided by
    train.isometry_scale_ratio once per module."""
    m = cfg.model
    n = m.n_g // (m.g_module_size or m.n_g)
    return cfg.train.isometry_scale / cfg.train.isometry_scale_ratio ** torch.arange(
        n, dtype=torch.float32)


def isometry_loss(g: torch.Tensor, pos: torch.Tensor, cfg: Config) -> torch.Tensor:
    """Conformal-isometry error of the grid modules over one chunk (``train.loss_isometry``).

    Parameters
    ----------
    g : Tensor, (batch, steps, n_g)
        Positional encodings; module m is units [m·size, (m+1)·size) (``model.g_module_size``,
        0 = all units), normalised to unit length per module.
    pos : Tensor, (batch, steps, 2)
        Node positions of the steps, lattice units.

    Returns
    -------
    Tensor, ()
        Mean over modules and over step pairs (i, j), 0 < j − i ≤ ``train.isometry_lags``,
        whose nodes are at most ``train.isometry_range`` apart, of
        (||u_m(j) − u_m(i)|| − s_m |x_j − x_i|)² (:func:`module_scales`); 0 without pairs.
    """
    tc = cfg.train
    size = cfg.model.g_module_size or g.shape[-1]
    B, T, d = g.shape
    u = g.reshape(B, T, d // size, size)
    u = u / u.norm(dim=-1, keepdim=True).clamp_min(1e-8)
    s = module_scales(cfg).to(g)
    total, n = g.new_zeros(()), 0
    for lag in range(1, min(tc.isometry_lags, T - 1) + 1):
        dist = (pos[:, lag:] - pos[:, :-lag]).norm(dim=-1)  # (B, T - lag)
        keep = dist <= tc.isometry_range
        if not keep.any():
            continue
        # sqrt with a floor: a revisit's Δu is 0, where the norm's gradient is undefined
        du = ((u[:, lag:] - u[:, :-lag]).pow(2).sum(-1) + 1e-12).sqrt()  # (B, T - lag, M)
        err = (du - s * dist[..., None]).pow(2).mean(-1)
        total = total + err[keep].sum()
        n += int(keep.sum())
    return total / max(n, 1)


def lattice_displacements(kind: str, max_distance: float) -> list[tuple[list[int], float]]:
    """Every lattice displacement n₁u₁ + n₂u₂ ≠ 0 of length at most ``max_distance``, as the
    move actions that make it (|n₁| moves along action 1 or its opposite, then |n₂| along
    action 2 or its opposite; :data:`~hippo_rep.worlds.DIRECTIONS`) and its length
    (lattice units); one of each ± pair."""
    ang = np.deg2rad(DIRECTIONS[kind][:2])
    u = np.stack([np.cos(ang), np.sin(ang)], 1)
    half = len(DIRECTIONS[kind]) // 2
    r = int(math.ceil(2 * max_distance))
    out = []
    for n1 in range(0, r + 1):
        for n2 in range(-r, r + 1):
            if n1 == 0 and n2 <= 0:
                continue  # ±d is one displacement; the zero one is none
            dist = float(np.linalg.norm(n1 * u[0] + n2 * u[1]))
            if dist <= max_distance + 1e-9:
                path = [1] * n1 + ([2] * n2 if n2 > 0 else [2 + half] * -n2)
                out.append((path, dist))
    return out


def transition_isometry_loss(model, g: torch.Tensor, kind: str, cfg: Config) -> torch.Tensor:
    """Conformal-isometry error of the grid modules under W_a (``train.isometry_pairs =
    "transition"``, the form of Xu, Gao, Zhang, Wei & Wu, ICLR 2025).

    Every ``train.isometry_stride``-th state of ``g`` (batch, steps, n_g) is moved by the
    model's transition along each displacement of :func:`lattice_displacements`; per module
    m, the distance between the unit-length states before and after should be s_m times the
    displacement's length (:func:`module_scales`). Mean squared error over states,
    displacements and modules; with ``train.isometry_range_per_module`` each module m takes
    the displacements within ``isometry_range`` · s_0 / s_m and the mean is over each
    module's own displacements, then over modules.
    """
    tc = cfg.train
    size = cfg.model.g_module_size or g.shape[-1]
    x = g[:, ::tc.isometry_stride].reshape(-1, g.shape[-1])
    W = model.transition_matrices()
    s = module_scales(cfg).to(g)

    def unit(h):
        h = h.reshape(h.shape[0], -1, size)
        return h / h.norm(dim=-1, keepdim=True).clamp_min(1e-8)

    reach = (tc.isometry_range * (s[0] / s) if tc.isometry_range_per_module
             else torch.full_like(s, tc.isometry_range))
    displacements = lattice_displacements(kind, float(reach.max()))
    # Move the states along every path's prefixes breadth first, one path length at a
    # time (paths share prefixes).
    index = {(): 0}
    levels = [x]  # levels[k]: states moved along every prefix of length k, stacked
    for depth in range(1, max(len(p) for p, _ in displacements) + 1):
        prefixes = sorted({tuple(p[:depth]) for p, _ in displacements if len(p) >= depth},
                          key=lambda q: (q[-1], q))
        parents = levels[-1].view(-1, *x.shape)[[index[q[:-1]] for q in prefixes]]
        # one matmul per action among the prefixes' last moves (at most three)
        last = [q[-1] for q in prefixes]
        levels.append(torch.cat([
            model.move(parents[last.index(a):len(last) - last[::-1].index(a)]
                       .reshape(-1, x.shape[-1]), a, W) for a in sorted(set(last))]))
        index.update({q: k for k, q in enumerate(prefixes)})
    ends = torch.stack([levels[len(p)].view(-1, *x.shape)[index[tuple(p)]]
                        for p, _ in displacements])  # (displacements, states, n_g)
    dist = torch.tensor([d for _, d in displacements]).to(s)
    moved = unit(ends.reshape(-1, x.shape[-1])).view(*ends.shape[:2], -1, size)
    du = ((moved - unit(x)).pow(2).sum(-1) + 1e-12).sqrt()  # (displacements, states, modules)
    err = (du - s * dist[:, None, None]).pow(2).mean(1)  # (displacements, modules)
    # each module's error is its mean over its own displacements, so every module weighs
    # the same (with one range for all this is the mean over displacements and modules)
    keep = (dist[:, None] <= reach + 1e-9).to(err)
    return ((err * keep).sum(0) / keep.sum(0)).mean()


def chunk_losses(model, out: Output, chunk, cfg: Config,
                 corrected_g: bool = True) -> dict[str, torch.Tensor]:
    """Everything TEM-t's training minimises on one chunk of a walk: :func:`losses`, then the
    cell constraints (:func:`cell_losses`, weighted by :func:`cells_weight` of the walk's
    iteration) when the run has them, then the isometry loss (:func:`isometry_loss` on the
    chunk's node positions, or :func:`transition_isometry_loss`) when
    ``train.loss_isometry`` > 0. ``loss`` is the weighted total; the other entries are the
    terms as logged.

    ``chunk`` is a :class:`~hippo_rep.models.registry.Chunk` (the chunk's observations, node
    positions and iteration); ``corrected_g`` as in :func:`losses`.
    """
    tc = cfg.train
    parts = losses(out, chunk.obs, cfg, corrected_g)
    if has_cell_terms(cfg):
        w = cells_weight(cfg, chunk.iteration)
        virtual = (virtual_cells(model, out.g, cfg, chunk.iteration) if tc.cells_virtual
                   else None)
        cells = cell_losses(out, cfg, w, virtual)
        parts = {**parts, **{k: v for k, v in cells.items() if k != "loss"},
                 "loss": parts["loss"] + cells["loss"], "cells_weight": torch.tensor(w)}
    if tc.loss_isometry > 0:
        iso = (isometry_loss(out.g, chunk.pos, cfg) if tc.isometry_pairs == "walk" else
               transition_isometry_loss(model, out.g, world_kind(cfg), cfg))
        parts = {**parts, "loss_isometry": iso, "loss": parts["loss"] + tc.loss_isometry * iso}
    return parts


def walk_losses(model, cfg: Config) -> dict[str, tuple[float, torch.Tensor]]:
    """TEM-t's losses on W_a alone, taken once per walk: name → (weight, value) of the inverse
    error (``train.loss_inverse``, ``TEMt.inverse_error``) and the loop error
    (``train.loss_loop``, ``TEMt.loop_error``) of a recurrent model, each when its weight is
    positive."""
    tc, out = cfg.train, {}
    if model.recurrent and tc.loss_inverse > 0:
        out["loss_inverse"] = (tc.loss_inverse, model.inverse_error())
    if model.recurrent and tc.loss_loop > 0:
        out["loss_loop"] = (tc.loss_loop, model.loop_error())
    return out

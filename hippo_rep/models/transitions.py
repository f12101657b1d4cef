"""What the learned transition matrices W_a do: inverses, loop returns and wave vectors.

Diagnostics of TEM-t's recurrent positional encoding, computed from the weights (and, for the
loop returns, from the states a walk visits). They say why a model writes more than one memory
per node (opposite moves that do not undo each other break add-if-novel) and, for a linear σ,
which plane waves the encoding is made of: with g_{t+1} = g_t W_a and commuting W_a, every unit
is a sum of plane waves exp(i k·r) whose wave vectors k are set by the eigenvalue phases of the
W_a (a property of the weights, not a finding about the representation).

Pure torch/numpy, no I/O. Angles in degrees from +x towards +y; lengths in lattice units
(nodes); wave vectors in radians per lattice unit.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from hippo_rep.worlds import DIRECTIONS

#: Steps of path integration from the learned initial g whose states the loop returns start
#: from (a walk long enough to visit states far from g0).
LOOP_STATES = 256
#: Eigenvalues whose phase is below this (rad) are the constant (k = 0) component.
DC_PHASE = 1e-3
#: Waves whose wave vectors differ by less than this (rad per node) are reported once.
SAME_WAVE = 1e-3
#: Weight of W_2 in the generic combination W_1 + c·W_2 whose eigenvectors are the joint
#: eigenvectors of commuting W_1, W_2 (an irrational c splits W_1's degenerate eigenvalues).
_MIX = 0.6180339887
#: A hexagonal triad: three waves whose lengths |k| are within this ratio (max / min) ...
TRIAD_LENGTH_RATIO = 1.1
#: ... and whose directions are 60° apart (axial angles) within this many degrees.
TRIAD_ANGLE_TOL = 6.0
#: A grid module's wave takes part in its triad only with at least this share of the
#: module's power (a plane the states hardly occupy does not show in any unit's map).
MIN_WAVE_SHARE = 0.1
#: Waves searched for a triad: the strongest this many (the rest are negligible under
#: g_norm = "rms", which keeps the waves of largest modulus).
TRIAD_WAVES = 24


def _unit_vectors(kind: str) -> np.ndarray:
    """(n_moves, 2) displacement of each move action (action k + 1), lattice units."""
    ang = np.deg2rad(DIRECTIONS[kind])
    return np.stack([np.cos(ang), np.sin(ang)], 1)


def lattice_kind(n_actions: int) -> str:
    """The lattice ("square" or "hex") whose move set gives ``n_actions`` actions (stay
    included)."""
    for kind, dirs in DIRECTIONS.items():
        if len(dirs) + 1 == n_actions:
            return kind
    raise ValueError(f"no lattice has {n_actions} actions (square: 5, hex: 7)")


def triad_generators(n_actions: int, n_g: int, wavelengths, orientations) -> torch.Tensor:
    """Generators S of W_a = exp(S − Sᵀ) whose every module of six units is an exact hexagonal
    triad of plane waves (``model.transition_init = "triad"``, a known-weights control).

    Module m's rotation plane j (units 6m + 2j, 6m + 2j + 1) turns by k_mj · u_a under move
    a, with u_a the move's displacement and k_mj of length 2π / ``wavelengths[m]`` at
    ``orientations[m]`` + 60°·j: g(r) = g0 W(r) is, in that plane, a wave k_mj · r, and the
    moves commute (every closed walk returns g to where it started). Stay (action 0) is the
    identity.

    Parameters
    ----------
    n_actions : int
        Actions of the world family (5 square, 7 hexagonal; stay first).
    n_g : int
        Units, a multiple of 6.
    wavelengths, orientations : sequence of float, (n_g / 6,)
        Each module's wavelength (nodes) and the direction of its first wave (radians).

    Returns
    -------
    Tensor, (n_actions, n_g, n_g)
        The generators (W_a's stored parameter under ``transition_param = "orthogonal"``).
    """
    u = _unit_vectors(lattice_kind(n_actions))
    S = torch.zeros(n_actions, n_g, n_g)
    k = triad_wave_vectors(wavelengths, orientations).numpy()
    for p in range(k.shape[0]):
        S[1:, 2 * p, 2 * p + 1] = torch.as_tensor(u @ k[p], dtype=S.dtype)
    return S


def triad_wave_vectors(wavelengths, orientations) -> torch.Tensor:
    """Wave vectors of hexagonal triads: module m's three rotation planes get waves of length
    2π / ``wavelengths[m]`` (rad per node) at ``orientations[m]`` + 0°, 60°, 120°.

    Returns
    -------
    Tensor, (3 · n_modules, 2)
        Plane p = 3m + j's wave vector (x, y), float32.
    """
    k = []
    for lam, phi in zip(wavelengths, orientations, strict=True):
        for j in range(3):
            ang = float(phi) + j * math.pi / 3
            k.append((2 * math.pi / float(lam)) * np.array([math.cos(ang), math.sin(ang)]))
    return torch.as_tensor(np.array(k), dtype=torch.float32)


def move_displacements(n_actions: int) -> torch.Tensor:
    """(n_actions, 2) displacement of every action in lattice units (stay, action 0, is 0)."""
    u = _unit_vectors(lattice_kind(n_actions))
    return torch.as_tensor(np.vstack([np.zeros((1, 2)), u]), dtype=torch.float32)


def wave_rotations(k: torch.Tensor, disp: torch.Tensor) -> torch.Tensor:
    """W_a of ``transition_param = "waves"``: block-diagonal rotations, plane p of W_a turned
    by θ_ap = k_p · u_a, in the convention of exp(S − Sᵀ) with S[a, 2p, 2p + 1] = θ_ap.

    Parameters
    ----------
    k : Tensor, (n_planes, 2)
        Each rotation plane's wave vector (rad per node).
    disp : Tensor, (n_actions, 2)
        Each action's displacement (nodes).

    Returns
    -------
    Tensor, (n_actions, 2 n_planes, 2 n_planes)
        Orthogonal, commuting matrices; differentiable in ``k``.
    """
    theta = disp @ k.T  # (A, P)
    c, s = torch.cos(theta), torch.sin(theta)
    blocks = torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2)  # (A,P,2,2)
    eye = torch.eye(k.shape[0], dtype=k.dtype, device=k.device)
    A, P = theta.shape
    return torch.einsum("apij,pq->apiqj", blocks, eye).reshape(A, 2 * P, 2 * P)


def smallest_loop(kind: str) -> list[int]:
    """Move actions of the smallest closed loop: right-up-left-down on a square lattice, a
    triangle (0°, 120°, 240°) on a hexagonal one."""
    return [1, 2, 3, 4] if kind == "square" else [1, 3, 5]


@torch.no_grad()
def _states(model, n_steps: int, rng: np.random.Generator) -> torch.Tensor:
    """(n_steps, d) path-integrated states from g0 along random move actions."""
    g = model._g0(1)
    W = model.transition_matrices()
    out = []
    for a in rng.integers(1, model.n_actions, size=n_steps):
        g = model.transition(g, torch.tensor([int(a)]), W)
        out.append(g[0])
    return torch.stack(out)


def _cosine_z(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of z-scored vectors: the add-if-novel test's similarity."""
    za = torch.nn.functional.layer_norm(a, a.shape[-1:])
    zb = torch.nn.functional.layer_norm(b, b.shape[-1:])
    return (za * zb).mean(-1)


@torch.no_grad()
def loop_returns(model, kind: str, seed: int = 0, n_states: int = LOOP_STATES) -> dict:
    """How close path integration comes back after loops that return to the start node.

    From ``n_states`` states visited by path integration along a random walk, apply each
    opposite pair (a then ā) and the smallest loop (:func:`smallest_loop`), and compare the
    end state with the start by the z-scored cosine that add-if-novel uses
    (``model.config.write_threshold``): below the threshold, a revisit through that loop writes
    a second memory of the same node.

    Returns
    -------
    dict
        ``pair_cosine`` {"a,ā": mean cosine}, ``pair_cosine_min`` (worst pair's mean),
        ``loop_cosine`` (mean over states of the smallest loop), ``loop_cosine_p05``
        (its 5th percentile), ``write_threshold``.
    """
    rng = np.random.default_rng(seed)
    g = _states(model, n_states, rng)
    W = model.transition_matrices()
    n = g.shape[0]

    def walk(acts):
        h = g
        for a in acts:
            h = model.transition(h, torch.full((n,), a, dtype=torch.long), W)
        return _cosine_z(g, h)

    pairs = {f"{a},{b}": float(walk([a, b]).mean()) for a, b in model.move_pairs()}
    loop = walk(smallest_loop(kind))
    return {"pair_cosine": pairs, "pair_cosine_min": min(pairs.values()),
            "loop_cosine": float(loop.mean()),
            "loop_cosine_p05": float(torch.quantile(loop, 0.05)),
            "write_threshold": float(model.config.write_threshold)}


def _axial_angle(k: np.ndarray) -> float:
    """Direction of a wave vector in degrees, folded to [0, 180) (k and −k are one wave)."""
    ang = float(np.degrees(np.arctan2(k[1], k[0])) % 180.0)
    return 0.0 if ang > 180.0 - 1e-6 else ang


@torch.no_grad()
def wave_vectors(model, kind: str) -> dict:
    """Plane waves of a linear recurrence from the eigen-spectrum of two move matrices.

    With g_{t+1} = g_t W_a, a position r reached by n_1 moves of the first basis action and
    n_2 of the second has g(r) = g0 W_1^{n_1} W_2^{n_2}. For a right eigenvector v of W_1 with
    eigenvalue λ = ρ e^{iθ_1}, μ = v^H W_2 v / v^H v = ρ_2 e^{iθ_2} (exact when the matrices
    commute, which ``commutator`` measures), the component along v is a plane wave with
    k·u_1 = θ_1 and k·u_2 = θ_2 (u the moves' displacements), i.e. wavelength 2π/|k|.

    Returns
    -------
    dict
        ``commutator``: ||W_1 W_2 − W_2 W_1||_F / (||W_1||_F ||W_2||_F) (0 = commuting);
        ``waves``: list of {``wavelength`` (nodes), ``angle`` (deg in [0, 180)),
        ``modulus`` (|λ_1|·|μ_2|, growth per step pair), ``count`` (eigenvalues)}, strongest
        first (under g_norm = "rms" the components of largest modulus dominate after a few
        steps); ``n_constant``: eigenvalues with k = 0 (no spatial variation).
    """
    return _waves(model.transition_matrices().double(), kind)


def _waves(W: torch.Tensor, kind: str, states: torch.Tensor | None = None) -> dict:
    """:func:`wave_vectors` of the action matrices ``W`` (n_actions, d, d), float64; with
    ``states`` (n, d), each wave's ``share`` of their power too, waves then sorted by it."""
    u = _unit_vectors(kind)
    w1, w2 = W[1], W[2]
    comm = float(torch.linalg.norm(w1 @ w2 - w2 @ w1)
                 / (torch.linalg.norm(w1) * torch.linalg.norm(w2)))
    # Row-vector recurrence g W: right eigenvectors of W^T are left eigenvectors of W. The
    # eigenvectors of a generic combination are joint ones (a degenerate eigenvalue of W_1
    # alone, e.g. 1 on units that only W_2 moves, would leave them arbitrary).
    _, vec = torch.linalg.eig((w1 + _MIX * w2).T)
    norm2 = (vec.conj() * vec).sum(0)

    def rayleigh(m):
        return torch.einsum("ij,jk,ki->i", vec.conj().T, m.T.to(vec.dtype), vec) / norm2

    lam, mu = rayleigh(w1), rayleigh(w2)
    theta = np.stack([np.angle(lam.numpy()), np.angle(mu.numpy())], 1)  # (d, 2) rad per move
    k = np.linalg.solve(u[:2], theta.T).T  # rows: k with k·u_1 = θ_1, k·u_2 = θ_2
    modulus = np.abs(lam.numpy()) * np.abs(mu.numpy())
    power = None
    if states is not None:  # mean |coordinate|² of the states along each eigenvector
        coord = states.to(vec.dtype) @ vec.conj() / norm2.sqrt()
        power = (coord.abs() ** 2).mean(0).numpy()
        power = power / max(power.sum(), 1e-300)
    # k and −k (conjugate eigenvalues) are one real wave: fold to a half-plane.
    flip = (k[:, 0] < -SAME_WAVE) | ((np.abs(k[:, 0]) <= SAME_WAVE) & (k[:, 1] < 0))
    k[flip] *= -1
    norm = np.linalg.norm(k, axis=1)
    constant = norm < DC_PHASE
    waves: list[dict] = []
    for i in np.argsort(-modulus, kind="stable"):
        if constant[i]:
            continue
        for wv in waves:
            if np.linalg.norm(wv["_k"] - k[i]) < SAME_WAVE:
                wv["count"] += 1
                if power is not None:
                    wv["share"] += float(power[i])
                break
        else:
            waves.append({"_k": k[i], "wavelength": float(2 * math.pi / norm[i]),
                          "angle": _axial_angle(k[i]),
                          "modulus": float(modulus[i]), "count": 1})
            if power is not None:
                waves[-1]["share"] = float(power[i])
    for wv in waves:
        del wv["_k"]
    if power is not None:
        waves.sort(key=lambda wv: -wv["share"])
    return {"commutator": comm, "waves": waves, "n_constant": int(constant.sum())}


def hexagonal_triad(waves: list[dict], length_ratio: float = TRIAD_LENGTH_RATIO,
                    angle_tol: float = TRIAD_ANGLE_TOL, n_waves: int = TRIAD_WAVES) -> dict:
    """Whether a set of plane waves holds an equal-length triad 60° apart, the wave vectors of
    a hexagonal lattice. Without one, no mixing of the units (a read-out A g) can be a
    hexagonal grid: the units' maps are sums of these waves only.

    Parameters
    ----------
    waves : list of dict
        ``wavelength`` (nodes) and ``angle`` (deg, axial in [0, 180)) per wave, strongest
        first (:func:`wave_vectors`' ``waves``).
    length_ratio, angle_tol, n_waves
        See :data:`TRIAD_LENGTH_RATIO`, :data:`TRIAD_ANGLE_TOL`, :data:`TRIAD_WAVES`.

    Returns
    -------
    dict
        ``found``; and for the best triad among the strongest ``n_waves`` (the one nearest to
        passing both tests: smallest max(angle deviation / ``angle_tol``, log length ratio /
        log ``length_ratio``); None without three waves): ``waves`` (their indices),
        ``wavelengths``, ``angles``, ``max_angle_deviation`` (deg from 60° spacing) and
        ``length_ratio`` (longest / shortest wavelength).
    """
    best = None
    top = waves[:n_waves]
    for i in range(len(top)):
        for j in range(i + 1, len(top)):
            for k in range(j + 1, len(top)):
                lam = [top[n]["wavelength"] for n in (i, j, k)]
                ang = sorted(top[n]["angle"] for n in (i, j, k))
                gaps = [ang[1] - ang[0], ang[2] - ang[1], 180.0 - ang[2] + ang[0]]
                dev = max(abs(gp - 60.0) for gp in gaps)
                ratio = max(lam) / min(lam)
                key = (max(dev / angle_tol, math.log(ratio) / math.log(length_ratio)), dev)
                if best is None or key < best[0]:
                    best = (key, (i, j, k), lam, ang)
    if best is None:
        return {"found": False, "waves": None, "wavelengths": None, "angles": None,
                "max_angle_deviation": None, "length_ratio": None}
    _, idx, lam, ang = best
    dev = max(abs(gp - 60.0) for gp in np.diff([*ang, ang[0] + 180.0]))
    ratio = max(lam) / min(lam)
    return {"found": bool(dev <= angle_tol and ratio <= length_ratio), "waves": list(idx),
            "wavelengths": lam, "angles": ang, "max_angle_deviation": float(dev),
            "length_ratio": float(ratio)}


@torch.no_grad()
def module_waves(model, kind: str, seed: int = 0) -> list[dict] | None:
    """Per grid module (``model.g_module_size``; None without modules or for a nonlinear σ)
    the waves of its block of W_a, each with its share of the module's power in states that
    path integration visits (:data:`LOOP_STATES` random moves from g0, ``seed``), and the
    best triad among the waves holding at least :data:`MIN_WAVE_SHARE` of it: a module of
    three planes either is one hexagonal triad or holds none (all of W_a's waves have modulus
    1 when it is orthogonal, so only their power says which ones a unit's map shows).

    Returns
    -------
    list of dict or None
        Per module: ``units`` [first, last + 1), ``waves`` (:func:`wave_vectors`' ``waves`` of
        the block plus ``share``, largest first), ``hexagonal_triad`` (:func:`hexagonal_triad`
        of the waves with share ≥ :data:`MIN_WAVE_SHARE`).
    """
    size = model.config.g_module_size
    if not size or model.config.transition_activation != "linear":
        return None
    W = model.transition_matrices().double()
    g = _states(model, LOOP_STATES, np.random.default_rng(seed)).double()
    out = []
    for a in range(0, W.shape[-1], size):
        waves = _waves(W[:, a:a + size, a:a + size], kind, g[:, a:a + size])["waves"]
        strong = [wv for wv in waves if wv["share"] >= MIN_WAVE_SHARE]
        out.append({"units": [a, a + size], "waves": waves,
                    "hexagonal_triad": hexagonal_triad(strong)})
    return out


@torch.no_grad()
def transition_diagnostics(model, kind: str, seed: int = 0) -> dict:
    """Everything above for one model, as plain JSON-ready data.

    ``inverse_error`` (per opposite pair ||W_a W_ā − I||_F / √d, of the linear part),
    ``loop_returns`` (:func:`loop_returns`), and for a linear σ ``wave_vectors``
    (:func:`wave_vectors`) and ``hexagonal_triad`` (:func:`hexagonal_triad` of its waves;
    both None for a nonlinear σ, whose states are not sums of waves), and ``modules``
    (:func:`module_waves`: per grid module, its waves and triad).
    """
    if not model.recurrent:
        return {"recurrent": False}
    W = model.transition_matrices()
    eye = torch.eye(W.shape[-1])
    inv = {f"{a},{b}": float(torch.linalg.norm(W[a] @ W[b] - eye) / math.sqrt(W.shape[-1]))
           for a, b in model.move_pairs()}
    linear = model.config.transition_activation == "linear"
    waves = wave_vectors(model, kind) if linear else None
    return {"recurrent": True, "inverse_error": inv,
            "loop_returns": loop_returns(model, kind, seed),
            "wave_vectors": waves,
            "hexagonal_triad": hexagonal_triad(waves["waves"]) if linear else None,
            "modules": module_waves(model, kind, seed),
            "transition_activation": model.config.transition_activation,
            "transition_param": model.config.transition_param,
            "g_norm": model.config.g_norm}

"""Transition diagnostics on models with known weights: exact 2D rotations (known waves, exact
inverses, one memory per node) and the same rotations spoiled (opposite moves no longer undo
each other, so revisits write new memories)."""

import math

import numpy as np
import pytest
import torch

from hippo_rep.models.transitions import smallest_loop, transition_diagnostics, wave_vectors
from hippo_rep.training.evaluate import evaluate, memories_per_node
from hippo_rep.worlds import parse_world
from tests.test_delay import exact_path_integrator

#: Frequencies (rad per edge) of the exact integrator of tests/test_delay.py.
FREQS = [0.37, 0.71, 1.13, 1.61, 2.03, 2.57]


def spoiled(scale: float):
    """The exact integrator with the "left" and "down" rotations scaled: the moves' opposites
    rotate by a different angle, so a→ā no longer returns to the start."""
    m = exact_path_integrator()
    with torch.no_grad():
        m.W_a[3] *= scale
        m.W_a[4] *= scale
    return m


def test_wave_vectors_of_exact_rotations_are_the_known_waves():
    res = wave_vectors(exact_path_integrator(), "square")
    assert res["commutator"] < 1e-9 and res["n_constant"] == 0
    found = sorted((w["wavelength"], w["angle"]) for w in res["waves"])
    expected = sorted((2 * math.pi / f, a) for f in FREQS for a in (0.0, 90.0))
    # float32 weights: wavelengths to ~1e-6 relative
    np.testing.assert_allclose(found, expected, rtol=1e-5, atol=1e-6)
    assert all(w["count"] == 2 and abs(w["modulus"] - 1) < 1e-5 for w in res["waves"])


@pytest.mark.parametrize("scale, returns", [(1.0, True), (0.7, False)])
def test_loop_returns_tell_exact_inverses_from_broken_ones(scale, returns):
    d = transition_diagnostics(spoiled(scale), "square")
    lr = d["loop_returns"]
    assert set(lr["pair_cosine"]) == {"1,3", "2,4"}
    if returns:
        assert lr["pair_cosine_min"] > 0.9999 and lr["loop_cosine"] > 0.9999
        assert max(d["inverse_error"].values()) < 1e-5
    else:
        assert lr["pair_cosine_min"] < lr["write_threshold"]
        assert min(d["inverse_error"].values()) > 0.1


def test_smallest_loops_return_to_the_start_node():
    for kind in ("square", "hex"):
        w = parse_world(f"{kind}:6")
        node = int(np.flatnonzero((w.transitions[:, 1:] >= 0).all(1))[0])
        start = node
        for a in smallest_loop(kind):
            node = int(w.transitions[node, a])
            assert node >= 0
        assert node == start


def test_memories_per_node_counts_writes_over_distinct_nodes():
    written = np.array([[1, 1, 0, 1, 0], [1, 1, 1, 1, 1]], bool)
    nodes = np.array([[0, 1, 0, 2, 1], [0, 1, 0, 1, 0]])
    np.testing.assert_allclose(memories_per_node(written, nodes), [1.0, 2.5])


@pytest.mark.parametrize("scale, one_per_node", [(1.0, True), (0.7, False)])
def test_add_if_novel_holds_exactly_when_moves_invert(scale, one_per_node):
    res = evaluate(spoiled(scale), parse_world("square:6"), n_envs=2, n_steps=150, n_obs=45,
                   seed=0)
    per_node = res["memory"]["memories_per_node"]
    if one_per_node:
        assert per_node == pytest.approx(1.0)
    else:
        assert per_node > 1.5


def _waves_model(init: str = "random", seed: int = 0, world: str = "hex", extra=()):
    from hippo_rep.config import load_config
    from hippo_rep.models.registry import build_model

    cfg = load_config("small", ["model.n_g=60", "model.g_module_size=6",
                                "model.transition_param=waves",
                                f"model.transition_init={init}", *extra])
    return build_model(cfg.model, 7 if world == "hex" else 5, 45, seed=seed)


@pytest.mark.parametrize("world", ["hex", "square"])
def test_wave_transitions_commute_and_invert_exactly(world):
    """transition_param = "waves": W_a are rotations by k_p · u_a, so every W_a is orthogonal,
    the moves commute, opposite moves undo each other and the smallest loops close: g is a
    function of the node, whatever the wave vectors."""
    m = _waves_model(world=world)
    W = m.transition_matrices().detach().double()
    eye = torch.eye(W.shape[-1], dtype=W.dtype)
    for a in range(W.shape[0]):
        torch.testing.assert_close(W[a] @ W[a].T, eye, atol=1e-6, rtol=0)
        for b in range(W.shape[0]):
            torch.testing.assert_close(W[a] @ W[b], W[b] @ W[a], atol=1e-6, rtol=0)
    torch.testing.assert_close(W[0], eye)  # stay
    with torch.no_grad():
        assert float(m.inverse_error()) < 1e-10 and float(m.loop_error()) < 1e-10


def test_wave_transitions_carry_their_learned_wave_vectors():
    """The diagnostics read each rotation plane's wave back from W_a: a triad start is a
    triad in every module (the same matrices as the orthogonal triad control), a random
    start in none, and the gradient of a loss on W_a reaches the wave vectors."""
    from hippo_rep.config import load_config
    from hippo_rep.models.registry import build_model

    triad = _waves_model("triad")
    orth = build_model(load_config("small", ["model.n_g=60", "model.g_module_size=6",
                                             "model.transition_init=triad"]).model, 7, 45)
    torch.testing.assert_close(triad.transition_matrices(), orth.transition_matrices(),
                               atol=1e-5, rtol=0)
    found = [mm["hexagonal_triad"]["found"]
             for mm in transition_diagnostics(triad, "hex")["modules"]]
    assert found == [True] * 10
    lam = 2 * math.pi / triad.W_a.detach().norm(dim=1)
    np.testing.assert_allclose(lam[:3].numpy(), 5.0, rtol=1e-5)  # module 0: 5 nodes
    rand = _waves_model("random")
    found = [mm["hexagonal_triad"]["found"]
             for mm in transition_diagnostics(rand, "hex")["modules"]]
    assert sum(found) <= 2  # independent random waves are rarely a triad
    lam = 2 * math.pi / rand.W_a.detach().norm(dim=1)
    assert float(lam.min()) >= 5.0 - 1e-4 and float(lam.max()) <= 18.0 + 1e-3
    loss = (rand.transition_matrices()[1] - torch.eye(60)).pow(2).sum()
    loss.backward()
    assert rand.W_a.grad is not None and float(rand.W_a.grad.abs().sum()) > 0


def test_wave_transitions_need_an_even_width():
    from hippo_rep.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="even model.n_g"):
        load_config("small", ["model.n_g=61", "model.transition_param=waves"])
    with pytest.raises(ConfigError, match="transition_param"):
        load_config("small", ["model.n_g=60", "model.g_module_size=6",
                              "model.transition_param=free", "model.transition_init=triad"])


def test_plane_norm_gives_every_wave_an_equal_share():
    """model.g_norm = "plane": every rotation plane of g has unit RMS (norm √2) at the start
    and after each move, where unit RMS over all units (the same seed) leaves the planes'
    shares unequal; both keep g's overall RMS at 1."""
    plane = _waves_model(extra=["model.g_norm=plane"])
    rms = _waves_model()
    torch.testing.assert_close(plane.W_a, rms.W_a)  # the same weights: only the norm differs
    for m, equal in ((plane, True), (rms, False)):
        with torch.no_grad():
            states = [m._g0(3)]
            for a in (1, 2, 4):
                states.append(m.transition(states[-1], torch.full((3,), a)))
        for h in states:
            norms = h.unflatten(-1, (-1, 2)).norm(dim=-1)  # (3, 30) per plane
            torch.testing.assert_close(h.pow(2).mean(-1), torch.ones(3), atol=1e-4, rtol=0)
            if equal:
                torch.testing.assert_close(norms, torch.full_like(norms, math.sqrt(2)),
                                           atol=1e-4, rtol=0)
            else:
                assert float(norms.max() / norms.min()) > 3


def test_plane_norm_needs_wave_transitions():
    from hippo_rep.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="g_norm"):
        load_config("small", ["model.g_norm=plane"])

"""Grid modules (block-diagonal W_a) and the conformal-isometry loss, on known weights and
known embeddings."""

import math

import numpy as np
import pytest
import torch

from hippo_rep.config import ConfigError, load_config
from hippo_rep.models.registry import build_model
from hippo_rep.models.temt import module_mask
from hippo_rep.models.temt_losses import (
    ISOMETRY_METRIC_FIELDS,
    isometry_loss,
    lattice_displacements,
    module_scales,
    transition_isometry_loss,
)
from hippo_rep.models.transitions import transition_diagnostics
from hippo_rep.training.checkpoint import load_checkpoint
from hippo_rep.training.trainer import metric_fields
from hippo_rep.worlds import DIRECTIONS, n_actions_for
from tests.test_cells import _weights_after, rotation_generators

MODULES = ["model.g_module_size=6"]  # tiny: n_g = 24, four modules


def _cfg(sets=()):
    return load_config("tiny", list(sets))


def test_module_mask_is_block_diagonal():
    m = module_mask(6, 2)
    assert m.shape == (6, 6) and m.sum() == 12
    assert m[0, 1] == 1 and m[1, 2] == 0 and m[5, 4] == 1
    assert torch.equal(module_mask(4, 0), torch.ones(4, 4))


@pytest.mark.parametrize("param", ["orthogonal", "free"])
def test_modules_move_only_their_own_units(param):
    cfg = _cfg([*MODULES, f"model.transition_param={param}", "model.transition_init_std=0.3"])
    model = build_model(cfg.model, n_actions_for("square"), cfg.world.n_obs, seed=0)
    W = model.transition_matrices().detach()
    off = W * (1 - module_mask(24, 6))
    assert float(off.abs().max()) == 0.0
    assert float((W * module_mask(24, 6) - torch.eye(24)).abs().max()) > 0.05
    # the same weights without modules couple units across blocks
    full = build_model(_cfg([f"model.transition_param={param}",
                             "model.transition_init_std=0.3"]).model, 5, 10, seed=0)
    coupled = full.transition_matrices().detach() * (1 - module_mask(24, 6))
    assert float(coupled.abs().max()) > 0.05


@pytest.mark.parametrize("sets, key", [
    (["model.g_module_size=5"], "g_module_size"),    # odd
    (["model.g_module_size=10"], "g_module_size"),   # does not divide n_g = 24
    (["model.kind=tem", "train.loss_isometry=1"], "loss_isometry"),
])
def test_impossible_modules_are_refused(sets, key):
    with pytest.raises(ConfigError, match=key):
        _cfg(sets)


def _line(k, steps, size=2, n_modules=1):
    """g of a walk along x, one step per time step: each module one rotation plane at k."""
    x = torch.arange(steps, dtype=torch.float32)
    plane = torch.stack([torch.cos(k * x), torch.sin(k * x)], -1)  # (T, 2)
    g = plane.repeat(1, n_modules * size // 2)
    pos = torch.stack([x, torch.zeros_like(x)], -1)
    return g[None], pos[None]


def test_isometry_loss_of_a_known_embedding():
    k = 0.9
    g, pos = _line(k, 12)
    # one rotation plane: ||u(x + d) − u(x)|| = 2 sin(k d / 2)
    exact = 2 * math.sin(k / 2)
    cfg = _cfg(["model.n_g=2", "train.isometry_lags=3", "train.isometry_range=1.5",
                f"train.isometry_scale={exact}"])
    assert float(isometry_loss(g, pos, cfg)) == pytest.approx(0.0, abs=1e-10)
    # another scale: exactly (2 sin(k/2) − s)² (pairs 2 and 3 steps apart are out of range)
    cfg = _cfg(["model.n_g=2", "train.isometry_lags=3", "train.isometry_range=1.5",
                "train.isometry_scale=0.5"])
    assert float(isometry_loss(g, pos, cfg)) == pytest.approx((exact - 0.5) ** 2, rel=1e-5)
    # with the 2-step pairs in range: the mean over both lags' pairs
    cfg = _cfg(["model.n_g=2", "train.isometry_lags=3", "train.isometry_range=2.5",
                "train.isometry_scale=0.5"])
    e1, e2 = (exact - 0.5) ** 2, (2 * math.sin(k) - 1.0) ** 2
    assert float(isometry_loss(g, pos, cfg)) == pytest.approx((11 * e1 + 10 * e2) / 21,
                                                             rel=1e-5)


def test_isometry_scales_per_module():
    cfg = _cfg([*MODULES, "train.isometry_scale=0.8", "train.isometry_scale_ratio=2"])
    assert module_scales(cfg).tolist() == pytest.approx([0.8, 0.4, 0.2, 0.1])
    # each module is held to its own scale: modules at the same k, scale 0.8 fits none
    k = 2 * math.asin(0.4)  # 2 sin(k / 2) = 0.8
    g, pos = _line(k, 10, size=6, n_modules=4)
    got = float(isometry_loss(g, pos, _cfg([*MODULES, "train.isometry_scale=0.8",
                                            "train.isometry_scale_ratio=2",
                                            "train.isometry_lags=1"])))
    assert got == pytest.approx(((0.8 - 0.4) ** 2 + (0.8 - 0.2) ** 2 + (0.8 - 0.1) ** 2) / 4,
                                rel=1e-5)


def test_revisits_ask_for_the_same_state_and_stay_finite():
    g = torch.ones(1, 4, 2, requires_grad=True)
    pos = torch.zeros(1, 4, 2)
    loss = isometry_loss(g, pos, _cfg(["model.n_g=2"]))
    loss.backward()
    assert float(loss.detach()) == pytest.approx(0.0, abs=1e-10)
    assert torch.isfinite(g.grad).all()


@pytest.mark.parametrize("kind, lengths", [
    ("square", [1, 1, 2 ** 0.5, 2 ** 0.5, 2, 2, *[5 ** 0.5] * 4]),
    ("hex", [1, 1, 1, *[3 ** 0.5] * 3, 2, 2, 2]),
])
def test_lattice_displacements_walk_where_they_say(kind, lengths):
    disp = lattice_displacements(kind, 2.3)
    assert sorted(d for _, d in disp) == pytest.approx(sorted(lengths))
    ang = np.deg2rad(DIRECTIONS[kind])
    ends = []
    for path, dist in disp:
        end = sum(np.array([np.cos(ang[a - 1]), np.sin(ang[a - 1])]) for a in path)
        assert np.linalg.norm(end) == pytest.approx(dist)
        ends.append(end)
    # no displacement twice, nor both d and −d
    ends = np.round(np.array(ends), 6)
    assert len({tuple(e) for e in ends} | {tuple(-e) for e in ends}) == 2 * len(ends)


@pytest.mark.parametrize("ratio,per_module", [(1.0, False), (1.3, False), (1.3, True)])
def test_transition_isometry_of_known_waves(ratio, per_module):
    waves = [(7.0, 0.0), (7.0, 60.0), (7.0, 120.0), (6.0, 0.0), (6.0, 90.0), (8.5, 45.0),
             (5.0, 10.0), (5.0, 70.0), (6.0, 130.0), (9.0, 30.0), (9.0, 90.0), (9.0, 150.0)]
    m = _module_model(waves)
    # states with known amplitudes per plane (a state's rms scale does not matter)
    amp = np.random.default_rng(0).uniform(0.5, 1.5, 12)
    g = torch.zeros(1, 3, 24)
    for j, a in enumerate(amp):
        g[0, :, 2 * j] = float(a)
    cfg = _cfg([*MODULES, "train.isometry_scale=0.6", "train.isometry_stride=1",
                f"train.isometry_scale_ratio={ratio}",
                f"train.isometry_range_per_module={str(per_module).lower()}"])
    got = float(transition_isometry_loss(m, g, "square", cfg).detach())
    # ||u(x + d) − u(x)||² = Σ_i a_i² 2 (1 − cos k_i·d) / Σ_i a_i², per module m of scale
    # s_m = 0.6 / ratio^m; with per-module ranges module m sees displacements ≤ 2.3 ratio^m
    # and its error is averaged over its own displacements before the mean over modules
    errs = [[] for _ in range(4)]
    reach = [2.3 * ratio ** mod if per_module else 2.3 for mod in range(4)]
    for path, dist in lattice_displacements("square", max(reach)):
        d = sum(np.array([[1, 0], [0, 1], [-1, 0], [0, -1]][a - 1]) for a in path)
        for mod in range(4):
            if dist > reach[mod] + 1e-9:
                continue
            a2 = amp[3 * mod:3 * mod + 3] ** 2
            k = [2 * math.pi / lam * np.array([math.cos(math.radians(t)),
                                               math.sin(math.radians(t))])
                 for lam, t in waves[3 * mod:3 * mod + 3]]
            du2 = sum(a * 2 * (1 - math.cos(kk @ d)) for a, kk in zip(a2, k, strict=True))
            errs[mod].append((math.sqrt(du2 / a2.sum()) - 0.6 / ratio ** mod * dist) ** 2)
    want = (np.mean([np.mean(e) for e in errs]) if per_module
            else np.mean([e for es in errs for e in es]))
    assert [len(e) for e in errs] == ([10, 12, 22, 40] if per_module else [10] * 4)
    assert got == pytest.approx(want, rel=1e-4)


def test_with_equal_plane_powers_every_state_gives_the_same_isometry_error():
    """Learned waves rotate each plane and g_norm=plane keeps every plane at unit RMS, so a
    module's distance after a move does not depend on the state it starts from (why a
    coarse isometry_stride loses nothing there)."""
    cfg = _cfg(["model.g_module_size=6", "model.transition_param=waves", "model.g_norm=plane",
                "train.isometry_stride=1", "train.isometry_scale_ratio=1.15",
                "train.isometry_range_per_module=true"])
    m = build_model(cfg.model, n_actions=n_actions_for("hex"), n_obs=cfg.world.n_obs)
    g = m._norm(torch.randn(5, cfg.model.n_g, generator=torch.Generator().manual_seed(0)))
    with torch.no_grad():
        each = [float(transition_isometry_loss(m, g[i].view(1, 1, -1), "hex", cfg))
                for i in range(5)]
    assert each == pytest.approx([each[0]] * 5, rel=1e-5) and each[0] > 0


@pytest.mark.parametrize("pairs", ["walk", "transition"])
def test_isometry_trains_the_modules_and_logs(tmp_path, pairs):
    w0, rows0 = _weights_after(MODULES, 3, tmp_path, "off")
    w1, rows1 = _weights_after([*MODULES, "train.loss_isometry=1",
                                f"train.isometry_pairs={pairs}"], 3, tmp_path, "on")
    assert "loss_isometry" not in rows0[0] and rows1[0]["loss_isometry"] > 0
    assert not torch.equal(w0["W_a"], w1["W_a"])
    assert set(ISOMETRY_METRIC_FIELDS) <= set(metric_fields(load_config(
        "tiny", ["train.loss_isometry=1"])))
    assert not set(ISOMETRY_METRIC_FIELDS) & set(metric_fields(load_config("tiny")))


def test_old_checkpoints_have_one_module():
    _, cfg, _ = load_checkpoint("data/temt_paper.pt")
    assert cfg.model.g_module_size == 0 and cfg.train.loss_isometry == 0


def _module_model(waves):
    """Modules of 6 units whose W_a rotate unit pair j by k_j·u_a (planes 3m..3m+2 are module
    m's): each module is the three plane waves listed for it (wavelength, angle in degrees)."""
    cfg = _cfg([*MODULES, "model.landmark=false"])
    m = build_model(cfg.model, n_actions_for("square"), cfg.world.n_obs, seed=0)
    with torch.no_grad():
        m.W_a.copy_(rotation_generators(waves))
        m.g_init.zero_()
        m.g_init[::2] = 1.0  # the same power in every plane
    return m


def test_each_module_is_a_triad_or_holds_none():
    waves = [(7.0, 0.0), (7.0, 60.0), (7.0, 120.0),      # module 0: hexagonal
             (6.0, 0.0), (6.0, 90.0), (8.5, 45.0),       # module 1: square and a diagonal
             (5.0, 10.0), (5.0, 70.0), (6.0, 130.0),     # module 2: lengths 20% apart
             (9.0, 30.0), (9.0, 90.0), (9.0, 150.0)]     # module 3: hexagonal, rotated
    res = transition_diagnostics(_module_model(waves), "square")["modules"]
    assert [m["units"] for m in res] == [[0, 6], [6, 12], [12, 18], [18, 24]]
    assert [m["hexagonal_triad"]["found"] for m in res] == [True, False, False, True]
    assert all(len(m["waves"]) == 3 for m in res)
    np.testing.assert_allclose(sorted(w["wavelength"] for w in res[3]["waves"]), [9.0] * 3,
                               rtol=1e-4)
    assert res[2]["hexagonal_triad"]["length_ratio"] == pytest.approx(6 / 5, rel=1e-4)
    assert all(w["share"] == pytest.approx(1 / 3, abs=1e-4) for m in res for w in m["waves"])
    # a plane the states do not occupy shows in no map: module 0 without its third wave's
    # power is no triad
    m = _module_model(waves)
    with torch.no_grad():
        m.g_init[4] = 0.0
    res = transition_diagnostics(m, "square")["modules"]
    assert not res[0]["hexagonal_triad"]["found"] and res[3]["hexagonal_triad"]["found"]
    assert res[0]["waves"][-1]["share"] == pytest.approx(0.0, abs=1e-9)
    # no modules: no per-module entry
    cfg = _cfg()
    plain = build_model(cfg.model, n_actions_for("square"), cfg.world.n_obs, seed=0)
    assert transition_diagnostics(plain, "square")["modules"] is None


def test_loop_error_is_zero_for_commuting_moves_only():
    waves = [(7.0, 0.0), (7.0, 60.0), (7.0, 120.0)] * 4
    torus = _module_model(waves)  # rotations by k·u: commuting, opposite moves inverse
    assert float(torus.loop_error().detach()) == pytest.approx(0.0, abs=1e-9)
    assert float(torus.inverse_error().detach()) == pytest.approx(0.0, abs=1e-9)
    cfg = _cfg([*MODULES, "model.transition_init_std=0.3"])
    rand = build_model(cfg.model, n_actions_for("square"), cfg.world.n_obs, seed=0)
    assert float(rand.loop_error().detach()) > 0.1
    hexm = build_model(cfg.model, n_actions_for("hex"), cfg.world.n_obs, seed=0)
    assert hexm.smallest_loops() == [[1, 3, 5], [2, 4, 6]]
    assert rand.smallest_loops() == [[1, 2, 3, 4]]


def test_loop_loss_trains_w_a_and_logs(tmp_path):
    w0, _ = _weights_after(MODULES, 2, tmp_path, "off")
    w1, rows = _weights_after([*MODULES, "train.loss_loop=1"], 2, tmp_path, "on")
    assert rows[0]["loss_loop"] > 0 and not torch.equal(w0["W_a"], w1["W_a"])
    assert "loss_loop" in metric_fields(load_config("tiny", ["train.loss_loop=1"]))


@pytest.mark.parametrize("kind", ["hex", "square"])
def test_triad_start_is_an_exact_triad_in_every_module(kind):
    cfg = _cfg([*MODULES, "model.transition_init=triad", "model.triad_wavelength=6",
                "model.triad_scale_ratio=1.5"])
    m = build_model(cfg.model, n_actions_for(kind), cfg.world.n_obs, seed=3)
    res = transition_diagnostics(m, kind)
    assert [mod["hexagonal_triad"]["found"] for mod in res["modules"]] == [True] * 4
    for i, mod in enumerate(res["modules"]):
        assert len(mod["waves"]) == 3
        np.testing.assert_allclose([w["wavelength"] for w in mod["waves"]], [6 * 1.5 ** i] * 3,
                                   rtol=1e-6)
        angles = sorted(w["angle"] for w in mod["waves"])
        np.testing.assert_allclose(np.diff(angles), [60, 60], atol=1e-4)  # float32 W_a
        assert all(w["share"] == pytest.approx(1 / 3, abs=1e-4) for w in mod["waves"])
    # commuting rotations, opposite moves inverse: a torus of waves
    assert float(m.loop_error().detach()) == pytest.approx(0.0, abs=1e-9)
    assert float(m.inverse_error().detach()) == pytest.approx(0.0, abs=1e-9)
    # the seed turns the modules (orientation), not their wavelengths
    other = build_model(cfg.model, n_actions_for(kind), cfg.world.n_obs, seed=4)
    assert not torch.equal(other.W_a, m.W_a)
    again = build_model(cfg.model, n_actions_for(kind), cfg.world.n_obs, seed=3)
    assert torch.equal(again.W_a, m.W_a) and torch.equal(again.g_init, m.g_init)


def test_a_random_start_is_no_triad():
    """The negative control of the diagnostic: random modules hold no triad."""
    cfg = _cfg([*MODULES, "model.transition_init_std=0.3"])
    m = build_model(cfg.model, n_actions_for("hex"), cfg.world.n_obs, seed=3)
    res = transition_diagnostics(m, "hex")["modules"]
    assert not any(mod["hexagonal_triad"]["found"] for mod in res)


@pytest.mark.parametrize("sets", [["model.transition_init=triad"],
                                  [*MODULES, "model.transition_init=triad",
                                   "model.transition_param=free"],
                                  ["model.g_module_size=4", "model.transition_init=triad"]])
def test_triad_start_needs_modules_of_six_orthogonal_units(sets):
    with pytest.raises(ConfigError, match="transition_init"):
        _cfg(sets)


def test_frozen_triad_stays_a_triad_while_the_rest_trains(tmp_path):
    sets = [*MODULES, "model.transition_init=triad", "train.transition_lr_scale=0"]
    cfg = load_config("tiny", sets)
    w_start = build_model(cfg.model, n_actions_for("square"), cfg.world.n_obs,
                          seed=cfg.train.seed).state_dict()
    w, _ = _weights_after(sets, 2, tmp_path, "frozen")
    assert torch.equal(w["W_a"], w_start["W_a"])
    assert not torch.equal(w["W_e.weight"], w_start["W_e.weight"])

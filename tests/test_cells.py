"""Read-out cells (model.cells = "readout"), their constraints, and the diagnostics of whether
a model can carry hexagonal cells at all (the wave triad of W_a, walk-constant power)."""

import math

import numpy as np
import pytest
import torch

from hippo_rep.config import ConfigError, load_config
from hippo_rep.models.registry import build_model
from hippo_rep.models.temt_losses import (
    CELL_METRIC_FIELDS,
    cell_losses,
    cells_weight,
    virtual_cells,
    walk_constant_power,
)
from hippo_rep.models.transitions import hexagonal_triad, transition_diagnostics
from hippo_rep.recording import record_checkpoint
from hippo_rep.training.checkpoint import load_checkpoint, save_checkpoint
from hippo_rep.training.evaluate import evaluate
from hippo_rep.training.trainer import Trainer, TrainingError, metric_fields
from hippo_rep.worlds import n_actions_for, parse_world, sample_episodes

READOUT = ["model.cells=readout", "model.n_cells=20"]


def _model(sets=(), seed=0):
    cfg = load_config("tiny", list(sets))
    return build_model(cfg.model, n_actions_for("square"), cfg.world.n_obs, seed=seed), cfg


def _batch(cfg, n=3, steps=30, seed=1):
    ep = sample_episodes([parse_world(cfg.world.worlds[0])], n, steps, cfg.world.n_obs,
                         np.random.default_rng(seed))
    return torch.as_tensor(ep.observations), torch.as_tensor(ep.actions)


def _descend(m, loss, lr):
    """One plain gradient step of ``m``'s weights on ``loss`` (gradients kept)."""
    loss.backward()
    with torch.no_grad():
        for p in m.parameters():
            if p.grad is not None:
                p -= lr * p.grad


def test_readout_cells_key_the_prediction_and_are_non_negative():
    m, cfg = _model(READOUT)
    obs, act = _batch(cfg)
    out, _ = m(obs, act)
    assert out.cells.shape == (*obs.shape, 20) and out.cells_pi.shape == (*obs.shape, 20)
    assert float(out.cells.detach().min()) >= 0.0
    torch.testing.assert_close(out.cells, m.cell_activity(out.g))
    # A different read-out leaves g alone but changes what the memory predicts: the keys
    # come from the cells.
    with torch.no_grad():
        m.cell_readout.weight.mul_(-2.0)
    out2, _ = m(obs, act)
    torch.testing.assert_close(out2.g, out.g)
    assert not torch.allclose(out2.logits_pi, out.logits_pi)


MODULAR = [*READOUT, "model.g_module_size=6", "model.cells_modular=true"]


def test_modular_cells_read_one_module_each():
    """n_g 24 in modules of 6 (M = 4): cell c reads module c mod 4 and nothing else."""
    m, cfg = _model(MODULAR)
    g = torch.randn(5, 24)
    r0 = m.cell_activity(g)
    for module in range(4):
        g2 = g.clone()
        g2[:, 6 * module:6 * module + 6] += torch.randn(5, 6)
        changed = (m.cell_activity(g2) - r0).abs().amax(0) > 0
        readers = torch.arange(20) % 4 == module
        assert not changed[~readers].any()  # the other modules' cells are blind to it
        assert changed[readers].any()
    # the same weights read freely: every cell sees every module
    free, _ = _model(READOUT)
    free.load_state_dict(m.state_dict())
    assert not torch.allclose(free.cell_activity(g), r0)
    # the mask is not saved: the state dict is the free model's, so checkpoints stay alike
    assert set(m.state_dict()) == set(free.state_dict())


def test_modular_cells_train_only_their_module_weights():
    m, cfg = _model([*MODULAR, "train.loss_cells_energy=1"])
    obs, act = _batch(cfg)
    cell_losses(m(obs, act)[0], cfg, 1.0)["loss"].backward()
    grad = m.cell_readout.weight.grad
    assert (grad[m.cell_mask == 0] == 0).all() and (grad[m.cell_mask == 1] != 0).any()


@pytest.mark.parametrize("sets", [["model.cells_modular=true"],
                                  [*READOUT, "model.cells_modular=true"]])
def test_modular_cells_need_readout_cells_and_modules(sets):
    with pytest.raises(ConfigError, match="cells_modular"):
        load_config("tiny", sets)


def test_signed_cells_go_negative_and_the_penalty_lifts_them():
    m, cfg = _model([*READOUT, "model.cells_activation=none", "model.cells_bias_init=0",
                     "train.loss_cells_neg=1"])
    obs, act = _batch(cfg)
    out, _ = m(obs, act)
    assert float(out.cells.detach().min()) < 0
    before = cell_losses(out, cfg, 1.0)
    assert float(before["loss_cells_neg"]) > 0
    _descend(m, before["loss"], 0.5)
    after = cell_losses(m(obs, act)[0], cfg, 1.0)
    assert float(after["loss_cells_neg"]) < float(before["loss_cells_neg"])


def test_energy_cost_shrinks_the_cells():
    m, cfg = _model([*READOUT, "train.loss_cells_energy=1"])
    obs, act = _batch(cfg)
    before = cell_losses(m(obs, act)[0], cfg, 1.0)
    _descend(m, before["loss"], 0.1)
    assert m.cell_readout.weight.grad.abs().sum() > 0
    after = cell_losses(m(obs, act)[0], cfg, 1.0)
    assert float(after["loss_cells_energy"]) < float(before["loss_cells_energy"])


WAVES = [*READOUT, "model.n_g=24", "model.transition_param=waves", "model.g_norm=plane"]
UNIT = [*WAVES, "model.cells_activation=none", "model.cells_unit_norm=true"]


def test_displace_is_the_moves_of_w_a():
    """TEMt.displace by an action's displacement is one move (g W_a; the move's rescaling,
    whose ε shrinks a unit-RMS plane by ~1e-4, applied to both), and two displacements
    compose."""
    m, cfg = _model(WAVES)
    m = m.double()
    g = m._norm(torch.randn(5, 24, dtype=torch.float64))
    W = m.transition_matrices()
    for a in range(1, m.n_actions):
        x = m.move_disp[a].double().expand(5, 2)
        torch.testing.assert_close(m._norm(m.displace(g, x)), m.move(g, a, W))
    x, y = torch.randn(5, 2, dtype=torch.float64) * 7, torch.randn(5, 2, dtype=torch.float64) * 7
    torch.testing.assert_close(m.displace(m.displace(g, x), y), m.displace(g, x + y))


def test_unit_norm_cells_ignore_the_scale_of_their_weights():
    m, cfg = _model(UNIT)
    g = torch.randn(7, 24)
    r0 = m.cell_activity(g)
    with torch.no_grad():
        m.cell_readout.weight.mul_(torch.rand(20, 1) * 5 + 0.1)  # a scale per cell
    torch.testing.assert_close(m.cell_activity(g), r0)
    free, _ = _model([*WAVES, "model.cells_activation=none"])
    free.load_state_dict(m.state_dict())
    assert not torch.allclose(free.cell_activity(g), r0)  # the option changes the output
    with pytest.raises(ConfigError, match="cells_unit_norm"):
        load_config("tiny", ["model.cells_unit_norm=true"])


def test_virtual_constraints_see_whole_periods():
    """Over a square many wavelengths wide, a unit-norm cell has mean r² = 1 + b² (variance 1:
    every plane of g at unit RMS) whatever its weights, and a cell on one wave with b = 0
    has mean relu(−r)² = E[relu(−√2 cos θ)²] = 1/2, in a 3×3 training world."""
    sets = [*UNIT, "world.worlds=[\"square:3\"]", "train.cells_virtual=4096",
            "train.cells_virtual_extent=400", "train.loss_cells_neg=1",
            "train.loss_cells_energy=1"]
    m, cfg = _model(sets)
    obs, act = _batch(cfg)
    out, _ = m(obs, act)
    b = 0.7
    with torch.no_grad():
        m.cell_readout.bias.fill_(b)
    r = virtual_cells(m, out.g, cfg, iteration=3)
    assert r.shape == (4096, 20)
    np.testing.assert_allclose(r.pow(2).mean(0).detach().numpy(), 1 + b ** 2, rtol=0.1)
    with torch.no_grad():
        m.cell_readout.weight.zero_()
        m.cell_readout.weight[:, 0] = 1.0  # every cell: plane 0's cosine unit
        m.cell_readout.bias.zero_()
    parts = cell_losses(out, cfg, 1.0, virtual_cells(m, out.g, cfg, iteration=3))
    assert abs(float(parts["loss_cells_neg"]) - 0.5) < 0.05
    assert abs(float(parts["loss_cells_energy"]) - 1.0) < 0.08
    # reproducible from (seed, iteration), and another iteration draws other places
    torch.testing.assert_close(virtual_cells(m, out.g, cfg, 3), virtual_cells(m, out.g, cfg, 3))
    assert not torch.equal(virtual_cells(m, out.g, cfg, 3), virtual_cells(m, out.g, cfg, 4))


def test_virtual_constraints_train_the_cells_only():
    m, cfg = _model([*UNIT, "train.cells_virtual=64", "train.loss_cells_neg=1",
                     "train.loss_cells_energy=1"])
    obs, act = _batch(cfg)
    out, _ = m(obs, act)
    cell_losses(out, cfg, 1.0, virtual_cells(m, out.g, cfg, 0))["loss"].backward()
    grads = {k: p.grad for k, p in m.named_parameters()}
    assert grads["cell_readout.weight"].abs().sum() > 0
    assert grads["cell_readout.bias"].abs().sum() > 0
    assert all(g is None or not g.any() for k, g in grads.items() if not k.startswith("cell_"))


@pytest.mark.parametrize("sets", [["model.cells=readout", "train.cells_virtual=8"],
                                  [*READOUT, "model.transition_param=waves",
                                   "model.g_norm=plane", "model.n_g=24",
                                   "model.transition_activation=relu",
                                   "train.cells_virtual=8"]])
def test_virtual_constraints_need_linear_wave_transitions(sets):
    with pytest.raises(ConfigError, match="cells_virtual"):
        load_config("tiny", sets)


def test_walk_constant_power_of_known_populations():
    t = torch.arange(40, dtype=torch.float64)
    wave = torch.stack([torch.cos(2 * math.pi * t / 20), torch.sin(2 * math.pi * t / 20)], -1)
    const = torch.ones(40, 2, dtype=torch.float64)
    x = torch.stack([const, wave, wave + 1.0])  # (3, 40, 2)
    # constant: 1; two full periods of a rotation: 0; offset 1 on each of 2 units beside a
    # unit-norm rotation: ||c||² / (||c||² + 1) = 2 / 3
    np.testing.assert_allclose(walk_constant_power(x).numpy(), [1.0, 0.0, 2 / 3], atol=1e-12)


def test_constraints_ramp_in_after_their_start():
    cfg = load_config("tiny", ["train.cells_ramp_start=10", "train.cells_ramp=4"])
    assert [cells_weight(cfg, i) for i in (0, 9, 10, 11, 13, 100)] == [0, 0, .25, .5, 1, 1]
    step = load_config("tiny", ["train.cells_ramp_start=3", "train.cells_ramp=0"])
    assert [cells_weight(step, i) for i in (2, 3)] == [0, 1]


def _weights_after(sets, iterations, tmp_path, name):
    cfg = load_config("tiny", [*sets, f"train.iterations={iterations}"])
    tr = Trainer(cfg, tmp_path / name, progress=False)
    rows = [tr.step(i) for i in range(iterations)]
    return {k: v.detach().clone() for k, v in tr.model.state_dict().items()}, rows


def test_constraints_train_only_once_ramped_in(tmp_path):
    base = [*READOUT, "train.loss_cells_energy=0", "train.loss_g_const=0"]
    on = [*READOUT, "train.loss_cells_energy=1", "train.loss_g_const=1"]
    w0, _ = _weights_after([*base, "train.cells_ramp_start=2"], 2, tmp_path, "a")
    w1, rows = _weights_after([*on, "train.cells_ramp_start=2"], 2, tmp_path, "b")
    for k in w0:  # weight 0 before the ramp: the same run
        torch.testing.assert_close(w0[k], w1[k], rtol=0, atol=0)
    assert [r["cells_weight"] for r in rows] == [0.0, 0.0]
    w2, rows = _weights_after([*on, "train.cells_ramp_start=0", "train.cells_ramp=0"], 2,
                              tmp_path, "c")
    assert rows[0]["cells_weight"] == 1.0 and rows[0]["loss_g_const"] > 0
    assert any(not torch.equal(w0[k], w2[k]) for k in w0)


def test_walk_constant_penalty_alone_changes_a_g_model(tmp_path):
    w0, _ = _weights_after([], 2, tmp_path, "a")
    w1, rows = _weights_after(["train.loss_g_const=1", "train.cells_ramp_start=0"], 2,
                              tmp_path, "b")
    assert set(CELL_METRIC_FIELDS) <= set(rows[0])
    assert not torch.equal(w0["W_a"], w1["W_a"])


def test_metric_columns_only_with_cell_terms():
    assert not set(CELL_METRIC_FIELDS) & set(metric_fields(load_config("tiny")))
    assert set(CELL_METRIC_FIELDS) <= set(metric_fields(load_config("tiny", READOUT)))


@pytest.mark.parametrize("memory", ["fam", "hebbian"])
def test_readout_refuses_memories_that_key_on_g(memory):
    with pytest.raises(ConfigError, match="model.cells"):
        load_config("tiny", [*READOUT, f"model.memory={memory}"])


def test_g_models_have_no_readout_and_old_checkpoints_load_unchanged(tmp_path):
    m, cfg = _model()
    assert m.cell_readout is None and not any("cell" in k for k in m.state_dict())
    with pytest.raises(ValueError, match="readout"):
        m.cell_activity(torch.zeros(1, cfg.model.n_g))
    # the shipped checkpoint predates the options: same weights, cells = "g"
    model, old, _ = load_checkpoint("data/temt_paper.pt")
    assert old.model.cells == "g" and model.cell_readout is None
    raw = torch.load("data/temt_paper.pt", map_location="cpu", weights_only=False)
    assert set(raw["model_state"]) == set(model.state_dict())


def test_recording_of_a_readout_model_records_the_cells(tmp_path):
    m, cfg = _model(READOUT)
    path = tmp_path / "c.pt"
    save_checkpoint(path, m, cfg, 0)
    ds = record_checkpoint(path, n_envs=2, n_steps=24)
    assert ds.sizes["g_unit"] == 20 and float(ds.g.min()) >= 0
    assert "read-out cells" in ds.g.attrs["long_name"]
    out, _ = m(torch.as_tensor(ds.observation.values), torch.as_tensor(ds.action.values))
    np.testing.assert_allclose(ds.g.values, out.cells.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_evaluate_reports_walk_constant_power():
    for sets, cells in (([], False), (READOUT, True)):
        m, cfg = _model(sets)
        res = evaluate(m, [parse_world("square:4")], 3, 40, cfg.world.n_obs, seed=2)
        wcp = res["walk_constant_power"]
        assert 0 <= wcp["g"] <= 1
        assert (wcp["cells"] is not None) == cells


def rotation_generators(waves, d: int = 24) -> torch.Tensor:
    """Orthogonal-parametrisation weights W_a (5, d, d) of a square lattice that rotate unit
    pair j by k_j·u_a (W_a = exp(S − Sᵀ) = exp(A), S = A / 2): unit pairs are plane waves with
    the given wave vectors (wavelength in nodes, angle in degrees)."""
    units = [(1, 0), (0, 1), (-1, 0), (0, -1)]  # actions 1-4 (hippo_rep.worlds.DIRECTIONS)
    A = torch.zeros(5, d, d)
    for j, (lam, ang) in enumerate(waves):
        k = 2 * math.pi / lam * np.array([math.cos(math.radians(ang)),
                                          math.sin(math.radians(ang))])
        for a, u in enumerate(units, start=1):
            th = float(k @ np.array(u))
            A[a, 2 * j, 2 * j + 1], A[a, 2 * j + 1, 2 * j] = th, -th
    return A / 2


def _rotation_model(waves):
    """TEM-t on a square lattice whose unit pairs are the given plane waves
    (:func:`rotation_generators`)."""
    m, _ = _model(["model.n_g=24", "model.d_key=24", "model.landmark=false"])
    with torch.no_grad():
        m.W_a.copy_(rotation_generators(waves))
    return m


def test_triad_found_in_a_hexagonal_spectrum_only():
    others = [(3.0 * 1.2 ** i, 17.0 * i) for i in range(9)]
    hexa = _rotation_model([(7.0, 0.0), (7.0, 60.0), (7.0, 120.0), *others])
    res = transition_diagnostics(hexa, "square")["hexagonal_triad"]
    assert res["found"] and res["max_angle_deviation"] < 1e-3
    np.testing.assert_allclose(sorted(res["wavelengths"]), [7.0] * 3, rtol=1e-4)
    np.testing.assert_allclose(res["angles"], [0.0, 60.0, 120.0], atol=1e-3)
    # square lattice waves (0°, 90°) and lengths 15% apart: no triad
    square = _rotation_model([(3.0 * 1.15 ** i, 90.0 * (i % 2)) for i in range(12)])
    assert not transition_diagnostics(square, "square")["hexagonal_triad"]["found"]


def test_triad_rules_on_listed_waves():
    w = [{"wavelength": 6.0, "angle": a} for a in (10.0, 70.0, 130.0)]
    assert hexagonal_triad(w)["found"]
    assert not hexagonal_triad(w[:2])["found"] and hexagonal_triad(w[:2])["waves"] is None
    stretched = [dict(w[0], wavelength=7.0), *w[1:]]  # ratio 7/6 > 1.1
    res = hexagonal_triad(stretched)
    assert not res["found"] and res["length_ratio"] == pytest.approx(7 / 6)
    bent = [w[0], w[1], dict(w[2], angle=140.0)]  # 10° off
    assert not hexagonal_triad(bent)["found"]


def test_wave_panel_rings_the_triad_and_says_what_it_is():
    import matplotlib

    matplotlib.use("Agg")
    from hippo_rep.plotting.transitions import wave_vector_panel

    others = [(3.0 * 1.2 ** i, 17.0 * i) for i in range(5)]
    hexa = transition_diagnostics(_rotation_model([(7.0, 0.0), (7.0, 60.0), (7.0, 120.0),
                                                    *others]), "square")
    ax = wave_vector_panel(hexa, walk_constant=0.25)
    title = ax.get_title()
    assert "60° triad 0° off" in title and "walk-constant power 0.25" in title
    assert len(ax.collections) == 2  # the waves and the ring on the triad
    square = transition_diagnostics(
        _rotation_model([(3.0 * 1.15 ** i, 90.0 * (i % 2)) for i in range(12)]), "square")
    assert "no 60° triad" in wave_vector_panel(square).get_title()


def _triad_readout_checkpoint(tmp_path, kind):
    """A tiny TEM-t on ``kind`` worlds whose W_a is an exact hexagonal triad in each of its
    four modules (wavelength 5 nodes), with no landmark (g is path integration alone), and
    read-out cells set by hand: cells 0-3 add the three waves of module m with their phases
    aligned (a lattice of peaks, ψ = 0), cells 4-7 take one wave of module m (a band), cells
    8-11 the three waves with the second one inverted (ψ = 180°: the rectified map is no
    lattice of peaks)."""
    cfg = load_config("tiny", [*READOUT, "model.n_cells=12", "model.g_module_size=6",
                               "model.transition_init=triad", "model.triad_wavelength=5",
                               "model.triad_scale_ratio=1", "model.landmark=false",
                               f"world.worlds=[\"{kind}:4\"]"])
    m = build_model(cfg.model, n_actions_for(kind), cfg.world.n_obs, seed=1)
    g0 = m._g0(1)[0].detach()
    A = torch.zeros(12, cfg.model.n_g)
    for mod in range(4):
        for j in range(3):
            u = 6 * mod + 2 * j
            # g's plane j of module m is amp·(cos, sin)(k_j·r + φ_j): reading it along g0's
            # direction in the plane gives amp·cos(k_j·r), phase 0 at the start
            along = g0[u:u + 2] / g0[u:u + 2].norm()
            A[mod, u:u + 2] = along
            A[8 + mod, u:u + 2] = -along if j == 1 else along
            if j == 0:
                A[4 + mod, u:u + 2] = 3 * along
    with torch.no_grad():
        m.cell_readout.weight.copy_(A / g0[:2].norm())
        m.cell_readout.bias.fill_(0.0)
    path = tmp_path / f"triad_{kind}.pt"
    save_checkpoint(path, m, cfg, 0)
    return path


@pytest.mark.parametrize("kind", ["hex", "square"])
def test_a_model_with_a_triad_and_known_readout_grows_grids_the_analysis_sees(tmp_path, kind):
    """Known weights end to end: recorded by the recorder, classified by the analysis. The
    three aligned waves are hexagonal lattices of peaks in every environment; one wave is a
    band and no grid; the same three waves out of phase are no grid."""
    from hippo_rep.analysis import analyse

    ds = record_checkpoint(_triad_readout_checkpoint(tmp_path, kind), n_envs=2, n_steps=1500,
                           world=f"{kind}:14", seed=3)
    an = analyse(ds, shuffles=5, seed=0, decode=False, variables=["g"])
    cells = an.hippo.population("g")
    is_grid = cells["is_grid"].values  # (env, unit)
    assert is_grid[:, :4].all(), cells["triad_phase"].values[:, :4]
    assert np.all(np.abs(cells["triad_phase"].values[:, :4]) < 45)
    assert not is_grid[:, 4:].any() and cells["is_band"].values[:, 4:8].all()
    assert np.all(np.abs(cells["triad_phase"].values[:, 8:]) > 135)


def test_a_readout_run_starts_from_another_with_other_cell_rules(tmp_path):
    """init_from may change the cells' rules (A keeps its shape), not their count."""
    cfg = load_config("tiny", [*WAVES, "train.iterations=1"])
    src = Trainer(cfg, tmp_path / "src", progress=False).run()
    run = load_config("tiny", [*UNIT, "train.iterations=1", f"train.init_from={src}"])
    tr = Trainer(run, tmp_path / "dst", progress=False)
    model, _, _ = load_checkpoint(src)
    torch.testing.assert_close(tr.model.cell_readout.weight, model.cell_readout.weight)
    other = load_config("tiny", [*UNIT, "model.n_cells=12", f"train.init_from={src}"])
    with pytest.raises(TrainingError, match="init_from"):
        Trainer(other, tmp_path / "bad", progress=False)


def test_variance_term_holds_each_cell_at_unit_variance():
    """loss_cells_var = mean over cells of (Var r_c − 1)²: cells of known variances give the
    closed form, descent moves a cell's variance towards 1, and it needs read-out cells."""
    m, cfg = _model([*UNIT, "model.cells_unit_norm=false", "train.loss_cells_var=1"])
    obs, act = _batch(cfg)
    out, _ = m(obs, act)
    std = torch.tensor([0.5, 1.0, 2.0])
    cells = torch.randn(4096, 3, generator=torch.Generator().manual_seed(0))
    cells = (cells - cells.mean(0)) / cells.std(0) * std + 3.0
    expected = float(((std ** 2 - 1) ** 2).mean())
    assert float(cell_losses(out, cfg, 1.0, cells)["loss_cells_var"]) == pytest.approx(expected)
    before = float(cell_losses(out, cfg, 1.0)["loss_cells_var"])
    _descend(m, cell_losses(out, cfg, 1.0)["loss"], 0.01)
    after = float(cell_losses(m(obs, act)[0], cfg, 1.0)["loss_cells_var"])
    assert after < before
    with pytest.raises(ConfigError, match="loss_cells_var"):
        load_config("tiny", ["train.loss_cells_var=1"])

"""Calibrating add-if-novel's write threshold (hippo_rep.training.calibrate)."""

import dataclasses

import numpy as np
import pytest
import torch

from hippo_rep.cli import main
from hippo_rep.config import load_config
from hippo_rep.models.registry import build_model
from hippo_rep.training.calibrate import (
    CalibrationError,
    calibrate_checkpoint,
    calibrate_write_threshold,
    choose_threshold,
    novelty_similarities,
)
from hippo_rep.training.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from hippo_rep.training.evaluate import eval_rng, memories_per_node, run_model
from hippo_rep.worlds import n_actions_for, parse_world, sample_episodes


@pytest.mark.parametrize("lo,hi", [(0.90, 0.95), (0.5, 0.9), (0.97, 0.99)])
def test_choose_threshold_separated_takes_the_middle_of_the_gap(lo, hi):
    rng = np.random.default_rng(0)
    revisit = rng.uniform(hi, 1.0, 5000)
    distinct = rng.uniform(-1.0, lo, 5000)
    c = choose_threshold(revisit, distinct)
    assert c["duplicate_rate"] == 0 and c["merge_rate"] == 0
    gap_lo, gap_hi = distinct.max(), revisit.min()
    assert gap_lo <= c["threshold"] < gap_hi
    assert c["threshold"] == pytest.approx((gap_lo + gap_hi) / 2, abs=1.5e-3)
    assert (c["n_revisit"], c["n_distinct"]) == (5000, 5000)


@pytest.mark.parametrize("mu_r,mu_d,sd", [(0.9, 0.8, 0.02), (0.97, 0.5, 0.1)])
def test_choose_threshold_overlapping_is_the_equal_variance_criterion(mu_r, mu_d, sd):
    """Two equal-variance normals, equal weights: the error-minimising criterion is the
    midpoint of the means (signal detection theory)."""
    rng = np.random.default_rng(1)
    c = choose_threshold(rng.normal(mu_r, sd, 200_000), rng.normal(mu_d, sd, 200_000))
    assert c["threshold"] == pytest.approx((mu_r + mu_d) / 2, abs=0.01)
    assert c["duplicate_rate"] > 0 and c["merge_rate"] > 0


@pytest.mark.parametrize("revisit,distinct", [([], [0.1]), ([0.99], []), ([], [])])
def test_choose_threshold_needs_both_kinds(revisit, distinct):
    with pytest.raises(CalibrationError, match="revisits and distinct"):
        choose_threshold(np.array(revisit), np.array(distinct))


def test_novelty_similarities_on_known_encodings():
    """Nodes 0, 1, 0, 2, 0 all showing observation 5, step 2 and 4 not written: at step 2
    the stored memories are steps 0 (node 0: a revisit, similarity 1) and 1 (node 1)."""
    rng = np.random.default_rng(2)
    codes = rng.normal(size=(3, 16))
    nodes = np.array([[0, 1, 0, 2, 0]])
    g = torch.tensor(codes[nodes], dtype=torch.float32)
    written = np.array([[True, True, False, True, False]])
    obs = np.full((1, 5), 5)
    z = (codes - codes.mean(1, keepdims=True)) / codes.std(1, keepdims=True)
    c = z @ z.T / 16
    sims = novelty_similarities(g, written, nodes, obs)
    # steps with a same-node memory: 2 and 4 (node 0, stored at step 0)
    np.testing.assert_allclose(sims["revisit"], [1.0, 1.0], atol=1e-4)  # layer_norm eps
    # steps with another node's memory: 1 (node 0 stored), 2 (node 1), 3 (nodes 0, 1), 4 (1, 2)
    np.testing.assert_allclose(sims["distinct"], [c[1, 0], c[0, 1], max(c[2, 0], c[2, 1]),
                                                  max(c[0, 1], c[0, 2])], atol=1e-4)


def test_novelty_similarities_see_only_the_window():
    """With a window starting at step 2 for step 3, the memory of step 0 (same node) is not
    seen, only step 2's (another node)."""
    nodes = np.array([[0, 1, 2, 0]])
    g = torch.eye(4)[nodes] * 3 + 1
    written = np.ones((1, 4), bool)
    obs = np.zeros((1, 4), int)
    full = novelty_similarities(g, written, nodes, obs)
    assert full["revisit"].size == 1
    win = novelty_similarities(g, written, nodes, obs, window_start=np.array([0, 0, 0, 2]))
    assert win["revisit"].size == 0 and win["distinct"].size == 3


def test_novelty_similarities_ignore_other_observations():
    g = torch.ones(1, 3, 4) + torch.arange(4.0)
    sims = novelty_similarities(g, np.ones((1, 3), bool), np.array([[0, 0, 1]]),
                                np.array([[1, 2, 3]]))
    assert sims["revisit"].size == 0 and sims["distinct"].size == 0


def _torus_model(cfg, seed=0):
    """A TEM-t whose positions are exact: orthogonal W_a made of 2×2 rotations, left = right⁻¹
    and down = up⁻¹ (a torus code, g(x, y) = R_x^x R_y^y g0), no landmark correction. A revisit
    then returns g exactly and distinct nodes differ."""
    model = build_model(cfg.model, n_actions_for("square"), cfg.world.n_obs, seed=seed)
    d = cfg.model.n_g
    rng = np.random.default_rng(seed)
    S = torch.zeros(model.n_actions, d, d)
    for k in range(d // 2):
        for action, sign, freq in ((1, 1, rng.uniform(0.4, 2.6)), (2, 1, rng.uniform(0.4, 2.6))):
            S[action, 2 * k, 2 * k + 1] = sign * freq
            S[action + 2, 2 * k, 2 * k + 1] = -sign * freq  # the opposite move: the inverse
    with torch.no_grad():
        model.W_a.copy_(S)
    return model


def test_calibration_restores_one_memory_per_node_on_a_model_with_exact_positions():
    cfg = load_config("tiny")
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, landmark=False,
                                                             write_threshold=-0.5))
    model = _torus_model(cfg).eval()
    world = parse_world("square:5")
    ep = sample_episodes(world, 4, 300, cfg.world.n_obs, eval_rng(0))

    def per_node():
        written = torch.cat([o.written for o in run_model(model, ep.observations, ep.actions)], 1)
        return memories_per_node(written.numpy(), ep.nodes)

    # a threshold of -0.5 merges distinct nodes that share an observation
    assert per_node().max() < 0.95
    rep = calibrate_write_threshold(model, world, cfg.world.n_obs, n_envs=4, n_steps=300)
    assert model.config.write_threshold == rep["threshold"]
    assert rep["initial_threshold"] == -0.5
    assert rep["rounds"][-1]["duplicate_rate"] == 0 and rep["rounds"][-1]["merge_rate"] == 0
    # held-out walks (another stream): exactly one memory per distinct node
    np.testing.assert_array_equal(per_node(), 1.0)


def test_calibration_is_deterministic(tiny_ckpt):
    model, cfg, _ = load_checkpoint(tiny_ckpt)
    world = parse_world("square:4")
    reps = []
    for _ in range(2):
        model.config = dataclasses.replace(model.config, write_threshold=0.98)
        reps.append(calibrate_write_threshold(model, world, cfg.world.n_obs, 2, 120, seed=3))
    assert reps[0] == reps[1]


def test_calibrate_checkpoint_copies_weights_and_records_the_report(tmp_path, tiny_ckpt):
    out = tmp_path / "calibrated.pt"
    before = tiny_ckpt.read_bytes()
    rep = calibrate_checkpoint(tiny_ckpt, out, n_envs=2, n_steps=120)
    assert tiny_ckpt.read_bytes() == before  # the input is untouched
    src, new = read_checkpoint(tiny_ckpt), read_checkpoint(out)
    assert new["weights_sha256"] == src["weights_sha256"]
    assert new["config"]["model"]["write_threshold"] == rep["threshold"]
    assert new["extra"]["calibration"]["source_sha256"] == rep["source_sha256"]
    model, cfg, _ = load_checkpoint(out)
    assert model.config.write_threshold == cfg.model.write_threshold == rep["threshold"]


def test_calibrate_refuses_the_baseline(tmp_path):
    cfg = load_config("tiny")
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, kind="sinusoidal"))
    model = build_model(cfg.model, n_actions_for("square"), cfg.world.n_obs, seed=0)
    path = tmp_path / "baseline.pt"
    save_checkpoint(path, model, cfg, 0)
    with pytest.raises(CalibrationError, match="sinusoidal"):
        calibrate_checkpoint(path, tmp_path / "out.pt")
    assert not (tmp_path / "out.pt").exists()


@pytest.mark.parametrize("extra,message", [
    ([], "is the input"),
    (["--steps", "0"], "--steps must be"),
    (["--envs", "-1"], "--envs must be"),
])
def test_cli_calibrate_errors(tiny_ckpt, capsys, extra, message):
    out = tiny_ckpt if not extra else tiny_ckpt.parent / "c.pt"
    assert main(["calibrate", str(tiny_ckpt), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tiny_ckpt.parent / "c.pt").exists()


def test_cli_calibrate_writes_and_needs_overwrite(tmp_path, tiny_ckpt, capsys):
    out = tmp_path / "c.pt"
    args = ["calibrate", str(tiny_ckpt), "--out", str(out), "--envs", "2", "--steps", "100"]
    assert main(args) == 0
    assert "write threshold 0.98 →" in capsys.readouterr().out
    assert main(args) == 2 and "--overwrite" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0

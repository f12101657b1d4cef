"""The long-delay loop-closure task: walks with known structure, and a path integrator with
known weights (exact 2D rotations) whose memory variants must behave as designed."""

import math

import numpy as np
import pytest
import torch

from hippo_rep.cli import main
from hippo_rep.config import load_config
from hippo_rep.models.registry import build_model
from hippo_rep.tasks.delay import (
    DelayTaskError,
    as_variant,
    delay_accuracy,
    pad_delay_walks,
    read_delay,
    write_delay,
)
from hippo_rep.worlds import (
    AWAY_DISTANCE,
    PHASES,
    WorldError,
    delay_walk,
    home_region,
    parse_world,
    sample_delay_episodes,
)


@pytest.mark.parametrize("delay", [0, 5, 40])
@pytest.mark.parametrize("spec", ["square:10", "square:9x11"])
def test_delay_walk_structure(spec, delay):
    w = parse_world(spec)
    x = delay_walk(w, delay, np.random.default_rng(delay))
    home, away = home_region(w)
    nodes, phase = x["nodes"], x["phase"]
    # phases in order, each step a real move along an edge
    assert (np.diff(phase) >= 0).all() and set(np.unique(phase)) <= set(range(len(PHASES)))
    for t in range(1, len(nodes)):
        assert w.transitions[nodes[t - 1], x["actions"][t]] == nodes[t]
    tour = nodes[phase == 0]
    assert home[tour].all() and set(tour) == set(np.flatnonzero(home))
    exc = nodes[phase == 1]
    assert len(exc) >= delay and away[exc[-delay:]].all() if delay else True
    assert not home[nodes[phase == 2]].any()
    # scored: first visit to each home node after the return, each once
    sc = nodes[x["scored"]]
    assert home[sc].all() and len(sc) == len(set(sc))
    assert x["scored"][phase != 3].sum() == 0 and x["scored"][np.argmax(phase == 3)]


def test_pad_delay_walks_keeps_each_walk_and_pads_with_stays():
    w = parse_world("square:10")
    rng = np.random.default_rng(3)
    walks = [delay_walk(w, d, rng) for d in (0, 30, 7)]
    maps = [rng.permutation(w.n_nodes) % 45 for _ in walks]
    obs, act, scored = pad_delay_walks(walks, maps)
    lengths = [len(x["nodes"]) for x in walks]
    assert obs.shape == act.shape == scored.shape == (3, max(lengths))
    for i, (x, m, n) in enumerate(zip(walks, maps, lengths, strict=True)):
        np.testing.assert_array_equal(obs[i, :n], m[x["nodes"]])
        np.testing.assert_array_equal(act[i, :n], x["actions"])
        np.testing.assert_array_equal(scored[i, :n], x["scored"])
        # after the walk: stay (action 0) at the last node, never scored
        assert (obs[i, n:] == m[x["nodes"][-1]]).all() and (act[i, n:] == 0).all()
        assert not scored[i, n:].any()
    assert scored.sum() == sum(int(x["scored"].sum()) for x in walks)


def test_too_small_world_is_refused():
    with pytest.raises(WorldError, match="too small"):
        home_region(parse_world(f"square:{3 + 2 * AWAY_DISTANCE}"))
    with pytest.raises(WorldError, match="delay must be"):
        delay_walk(parse_world("square:10"), -1, np.random.default_rng(0))


def exact_path_integrator(memory="full", **kw):
    """TEM-t whose W_a are exact 2D rotations: g is a sum of plane waves of the position, so
    the same node always gives the same g (perfect path integration), and no landmarks."""
    sets = [f"model.memory={memory}", "model.landmark=false", "model.n_g=24",
            "model.d_key=24"] + [f"model.{k}={v}" for k, v in kw.items()]
    cfg = load_config("tiny", sets)
    w = parse_world("square:10")
    m = build_model(cfg.model, w.n_actions, 45, seed=0)
    freqs = [0.37, 0.71, 1.13, 1.61, 2.03, 2.57]  # rad per edge, incommensurate
    A = torch.zeros(w.n_actions, 24, 24)
    for a in range(1, w.n_actions):
        u = int(np.flatnonzero(w.transitions[:, a] >= 0)[0])
        dx, dy = w.coords[w.transitions[u, a]] - w.coords[u]
        for k, f in enumerate(freqs):
            for j, step in ((2 * k, dx), (12 + 2 * k, dy)):
                A[a, j, j + 1], A[a, j + 1, j] = f * step, -f * step
    with torch.no_grad():
        m.W_a.copy_(A / 2)  # W_a = exp(S - S^T) = exp(A)
        m.g_init.copy_(torch.tensor([1.0, 0.0] * 12))
        m.W_e.weight.copy_(torch.eye(24) * 3)
        m.beta_raw.fill_(30.0)
    return m.eval()


def test_exact_path_integrator_closes_loops_with_full_memory():
    m = exact_path_integrator()
    ds = delay_accuracy(m, delays=[0, 40, 160], n_envs=4, seed=1)
    np.testing.assert_allclose(ds.accuracy.values, 1.0)
    assert (ds.n_scored.values >= 4 * 9 * 0.5).all()
    assert float(ds.chance) == pytest.approx(1 / 45)


def test_window_forgets_beyond_its_window_and_fam_keeps_more():
    full = exact_path_integrator()
    window = as_variant(full, "window", memory_block=8, memory_blocks=2)  # 16-24 steps
    ds = delay_accuracy(window, delays=[0, 160], n_envs=4, seed=1)
    assert float(ds.accuracy.sel(delay=160)) < 0.2
    # D = 0: the tour's end is inside the window, the start may not be; still far above
    assert float(ds.accuracy.sel(delay=0)) > float(ds.accuracy.sel(delay=160))


def test_as_variant_shares_weights():
    full = exact_path_integrator()
    fam = as_variant(full, "fam", fam_slots=4)
    torch.testing.assert_close(fam.W_a, full.W_a)
    assert fam.config.memory == "fam" and fam.fam_init.shape == (4, 24)
    back = as_variant(fam, "window")  # FAM-only weights are dropped
    assert not hasattr(back, "fam_init") and back.config.memory == "window"
    with pytest.raises(DelayTaskError, match="unknown memory variant"):
        as_variant(full, "ring")
    # trained slots of another count are refused by name, not half-loaded
    with pytest.raises(DelayTaskError, match=r"fam_init is \(4, 24\) in the weights but "
                                             r"\(6, 24\) here"):
        as_variant(fam, "fam", fam_slots=6)
    torch.testing.assert_close(as_variant(fam, "fam").fam_init, fam.fam_init)


def test_world_and_obs_mismatch_are_clear_errors():
    m = exact_path_integrator()
    with pytest.raises(DelayTaskError, match="actions"):
        delay_accuracy(m, world="hex:8")
    with pytest.raises(DelayTaskError, match="n_obs"):
        delay_accuracy(m, n_obs=10)
    with pytest.raises(DelayTaskError, match="n_envs must be an integer ≥ 1 and ≤ MAX_BATCH"):
        delay_accuracy(m, n_envs=0)
    with pytest.raises(DelayTaskError, match="seed must be an integer ≥ 0"):
        delay_accuracy(m, seed=-2)


def test_write_read_round_trip(tmp_path):
    m = exact_path_integrator()
    ds = delay_accuracy(m, delays=[0, 8], n_envs=2)
    for name in ("d.nc", "d.json"):
        write_delay(ds, tmp_path / name)
        back = read_delay(tmp_path / name)
        np.testing.assert_allclose(back.accuracy.values, ds.accuracy.values)
        with pytest.raises(DelayTaskError, match="exists"):
            write_delay(ds, tmp_path / name)
    (tmp_path / "bad.nc").write_bytes(b"nope")
    with pytest.raises(DelayTaskError, match="cannot read"):
        read_delay(tmp_path / "bad.nc")


def test_cli_delay_and_figure(tmp_path, capsys):
    from hippo_rep.training.checkpoint import save_checkpoint

    m = exact_path_integrator()
    cfg = load_config("tiny", ["model.landmark=false", "model.n_g=24", "model.d_key=24",
                               'world.worlds=["square:8"]', "world.n_obs=45"])
    ckpt = tmp_path / "c.pt"
    save_checkpoint(ckpt, m, cfg, 0, None, {})
    out = tmp_path / "delay.nc"
    assert main(["delay", str(ckpt), "--out", str(out), "--delays", "0,64", "--envs", "2",
                 "--memory-block", "8", "--memory-blocks", "1"]) == 0
    ds = read_delay(out)
    assert list(ds.variant.values) == ["full", "window", "fam", "hebbian"]
    assert ds.attrs["window_steps"] == "8-16"
    assert main(["delay", str(ckpt), "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    figs = tmp_path / "figs"
    assert main(["figures", "--delay", str(out), "--out", str(figs), "--only",
                 "memory_delay"]) == 0
    for ext in ("pdf", "svg", "png"):
        assert (figs / f"memory_delay.{ext}").stat().st_size > 1000
    assert not math.isnan(float(ds.accuracy.sel(variant="full", delay=0)))


@pytest.mark.parametrize("n_steps", [40, 300])
def test_sample_delay_episodes(n_steps):
    w = parse_world("square:8")
    ep = sample_delay_episodes([w], 3, n_steps, 45, np.random.default_rng(0), max_delay=64)
    assert ep.nodes.shape == ep.actions.shape == ep.observations.shape == (3, n_steps)
    home, _ = home_region(w)
    for b in range(3):
        assert home[ep.nodes[b, 0]]  # every walk starts with the home tour
        for t in range(1, n_steps):
            assert w.transitions[ep.nodes[b, t - 1], ep.actions[b, t]] == ep.nodes[b, t]
        np.testing.assert_array_equal(ep.observations[b], ep.observation_maps[b][ep.nodes[b]])


def test_training_on_delay_walks(tmp_path):
    from hippo_rep.config import ConfigError
    from hippo_rep.training import trainer as T

    cfg = load_config("tiny", ["world.walk=delay", 'world.worlds=["square:8"]',
                               "world.walk_steps=60", "world.max_delay=16",
                               "train.iterations=2", "model.memory=fam"])
    T.train(cfg, tmp_path / "ok", progress=False)
    assert (tmp_path / "ok" / "checkpoint.pt").is_file()
    small = load_config("tiny", ["world.walk=delay", 'world.worlds=["square:6"]'])
    with pytest.raises(T.TrainingError, match="too small"):
        T.train(small, tmp_path / "small", progress=False)
    with pytest.raises(ConfigError, match="world.walk"):
        load_config("tiny", ["world.walk=spiral"])
    with pytest.raises(ConfigError, match="max_delay"):
        load_config("tiny", ["world.max_delay=-1"])

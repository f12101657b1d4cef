import dataclasses
import json
import re
import shutil

import numpy as np
import pytest
import torch

from hippo_rep import cli
from hippo_rep.config import ConfigError, load_config
from hippo_rep.models.registry import MODELS
from hippo_rep.models.temt_losses import losses
from hippo_rep.random_streams import batch_rng
from hippo_rep.training import trainer as T
from hippo_rep.training.checkpoint import (
    CheckpointError,
    file_sha256,
    load_checkpoint,
    save_checkpoint,
    weights_only_copy,
)
from hippo_rep.training.evaluate import evaluate, evaluate_checkpoint
from tests.test_tem import SMALL

TINY = ["train.iterations=20"]


def tiny(*extra):
    return load_config("tiny", [*TINY, *extra])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The tiny preset trained in full (shared by several tests)."""
    out = tmp_path_factory.mktemp("tiny")
    T.train(load_config("tiny"), out, progress=False)
    return out


def test_tiny_training_beats_chance_on_held_out_envs(trained):
    model, cfg, _ = load_checkpoint(trained / "checkpoint.pt")
    res = evaluate(model, [T.parse_world(s) for s in cfg.world.worlds], 16,
                   cfg.world.walk_steps, cfg.world.n_obs, seed=5)
    chance = 1 / cfg.world.n_obs
    assert res["model"]["revisit"] > 3 * chance
    assert res["model"]["revisit_new_edge"] > 2 * chance
    # nothing can be known about a first visit
    assert res["model"]["first_visit"] < 2.5 * chance
    assert res["node_agent"]["revisit"] == 1.0
    assert res["edge_agent"]["revisit_new_edge"] == pytest.approx(chance)


def test_run_folder_contents(trained):
    assert (trained / "config.toml").is_file()
    rows = (trained / "metrics.csv").read_text().splitlines()
    assert rows[0].startswith("iteration,")
    assert len(rows) > 5
    payload = torch.load(trained / "checkpoint.pt", weights_only=True)
    for key in ("config", "model_state", "optimizer_state", "torch_rng_state", "step",
                "package_version"):
        assert key in payload
    assert payload["step"] == load_config("tiny").train.iterations


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The weights of ``tiny()`` (20 iterations) trained without a stop: the reference of the
    resume tests (training is deterministic: test_same_seed_same_weights_...)."""
    out = tmp_path_factory.mktemp("uninterrupted")
    T.train(tiny(), out, progress=False)
    return torch.load(out / "checkpoint.pt", weights_only=True)["model_state"]


@pytest.fixture(scope="module")
def stopped_at_8(tmp_path_factory):
    """A run of ``tiny()`` stopped after iteration 8 (``stop_at=8``); tests copy it."""
    out = tmp_path_factory.mktemp("stopped") / "a"
    T.train(tiny(), out, progress=False, stop_at=8)
    return out


def test_resume_after_interrupt_equals_uninterrupted(tmp_path, monkeypatch, uninterrupted):
    cfg = tiny()
    ref = uninterrupted

    real_step = T.Trainer.step

    def interrupted(self, iteration):
        if iteration == 13:
            raise KeyboardInterrupt
        return real_step(self, iteration)

    monkeypatch.setattr(T.Trainer, "step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        T.train(cfg, tmp_path / "b", progress=False)
    assert torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)["step"] == 13
    monkeypatch.setattr(T.Trainer, "step", real_step)
    T.train(cfg, tmp_path / "b", resume=True, progress=False)
    got = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)["model_state"]
    for k in ref:
        torch.testing.assert_close(got[k], ref[k], rtol=0, atol=0)
    iters = [int(r.split(",")[0]) for r in
             (tmp_path / "b" / "metrics.csv").read_text().splitlines()[1:]]
    assert iters == sorted(set(iters))  # no duplicated rows after resuming


def test_same_seed_same_weights_and_different_seed_differs(tmp_path):
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        T.train(tiny("train.iterations=5", f"train.seed={seed}"), tmp_path / name,
                progress=False)
    w = {n: torch.load(tmp_path / n / "checkpoint.pt", weights_only=True)["model_state"]
         for n in "abc"}
    assert torch.equal(w["a"]["W_a"], w["b"]["W_a"])
    assert not torch.equal(w["a"]["W_a"], w["c"]["W_a"])


def test_reruns_write_the_same_checkpoint_file_and_leave_the_global_rng(tmp_path):
    # torch seeds its global RNG differently in each process: a run draws from its own
    for name, global_seed in (("a", 1), ("b", 2)):
        torch.manual_seed(global_seed)
        before = torch.random.get_rng_state()
        T.train(tiny("train.iterations=3"), tmp_path / name, progress=False)
        assert torch.equal(torch.random.get_rng_state(), before)
    assert file_sha256(tmp_path / "a" / "checkpoint.pt") == \
        file_sha256(tmp_path / "b" / "checkpoint.pt")


def test_nan_loss_stops_and_keeps_last_good_checkpoint(tmp_path, monkeypatch):
    cfg = tiny("train.checkpoint_every=5")
    real = MODELS["temt"]

    def poisoned(model, out, chunk, c):
        parts = real.losses(model, out, chunk, c)
        if poisoned.calls >= 7:
            parts["loss"] = parts["loss"] * float("nan")
        poisoned.calls += 1
        return parts

    poisoned.calls = 0
    monkeypatch.setitem(MODELS, "temt", dataclasses.replace(real, losses=poisoned))
    with pytest.raises(T.TrainingError, match="nan.*iteration 7.*last good checkpoint"):
        T.train(cfg, tmp_path, progress=False)
    model, _, payload = load_checkpoint(tmp_path / "checkpoint.pt")
    assert payload["step"] == 5
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_refuses_to_overwrite_an_existing_run(tmp_path):
    T.train(tiny("train.iterations=2"), tmp_path, progress=False)
    before = file_sha256(tmp_path / "checkpoint.pt")
    with pytest.raises(T.TrainingError, match="exists"):
        T.train(tiny("train.iterations=2"), tmp_path, progress=False)
    assert file_sha256(tmp_path / "checkpoint.pt") == before


def test_sinusoidal_baseline_trains(tmp_path):
    T.train(tiny("model.kind=sinusoidal", "train.iterations=3"), tmp_path, progress=False)
    model, cfg, _ = load_checkpoint(tmp_path / "checkpoint.pt")
    assert cfg.model.kind == "sinusoidal"


def test_evaluation_json_schema(trained):
    res = evaluate_checkpoint(trained / "checkpoint.pt", n_envs=3, n_steps=30)
    for agent in ("model", "node_agent", "edge_agent"):
        assert set(res[agent]) == {"first_visit", "revisit_known_edge", "revisit_new_edge",
                                   "revisit_unseen_edge", "revisit", "all"}
        for v in res[agent].values():
            assert v is None or 0.0 <= v <= 1.0
        assert len(res["curve"][agent]) == len(res["curve"]["proportion_visited"])
    # the node agent's accuracy curve rises with the proportion of nodes visited
    node = [v for v in res["curve"]["node_agent"] if v is not None]
    assert node[-1] > node[0]
    json.dumps(res)


def test_evaluation_is_reproducible_and_uses_other_worlds(trained):
    a = evaluate_checkpoint(trained / "checkpoint.pt", n_envs=2, n_steps=25, seed=3)
    b = evaluate_checkpoint(trained / "checkpoint.pt", n_envs=2, n_steps=25, seed=3)
    assert a["model"] == b["model"]
    c = evaluate_checkpoint(trained / "checkpoint.pt", n_envs=2, n_steps=25,
                            world="square:6x3:holes=1,1")
    assert c["meta"]["world"] == "square:6x3:holes=1,1"


# ---------------------------------------------------------------- bad input, via the CLI
def run_cli(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err.strip()
    return rc, err


@pytest.mark.parametrize("override,needle", [
    ("train.lrr=1", "train.lrr"),
    ("modell.n_g=3", "modell"),
    ("train.lr=fast", "train.lr"),
    ("model.kind=lstm", "model.kind"),
    ("world.worlds=square:1", "square:1"),
    ("world.worlds=square:3,hex:3", "mixes"),
])
def test_config_errors_are_one_clear_line(tmp_path, capsys, override, needle):
    rc, err = run_cli(capsys, "train", "--config", "tiny", "--set", override,
                      "--out", tmp_path / "r")
    assert rc == 2
    assert needle in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_unknown_key_lists_valid_keys(capsys, tmp_path):
    _, err = run_cli(capsys, "train", "--set", "train.lrr=1", "--out", tmp_path)
    assert "valid keys" in err and "lr" in err


def test_missing_config_file(capsys, tmp_path):
    rc, err = run_cli(capsys, "train", "--config", tmp_path / "nope.toml", "--out", tmp_path)
    assert rc == 2 and "nope.toml" in err


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", b"PK\x03\x04garbage"])
def test_corrupt_checkpoint(tmp_path, capsys, content):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(content)
    rc, err = run_cli(capsys, "evaluate", bad)
    assert rc == 2 and "bad.pt" in err and len(err.splitlines()) == 1
    assert bad.read_bytes() == content


def test_torch_file_that_is_not_a_checkpoint(tmp_path, capsys):
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(3)}, other)
    rc, err = run_cli(capsys, "evaluate", other)
    assert rc == 2 and "not a hippo_rep checkpoint" in err


def test_missing_checkpoint(tmp_path, capsys):
    rc, err = run_cli(capsys, "evaluate", tmp_path / "missing.pt")
    assert rc == 2 and "missing.pt" in err and "not found" in err


def test_hex_model_on_square_world(tmp_path, capsys):
    T.train(tiny("world.worlds=hex:3", "train.iterations=1"), tmp_path, progress=False)
    rc, err = run_cli(capsys, "evaluate", tmp_path / "checkpoint.pt", "--world", "square:4")
    assert rc == 2 and "square:4" in err and "hex" in err


def test_checkpoint_of_other_model_shape(tmp_path, capsys):
    T.train(tiny("train.iterations=1"), tmp_path, progress=False)
    payload = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    payload["model_state"]["W_a"] = torch.zeros(2, 2)
    del payload["weights_sha256"]  # a shape mismatch, not a hash mismatch
    torch.save(payload, tmp_path / "edited.pt")
    rc, err = run_cli(capsys, "evaluate", tmp_path / "edited.pt")
    assert rc == 2 and "edited.pt" in err and "weights" in err


@pytest.mark.parametrize("world", ["square:1", "square:2:holes=0,0;1,0;0,1;1,1",
                                   "square:3:holes=1,0;1,1;1,2"])
def test_impossible_world_for_evaluation(trained, capsys, world):
    rc, err = run_cli(capsys, "evaluate", trained / "checkpoint.pt", "--world", world)
    assert rc == 2 and world in err


def test_cli_evaluate_writes_json(trained, tmp_path, capsys):
    rc = cli.main(["evaluate", str(trained / "checkpoint.pt"), "--envs", "2", "--steps", "20",
                   "--json", str(tmp_path / "e.json")])
    assert rc == 0
    res = json.loads((tmp_path / "e.json").read_text())
    assert res["meta"]["checkpoint_sha256"] == file_sha256(trained / "checkpoint.pt")
    assert "revisit_new_edge" in capsys.readouterr().out


def test_save_checkpoint_is_atomic(tmp_path, monkeypatch):
    T.train(tiny("train.iterations=1"), tmp_path, progress=False)
    model, cfg, _ = load_checkpoint(tmp_path / "checkpoint.pt")
    before = file_sha256(tmp_path / "checkpoint.pt")

    def broken(obj, f, *a, **k):  # a half-written archive, then the disk is full
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(OSError):
        save_checkpoint(tmp_path / "checkpoint.pt", model, cfg, 2)
    assert file_sha256(tmp_path / "checkpoint.pt") == before
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_checkpoint_error_type():
    assert issubclass(CheckpointError, ValueError)
    np.testing.assert_equal(batch_rng(0, 3).random(3), batch_rng(0, 3).random(3))


def test_init_from_starts_from_another_runs_weights(trained, tmp_path):
    src = trained / "checkpoint.pt"
    T.train(load_config("tiny", ["train.iterations=0", f"train.init_from={src}"]), tmp_path,
            progress=False)
    a = torch.load(src, weights_only=True)
    b = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    for k in a["model_state"]:
        torch.testing.assert_close(a["model_state"][k], b["model_state"][k])
    assert b["extra"]["init_from_sha256"] == file_sha256(src)
    with pytest.raises(T.TrainingError, match="init_from"):
        T.train(load_config("tiny", ["train.iterations=0", f"train.init_from={src}",
                                     "model.n_g=8"]), tmp_path / "x", progress=False)


def test_init_from_a_full_run_into_a_fam_variant(trained, tmp_path):
    src = trained / "checkpoint.pt"
    T.train(load_config("tiny", ["train.iterations=0", f"train.init_from={src}",
                                 "model.memory=fam", "model.fam_slots=3"]), tmp_path,
            progress=False)
    a = torch.load(src, weights_only=True)["model_state"]
    b = torch.load(tmp_path / "checkpoint.pt", weights_only=True)["model_state"]
    for k in a:
        torch.testing.assert_close(a[k], b[k])
    assert b["fam_init"].shape == (3, load_config("tiny").model.n_g)


def _continue_from(src, out, *extra):
    """Train ``tiny`` on from a weights-only copy of ``src`` (train.init_continue)."""
    weights = out.parent / f"{out.name}_weights.pt"
    weights_only_copy(src, weights)
    return T.train(tiny(f"train.init_from={weights.as_posix()}", "train.init_continue=true",
                        *extra), out, progress=False)


@pytest.mark.parametrize("tem", [False, True])
def test_init_continue_equals_resume_with_fresh_adam(tmp_path, tem):
    """Continuing a weights-only copy = resuming its run with Adam's moments reset: same
    iteration, learning rate, walks and (for TEM) annealing."""
    extra = [*SMALL, "train.step_every_chunk=true"] if tem else []
    cfg = tiny(*extra)
    T.train(cfg, tmp_path / "a", progress=False, stop_at=8)
    _continue_from(tmp_path / "a" / "checkpoint.pt", tmp_path / "b", *extra)
    ref = T.Trainer(cfg, tmp_path / "a", resume=True, progress=False)
    ref.optim = ref._optimizer()  # what a weights-only copy lacks
    ref.run()
    want = torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=True)
    got = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)
    assert got["step"] == want["step"] == 20
    for k in want["model_state"]:
        torch.testing.assert_close(got["model_state"][k], want["model_state"][k], rtol=0,
                                   atol=0)
    rows = (tmp_path / "b" / "metrics.csv").read_text().splitlines()[1:]
    assert int(rows[0].split(",")[0]) > 8
    # init_from alone restarts the schedule and walks at iteration 0: another result.
    T.train(tiny(f"train.init_from={(tmp_path / 'b_weights.pt').as_posix()}", *extra),
            tmp_path / "c", progress=False)
    other = torch.load(tmp_path / "c" / "checkpoint.pt", weights_only=True)["model_state"]
    assert any(not torch.equal(other[k], want["model_state"][k]) for k in other)


@pytest.mark.parametrize("extra, match", [
    (["train.lr=0.01"], r"train\.lr differ"),
    (["train.iterations=8"], r"iteration 8, not before train\.iterations = 8"),
])
def test_init_continue_refuses_another_run(tmp_path, extra, match, stopped_at_8):
    with pytest.raises(T.TrainingError, match=match):
        _continue_from(stopped_at_8 / "checkpoint.pt", tmp_path / "b", *extra)
    assert not (tmp_path / "b").exists()


def test_continue_from_cli_takes_the_checkpoints_run(tmp_path, capsys, stopped_at_8):
    weights_only_copy(stopped_at_8 / "checkpoint.pt", tmp_path / "w.pt")
    cfg = stopped_at_8 / "config.toml"
    for argv, match in ((["--resume"], "without --resume or --config"),
                        (["--config", cfg], "without --resume or --config"),
                        (["--set", "train.lr=0.01"], r"train\.lr differ"),
                        (["--set", "train.bogus=1"], "unknown key"),
                        (["--set", "train.iterations=8"], "raise train.iterations")):
        rc = cli.main(["train", "--continue-from", str(tmp_path / "w.pt"), "--out",
                       str(tmp_path / "bad"), "--no-progress", *map(str, argv)])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and len(err.splitlines()) == 1 and re.search(match, err), (argv, err)
    assert not (tmp_path / "bad").exists()
    assert cli.main(["train", "--continue-from", str(tmp_path / "w.pt"), "--out",
                     str(tmp_path / "b"), "--no-progress", "--set", "train.log_every=2"]) == 0
    _, got, payload = load_checkpoint(tmp_path / "b" / "checkpoint.pt")
    assert payload["step"] == 20 and got.train.init_continue
    assert got.replace(train=got.train.replace(init_from="", init_continue=False)) == tiny(
        "train.log_every=2")
    assert payload["extra"]["init_from_sha256"] == file_sha256(tmp_path / "w.pt")


def test_init_continue_needs_init_from():
    with pytest.raises(ConfigError, match="train.init_continue = true needs train.init_from"):
        tiny("train.init_continue=true")


def test_stop_at_then_resume_equals_uninterrupted(tmp_path, uninterrupted, stopped_at_8):
    cfg = tiny()
    shutil.copytree(stopped_at_8, tmp_path / "b")  # T.train(cfg, b, stop_at=8)
    assert torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)["step"] == 8
    T.train(cfg, tmp_path / "b", resume=True, progress=False)
    ref = uninterrupted
    got = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)["model_state"]
    for k in ref:
        torch.testing.assert_close(got[k], ref[k], rtol=0, atol=0)
    with pytest.raises(T.TrainingError, match="before the checkpoint"):
        T.train(cfg, tmp_path / "b", resume=True, progress=False, stop_at=3)


@pytest.mark.parametrize("scale", [0.0, 0.1])
def test_transition_lr_scale(tmp_path, scale):
    cfg = tiny("train.iterations=4", f"train.transition_lr_scale={scale}")
    init = T.build_model(cfg.model, 5, cfg.world.n_obs, seed=cfg.train.seed).W_a.detach()
    T.train(cfg, tmp_path / "s", progress=False)
    W = torch.load(tmp_path / "s" / "checkpoint.pt", weights_only=True)["model_state"]["W_a"]
    T.train(tiny("train.iterations=4"), tmp_path / "full", progress=False)
    W_full = torch.load(tmp_path / "full" / "checkpoint.pt",
                        weights_only=True)["model_state"]["W_a"]
    moved, moved_full = (W - init).abs().max(), (W_full - init).abs().max()
    if scale == 0:
        assert moved == 0
    else:
        # Adam steps are ~lr in size: a tenth of the rate moves W_a about a tenth as far
        assert 0 < moved < 0.3 * moved_full


#: tests/test_tem.py's tiny TEM with short ramps, for the trainer's per-chunk updates.
TEM_SMALL = [*SMALL, "train.tem.eta_ramp=50", "train.tem.latent_ramp=50"]


def _per_chunk_reference(cfg, iterations: int):
    """The per-chunk regime written out: for each chunk of each walk, set the learning rate
    (per walk) and TEM's annealing (per update), forward with the memory carried, backward,
    clip, step."""
    tc, wc = cfg.train, cfg.world
    model = T.build_model(cfg.model, 5, wc.n_obs, seed=tc.seed)
    tr = T.Trainer.__new__(T.Trainer)  # only for its optimiser groups
    tr.cfg, tr.model = cfg, model
    optim = tr._optimizer()
    worlds = [T.parse_world(s) for s in wc.worlds]
    update = 0
    for it in range(iterations):
        ep = T.sample_episodes(worlds, tc.batch_size, wc.walk_steps, wc.n_obs,
                               batch_rng(tc.seed, it), wc.keep_heading, wc.stay_prob)
        obs, act = torch.as_tensor(ep.observations), torch.as_tensor(ep.actions)
        for g in optim.param_groups:
            g["lr"] = T.lr_at(cfg, it) * g.get("lr_scale", 1.0)
        state = None
        for s in range(0, wc.walk_steps, tc.chunk_len):
            if hasattr(model, "anneal"):
                model.anneal(update, tc)
            out, state = model(obs[:, s:s + tc.chunk_len], act[:, s:s + tc.chunk_len], state)
            rev = torch.as_tensor(np.stack([T.step_types(n, a)["revisit"][s:s + tc.chunk_len]
                                            for n, a in zip(ep.nodes, ep.actions, strict=True)]))
            loss = (model.training_losses(out, update, tc, revisit=rev)
                    if hasattr(model, "anneal")
                    else losses(out, obs[:, s:s + tc.chunk_len], cfg))["loss"]
            optim.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
            optim.step()
            state, update = state.detach(), update + 1
    return model, optim


@pytest.mark.parametrize("kind", ["temt", "tem", "tem_revisits"])
def test_step_every_chunk_takes_one_update_per_chunk(tmp_path, kind):
    extra = ["train.chunk_len=10", "train.step_every_chunk=true", "train.iterations=2",
             *(TEM_SMALL if kind != "temt" else []),
             *(['train.tem.loss_on="revisits"'] if kind == "tem_revisits" else [])]
    cfg = tiny(*extra)
    tr = T.Trainer(cfg, tmp_path / "run", progress=False)
    assert tr.updates_per_iteration == 4  # 40-step walks in chunks of 10
    for it in range(2):
        tr.step(it)
    ref, ref_optim = _per_chunk_reference(cfg, 2)
    # 8 Adam steps for every weight used in each chunk (the initial g, used at a walk's first
    # step only, gets one per walk)
    steps = [s["step"].item() for s in tr.optim.state.values()]
    assert max(steps) == 8.0
    assert steps == [s["step"].item() for s in ref_optim.state.values()]
    for name, w in ref.state_dict().items():
        torch.testing.assert_close(tr.model.state_dict()[name], w, rtol=1e-6, atol=1e-7,
                                   msg=name)
    if kind != "temt":  # annealing counts updates: the last was update 7, not iteration 1
        sched = ref.anneal(7, cfg.train)
        assert float(tr.model.eta) == pytest.approx(sched["eta"]) != \
            pytest.approx(ref.anneal(1, cfg.train)["eta"])


@pytest.mark.parametrize("kind", ["temt", "tem"])
def test_step_every_chunk_is_one_update_per_walk_without_chunks(tmp_path, kind):
    """With one chunk per walk the two regimes are the same training."""
    base = ["train.iterations=3", *(TEM_SMALL if kind == "tem" else [])]
    T.train(tiny(*base), tmp_path / "walk", progress=False)
    T.train(tiny(*base, "train.step_every_chunk=true"), tmp_path / "chunk", progress=False)
    a = torch.load(tmp_path / "walk" / "checkpoint.pt", weights_only=True)["model_state"]
    b = torch.load(tmp_path / "chunk" / "checkpoint.pt", weights_only=True)["model_state"]
    for k in a:
        torch.testing.assert_close(b[k], a[k], rtol=0, atol=0, msg=k)

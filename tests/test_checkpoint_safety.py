"""Checkpoints are read with ``weights_only=True``: a pickle payload anywhere in a checkpoint is
refused with one line naming the file, and nothing in it runs; weights carry a SHA-256 and
non-finite weights are refused."""

import shutil
from pathlib import Path

import pytest
import torch

from hippo_rep import cli
from hippo_rep.config import load_config
from hippo_rep.models.registry import build_model
from hippo_rep.tasks import passkey as P
from hippo_rep.tasks.delay import DelayTaskError, delay_accuracy
from hippo_rep.training import trainer as T
from hippo_rep.training.checkpoint import (
    WEIGHTS_SHA256_KEY,
    CheckpointError,
    check_actions,
    load_checkpoint,
    read_checkpoint,
    save_checkpoint,
    weights_sha256,
)
from hippo_rep.worlds import n_actions_for

DATA = Path(__file__).resolve().parents[1] / "data"


class Payload:
    """Unpickling this creates ``marker`` (a stand-in for any code a hostile file would run)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def run_cli(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.err.strip()


@pytest.fixture(scope="module")
def temt_ckpt(tmp_path_factory):
    """A fresh tiny TEM-t checkpoint (untrained weights, with an optimizer state)."""
    cfg = load_config("tiny")
    model = build_model(cfg.model, n_actions_for("square"), cfg.world.n_obs, seed=0)
    opt = torch.optim.AdamW(model.parameters())
    path = tmp_path_factory.mktemp("ck") / "checkpoint.pt"
    save_checkpoint(path, model, cfg, 0, opt)
    return path


@pytest.fixture(scope="module")
def passkey_ckpt(tmp_path_factory):
    cfg = P.PassKeyConfig().with_overrides(["train.steps=1", "train.batch_size=2",
                                            "model.d_model=8", "model.n_heads=2",
                                            "model.d_ff=8", "model.n_layers=1"])
    out = tmp_path_factory.mktemp("pk")
    P.train(cfg, out)
    return out / "checkpoint.pt"


def poisoned(src, dst, marker, field):
    payload = torch.load(src, weights_only=True)
    if field == "model_state":
        payload["model_state"]["extra_weight"] = Payload(marker)
    elif field == "config":
        payload["config"]["train"]["lr"] = Payload(marker)
    elif field == "optimizer_state":
        payload["optimizer_state"]["param_groups"][0]["lr"] = Payload(marker)
    elif field == "top":
        payload["note"] = Payload(marker)
    else:  # the whole payload
        payload = Payload(marker)
    torch.save(payload, dst)
    return dst


FIELDS = ["model_state", "config", "optimizer_state", "top", "whole"]


def test_payload_executes_without_weights_only(tmp_path, temt_ckpt):
    """The payload is real: an unsafe load would create the marker (so the tests can fail)."""
    marker = tmp_path / "ran"
    bad = poisoned(temt_ckpt, tmp_path / "bad.pt", marker, "config")
    torch.load(bad, weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize("field", FIELDS)
def test_temt_checkpoint_payload_is_refused(tmp_path, capsys, temt_ckpt, field):
    marker = tmp_path / "ran"
    bad = poisoned(temt_ckpt, tmp_path / "bad.pt", marker, field)
    for argv in (["evaluate", bad, "--envs", "1", "--steps", "5"],
                 ["record", bad, "--out", tmp_path / "rec.nc", "--envs", "1", "--steps", "5"],
                 ["delay", bad, "--out", tmp_path / "d.nc", "--envs", "1", "--delays", "1"]):
        rc, err = run_cli(capsys, *argv)
        assert rc == 2, argv
        assert len(err.splitlines()) == 1 and "bad.pt" in err and "refused" in err, err
        assert not marker.exists()
    assert not (tmp_path / "rec.nc").exists() and not (tmp_path / "d.nc").exists()
    with pytest.raises(CheckpointError, match="refused"):
        load_checkpoint(bad)
    assert not marker.exists()


@pytest.mark.parametrize("field", ["model_state", "config", "whole"])
def test_passkey_checkpoint_payload_is_refused(tmp_path, capsys, passkey_ckpt, field):
    marker = tmp_path / "ran"
    bad = poisoned(passkey_ckpt, tmp_path / "bad.pt", marker, field)
    rc, err = run_cli(capsys, "passkey", "eval", bad, "--fillers", "1", "--samples", "2")
    assert rc == 2 and len(err.splitlines()) == 1 and "bad.pt" in err and "refused" in err
    assert not marker.exists()


def test_init_from_payload_is_refused(tmp_path, capsys, temt_ckpt):
    marker = tmp_path / "ran"
    bad = poisoned(temt_ckpt, tmp_path / "bad.pt", marker, "optimizer_state")
    rc, err = run_cli(capsys, "train", "--config", "tiny", "--set",
                      f"train.init_from={bad.as_posix()}", "--out", tmp_path / "run",
                      "--no-progress")
    assert rc == 2 and len(err.splitlines()) == 1 and "bad.pt" in err and "refused" in err
    assert not marker.exists()
    assert not (tmp_path / "run").exists()


def test_resume_payload_is_refused(tmp_path, capsys):
    run = tmp_path / "run"
    T.train(load_config("tiny", ["train.iterations=1"]), run, progress=False)
    marker = tmp_path / "ran"
    good = tmp_path / "good.pt"
    shutil.copy(run / "checkpoint.pt", good)
    poisoned(good, run / "checkpoint.pt", marker, "model_state")
    before = (run / "checkpoint.pt").read_bytes()
    rc, err = run_cli(capsys, "train", "--out", run, "--resume", "--no-progress",
                      "--set", "train.iterations=2")
    assert rc == 2 and len(err.splitlines()) == 1 and "checkpoint.pt" in err
    assert "refused" in err
    assert not marker.exists()
    assert (run / "checkpoint.pt").read_bytes() == before


def test_shipped_checkpoint_loads_safely():
    """data/temt_paper.pt (written before the weights hash existed) loads with
    weights_only=True and finite weights."""
    payload = torch.load(DATA / "temt_paper.pt", weights_only=True)
    assert WEIGHTS_SHA256_KEY not in payload  # an older checkpoint: still accepted
    model, cfg, _ = load_checkpoint(DATA / "temt_paper.pt")
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_weights_hash_is_written_and_verified(tmp_path, capsys, temt_ckpt):
    payload = torch.load(temt_ckpt, weights_only=True)
    assert payload[WEIGHTS_SHA256_KEY] == weights_sha256(payload["model_state"])
    # one weight changed behind the hash's back
    payload["model_state"]["W_a"] = payload["model_state"]["W_a"] + 1e-3
    torch.save(payload, tmp_path / "edited.pt")
    rc, err = run_cli(capsys, "evaluate", tmp_path / "edited.pt")
    assert rc == 2 and "edited.pt" in err and "SHA-256" in err
    # the hash covers names and shapes too
    a = {"w": torch.zeros(2, 3)}
    assert weights_sha256(a) != weights_sha256({"v": torch.zeros(2, 3)})
    assert weights_sha256(a) != weights_sha256({"w": torch.zeros(3, 2)})
    assert weights_sha256(a) == weights_sha256({"w": torch.zeros(2, 3)})


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_weights_are_refused(tmp_path, capsys, temt_ckpt, passkey_ckpt, bad):
    for src, argv in ((temt_ckpt, ["evaluate"]), (passkey_ckpt, ["passkey", "eval"])):
        payload = torch.load(src, weights_only=True)
        name = next(iter(payload["model_state"]))
        payload["model_state"][name] = payload["model_state"][name].clone()
        payload["model_state"][name].view(-1)[0] = bad
        payload[WEIGHTS_SHA256_KEY] = weights_sha256(payload["model_state"])
        torch.save(payload, tmp_path / "nan.pt")
        rc, err = run_cli(capsys, *argv, tmp_path / "nan.pt")
        assert rc == 2 and len(err.splitlines()) == 1
        assert "nan.pt" in err and "NaN or Inf" in err and name in err


@pytest.mark.parametrize("field,value,needle", [
    ("config", None, "config"), ("model_state", None, "model_state"),
    ("model_state", [1, 2], "model_state"), ("step", "ten", "step"), ("n_obs", None, "n_obs"),
    ("config", {"train": None}, "[train]"), ("model_state", {"W_a": "x"}, "W_a")])
def test_mistyped_fields_are_one_line(tmp_path, capsys, temt_ckpt, field, value, needle):
    payload = torch.load(temt_ckpt, weights_only=True)
    payload[field] = value
    torch.save(payload, tmp_path / "typed.pt")
    rc, err = run_cli(capsys, "evaluate", tmp_path / "typed.pt")
    assert rc == 2 and len(err.splitlines()) == 1 and "typed.pt" in err and needle in err


# ------------------------------------------------------------------ kinds and action sets
def test_files_carry_their_kind(temt_ckpt, passkey_ckpt):
    assert torch.load(temt_ckpt, weights_only=True)["kind"] == "temt"
    assert torch.load(passkey_ckpt, weights_only=True)["kind"] == "passkey"


def test_wrong_kind_is_one_line_naming_file_and_both_kinds(capsys, temt_ckpt, passkey_ckpt):
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(passkey_ckpt)
    msg = str(info.value)
    assert str(passkey_ckpt) in msg and "'passkey'" in msg and "'temt'" in msg
    with pytest.raises(P.PassKeyError) as info:
        P.load_checkpoint(temt_ckpt)
    msg = str(info.value)
    assert str(temt_ckpt) in msg and "(kind 'temt'), not a PassKey" in msg and "'passkey'" in msg
    for argv in (["evaluate", passkey_ckpt], ["passkey", "eval", temt_ckpt]):
        rc, err = run_cli(capsys, *argv)
        assert rc == 2 and len(err.splitlines()) == 1 and "checkpoint.pt" in err
        assert "'passkey'" in err and "'temt'" in err


def test_files_without_kind_still_load(tmp_path, passkey_ckpt):
    """Older files: PassKey's own format name, or TEM-t's format whose model.kind says it."""
    old = torch.load(passkey_ckpt, weights_only=True)
    del old["kind"]
    old["format"] = "hippo_rep.passkey_checkpoint"
    torch.save(old, tmp_path / "old_pk.pt")
    model, cfg, payload = P.load_checkpoint(tmp_path / "old_pk.pt")
    assert payload["kind"] == "passkey" and cfg == P.load_checkpoint(passkey_ckpt)[1]
    cfg = load_config("tiny", ["model.kind=sinusoidal"])
    model = build_model(cfg.model, n_actions_for("square"), cfg.world.n_obs, seed=0)
    save_checkpoint(tmp_path / "sin.pt", model, cfg, 0)
    old = torch.load(tmp_path / "sin.pt", weights_only=True)
    del old["kind"]
    torch.save(old, tmp_path / "old_sin.pt")
    assert load_checkpoint(tmp_path / "old_sin.pt")[2]["kind"] == "sinusoidal"
    assert read_checkpoint(DATA / "temt_paper.pt")["kind"] == "temt"
    # a kind that contradicts the config is refused
    old["kind"] = "temt"
    torch.save(old, tmp_path / "mixed.pt")
    with pytest.raises(CheckpointError, match=r"mixed\.pt.*kind 'temt'.*'sinusoidal'"):
        load_checkpoint(tmp_path / "mixed.pt")


def test_world_with_another_action_set_is_refused_by_every_caller(tmp_path, capsys, temt_ckpt):
    for argv in (["evaluate", temt_ckpt, "--world", "hex:4", "--envs", "1", "--steps", "5"],
                 ["record", temt_ckpt, "--world", "hex:4", "--out", tmp_path / "r.nc",
                  "--envs", "1", "--steps", "5"]):
        rc, err = run_cli(capsys, *argv)
        assert rc == 2 and len(err.splitlines()) == 1, err
        assert ("world 'hex:4x4' has 7 actions but checkpoint" in err and "checkpoint.pt" in err
                and "trained on square worlds (5 actions)" in err), err
    model, _, _ = load_checkpoint(temt_ckpt)
    with pytest.raises(DelayTaskError, match=r"'hex:4x4' has 7 actions but the model was "
                                             r"trained on square worlds \(5 actions\)"):
        delay_accuracy(model, delays=(1,), n_envs=1, world="hex:4", n_obs=model.n_obs)
    with pytest.raises(T.TrainingError, match=r"'hex:4x4' has 7 actions but train\.init_from "
                                              r".*checkpoint\.pt' was trained on square"):
        T.Trainer(load_config("tiny", ["world.worlds=hex:4",
                                       f"train.init_from={temt_ckpt.as_posix()}"]),
                  tmp_path / "run", progress=False)
    assert check_actions("square:3", 5, "m").n_actions == 5


def test_weights_only_copy_keeps_the_weights_and_refuses_resume(tmp_path, capsys):
    from hippo_rep.training.checkpoint import file_sha256, weights_only_copy

    run = tmp_path / "run"
    rc, err = run_cli(capsys, "train", "--config", "tiny", "--set", "train.iterations=2",
                      "--set", "train.eval_every=0", "--out", run, "--no-progress")
    assert rc == 0, err
    src = run / "checkpoint.pt"
    dst = tmp_path / "shared.pt"
    weights_only_copy(src, dst)
    full, copy = read_checkpoint(src), read_checkpoint(dst)
    assert copy["optimizer_state"] is None and copy["torch_rng_state"] is None
    assert full["optimizer_state"] is not None
    assert copy[WEIGHTS_SHA256_KEY] == full[WEIGHTS_SHA256_KEY]
    assert copy["extra"]["weights_only_of"] == file_sha256(src)
    assert dst.stat().st_size < src.stat().st_size
    a, _, _ = load_checkpoint(src)
    b, _, _ = load_checkpoint(dst)
    for (k, v), (k2, w) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert k == k2 and torch.equal(v, w)
    with pytest.raises(CheckpointError, match="the source file itself"):
        weights_only_copy(src, src)
    # a run folder holding the copy cannot be resumed, and says why
    shutil.copy(dst, src)
    rc, err = run_cli(capsys, "train", "--config", "tiny", "--set", "train.iterations=3",
                      "--set", "train.eval_every=0", "--out", run, "--resume", "--no-progress")
    assert rc != 0 and "weights-only copy" in err and "train.init_from" in err

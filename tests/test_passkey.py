import json

import numpy as np
import pytest
import torch

from hippo_rep import cli
from hippo_rep.tasks import passkey as P

torch.set_num_threads(1)

#: A small, fast configuration (seconds on one busy core).
TINY = ["model.d_model=32", "model.n_heads=2", "model.d_ff=64", "model.block_size=8",
        "train.batch_size=16", "train.filler_max=24", "train.warmup=20", "train.lr=3e-3",
        "train.log_every=10"]


def tiny_cfg(*extra, variant="fam_f4"):
    return P.PassKeyConfig().with_overrides([*TINY, *extra], variant=variant)


def test_prompt_format():
    tok, ans = P.make_batch(5, 7, np.random.default_rng(0))
    assert tok.shape == (5, P.PREFIX + 7 + 1)
    assert (tok[:, 0] == P.BOS).all() and (tok[:, 1] == P.KEY).all()
    assert (tok[:, 2] == ans).all() and (tok[:, 3] == ans).all()
    assert ((ans >= P.KEY0) & (ans < P.KEY0 + P.N_KEYS)).all()
    fill = tok[:, P.PREFIX:-1]
    assert ((fill >= P.FILLER0) & (fill < P.VOCAB)).all()
    assert (tok[:, -1] == P.QUERY).all()
    assert P.VOCAB == 36 and P.CHANCE == 1 / 16
    again, _ = P.make_batch(5, 7, np.random.default_rng(0))
    assert torch.equal(tok, again)
    with pytest.raises(P.PassKeyError, match="filler"):
        P.make_batch(2, -1, np.random.default_rng(0))


def test_config_errors_name_the_key():
    with pytest.raises(P.PassKeyError, match="unknown key"):
        P.PassKeyConfig().with_overrides(["train.stepz=3"])
    with pytest.raises(P.PassKeyError, match="n_fam"):
        P.PassKeyConfig().with_overrides(["model.n_fam=0"], variant="fam")
    with pytest.raises(P.PassKeyError, match="n_mem"):
        P.PassKeyConfig().with_overrides(["model.n_mem=-1"])
    with pytest.raises(P.PassKeyError, match="filler_max"):
        P.PassKeyConfig().with_overrides(["train.filler_min=9", "train.filler_max=3"])
    with pytest.raises(P.PassKeyError, match="recon_weight"):
        P.PassKeyConfig().with_overrides(["train.recon_weight=0.1"], variant="bswa_m1")
    with pytest.raises(P.PassKeyError, match="unknown variant"):
        P.resolve_variant("fam16")
    cfg = P.PassKeyConfig().with_overrides(["train.lr=1"], variant="fm2")
    assert cfg.train.lr == 1.0 and cfg.model.variant == "fm" and cfg.model.n_mem == 2
    assert P.PassKeyConfig.from_dict(cfg.to_dict()) == cfg


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("pk")
    cfg = tiny_cfg("train.steps=150")
    model, hist = P.train(cfg, out)
    return out, model, cfg, hist


def test_tiny_passkey_run_beats_chance_beyond_the_window(trained):
    _, model, cfg, hist = trained
    # window of BSWA M1 with B = 8: 16 tokens; a filler of 24 puts the key out of it
    acc = P.evaluate(model, (8, 24), n_samples=64, seed=3)
    assert acc[8] > 4 * P.CHANCE
    assert acc[24] > 3 * P.CHANCE
    assert hist[-1]["step"] == 150 and hist[-1]["loss"] < hist[0]["loss"]


def test_checkpoint_round_trip(trained):
    out, model, cfg, _ = trained
    assert not list(out.glob(".*.tmp"))
    m2, cfg2, payload = P.load_checkpoint(out / "checkpoint.pt")
    assert cfg2 == cfg and payload["step"] == 150
    x, _ = P.make_batch(4, 12, np.random.default_rng(1))
    with torch.no_grad():
        torch.testing.assert_close(m2(x).logits, model(x).logits, atol=0, rtol=0)
    assert (out / "metrics.csv").read_text().startswith("step,loss,accuracy")


def test_bad_checkpoints_raise_clear_errors(tmp_path, trained):
    out, *_ = trained
    with pytest.raises(P.PassKeyError, match="not found"):
        P.load_checkpoint(tmp_path / "nope.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(P.PassKeyError, match="corrupt"):
        P.load_checkpoint(tmp_path / "junk.pt")
    torch.save({"format": "hippo_rep.checkpoint", "config": {}}, tmp_path / "temt.pt")
    with pytest.raises(P.PassKeyError, match="not a PassKey checkpoint"):
        P.load_checkpoint(tmp_path / "temt.pt")
    payload = torch.load(out / "checkpoint.pt", weights_only=True)
    payload["config"]["model"]["n_fam"] = 8  # weights no longer fit the config
    torch.save(payload, tmp_path / "mismatch.pt")
    with pytest.raises(P.PassKeyError, match="do not match"):
        P.load_checkpoint(tmp_path / "mismatch.pt")


def test_training_options_run_and_are_seeded():
    cfg = tiny_cfg("train.steps=4", "train.state_passing=0.5", "train.diversity_weight=0.01",
                   "train.recon_weight=0.1", "train.log_every=2")
    _, h1 = P.train(cfg)
    _, h2 = P.train(cfg)
    assert [r["loss"] for r in h1] == [r["loss"] for r in h2]
    assert len(h1) == 2


def test_sweep_writes_tables_and_reuses_runs(tmp_path):
    base = tiny_cfg("train.steps=2")
    msgs = []
    rows = P.sweep(tmp_path, variants=("bswa_m1", "sum"), seeds=(0, 1), base=base,
                   fillers=(0, 16), n_samples=8, log=msgs.append)
    assert {(r["variant"], r["filler"]) for r in rows} == {
        (v, f) for v in ("bswa_m1", "sum") for f in (0, 16)}
    assert all(r["n_seeds"] == 2 for r in rows)
    assert (tmp_path / "sweep.csv").read_text().startswith("variant,filler,accuracy,std")
    table = json.loads((tmp_path / "sweep.json").read_text())
    assert table["seeds"] == [0, 1] and table["rows"] == rows
    assert (tmp_path / "runs" / "sum_s1" / "checkpoint.pt").is_file()
    msgs.clear()
    again = P.sweep(tmp_path, variants=("bswa_m1", "sum"), seeds=(0, 1), base=base,
                    fillers=(0, 16), n_samples=8, log=msgs.append)
    assert again == rows and all("reusing" in m for m in msgs)
    assert "bswa_m1" in P.format_table(rows)
    assert P.read_sweep(tmp_path) == rows


def test_cli_train_eval_sweep(tmp_path, capsys):
    run = tmp_path / "run"
    args = ["passkey", "train", "--out", str(run), "--variant", "bswa_m2", "--threads", "1"]
    args += [a for s in [*TINY, "train.steps=3"] for a in ("--set", s)]
    assert cli.main(args) == 0
    assert (run / "checkpoint.pt").is_file()
    js = tmp_path / "eval.json"
    assert cli.main(["passkey", "eval", str(run / "checkpoint.pt"), "--fillers", "0,40",
                     "--samples", "8", "--json", str(js)]) == 0
    assert set(json.loads(js.read_text())["accuracy"]) == {"0", "40"}
    out = capsys.readouterr().out
    assert "filler" in out
    sw = tmp_path / "sweep"
    assert cli.main(["passkey", "sweep", "--out", str(sw), "--variants", "bswa_m1",
                     "--seeds", "0", "--fillers", "0,8", "--samples", "4", "--figure",
                     str(sw / "passkey.png"), *[a for s in [*TINY, "train.steps=2"]
                                                for a in ("--set", s)]]) == 0
    assert (sw / "sweep.csv").is_file() and (sw / "passkey.png").is_file()


def test_cli_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "junk.pt").write_bytes(b"junk")
    assert cli.main(["passkey", "eval", str(tmp_path / "junk.pt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hippo-rep passkey: error:")
    assert cli.main(["passkey", "train", "--out", str(tmp_path / "r"), "--set",
                     "model.n_fam=0"]) == 2
    assert "n_fam" in capsys.readouterr().err
    assert cli.main(["passkey", "eval", str(tmp_path / "junk.pt"), "--fillers", "a,b"]) == 2

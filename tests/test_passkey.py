import json
import math

import numpy as np
import pytest
import torch

from hippo_rep import cli
from hippo_rep.models.fam import FAMConfigError
from hippo_rep.tasks import passkey as P
from hippo_rep.training.trainer import warmup_cosine

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


def test_training_takes_the_trainers_schedule(trained):
    _, _, cfg, hist = trained
    tc = cfg.train
    # logged after the step's scheduler update: the rate of the next step, as LambdaLR gives it
    assert [r["lr"] for r in hist] == [
        tc.lr * warmup_cosine(r["step"], 1.0, tc.warmup, tc.steps) for r in hist]
    assert hist[-1]["lr"] == pytest.approx(0.1 * tc.lr)


def test_checkpoint_round_trip(trained):
    out, model, cfg, _ = trained
    assert not list(out.glob(".*.tmp"))
    m2, cfg2, payload = P.load_checkpoint(out / "checkpoint.pt")
    assert cfg2 == cfg and payload["step"] == 150
    x, _ = P.make_batch(4, 12, np.random.default_rng(1))
    with torch.no_grad():
        torch.testing.assert_close(m2(x).logits, model(x).logits, atol=0, rtol=0)
    text = (out / "metrics.csv").read_bytes()
    assert text.startswith(b"step,loss,accuracy,lr,seconds\n") and b"\r" not in text


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


def test_sweep_writes_tables_and_reuses_runs(tmp_path):
    base = tiny_cfg("train.steps=2")
    msgs = []
    rows = P.sweep(tmp_path, variants=("bswa_m1", "sum"), seeds=(0, 1), base=base,
                   fillers=(0, 16), n_samples=8, log=msgs.append)
    assert {(r["variant"], r["filler"]) for r in rows} == {
        (v, f) for v in ("bswa_m1", "sum") for f in (0, 16)}
    assert all(r["n_seeds"] == 2 for r in rows)
    text = (tmp_path / "sweep.csv").read_bytes()
    assert text.startswith(b"variant,filler,accuracy,std,n_seeds,per_seed,n_prompts,ci_low,"
                           b"ci_high\n") and b"\r" not in text
    table = json.loads((tmp_path / "sweep.json").read_text())
    assert table["seeds"] == [0, 1] and table["rows"] == rows
    assert (tmp_path / "runs" / "sum_s1" / "checkpoint.pt").is_file()
    msgs.clear()
    again = P.sweep(tmp_path, variants=("bswa_m1", "sum"), seeds=(0, 1), base=base,
                    fillers=(0, 16), n_samples=8, log=msgs.append)
    assert again == rows and all("reusing" in m for m in msgs)
    assert "bswa_m1" in P.format_table(rows)
    assert P.read_sweep(tmp_path) == rows


@pytest.mark.slow
def test_sweep_on_two_workers_equals_the_sweep_in_this_process(tmp_path):
    """The runs are the cluster's jobs: on a local 2-worker cluster each run gives the
    weights and accuracies it gives here (same threads, same seeds)."""
    base = tiny_cfg("train.steps=3")
    kw = dict(variants=("bswa_m1", "sum"), seeds=(0,), base=base, fillers=(0, 16),
              n_samples=8)
    here = P.sweep(tmp_path / "here", **kw)
    there = P.sweep(tmp_path / "there", workers=2, **kw)
    assert there == here
    for run in ("bswa_m1_s0", "sum_s0"):
        a, b = (torch.load(tmp_path / d / "runs" / run / "checkpoint.pt", weights_only=True)
                for d in ("here", "there"))
        assert a["weights_sha256"] == b["weights_sha256"], run


def test_a_failing_run_does_not_stop_the_others(tmp_path, monkeypatch):
    real = P.train

    def train(cfg, out=None, log=None):
        if cfg.model.variant == "sum":
            raise RuntimeError("disk on fire")
        return real(cfg, out, log)

    monkeypatch.setattr(P, "train", train)
    msgs = []
    with pytest.raises(P.PassKeyError, match=r"1 of 2 PassKey runs failed, first sum_s0: "
                                             r"RuntimeError: disk on fire"):
        P.sweep(tmp_path, variants=("sum", "bswa_m1"), seeds=(0,), base=tiny_cfg(
            "train.steps=2"), fillers=(0,), n_samples=8, log=msgs.append)
    assert "disk on fire" in (tmp_path / "runs" / "sum_s0" / "error.txt").read_text()
    assert [r["variant"] for r in P.read_sweep(tmp_path)] == ["bswa_m1"]  # the other's table
    assert any(m.startswith("sum_s0: failed") for m in msgs)


def test_cli_train_eval_sweep(tmp_path, capsys):
    run = tmp_path / "run"
    args = ["passkey", "train", "--out", str(run), "--variant", "bswa_m2", "--threads", "1"]
    args += [a for s in [*TINY, "train.steps=3"] for a in ("--set", s)]
    assert cli.main(args) == 0
    assert (run / "checkpoint.pt").is_file()
    js = tmp_path / "eval.json"
    assert cli.main(["passkey", "eval", str(run / "checkpoint.pt"), "--fillers", "0,40",
                     "--samples", "8", "--json", str(js)]) == 0
    written = json.loads(js.read_text())
    assert set(written["accuracy"]) == {"0", "40"}
    out = capsys.readouterr().out
    assert "filler" in out and "bswa (B=8, M=2, F=0)" in out
    # the command writes what the library returns, and the intervals hold the accuracies
    again = P.evaluate_checkpoint(run / "checkpoint.pt", (0, 40), n_samples=8, seed=0)
    assert again == {**written, "checkpoint": str(run / "checkpoint.pt")}
    for f, (lo, hi) in again["interval"].items():
        assert lo <= again["accuracy"][f] <= hi
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


# ----------------------------------------------------- --set against the variant presets
def test_sweep_set_wins_over_presets_and_sweep_json_records_what_ran(tmp_path):
    sets = [*TINY, "train.steps=2", "model.n_mem=3", "model.n_fam=5"]
    P.sweep(tmp_path, variants=("fam", "sum"), seeds=(0,), base=P.PassKeyConfig(),
            fillers=(0,), n_samples=4, overrides=sets)
    table = json.loads((tmp_path / "sweep.json").read_text())
    assert table["overrides"] == sets
    for v in ("fam", "sum"):  # sum's presets are n_mem 1, n_fam 4: --set wins
        model, cfg, payload = P.load_checkpoint(tmp_path / "runs" / f"{v}_s0" / "checkpoint.pt")
        assert (cfg.model.variant, cfg.model.n_mem, cfg.model.n_fam) == (v, 3, 5)
        assert [tuple(lay.fam_init.shape) for lay in model.layers] == [(5, 32), (5, 32)]
        assert payload["model_state"]["layers.0.fam_init"].shape == (5, 32)
        # what sweep.json records is what the checkpoint holds
        assert table["variants"][v] == cfg.model.to_dict()
        assert table["configs"][v]["train"]["steps"] == cfg.train.steps == 2
    runs = json.loads((tmp_path / "runs.json").read_text())
    assert [(r["config"]["model"]["n_mem"], r["config"]["model"]["n_fam"]) for r in runs] \
        == [(3, 5), (3, 5)]


def test_set_contradicting_a_variant_name_is_refused_before_any_run(tmp_path):
    with pytest.raises(P.PassKeyError, match=r"model\.n_fam=16 conflicts with variant "
                                             r"'fam_f4'.*n_fam = 4"):
        P.sweep(tmp_path, variants=("fam_f4",), seeds=(0,), overrides=["model.n_fam=16"])
    with pytest.raises(P.PassKeyError, match=r"model\.n_mem=3 conflicts with variant 'bswa_m1'"):
        P.sweep(tmp_path, variants=("fam", "bswa_m1"), seeds=(0,),
                overrides=[*TINY, "train.steps=1", "model.n_mem=3"])
    assert not list(tmp_path.iterdir())  # checked before the first (fam) run trained
    with pytest.raises(P.PassKeyError, match=r"model\.variant='bswa' conflicts"):
        P.PassKeyConfig().with_overrides(["model.variant='bswa'"], variant="fam_f2")
    # a preset the name does not state is overridden; restating a defining value is fine
    cfg = P.PassKeyConfig().with_overrides(["model.n_mem=2", "model.n_fam=2"],
                                           variant="fam_f2")
    assert (cfg.model.n_mem, cfg.model.n_fam) == (2, 2)


def test_cli_sweep_with_conflicting_set_is_one_line(tmp_path, capsys):
    assert cli.main(["passkey", "sweep", "--out", str(tmp_path / "s"), "--set",
                     "model.n_mem=3", "--set", "model.n_fam=16"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "conflicts with variant 'bswa_m1'" in err[0]
    assert not (tmp_path / "s").exists()


# ------------------------------------------- every option against every variant
#: A tiny base (1 layer, d = 16, B = 4, fillers 12–16 so that prompts span 5 blocks).
OPT_MODEL = dict(vocab_size=P.VOCAB, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                 block_size=4, n_mem=1, n_fam=3, init_std=0.1)
OPT_TRAIN = dict(steps=3, batch_size=8, lr=3e-3, warmup=2, filler_min=12, filler_max=16,
                 log_every=1)
#: Every PassKey option but ``model.variant`` (the axis), ``model.vocab_size`` (fixed by the
#: task) and ``train.log_every`` (only groups the logged history), with a value that differs
#: from the base. grad_clip is tightened so that clipping certainly bites.
OPTION_VALUES = {
    "model.d_model": 24, "model.n_heads": 4, "model.n_layers": 2, "model.d_ff": 48,
    "model.block_size": 8, "model.n_mem": 2, "model.n_fam": 5, "model.mem_stop_grad": True,
    "model.pos_encoding": "none", "model.rope_base": 100.0, "model.init_std": 0.2,
    "train.steps": 4, "train.batch_size": 6, "train.lr": 1e-2, "train.warmup": 0,
    "train.weight_decay": 0.5, "train.grad_clip": 1e-3, "train.filler_min": 6,
    "train.filler_max": 20, "train.state_passing": 1.0, "train.diversity_weight": 0.5,
    "train.recon_weight": 0.5, "train.seed": 7,
}


def test_option_table_covers_every_option():
    import dataclasses

    names = {f"model.{f.name}" for f in dataclasses.fields(P.FAMConfig)} | \
        {f"train.{f.name}" for f in dataclasses.fields(P.PassKeyTrainConfig)}
    assert names - set(OPTION_VALUES) == {"model.variant", "model.vocab_size",
                                          "train.log_every"}


def _base(variant):
    return P.PassKeyConfig(P.FAMConfig(variant=variant, **OPT_MODEL),
                           P.PassKeyTrainConfig(**OPT_TRAIN))


def _unchecked(cfg, option, value):
    """``cfg`` with ``option`` set, skipping PassKeyConfig's refusals (FAMConfig and
    PassKeyTrainConfig still check their own fields): what a refused option would have done."""
    import dataclasses

    section, key = option.split(".")
    part = dataclasses.replace(getattr(cfg, section), **{key: value})
    new = object.__new__(P.PassKeyConfig)
    object.__setattr__(new, "model", part if section == "model" else cfg.model)
    object.__setattr__(new, "train", part if section == "train" else cfg.train)
    return new


def _losses(cfg):
    return [r["loss"] for r in P.train(cfg)[1]]


_BASE_LOSSES: dict = {}


def _toml(value):
    return json.dumps(value) if not isinstance(value, str) else f"'{value}'"


@pytest.mark.parametrize("option", list(OPTION_VALUES))
@pytest.mark.parametrize("variant", ["full", "bswa", "fam", "fm", "sum"])
def test_each_option_changes_the_loss_or_is_refused_where_it_does_nothing(variant, option,
                                                                          monkeypatch):
    base = _base(variant)
    if variant not in _BASE_LOSSES:
        _BASE_LOSSES[variant] = _losses(base)
    off = _BASE_LOSSES[variant]
    value = OPTION_VALUES[option]
    why = P.inert_option(base, option)
    if why is None:
        on = _losses(base.with_overrides([f"{option}={_toml(value)}"]))
        assert on[-1] != off[-1], f"{option} did not change the loss of {variant}"
        return
    with pytest.raises(P.PassKeyError, match=rf"{option}.*variant {variant!r}"):
        base.with_overrides([f"{option}={_toml(value)}"])
    # ground truth: forced through, the option indeed changes nothing (or cannot run)
    monkeypatch.setattr(P.PassKeyConfig, "check_options", lambda self: self)
    try:
        on = _losses(_unchecked(base, option, value))
    except FAMConfigError as err:
        assert option == "train.recon_weight" and "needs FAM slots" in str(err)
    else:
        assert on == off, f"{option} was refused for {variant} but changes its loss"


def test_conditionally_inert_options_are_refused(monkeypatch, tmp_path):
    fam0 = P.PassKeyConfig(P.FAMConfig(variant="fam", **{**OPT_MODEL, "n_mem": 0}),
                           P.PassKeyTrainConfig(**OPT_TRAIN))
    with pytest.raises(P.PassKeyError, match=r"mem_stop_grad.*'fam'.*n_mem = 0"):
        fam0.with_overrides(["model.mem_stop_grad=true"])
    nopos = _base("bswa").with_overrides(["model.pos_encoding='none'"])
    with pytest.raises(P.PassKeyError, match=r"rope_base.*'bswa'.*pos_encoding"):
        nopos.with_overrides(["model.rope_base=100"])
    # full attention averages its diversity loss per block of B queries: there B acts
    div = _base("full").with_overrides(["train.diversity_weight=0.5"])
    assert P.inert_option(div, "model.block_size") is None
    assert _losses(div.with_overrides(["model.block_size=8"]))[-1] != _losses(div)[-1]
    # the API refuses to train with an inert option switched on, too; a checkpoint's config
    # that has one still loads (it is checked before training, not on reading)
    cfg = P.PassKeyConfig.from_dict({"model": {"variant": "fm"},
                                     "train": {"state_passing": 0.5}})
    with pytest.raises(P.PassKeyError, match=r"train\.state_passing.*'fm'"):
        P.train(cfg)
    P.save_checkpoint(tmp_path / "old.pt", P.build_fam_model(cfg.model, seed=0), cfg, 0)
    assert P.load_checkpoint(tmp_path / "old.pt")[1] == cfg
    # ground truth: forced through, the refused settings change nothing
    forced = [_unchecked(fam0, "model.mem_stop_grad", True),
              _unchecked(nopos, "model.rope_base", 100.0)]
    monkeypatch.setattr(P.PassKeyConfig, "check_options", lambda self: self)
    assert _losses(forced[0]) == _losses(fam0)
    assert _losses(forced[1]) == _losses(nopos)


# ---------------------------------------------------- threads, reproducibility, intervals
def test_cli_pins_threads_and_reruns_are_bit_identical(tmp_path):
    torch.set_num_threads(2)
    try:
        runs = []
        for name in ("a", "b"):
            out = tmp_path / name
            args = ["passkey", "train", "--out", str(out), "--variant", "fam_f2",
                    "--no-progress"]
            args += [a for s in [*TINY, "train.steps=12"] for a in ("--set", s)]
            assert cli.main(args) == 0
            assert torch.get_num_threads() == 1  # the default --threads
            js = tmp_path / f"{name}.json"
            assert cli.main(["passkey", "eval", str(out / "checkpoint.pt"), "--fillers",
                             "0,24", "--samples", "16", "--json", str(js)]) == 0
            runs.append((torch.load(out / "checkpoint.pt", weights_only=True),
                         json.loads(js.read_text())))
    finally:
        torch.set_num_threads(1)
    (pa, ea), (pb, eb) = runs
    assert pa["weights_sha256"] == pb["weights_sha256"]
    for k, v in pa["model_state"].items():
        assert torch.equal(v, pb["model_state"][k]), k
    assert ea["accuracy"] == eb["accuracy"] and ea["threads"] == 1
    assert ea["interval"] == eb["interval"]


def test_wilson_interval_matches_the_formula():
    def wilson(k, n, z=1.959963984540054):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        return centre - half, centre + half

    for k, n in ((360, 400), (0, 64), (64, 64), (7, 16)):
        assert P.wilson_interval(k / n, n) == pytest.approx(wilson(k, n), abs=1e-9)
    assert P.prompts_needed(0.9) == 388  # the default of 400 reaches ±0.03 at 0.9
    lo, hi = P.wilson_interval(0.9, P.DEFAULT_PROMPTS)  # half the width: ±0.0295
    assert (hi - lo) / 2 <= 0.03
    lo, hi = P.wilson_interval(0.9, 300)  # fewer prompts: wider than ±0.03
    assert (hi - lo) / 2 > 0.03
    with pytest.raises(P.PassKeyError, match="not a count"):
        P.wilson_interval(0.3, 8)


def test_sweep_rows_carry_pooled_intervals_and_old_tables_get_them(tmp_path):
    runs = [{"variant": "fam", "seed": s, "n_samples": 8, "accuracy": {"64": a}}
            for s, a in ((0, 0.5), (1, 1.0))]
    (row,) = P.summarise(runs)
    assert row["n_prompts"] == 16 and row["accuracy"] == 0.75
    assert (row["ci_low"], row["ci_high"]) == P.wilson_interval(12 / 16, 16)
    wide = P.wide_intervals([row])
    assert wide and wide[0]["prompts_needed"] == P.prompts_needed(0.75)
    old = {"n_samples": 8, "rows": [{k: row[k] for k in
                                     ("variant", "filler", "accuracy", "std", "n_seeds")}]}
    (tmp_path / "sweep.json").write_text(json.dumps(old))
    (back,) = P.read_sweep(tmp_path)
    assert (back["ci_low"], back["ci_high"], back["n_prompts"]) == \
        (row["ci_low"], row["ci_high"], 16)


def test_sweep_plot_error_bars_are_the_intervals():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hippo_rep.plotting.passkey import plot_passkey_sweep

    rows = P.summarise([{"variant": "fam_f4", "seed": 0, "n_samples": 16,
                         "accuracy": {"0": 1.0, "64": 0.5}}])
    ax = plot_passkey_sweep(rows)
    (bars,) = [c for c in ax.containers if c.get_label() == "fam_f4"]
    segs = bars.lines[2][0].get_segments()  # one vertical segment per filler
    for seg, r in zip(segs, rows, strict=True):
        assert sorted(seg[:, 1]) == pytest.approx([r["ci_low"], r["ci_high"]])
    plt.close(ax.figure)

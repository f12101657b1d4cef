"""The config's sections per model kind ([model.tem], [train.tem]): they round-trip through
TOML, JSON and checkpoints; files, checkpoints, recordings, overrides and grid keys written
with the old flat ``tem_*`` keys read as the same config; a misspelt key in a section names
the key and the section."""

from __future__ import annotations

import json
import re

import pytest
import tomli_w

from hippo_rep import cli
from hippo_rep.config import (
    Config,
    ConfigError,
    ModelConfig,
    TEMModelConfig,
    TEMTrainConfig,
    TrainConfig,
    apply_overrides,
    from_dict,
    load_config,
)
from hippo_rep.typed_config import get_path
from tests.test_data import DATA

#: A TEM config whose every [model.tem] and [train.tem] key differs from its default.
NEW = ["model.kind=tem", "model.tem.n_g=[6,4]", "model.tem.n_g_sub=[3,2]",
       "model.tem.n_x_c=5", "model.tem.freqs=[0.9,0.2]", "model.tem.transition_hidden=4",
       "model.tem.lambda_=0.99", "model.tem.eta=0.25", "model.tem.kappa=0.7",
       "model.tem.iters_gen=[2,1]", "model.tem.iters_inf=[3,3]",
       "train.tem.loss_p=0.5", "train.tem.loss_x=0.75", "train.tem.loss_g=0.25",
       "train.tem.loss_reg_g=0.03", "train.tem.loss_reg_p=0.04", "train.tem.loss_on=revisits",
       "train.tem.latent_ramp=50", "train.tem.reg_p_decay=60", "train.tem.eta_ramp=70",
       "train.tem.lambda_ramp=80", "train.tem.p2g_half=90", "train.tem.p2g_width=100"]


def old_key(section: type, new: str) -> str:
    """The flat key that held ``new`` (``"tem.lambda_"`` → ``"tem_lambda"``)."""
    (old,) = [o for o, n in section.moved.items() if n == new]
    return old


def flat(cfg: Config) -> dict:
    """``cfg`` as written before the sections existed: [model] tem_n_g, [train] tem_eta_ramp."""
    data = cfg.to_dict()
    for name, section in (("model", ModelConfig), ("train", TrainConfig)):
        for key, value in data[name].pop("tem").items():
            data[name][old_key(section, f"tem.{key}")] = value
    return data


@pytest.fixture(scope="module")
def cfg() -> Config:
    return load_config("tiny", NEW)


def test_every_key_of_the_sections_has_its_old_name():
    for section, sub in ((ModelConfig, TEMModelConfig), (TrainConfig, TEMTrainConfig)):
        assert sorted(section.moved.values()) == sorted(f"tem.{k}" for k, _, _ in sub.keys())
        assert all(old.startswith("tem_") for old in section.moved)
    assert ModelConfig.moved["tem_lambda"] == "tem.lambda_"  # lambda: a Python keyword


def test_sections_round_trip_through_toml_and_json(cfg, tmp_path):
    assert cfg.model.tem.n_g == (6, 4) and cfg.model.tem.lambda_ == 0.99
    assert cfg.train.tem.loss_on == "revisits" and cfg.train.tem.p2g_half == 90
    text = cfg.to_toml()
    assert "[model.tem]" in text and "[train.tem]" in text and "tem_" not in text
    (tmp_path / "c.toml").write_text(text)
    assert load_config(tmp_path / "c.toml") == cfg == Config.from_toml(tmp_path / "c.toml")
    assert Config.from_json(cfg.to_json()) == cfg
    assert from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert {"model.tem.n_x_c", "train.tem.eta_ramp"} <= {k for k, _, _ in Config.keys()}


def test_old_flat_keys_give_the_same_config(cfg, tmp_path):
    old = flat(cfg)
    assert "tem" not in old["model"] and old["model"]["tem_lambda"] == 0.99
    assert from_dict(old, "old checkpoint") == cfg
    assert Config.from_json(json.dumps(old)) == cfg
    (tmp_path / "old.toml").write_text(tomli_w.dumps(old))
    assert load_config(tmp_path / "old.toml") == cfg
    # the old file with overrides under either name: the override wins
    for key in ("model.tem.n_x_c", "model.tem_n_x_c"):
        assert load_config(tmp_path / "old.toml", [f"{key}=6"]).model.tem.n_x_c == 6
    assert load_config(tmp_path / "old.toml",
                       ["train.tem_loss_on=all"]).train.tem.loss_on == "all"


def test_old_override_keys_set_the_new_ones(cfg):
    old = [o.replace("model.tem.lambda_", "model.tem_lambda").replace("model.tem.", "model.tem_")
           .replace("train.tem.", "train.tem_") for o in NEW]
    assert "model.tem_lambda=0.99" in old and "train.tem_p2g_width=100" in old
    assert load_config("tiny", old) == cfg
    out = apply_overrides({"model": {"tem_n_g": [1]}}, ["model.tem_eta=0.3"])
    assert out == {"model": {"tem": {"n_g": [1], "eta": 0.3}}}
    # a new preset's [train.tem] with the old name on the command line
    assert load_config("tem", ["train.tem_loss_on=all"]).train.tem.loss_on == "all"
    assert load_config("tem").train.tem.loss_on == "revisits"


def test_an_old_key_beside_its_new_name_is_refused(tmp_path):
    data = {"model": {"tem_n_x_c": 5, "tem": {"n_x_c": 6}}}
    with pytest.raises(ConfigError) as info:
        from_dict(data, "x.toml")
    assert str(info.value) == ("x.toml: model.tem_n_x_c is the old name of model.tem.n_x_c; "
                               "give one of them")
    (tmp_path / "both.toml").write_text(tomli_w.dumps(data))
    with pytest.raises(ConfigError, match=r"both\.toml: model\.tem_n_x_c is the old name"):
        load_config(tmp_path / "both.toml")


@pytest.mark.parametrize("override,needle", [
    ("model.tem.n_gg=[6]", "unknown key(s) model.tem.n_gg (did you mean model.tem.n_g?); valid "
                           "keys in [model.tem]: eta, freqs, iters_gen, iters_inf, kappa, "
                           "lambda_, n_g, n_g_sub, n_x_c, transition_hidden"),
    ("model.tem.lambda=0.5", "unknown key(s) model.tem.lambda (did you mean model.tem.lambda_?)"),
    ("train.tem.eta_rmp=3", "unknown key(s) train.tem.eta_rmp (did you mean train.tem.eta_ramp?)"),
    ("model.tme.n_g=[6]", "unknown key(s) model.tme (did you mean model.tem?)"),
    ("model.tem_n_gg=[6]", "unknown key(s) model.tem_n_gg (did you mean model.tem.n_g?)"),
    ("model.tem=3", "[model.tem] must be a table; got int"),
    ("train.tem.p2g_width=0", "train.tem.p2g_width must be ≥ 1 (it divides); got 0"),
    ("model.tem.n_x_c=1", "model.tem.n_x_c must be ≥ 2; got 1"),
])
def test_a_bad_key_in_a_section_is_one_line_naming_key_and_section(tmp_path, capsys, override,
                                                                   needle):
    with pytest.raises(ConfigError) as info:
        load_config("tiny", [override])
    assert str(info.value).startswith("preset 'tiny': ") and needle in str(info.value)
    rc = cli.main(["train", "--config", "tiny", "--set", override, "--out",
                   str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and needle in err, err
    assert not (tmp_path / "r").exists()


def test_shipped_tem_checkpoint_written_with_flat_keys_loads_them():
    """data/tem_8x8.pt holds its config with the old flat keys: each is read at its new
    place, with the value it had."""
    from hippo_rep.training.checkpoint import load_checkpoint, read_checkpoint

    raw = read_checkpoint(DATA / "tem_8x8.pt")["config"]
    assert "tem_n_g" in raw["model"] and "tem_loss_on" in raw["train"]
    _, cfg, _ = load_checkpoint(DATA / "tem_8x8.pt")
    for name, section in (("model", ModelConfig), ("train", TrainConfig)):
        for old, new in section.moved.items():
            value = raw[name][old]
            got = get_path(getattr(cfg, name), new)
            assert got == (tuple(value) if isinstance(value, list) else value), old
    assert cfg.train.tem.loss_on == "revisits"


def test_a_run_written_with_flat_keys_resumes(tmp_path):
    """A run folder from before the sections (config.toml and checkpoint with tem_* keys)
    resumes under today's config, as the same run."""
    import torch

    from hippo_rep.run_files import CHECKPOINT_FILE, CONFIG_FILE
    from hippo_rep.training import trainer as T
    from hippo_rep.training.checkpoint import load_checkpoint, write_payload

    cfg = load_config("tiny", [*NEW, "train.iterations=1", "train.chunk_len=16"])
    run = tmp_path / "r"
    T.train(cfg, run, progress=False)
    payload = torch.load(run / CHECKPOINT_FILE, weights_only=False)
    write_payload(run / CHECKPOINT_FILE, {**payload, "config": flat(cfg)})
    (run / CONFIG_FILE).write_text(tomli_w.dumps(flat(cfg)))
    assert "tem_lambda" in (run / CONFIG_FILE).read_text()
    _, loaded, _ = load_checkpoint(run / CHECKPOINT_FILE)
    assert loaded == cfg
    rc = cli.main(["train", "--out", str(run), "--resume", "--set", "train.iterations=2",
                   "--no-progress"])
    assert rc == 0
    _, resumed, payload = load_checkpoint(run / CHECKPOINT_FILE)
    assert payload["step"] == 2 and resumed == cfg.replace(train=cfg.train.replace(iterations=2))
    assert load_config(run / CONFIG_FILE) == cfg  # the old file, as written before


def test_changed_keys_name_the_key_in_its_section(cfg):
    from hippo_rep.training.trainer import _changed_keys

    other = cfg.replace(model=cfg.model.replace(tem=cfg.model.tem.replace(eta=0.5)))
    assert _changed_keys(cfg, other) == {"model.tem.eta"}


def test_grid_keys_of_a_section_and_their_old_names():
    from hippo_rep.sweep.grid import config_keys, expand_grid, parse_grid

    assert {"model.tem.n_g", "train.tem.loss_on"} <= set(config_keys())
    assert list(parse_grid(["model.tem_n_x_c=5,6"])) == ["model.tem.n_x_c"]
    runs = expand_grid("tiny", ["model.tem.n_x_c=5,6"], 1, NEW[:1])
    assert [r.config.model.tem.n_x_c for r in runs] == [5, 6]
    assert [r.labels for r in runs] == [{"tem.n_x_c": 5}, {"tem.n_x_c": 6}]
    with pytest.raises(ConfigError, match="unknown grid key 'model.tem.nn'"):
        parse_grid(["model.tem.nn=1,2"])


def test_sweep_manifest_with_flat_keys_is_the_same_sweep(cfg):
    from hippo_rep.sweep.manifest import _differences

    new = {"base_config": cfg.to_dict(), "grid": {"model.tem.eta": [0.1]}, "settings": {}}
    old = {"base_config": flat(cfg), "grid": {"model.tem_eta": [0.1]}, "settings": {}}
    assert _differences(old, new) == []
    changed = {**new, "base_config": from_dict(flat(cfg)).replace(
        model=cfg.model.replace(tem=cfg.model.tem.replace(kappa=0.1))).to_dict()}
    assert _differences(old, changed) == ["model.tem.kappa: 0.7 → 0.1"]


def test_tem_figure_reads_module_sizes_from_old_and_new_recordings(cfg):
    import numpy as np
    import xarray as xr

    from hippo_rep.figures.compare import _tem_modules

    for model in (cfg.to_dict()["model"], flat(cfg)["model"]):
        ds = xr.Dataset(attrs={"model_config": json.dumps(model)})
        assert np.array_equal(_tem_modules(ds), [0] * 6 + [1] * 4)


@pytest.mark.parametrize("name, value, message", [
    ("n_envs", 0, "n_envs must be an integer ≥ 1 and ≤ MAX_BATCH = 4,096; got 0"),
    ("n_envs", 4097, "got 4097"),
    ("n_steps", 10**9, "n_steps must be an integer ≥ 1 and ≤ MAX_WALK_STEPS = 100,000"),
    ("chunk", 2.0, "chunk must be an integer"),
    ("seed", -1, "seed must be an integer ≥ 0 and ≤ MAX_SEED = 9,223,372,036,854,775,807; got -1"),
    ("seed", True, "seed must be an integer"),
])
def test_walk_sizes_out_of_range_name_the_argument(name, value, message):
    from hippo_rep.config import check_walk_sizes

    with pytest.raises(RuntimeError, match=re.escape(message)):
        check_walk_sizes(RuntimeError, **{name: value})


def test_walk_sizes_at_their_bounds_pass_as_ints():
    import numpy as np

    from hippo_rep.config import MAX_BATCH, MAX_WALK_STEPS, check_walk_sizes

    got = check_walk_sizes(ValueError, n_envs=np.int64(MAX_BATCH), n_steps=MAX_WALK_STEPS,
                           chunk=1, seed=0)
    assert got == {"n_envs": MAX_BATCH, "n_steps": MAX_WALK_STEPS, "chunk": 1, "seed": 0}
    assert type(got["n_envs"]) is int
    assert check_walk_sizes(ValueError, n_steps=None) == {"n_steps": None}


@pytest.mark.parametrize("call", ["record", "evaluate", "calibrate"])
def test_checkpoint_verbs_refuse_walk_sizes_before_any_work(tmp_path, call):
    """A billion steps is a clear error naming the argument, not a 358 GiB allocation."""
    from hippo_rep.recording import RecordingError, record_to_file
    from hippo_rep.training.calibrate import CalibrationError, calibrate_checkpoint
    from hippo_rep.training.checkpoint import CheckpointError
    from hippo_rep.training.evaluate import evaluate_checkpoint

    ck, out = DATA / "temt_paper.pt", tmp_path / "out"
    run, error = {
        "record": (lambda: record_to_file(ck, out.with_suffix(".nc"), n_steps=10**9),
                   RecordingError),
        "evaluate": (lambda: evaluate_checkpoint(ck, n_envs=2, seed=-1), CheckpointError),
        "calibrate": (lambda: calibrate_checkpoint(ck, out.with_suffix(".pt"), n_envs=0),
                      CalibrationError),
    }[call]
    with pytest.raises(error, match=r"(n_steps|seed|n_envs) must be an integer"):
        run()
    assert list(tmp_path.iterdir()) == []

"""Training never saves a non-finite model and says truthfully what it kept; config validation
rejects meaningless numbers through one rule per key."""

import re

import pytest
import torch

from hippo_rep import cli
from hippo_rep import config as C
from hippo_rep.config import ConfigError, load_config
from hippo_rep.training import trainer as T
from hippo_rep.training.checkpoint import load_checkpoint
from hippo_rep.typed_config import set_path


def tiny(*extra):
    return load_config("tiny", ["train.iterations=12", *extra])


def poison_step_at(monkeypatch, at: int):
    """Make the optimiser write a NaN into W_a on iteration ``at`` (0-based)."""
    real = T.Trainer._step

    def step(self, iteration, *a):
        out = real(self, iteration, *a) if iteration != at else None
        if iteration == at:
            with torch.no_grad():
                self.model.W_a.view(-1)[0] = float("nan")
            self._check_finite(iteration + 1)
        return out

    monkeypatch.setattr(T.Trainer, "_step", step)


def test_non_finite_weights_stop_and_keep_the_last_finite_checkpoint(tmp_path, monkeypatch):
    poison_step_at(monkeypatch, 7)
    with pytest.raises(T.TrainingError) as info:
        T.train(tiny("train.checkpoint_every=5"), tmp_path / "r", progress=False)
    msg = str(info.value)
    assert "iteration 8" in msg and "W_a" in msg
    assert "last good checkpoint (iteration 5" in msg
    model, _, payload = load_checkpoint(tmp_path / "r" / "checkpoint.pt")
    assert payload["step"] == 5
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_failure_before_any_checkpoint_says_so_and_removes_the_new_folder(tmp_path,
                                                                           monkeypatch):
    poison_step_at(monkeypatch, 2)
    with pytest.raises(T.TrainingError, match=r"none exists.*removed"):
        T.train(tiny("train.checkpoint_every=100"), tmp_path / "r", progress=False)
    assert not (tmp_path / "r").exists()


def test_failure_keeps_a_folder_it_did_not_create(tmp_path, monkeypatch):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "notes.txt").write_text("mine")
    poison_step_at(monkeypatch, 2)
    with pytest.raises(T.TrainingError, match="none exists"):
        T.train(tiny("train.checkpoint_every=100"), tmp_path / "r", progress=False)
    assert (tmp_path / "r" / "notes.txt").read_text() == "mine"


def test_huge_learning_rate_never_saves_a_non_finite_model(tmp_path):
    """lr = 1e6 (accepted: finite and positive) blows the weights up within a few steps."""
    with pytest.raises(T.TrainingError) as info:
        T.train(tiny("train.lr=1e6", "train.checkpoint_every=1", "train.iterations=30"),
                tmp_path / "r", progress=False)
    msg = str(info.value)
    kept = re.search(r"last good checkpoint \(iteration (\d+)", msg)
    if kept:
        _, _, payload = load_checkpoint(tmp_path / "r" / "checkpoint.pt")  # finite, or raises
        assert payload["step"] == int(kept.group(1))
    else:
        assert "none exists" in msg and not (tmp_path / "r").exists()


def test_resume_after_a_stop_continues_from_the_finite_checkpoint(tmp_path, monkeypatch):
    with monkeypatch.context() as m:
        poison_step_at(m, 7)
        with pytest.raises(T.TrainingError):
            T.train(tiny("train.checkpoint_every=5"), tmp_path / "r", progress=False)
    T.train(tiny("train.checkpoint_every=5"), tmp_path / "r", resume=True, progress=False)
    _, _, payload = load_checkpoint(tmp_path / "r" / "checkpoint.pt")
    assert payload["step"] == 12


# ------------------------------------------------------------------------ config rules
def numeric_fields():
    """(key, is a float) of every numeric field, in the sections' own sections too
    (``model.tem.n_x_c``)."""
    for section, cls in C._SECTIONS.items():
        for key, _, typ in cls.keys():
            if typ in (int, float):
                yield f"{section}.{key}", typ is float


def test_every_numeric_key_has_a_rule():
    names = [n for n, _ in numeric_fields()]
    missing = [n for n in names if n not in C.RULES]
    assert not missing, f"add entries to config.RULES for {missing}"
    assert not set(C.RULES) - set(names)


def test_every_default_and_preset_passes_the_rules():
    for preset in C.PRESETS:
        load_config(preset)
    C.validate(C.Config())


def bad_values(name: str, is_float: bool):
    """Values that the rule of ``name`` must reject."""
    rule = C.RULES[name]
    vals = []
    if is_float:
        vals += ["nan", "inf", "-inf"]
    if rule.low is not None:
        lo = rule.low
        vals.append(lo if rule.low_open else (lo - 0.5 if is_float else int(lo) - 1))
    if rule.high is not None:
        hi = rule.high
        vals.append(hi if rule.high_open else (hi * 2 if is_float else int(hi) + 1))
    return vals


CASES = [(n, v) for n, f in numeric_fields() for v in bad_values(n, f)]


@pytest.mark.parametrize("name,value", CASES)
def test_bad_numeric_value_is_one_line_naming_the_key(tmp_path, capsys, name, value):
    rc = cli.main(["train", "--config", "tiny", "--set", f"{name}={value}",
                   "--out", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and name in err, err
    assert not (tmp_path / "r").exists()
    # the same value given as data (no TOML limits): the rule's message, naming its cap
    raw = float(value) if isinstance(value, str) else value
    data = {}
    set_path(data, name, raw)
    with pytest.raises(ConfigError, match=re.escape(name)) as info:
        C.from_dict(data)
    rule = C.RULES[name]
    if rule.cap and raw > rule.high:
        assert f"{rule.cap} = {rule.high}" in str(info.value)


def test_zero_where_it_divides_and_negative_clip():
    for key in ("train.log_every", "train.checkpoint_every"):
        with pytest.raises(ConfigError, match=f"{key} must be ≥ 1 \\(it divides\\)"):
            load_config("tiny", [f"{key}=0"])
    with pytest.raises(ConfigError, match="train.grad_clip must be > 0"):
        load_config("tiny", ["train.grad_clip=-1"])


@pytest.mark.parametrize("device", ["tpu", "cuda:x", "", "CPU"])
def test_unknown_device_is_refused(tmp_path, capsys, device):
    with pytest.raises(ConfigError, match="train.device"):
        load_config("tiny", [f"train.device='{device}'"])
    rc = cli.main(["train", "--config", "tiny", "--device", device, "--out",
                   str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "device" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_world_size_cap_is_named():
    with pytest.raises(ConfigError, match="MAX_NODES"):
        load_config("tiny", ["world.worlds=square:100000"])


def test_accepted_edge_values():
    cfg = load_config("tiny", ["train.device=cuda:1", "train.eval_every=0", "train.threads=0",
                               "model.write_threshold=1.5", "world.stay_prob=0"])
    assert cfg.train.device == "cuda:1"

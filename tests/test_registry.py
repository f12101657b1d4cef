"""The model registry: each kind builds its class, and each capability says what the built
model does (checked on the model itself, not against a copy of the table)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import hippo_rep
from hippo_rep.config import ConfigError, ModelConfig, load_config
from hippo_rep.model_kinds import MODEL_KINDS, TRAITS, kinds_with
from hippo_rep.models.registry import MODELS, Chunk, ModelSpec, build_model, model_spec
from hippo_rep.models.tem import TEM
from hippo_rep.models.temt import TEMt
from hippo_rep.training.calibrate import CalibrationError, calibrate_checkpoint
from hippo_rep.training.checkpoint import save_checkpoint

KINDS = ("temt", "sinusoidal", "tem")
N_ACT, L = 5, 12


def _config(kind: str):
    return load_config("tiny", [f"model.kind={kind}"])


def _model(kind: str, seed: int = 0):
    cfg = _config(kind)
    return build_model(cfg.model, N_ACT, cfg.world.n_obs, seed=seed), cfg


def _walk(n_obs: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randint(0, n_obs, (2, L), generator=gen),
            torch.randint(0, N_ACT, (2, L), generator=gen))


def test_the_registry_holds_exactly_the_kinds_the_config_accepts():
    rule = next(f for f in dataclasses.fields(ModelConfig) if f.name == "kind").metadata["rule"]
    assert list(MODELS) == list(rule.choices) == list(MODEL_KINDS) == list(KINDS)
    assert ModelConfig().kind == next(iter(MODEL_KINDS)) == "temt"
    assert all(isinstance(s, ModelSpec) for s in MODELS.values())
    with pytest.raises(dataclasses.FrozenInstanceError):
        MODELS["temt"].delay_task = False


@pytest.mark.parametrize(("kind", "cls", "recurrent"), [("temt", TEMt, True),
                                                        ("sinusoidal", TEMt, False),
                                                        ("tem", TEM, None)])
def test_each_kind_builds_its_class(kind, cls, recurrent):
    model, cfg = _model(kind)
    assert type(model) is cls
    assert model.config == cfg.model
    if recurrent is not None:  # TEM-t with path integration, or the fixed sinusoidal g
        assert model.recurrent is recurrent


@pytest.mark.parametrize("kind", KINDS)
def test_build_model_draws_from_its_seed_and_leaves_the_global_rng(kind):
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a, _ = _model(kind, seed=1)
    assert torch.equal(torch.random.get_rng_state(), before)
    b, _ = _model(kind, seed=1)
    c, _ = _model(kind, seed=2)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert any(not torch.equal(sa[k], sc[k]) for k in sa)


def test_an_unknown_kind_is_one_line_naming_model_kind():
    with pytest.raises(ConfigError) as err:
        model_spec("transformer")
    msg = str(err.value)
    assert "\n" not in msg
    assert "model.kind 'transformer'" in msg and "temt, sinusoidal, tem" in msg
    with pytest.raises(ConfigError, match="model.kind"):
        build_model(SimpleNamespace(kind="transformer"), N_ACT, 10)
    with pytest.raises(ConfigError, match="model.kind"):
        model_spec(["temt"])  # not a name at all


def _chunk(obs, iteration=0, update=0):
    return Chunk(obs, torch.ones_like(obs, dtype=bool), None, iteration, update)


@pytest.mark.parametrize("kind", KINDS)
def test_losses_annealing_and_metric_fields_are_the_models_own(kind):
    model, cfg = _model(kind)
    spec = model_spec(kind)
    assert (spec.anneal is not None) == hasattr(model, "anneal")
    obs, act = _walk(cfg.world.n_obs)
    out, _ = model(obs, act)
    parts = spec.losses(model, out, _chunk(obs), cfg)
    assert parts["loss"].dim() == 0 and parts["loss"].requires_grad
    if spec.anneal is None:
        assert spec.metric_fields == ()
        return
    own = model.training_losses(out, 0, cfg.train, revisit=torch.ones_like(obs, dtype=bool))
    assert parts.keys() == own.keys()
    torch.testing.assert_close(parts["loss"], own["loss"])
    assert spec.metric_fields == tuple(k for k in parts if k.startswith("tem_"))
    assert len(spec.metric_fields) == 8


@pytest.mark.parametrize("kind", ("temt", "sinusoidal"))
def test_corrected_g_losses_count_for_temt_only(kind):
    """TEM-t's total holds loss 2, loss 3 and the L2 of g besides loss 1; its sinusoidal
    baseline's, loss 1 only."""
    model, cfg = _model(kind)
    obs, act = _walk(cfg.world.n_obs)
    out, _ = model(obs, act)
    parts = model_spec(kind).losses(model, out, _chunk(obs), cfg)
    tc = cfg.train
    only_pi = tc.loss_pi * parts["loss_pi"]
    full = only_pi + tc.loss_g * parts["loss_g"] + tc.loss_g_pi * parts["loss_g_pi"] + \
        tc.loss_l2_g * parts["loss_l2_g"]
    torch.testing.assert_close(parts["loss"], full if kind == "temt" else only_pi)
    assert not torch.allclose(full, only_pi)  # the two cases differ: the check has teeth


@pytest.mark.parametrize("kind", KINDS)
def test_recorded_units_are_what_the_output_carries(kind):
    model, cfg = _model(kind)
    obs, act = _walk(cfg.world.n_obs)
    with torch.no_grad():
        out, state = model.eval()(obs, act, return_activity=True)
    units = model_spec(kind).recorded_units
    assert units in ("memory", "p")
    if units == "p":
        assert out.p.shape[:2] == (2, L)
    else:  # memory-neuron activity over the memory slots, whose writes the state holds
        assert not hasattr(out, "p")
        assert out.activity.shape[:2] == (2, L) and out.activity.shape[2] == state.capacity
        assert int(state.count.min()) > 0


def test_write_threshold_calibration_follows_the_spec(tmp_path):
    for kind in KINDS:
        model, cfg = _model(kind)
        path = tmp_path / f"{kind}.pt"
        save_checkpoint(path, model, cfg, 0)
        if model_spec(kind).calibrates_write_threshold:
            report = calibrate_checkpoint(path, tmp_path / f"{kind}.cal.pt", n_envs=2,
                                          n_steps=60)
            assert 0 < report["threshold"] <= 1
        else:
            with pytest.raises(CalibrationError, match=f"{kind!r} model"):
                calibrate_checkpoint(path, tmp_path / f"{kind}.cal.pt", n_envs=2, n_steps=60)
    assert [k for k in KINDS if model_spec(k).calibrates_write_threshold] == ["temt"]


def test_the_delay_task_refuses_exactly_the_kinds_without_tem_t_memory(tmp_path):
    from hippo_rep.tasks.delay import DelayTaskError, delay_experiment

    assert [k for k in KINDS if not model_spec(k).delay_task] == ["tem"]
    model, cfg = _model("tem")
    save_checkpoint(tmp_path / "tem.pt", model, cfg, 0)
    with pytest.raises(DelayTaskError, match="model.kind"):
        delay_experiment(tmp_path / "tem.pt")


#: Each trait of hippo_rep.model_kinds.KindTraits → config overrides that need it.
TRAIT_OPTIONS = {
    "readout_cells": ["model.cells=readout"],
    "memory_variants": ["model.memory=window"],
    "action_transitions": ["model.transition_param=waves", "model.g_module_size=6",
                           "train.loss_isometry=1"],
}


def test_every_trait_gates_config_options():
    assert set(TRAIT_OPTIONS) == set(TRAITS)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("trait", "option"),
                         [(t, o) for t, opts in TRAIT_OPTIONS.items() for o in opts])
def test_config_accepts_an_option_exactly_for_the_kinds_with_its_trait(kind, trait, option):
    """Config validation asks a kind's traits; a kind with the trait builds a model that
    takes the option (its read-out cells, its memory, its modules or wave W_a)."""
    overrides = [f"model.kind={kind}", "model.n_g=60", option]
    if kind in kinds_with(trait):
        cfg = load_config("tiny", overrides)
        model = build_model(cfg.model, N_ACT, cfg.world.n_obs)
        obs, act = _walk(cfg.world.n_obs)
        out, _ = model(obs, act)
        assert torch.isfinite(out.logits_pi).all()
        assert (out.cells is not None) == (trait == "readout_cells")
    else:
        with pytest.raises(ConfigError, match=f"needs model.kind = \"temt\" \\(got '{kind}'\\)"):
            load_config("tiny", overrides)


def test_a_kinds_own_check_runs_on_the_whole_config():
    """TEM's two-hot observation codes: C(n_x_c, 2) must cover world.n_obs."""
    assert MODEL_KINDS["tem"].check is not None and MODEL_KINDS["temt"].check is None
    with pytest.raises(ConfigError, match="model.tem.n_x_c = 4 has 6 two-hot codes, fewer than "
                                          "world.n_obs = 7"):
        load_config("tiny", ["model.kind=tem", "model.tem.n_x_c=4", "world.n_obs=7"])
    load_config("tiny", ["model.kind=tem", "model.tem.n_x_c=4", "world.n_obs=6"])
    load_config("tiny", ["model.kind=temt", "model.tem.n_x_c=4", "world.n_obs=7"])


def kind_tests(source: str) -> list[int]:
    """Lines of ``source`` that compare something with a model kind's name (``==``, ``!=``,
    ``in`` or a ``case`` pattern)."""
    names = set(MODEL_KINDS)
    nodes = list(ast.walk(ast.parse(source)))
    tests = [n for n in nodes if isinstance(n, ast.Compare)]
    tests += [n.pattern for n in nodes if isinstance(n, ast.match_case)]
    return sorted(t.lineno for t in tests
                  if any(isinstance(c, ast.Constant) and c.value in names for c in ast.walk(t)))


def test_kind_tests_finds_each_form_of_a_test():
    src = ("a = kind == 'tem'\nb = 'temt' != k\nc = k in ('sinusoidal', 'x')\n"
           "match k:\n    case 'tem':\n        pass\nd = {'temt': 1}['temt']\ne = k == 'x'\n")
    assert kind_tests(src) == [1, 2, 3, 5]


def test_no_model_kind_is_tested_by_name_outside_the_models_and_the_kinds():
    """Outside hippo_rep/models/ and hippo_rep/model_kinds.py, code asks a kind's spec or
    traits instead of comparing model.kind with a name."""
    root = Path(hippo_rep.__file__).parent
    found = {str(p.relative_to(root)): lines for p in sorted(root.rglob("*.py"))
             if p.parent.name != "models" and p.name != "model_kinds.py"
             and (lines := kind_tests(p.read_text()))}
    assert found == {}

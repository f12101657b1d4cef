"""The fused time loop (hippo_rep.models.fused) against its oracle, the eager loop.

Every test runs the same model, walks and seed twice, ``fast_step`` off (eager) and on, and
compares: forward outputs and memory buffers, gradients of the training loss (float64: the
hand-written backward is exact; float32 at rtol 1e-5), 20 trainer steps (losses, metrics,
weights), evaluation, and the eager fallback of the variants the fused loop does not cover.
"""

import warnings

import numpy as np
import pytest
import torch

from hippo_rep.config import ModelConfig, load_config
from hippo_rep.models import fused, fused_cpp
from hippo_rep.models.registry import build_model
from hippo_rep.models.temt_losses import losses
from hippo_rep.training import trainer as T
from hippo_rep.training.checkpoint import load_checkpoint
from hippo_rep.training.evaluate import evaluate, run_model
from hippo_rep.worlds import make_world, sample_episodes

#: write_threshold 0.5: the perturbed random transitions below rarely return to a position,
#: and the comparisons should see skipped writes too.
SMALL = dict(n_g=16, d_key=16, d_value=16, hidden=24, transition_init_std=0.3,
             write_threshold=0.5)
N_OBS = 6

#: Model settings the fused loop covers (each one option away from the defaults, plus the
#: paper's free ReLU / no-normalisation corner).
SETTINGS = {
    "default": {},
    "free_relu_none": dict(transition_param="free", transition_activation="relu",
                           g_norm="none", transition_init_std=0.1),
    "tanh": dict(transition_activation="tanh"),
    "leaky_relu_free": dict(transition_activation="leaky_relu", transition_param="free",
                            transition_init_std=0.1),
    "additive": dict(conjunction="additive"),
    "no_landmark": dict(landmark=False),
    "window": dict(memory="window", memory_block=4, memory_blocks=1),
    "loss2_through_landmark": dict(loss2_through_landmark=True),
    "mlp_readout": dict(readout="mlp"),
    # W_a from wave vectors, g at unit RMS per rotation plane
    "waves_plane": dict(transition_param="waves", g_norm="plane"),
}


def model_for(settings: dict, dtype=torch.float32, seed=0):
    """A small model with every weight moved off its initialisation (the retrieval MLP's
    last layer starts at zero, which would leave its first layer without gradient)."""
    m = build_model(ModelConfig(**{**SMALL, **settings}), n_actions=5, n_obs=N_OBS, seed=seed)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=gen))
    return m.to(dtype)


def walks(b=4, steps=40, seed=0, context=False):
    ep = sample_episodes([make_world("square", 4)], b, steps, N_OBS,
                         np.random.default_rng(seed))
    obs, act = torch.as_tensor(ep.observations), torch.as_tensor(ep.actions)
    ctx = torch.as_tensor(np.random.default_rng(seed + 7).integers(0, 2, obs.shape)) \
        if context else None
    return obs, act, ctx


def run_chunks(m, obs, act, ctx, fast: bool, chunk=20, grad=True, tc=None):
    """Both chunks of a walk with fast_step ``fast``: outputs, states and (with ``grad``)
    every parameter's gradient of the summed training loss."""
    m.fast_step = fast
    m.zero_grad(set_to_none=True)
    cfg = tc or load_config("tiny", ["train.loss_l2_g=0.1"])
    state, outs, states = None, [], []
    with torch.set_grad_enabled(grad):
        for s in range(0, obs.shape[1], chunk):
            c = None if ctx is None else ctx[:, s:s + chunk]
            out, state = m(obs[:, s:s + chunk], act[:, s:s + chunk], state, context=c)
            if grad:
                losses(out, obs[:, s:s + chunk], cfg)["loss"].backward()
            state = state.detach()
            outs.append(out)
            states.append(state)
    grads = {n: None if p.grad is None else p.grad.clone() for n, p in m.named_parameters()}
    return outs, states, grads


def _dtype(dtype):
    """Buffers of a fresh memory are made in the default dtype."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    return before


@pytest.mark.parametrize("context", [False, True], ids=["no_context", "context"])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_forward_equals_eager(name, context):
    m = model_for(SETTINGS[name])
    obs, act, ctx = walks(context=context)
    (eo, es, _), (fo, fs, _) = [run_chunks(m, obs, act, ctx, fast, grad=False)
                                for fast in (False, True)]
    for a, b in zip(eo, fo, strict=True):
        for key in ("g", "g_pi", "gate", "written", "slot", "logits_pi", "logits_g"):
            assert torch.equal(getattr(a, key), getattr(b, key)), key
    written = torch.cat([o.written for o in eo], 1)
    assert written.any() and (~written).any()  # both write and skip decisions
    for a, b in zip(es, fs, strict=True):
        for key in ("g", "G", "ZG", "X", "C", "T", "count"):
            assert torch.equal(getattr(a, key), getattr(b, key)), key
        assert a.t == b.t
    if SETTINGS[name].get("landmark", True):
        assert float(eo[-1].gate.abs().max()) > 0.01  # the landmark path is live


@pytest.mark.parametrize("context", [False, True], ids=["no_context", "context"])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_gradients_equal_eager_float64(name, context):
    before = _dtype(torch.float64)
    try:
        # readout "direct" computes its vote in float32 (F.one_hot(...).float()).
        m = model_for({**SETTINGS[name], "readout": "mlp"}, torch.float64)
        obs, act, ctx = walks(context=context)
        (_, _, ge), (_, _, gf) = [run_chunks(m, obs, act, ctx, fast) for fast in (False, True)]
    finally:
        torch.set_default_dtype(before)
    assert ge.keys() == gf.keys()
    for n, g in ge.items():
        assert (g is None) == (gf[n] is None), n
        if g is None:
            continue
        # The eager loop rounds β·log(#memories) to float32 (log(n).float()), so its gradient
        # of the landmark inverse temperature is float32-exact only.
        rtol = 1e-5 if n == "retrieval_beta_raw" else 1e-10
        torch.testing.assert_close(gf[n], g, rtol=rtol, atol=rtol * float(g.abs().max()),
                                   msg=n)
    live = [n for n, g in ge.items() if g is not None and float(g.abs().max()) > 0]
    expected = {"W_a", "g_init", "beta_raw", "W_e.weight"}
    if SETTINGS[name].get("landmark", True):
        expected |= {"retrieval_beta_raw", "retrieval_mlp.0.weight", "gate_mlp.0.weight"}
    assert expected <= set(live)


@pytest.mark.parametrize("name", list(SETTINGS))
def test_gradients_equal_eager_float32(name):
    m = model_for(SETTINGS[name])
    obs, act, ctx = walks(b=6, steps=60, seed=3)
    (_, _, ge), (_, _, gf) = [run_chunks(m, obs, act, ctx, fast, chunk=30)
                              for fast in (False, True)]
    for n, g in ge.items():
        if g is None:
            assert gf[n] is None, n
            continue
        torch.testing.assert_close(gf[n], g, rtol=1e-5, atol=1e-5 * float(g.abs().max()),
                                   msg=n)


#: Trainer settings for the 20-step comparison (tiny preset, chunks of 20 steps).
TRAIN_SETTINGS = {
    "default": [],
    "free_relu_none": ["model.transition_param=free", "model.transition_activation=relu",
                       "model.g_norm=none", "train.loss_l2_g=0.05"],
    "window_frozen_W": ["model.memory=window", "model.memory_block=8", "model.memory_blocks=1",
                        "train.transition_lr_scale=0"],
    # the isometry loss reaches W_a through the corrected g of every step
    "modules_isometry": ["model.g_module_size=6", "train.loss_isometry=1"],
    "modules_isometry_walk": ["model.g_module_size=6", "train.loss_isometry=1",
                              "train.isometry_pairs=walk"],
    # W_a from learned wave vectors (its gradient comes through the rotations' cos and sin)
    "waves": ["model.transition_param=waves", "model.n_g=24", "model.g_module_size=6"],
    "waves_plane_isometry": ["model.transition_param=waves", "model.n_g=24",
                             "model.g_module_size=6", "model.g_norm=plane",
                             "train.loss_isometry=1"],
    # read-out cells keyed by the prediction, with a fixed budget and virtual constraints
    "waves_unit_cells_virtual": ["model.transition_param=waves", "model.n_g=24",
                                 "model.g_module_size=6", "model.g_norm=plane",
                                 "model.cells=readout", "model.n_cells=12",
                                 "model.cells_activation=none", "model.cells_unit_norm=true",
                                 "train.loss_cells_energy=0.3", "train.loss_cells_neg=10",
                                 "train.cells_virtual=64", "train.cells_ramp_start=0",
                                 "train.cells_ramp=0"],
}


def _train_steps(cfg, out, n=20, fast=True):
    tr = T.Trainer(cfg, out, progress=False)
    assert tr.model.fast_step == fast
    rows = [tr.step(i) for i in range(n)]
    return tr, rows


@pytest.mark.parametrize("name", list(TRAIN_SETTINGS))
def test_twenty_trainer_steps_equal_eager(tmp_path, name):
    base = ["train.chunk_len=20", *TRAIN_SETTINGS[name]]
    runs = {}
    for fast in (False, True):
        cfg = load_config("tiny", [*base, f"train.fast_step={str(fast).lower()}"])
        runs[fast] = _train_steps(cfg, tmp_path / str(fast), fast=fast)
    (te, re_), (tf, rf) = runs[False], runs[True]
    for i, (a, b) in enumerate(zip(re_, rf, strict=True)):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_allclose(b[k], a[k], rtol=1e-5, atol=1e-7,
                                       err_msg=f"step {i}: {k}")
    we, wf = te.model.state_dict(), tf.model.state_dict()
    for n in we:
        torch.testing.assert_close(wf[n], we[n], rtol=1e-5, atol=1e-6, msg=n)
    assert te.held_out() == pytest.approx(tf.held_out(), rel=1e-6)


def test_evaluation_and_activity_equal_eager():
    m = model_for({})
    wc = load_config("tiny").world
    world = [make_world("square", 4)]
    res = {}
    for fast in (False, True):
        m.fast_step = fast
        res[fast] = evaluate(m, world, 6, wc.walk_steps, N_OBS, seed=4)
    assert res[True] == res[False]
    obs, act, _ = walks(b=3, steps=50, seed=9)
    outs = {}
    for fast in (False, True):
        m.fast_step = fast
        outs[fast] = run_model(m, obs.numpy(), act.numpy(), chunk=25, return_activity=True)
    for a, b in zip(outs[False], outs[True], strict=True):
        assert torch.equal(a.activity, b.activity)
        assert torch.equal(a.g, b.g)


@pytest.mark.parametrize("extra", [["model.memory=fam", "model.fam_slots=2",
                                    "model.memory_block=8"], ["model.memory=hebbian"]],
                         ids=["fam", "hebbian"])
def test_uncovered_variants_fall_back_to_eager_saying_so_once(tmp_path, extra):
    runs = {}
    for fast in (False, True):
        cfg = load_config("tiny", [*extra, f"train.fast_step={str(fast).lower()}"])
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            tr, rows = _train_steps(cfg, tmp_path / str(fast), n=3, fast=fast)
        said = [w for w in seen if issubclass(w.category, fused.FastStepFallback)]
        assert len(said) == (1 if fast else 0)
        if fast:
            assert extra[0].split("=")[1] in str(said[0].message)
        runs[fast] = (tr, rows)
    assert runs[True][1] == runs[False][1]
    for n, w in runs[False][0].model.state_dict().items():
        assert torch.equal(runs[True][0].model.state_dict()[n], w), n


def test_unsupported_names_the_reason():
    assert fused.unsupported(build_model(ModelConfig(**SMALL), 5, N_OBS)) is None
    assert fused.unsupported(build_model(ModelConfig(**SMALL, kind="sinusoidal"), 5,
                                         N_OBS)) is None
    why = fused.unsupported(build_model(ModelConfig(**SMALL, memory="hebbian"), 5, N_OBS))
    assert "hebbian" in why


def test_fast_step_may_change_on_resume_and_old_checkpoints_load(tmp_path):
    cfg = load_config("tiny", ["train.iterations=4", "train.checkpoint_every=2"])
    T.Trainer(cfg, tmp_path, progress=False).run(stop_at=2)
    slow = load_config("tiny", ["train.iterations=4", "train.checkpoint_every=2",
                                "train.fast_step=false"])
    tr = T.Trainer(slow, tmp_path, resume=True, progress=False)
    assert tr.model.fast_step is False
    tr.run()
    # a checkpoint written before the key existed
    payload = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    del payload["config"]["train"]["fast_step"]
    torch.save(payload, tmp_path / "old.pt")
    _, old_cfg, _ = load_checkpoint(tmp_path / "old.pt")
    assert old_cfg.train.fast_step is True


# --------------------------------------------------------------- the loop in C++ (fused_cpp)

def _cpp_ops():
    ops = fused_cpp.ops()
    if ops is None:
        pytest.skip("the C++ loop did not build here (fused_cpp.CppLoopFallback says why)")
    return ops


#: The settings the C++ loop covers (a full memory): all of SETTINGS but the window, and a
#: width that is not a power of two (the similarity is then divided by d, not folded into β).
CPP_SETTINGS = {**{n: s for n, s in SETTINGS.items() if fused_cpp.covers(model_for(s))},
                "n_g_24": dict(n_g=24), "n_g_24_additive": dict(n_g=24, conjunction="additive")}


def test_cpp_covers_the_presets():
    for preset in ("small", "paper"):
        mc = load_config(preset).model
        assert fused.unsupported(build_model(mc, 5, N_OBS)) is None
        assert fused_cpp.covers(build_model(mc, 5, N_OBS)), preset
    assert "window" not in CPP_SETTINGS and len(CPP_SETTINGS) == len(SETTINGS) + 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("context", [False, True], ids=["no_context", "context"])
@pytest.mark.parametrize("name", list(CPP_SETTINGS))
def test_cpp_loop_equals_python_fused(name, context, dtype, monkeypatch):
    """The C++ loop issues the Python fused loop's operations in the same order: the same
    outputs, buffers and gradients, bit for bit (torch.equal), forward and backward."""
    ops = _cpp_ops()
    calls = []
    monkeypatch.setattr(fused_cpp, "ops", lambda: calls.append(1) or ops)
    before = _dtype(dtype)
    try:
        m = model_for({**CPP_SETTINGS[name], "readout": "mlp"}, dtype)
        obs, act, ctx = walks(context=context)
        runs = {}
        for cpp in (False, True):
            m.cpp_loop = cpp
            runs[cpp] = run_chunks(m, obs, act, ctx, True)
    finally:
        torch.set_default_dtype(before)
    assert calls  # the C++ loop ran
    (po, ps, pg), (co, cs, cg) = runs[False], runs[True]
    for a, b in zip(po, co, strict=True):
        for key in ("g", "g_pi", "gate", "written", "slot", "logits_pi", "logits_g"):
            assert torch.equal(getattr(a, key), getattr(b, key)), key
    for a, b in zip(ps, cs, strict=True):
        for key in ("g", "G", "ZG", "X", "C", "T", "count"):
            assert torch.equal(getattr(a, key), getattr(b, key)), key
    for n, g in pg.items():
        assert (g is None) == (cg[n] is None), n
        assert g is None or torch.equal(cg[n], g), n


def test_cpp_loop_not_built_falls_back_once(monkeypatch, tmp_path):
    """A C++ loop that does not build: one CppLoopFallback warning, then the Python loop
    (the same numbers)."""
    bad = tmp_path / "broken.cpp"
    bad.write_text("this is not C++\n")
    monkeypatch.setattr(fused_cpp, "SOURCE", bad)
    monkeypatch.setattr(fused_cpp, "_tried", False)
    monkeypatch.setattr(fused_cpp, "_ops", None)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    m = model_for({})
    obs, act, ctx = walks()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out_bad = run_chunks(m, obs, act, ctx, True, grad=False)[0]
        run_chunks(m, obs, act, ctx, True, grad=False)
    said = [w for w in seen if issubclass(w.category, fused_cpp.CppLoopFallback)]
    assert len(said) == 1 and "Python loop" in str(said[0].message)
    m.cpp_loop = False
    out_py = run_chunks(m, obs, act, ctx, True, grad=False)[0]
    for a, b in zip(out_bad, out_py, strict=True):
        assert torch.equal(a.g, b.g) and torch.equal(a.gate, b.gate)


def test_cpp_loop_off_by_environment(monkeypatch):
    monkeypatch.setenv("HIPPO_REP_CPP_LOOP", "0")
    monkeypatch.setattr(fused_cpp, "_tried", False)
    monkeypatch.setattr(fused_cpp, "_ops", None)
    assert fused_cpp.ops() is None

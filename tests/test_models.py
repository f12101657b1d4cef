import math

import numpy as np
import pytest
import torch

from hippo_rep.config import ModelConfig
from hippo_rep.models.memory import memory_activation
from hippo_rep.models.registry import build_model
from hippo_rep.models.temt import TEMt, _ConstBmm
from hippo_rep.worlds import make_world, sample_episodes

SMALL = dict(n_g=16, d_key=16, d_value=16, hidden=24)


def identity_model(**kw) -> TEMt:
    """A model whose transitions are exactly the identity: g never changes along a walk."""
    m = build_model(ModelConfig(**{**SMALL, **kw}), n_actions=5, n_obs=6, seed=0)
    with torch.no_grad():
        m.W_a.copy_(torch.eye(16).repeat(5, 1, 1))
    return m.eval()


def batch(worlds, b=4, steps=30, n_obs=6, seed=0):
    ep = sample_episodes(worlds, b, steps, n_obs, np.random.default_rng(seed))
    return ep, torch.as_tensor(ep.observations), torch.as_tensor(ep.actions)


@torch.no_grad()
def test_memory_added_only_for_new_conjunctions():
    # g is constant, so a conjunction is new exactly when its observation is new.
    m = identity_model(landmark=False)
    obs = torch.tensor([[1, 2, 1, 3, 2, 2, 4]])
    out, state = m(obs, torch.zeros_like(obs))
    np.testing.assert_array_equal(out.written[0].numpy(), [1, 1, 0, 1, 0, 0, 1])
    np.testing.assert_array_equal(out.slot[0].numpy(), [0, 1, -1, 2, -1, -1, 3])
    assert int(state.count[0]) == 4
    np.testing.assert_array_equal(state.X[0, :4].numpy(), [1, 2, 3, 4])
    np.testing.assert_array_equal(state.T[0, :4].numpy(), [0, 1, 3, 6])


@torch.no_grad()
def test_threshold_above_one_writes_every_step_and_distinct_positions_are_kept():
    m = identity_model(landmark=False, write_threshold=1.5)
    obs = torch.tensor([[1, 1, 1, 1]])
    out, _ = m(obs, torch.zeros_like(obs))
    assert out.written.all()
    # with real (non-identity) transitions, positions differ and repeated observations at new
    # positions are stored
    m2 = build_model(ModelConfig(**SMALL, landmark=False, transition_init_std=0.5), 5, 6).eval()
    out2, _ = m2(obs, torch.tensor([[0, 1, 1, 1]]))
    assert out2.written.all()


@torch.no_grad()
def test_activity_zero_before_memory_exists_and_uniform_for_identical_keys():
    m = identity_model(landmark=False, write_threshold=1.5)
    obs = torch.tensor([[0, 1, 2, 3, 4, 5]])
    out, _ = m(obs, torch.zeros_like(obs), return_activity=True)
    act = out.activity[0]  # (time, slot)
    for t in range(6):
        # at step t the memories 0..t-1 exist; identical keys → uniform weights
        np.testing.assert_allclose(act[t, :t].numpy(), 1.0 / t if t else [], rtol=1e-5)
        assert (act[t, t:] == 0).all()


@torch.no_grad()
def test_beta_scales_with_log_number_of_memories():
    m = identity_model(landmark=False, write_threshold=1.5)
    with torch.no_grad():
        m.W_e.weight.copy_(torch.eye(16))
    state = m.initial_state(1, capacity=8)
    # two memories: one at the query's position (z = z(g0)), one at its negation
    z0 = torch.nn.functional.layer_norm(m._g0(1), (16,))
    for n_extra in (0, 5):
        st = m.initial_state(1, capacity=16)
        keys = [z0[0], -z0[0]] + [torch.zeros(16)] * n_extra
        for i, k in enumerate(keys):
            st.ZG[0, i] = k
            st.X[0, i] = i % 6
        st.count[:] = len(keys)
        out, _ = m._predict(m._g0(1)[:, None], m._g0(1)[:, None], torch.tensor([[0]]), st,
                            st.count.clone(), torch.zeros(1, 1, dtype=torch.bool), 0)[1], None
        a = out[0, 0]
        beta = torch.nn.functional.softplus(m.beta_raw) * math.log(len(keys))
        # logit(k) = β·log(n)·k·z0/√d ; ratio of the first two memories' activity
        expected = torch.exp(beta * (z0[0] @ z0[0] - z0[0] @ -z0[0]) / math.sqrt(16))
        assert float(a[0] / a[1]) == pytest.approx(float(expected), rel=1e-4)
    assert state.capacity == 8


@torch.no_grad()
def test_gate_closed_on_empty_memory_and_near_init_bias_after():
    m = build_model(ModelConfig(**SMALL), 5, 6, seed=1).eval()
    _, obs, act = batch(make_world("square", 4), b=3, steps=12)
    out, _ = m(obs, act)
    assert (out.gate[:, 0] == 0).all()  # step 0: nothing stored yet
    g = out.gate[:, 1:]
    assert float(g.mean()) == pytest.approx(1 / (1 + math.exp(2)), abs=0.05)


@torch.no_grad()
@pytest.mark.parametrize("kind", ["temt", "sinusoidal"])
def test_batched_envs_of_different_sizes_equal_running_each_alone(kind):
    m = build_model(ModelConfig(**SMALL, kind=kind, transition_init_std=0.3), 5, 6, 3).eval()
    worlds = [make_world("square", 3), make_world("square", 6, 4)]
    ep, obs, act = batch(worlds, b=4, steps=40)
    out, st = m(obs, act, return_activity=True)
    for b in range(4):
        o1, s1 = m(obs[b:b + 1], act[b:b + 1], return_activity=True)
        torch.testing.assert_close(o1.logits_pi[0], out.logits_pi[b], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(o1.g[0], out.g[b], atol=1e-5, rtol=1e-4)
        n = int(s1.count[0])
        assert n == int(st.count[b])
        torch.testing.assert_close(o1.activity[0, :, :n], out.activity[b, :, :n], atol=1e-5,
                                   rtol=1e-4)
        assert (out.activity[b, :, n:] == 0).all()


@torch.no_grad()
@pytest.mark.parametrize("chunk", [1, 7, 16])
def test_chunked_forward_equals_whole_walk(chunk):
    m = build_model(ModelConfig(**SMALL, transition_init_std=0.3), 5, 6, 2).eval()
    _, obs, act = batch(make_world("square", 4), b=3, steps=32)
    whole, _ = m(obs, act)
    state, parts = None, []
    for s in range(0, 32, chunk):
        out, state = m(obs[:, s:s + chunk], act[:, s:s + chunk], state)
        parts.append(out.logits_pi)
    torch.testing.assert_close(torch.cat(parts, 1), whole.logits_pi, atol=1e-5, rtol=1e-4)


def test_const_bmm_gradient_matches_bmm():
    a = torch.randn(3, 1, 5, requires_grad=True)
    m = torch.randn(3, 5, 4)
    _ConstBmm.apply(a, m).pow(2).sum().backward()
    ga = a.grad.clone()
    a.grad = None
    torch.bmm(a, m).pow(2).sum().backward()
    torch.testing.assert_close(ga, a.grad)


def test_training_chunk_backward_runs_with_in_place_memory_writes():
    m = build_model(ModelConfig(**SMALL), 5, 6, 0)
    _, obs, act = batch(make_world("square", 4), b=2, steps=25)
    out, state = m(obs[:, :12], act[:, :12])
    (out.logits_pi.sum() + out.logits_g.sum()).backward()
    out2, _ = m(obs[:, 12:], act[:, 12:], state.detach())
    out2.logits_pi.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)
    assert m.W_a.grad.abs().sum() > 0


@pytest.mark.parametrize("kind", ["softmax", "relu", "power"])
def test_memory_activations_normalised_and_masked(kind):
    gen = torch.Generator().manual_seed(0)  # not the global stream: other tests move it
    logits = torch.randn(4, 7, generator=gen).abs() + 0.1
    valid = torch.rand(4, 7, generator=gen) > 0.3
    valid[0] = False
    valid[1:, 0] = True  # rows 1-3 each hold a memory (row 0 none), whatever the draw
    act = memory_activation(logits, valid, kind)
    assert (act[~valid] == 0).all()
    assert torch.isfinite(act).all()
    sums = act.sum(-1)
    torch.testing.assert_close(sums[1:], torch.ones(3), atol=1e-4, rtol=0)
    assert sums[0] == 0


#: Every model option beside the defaults, with the output it must change.
OPTIONS = [(dict(conjunction="additive"), "g"), (dict(retrieval_iterations=2), "logits_pi"),
           (dict(transition_activation="relu"), "g_pi"),
           (dict(memory_activation="power"), "logits_pi"), (dict(readout="mlp"), "logits_pi"),
           (dict(transition_param="free"), "g_pi"), (dict(g_norm="none"), "g_pi"),
           (dict(loss2_through_landmark=True), None)]


@torch.no_grad()
@pytest.mark.parametrize("opts, changes", OPTIONS)
def test_options_change_behaviour_and_stay_finite(opts, changes):
    # The same weights (same seed, same init order) with and without the option: an option
    # that does nothing would leave every output equal.
    base = build_model(ModelConfig(**SMALL, transition_init_std=0.3), 5, 6, 0).eval()
    m = build_model(ModelConfig(**SMALL, transition_init_std=0.3, **opts), 5, 6, 0).eval()
    _, obs, act = batch(make_world("square", 4), b=2, steps=40)
    out, _ = m(obs, act)
    ref, _ = base(obs, act)
    assert torch.isfinite(out.logits_pi).all() and torch.isfinite(out.g).all()
    if changes is not None:
        assert not torch.allclose(getattr(out, changes), getattr(ref, changes))
    if opts.get("transition_activation") == "relu":
        assert (out.g_pi >= 0).all()


def test_loss2_through_landmark_changes_the_gradient_of_the_landmark_path():
    _, obs, act = batch(make_world("square", 4), b=2, steps=40)
    grads = []
    for on in (False, True):
        m = build_model(ModelConfig(**SMALL, loss2_through_landmark=on), 5, 6, 0)
        out, _ = m(obs, act)
        torch.nn.functional.cross_entropy(out.logits_g.flatten(0, 1), obs.flatten()).backward()
        g = m.gate_mlp[-1].bias.grad
        grads.append(torch.zeros(1) if g is None else g.abs().sum().reshape(1))
    assert grads[0].item() == 0 and grads[1].item() > 0


@torch.no_grad()
def test_context_stream_separates_memories_of_one_place():
    # Identity transitions: one place. Without contexts one observation gives one memory;
    # with two contexts alternating, the same observation is stored once per context.
    m = identity_model(landmark=False)
    obs = torch.tensor([[1, 1, 1, 1]])
    ctx = torch.tensor([[0, 1, 0, 1]])
    _, plain = m(obs, torch.zeros_like(obs))
    _, with_ctx = m(obs, torch.zeros_like(obs), context=ctx)
    assert int(plain.count[0]) == 1 and int(with_ctx.count[0]) == 2


def test_removed_n_context_key_of_old_configs_is_dropped():
    from hippo_rep.config import Config, from_dict

    old = Config().to_dict()
    old["model"]["n_context"] = 0
    assert from_dict(old, "old checkpoint") == Config()


@torch.no_grad()
def test_g_norm_none_is_the_papers_unnormalised_recurrence():
    m = build_model(ModelConfig(**SMALL, g_norm="none", landmark=False), 5, 6, 0).eval()
    _, obs, act = batch(make_world("square", 4), b=1, steps=6)
    out, _ = m(obs, act)
    W = m.transition_matrices()
    g = out.g_pi[0]
    for t in range(1, 6):
        torch.testing.assert_close(g[t], g[t - 1] @ W[act[0, t]])


def test_inverse_error_is_zero_for_exact_inverses_and_training_reduces_it():
    m = build_model(ModelConfig(**SMALL, transition_param="free",
                                transition_init_std=0.2), 5, 6, 0)
    assert m.move_pairs() == [(1, 3), (2, 4)]
    assert m.inverse_error().item() > 0.01
    opt = torch.optim.SGD([m.W_a], lr=0.5)
    before = m.inverse_error().item()
    for _ in range(20):
        opt.zero_grad()
        m.inverse_error().backward()
        opt.step()
    assert m.inverse_error().item() < 0.1 * before
    with torch.no_grad():
        m.W_a[3] = torch.linalg.inv(m.W_a[1])
        m.W_a[4] = torch.linalg.inv(m.W_a[2])
    assert m.inverse_error().item() < 1e-8


@torch.no_grad()
def test_g_keeps_unit_rms_after_transitions():
    m = build_model(ModelConfig(**SMALL, landmark=False, transition_init_std=0.5), 5, 6).eval()
    _, obs, act = batch(make_world("square", 5), b=2, steps=200)
    out, _ = m(obs, act)
    rms = out.g_pi.pow(2).mean(-1).sqrt()
    torch.testing.assert_close(rms, torch.ones_like(rms), atol=1e-3, rtol=0)

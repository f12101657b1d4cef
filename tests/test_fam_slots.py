"""FAM slots that keep (g, x) conjunctions: ``model.fam_update = "hard"`` against references
computed slot by slot, and with known weights."""

import pytest
import torch
import torch.nn.functional as F

from hippo_rep.config import ConfigError, load_config
from hippo_rep.models.memory import _rescale
from hippo_rep.models.registry import build_model
from hippo_rep.models.temt import _z

N_ACT, N_OBS = 5, 7


def model(fam_update, seed=0, **kw):
    sets = ["model.memory=fam", f"model.fam_update={fam_update}"] + \
        [f"model.{k}={v}" for k, v in kw.items()]
    return build_model(load_config("tiny", sets).model, N_ACT, N_OBS, seed=seed).eval()


def walk(B=3, L=11, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randint(0, N_OBS, (B, L), generator=gen),
            torch.randint(0, N_ACT, (B, L), generator=gen))


@torch.no_grad()
def test_hard_update_copies_the_best_candidate_whole():
    m = model("hard", memory_block=6, memory_blocks=1, fam_slots=3, write_threshold=1.5)
    torch.nn.init.normal_(m.W_e.weight)
    obs, act = walk()
    _, state = m(obs, act)  # one update after step 5; memories of steps 6..10 in the block
    old_g, old_p = state.fam_g.clone(), state.fam_p.clone()
    m._fam_update(state, 6)
    for b in range(3):
        idx = [i for i in range(int(state.count[b])) if state.T[b, i] >= 6]
        keys_g = list(old_g[b]) + [state.G[b, i] for i in idx]
        keys_z = list(_z(old_g[b])) + [state.ZG[b, i] for i in idx]
        vals = list(old_p[b]) + [F.one_hot(state.X[b, i], N_OBS).float() for i in idx]
        for f in range(3):
            q = m.W_e(_z(old_g[b, f]))
            best = int(torch.stack([q @ m.W_e(k) for k in keys_z]).argmax())
            torch.testing.assert_close(state.fam_g[b, f], _rescale(keys_g[best]))
            assert torch.equal(state.fam_p[b, f], vals[best])


@torch.no_grad()
def test_a_kept_conjunction_survives_a_block_where_soft_blurs_it():
    """Keys z(g) W_e with W_e = 3 I: a slot's own key is its best match (Cauchy-Schwarz), so
    the hard update keeps the slot exactly; the soft one mixes in the block's memories."""
    kept = {}
    for update in ("hard", "soft"):
        m = model(update, memory_block=6, memory_blocks=0, fam_slots=2, write_threshold=1.5)
        m.W_e.weight.copy_(3 * torch.eye(m.config.n_g))
        obs, act = walk(L=6)
        _, state = m(obs, act)  # six memories, no update yet (it runs after step 5)
        state.fam_g = _rescale(state.G[:, :2].clone())  # slots hold memories 0 and 1
        state.fam_p = F.one_hot(state.X[:, :2], N_OBS).float()
        before = state.fam_p.clone()
        m._fam_update(state, 0)
        kept[update] = state
        if update == "hard":
            assert torch.equal(state.fam_p, before)
            torch.testing.assert_close(state.fam_g, _rescale(state.G[:, :2]))
    assert (kept["soft"].fam_p.amax(-1) < 1 - 1e-3).any()


def test_fam_update_is_validated():
    with pytest.raises(ConfigError, match="fam_update"):
        load_config("tiny", ["model.memory=fam", "model.fam_update=sharp"])
    assert load_config("tiny", ["model.memory=fam", "model.fam_update=keep"]).model.fam_update \
        == "keep"
    assert load_config("tiny", []).model.fam_update == "soft"


def _filled_state(m, obs, act, n_fill):
    """Run ``obs``/``act`` (one block), reset the slots to their initial state (uniform p),
    then fill slots 0..n_fill-1 with memories 0..n_fill-1 (whole conjunctions)."""
    _, state = m(obs, act)
    init = m.initial_state(obs.shape[0])
    state.fam_g, state.fam_p = init.fam_g.detach().clone(), init.fam_p.clone()
    state.fam_g[:, :n_fill] = _rescale(state.G[:, :n_fill])
    state.fam_p[:, :n_fill] = F.one_hot(state.X[:, :n_fill], N_OBS).float()
    return state


@torch.no_grad()
def test_keep_logits_fill_empty_slots_and_keep_filled_ones_without_duplicates():
    """Known weights: keep logit -50 for a slot at uniform p, +50 for a slot holding a one-hot
    conjunction. Filled slots keep their (g, x) exactly through blocks; empty slots copy block
    memories whole, never one that another slot already holds, never the same as each other."""
    m = model("keep", memory_block=6, memory_blocks=0, fam_slots=4, write_threshold=1.5)
    m.fam_keep.fill_(-0.5)
    m.fam_keep_conf.fill_(1.0)
    obs, act = walk(L=6)
    state = _filled_state(m, obs, act, 1)
    before_g, before_p = state.fam_g[:, 0].clone(), state.fam_p[:, 0].clone()
    for _ in range(3):
        m._fam_update(state, 0)
        torch.testing.assert_close(state.fam_g[:, 0], before_g)
        assert torch.equal(state.fam_p[:, 0], before_p)
    for b in range(3):
        mems = [(_rescale(state.G[b, i]), int(state.X[b, i])) for i in range(int(state.count[b]))]
        picked = []
        for f in range(1, 4):
            assert state.fam_p[b, f].max() == 1  # a whole conjunction, not a mix
            match = [i for i, (g, x) in enumerate(mems) if x == int(state.fam_p[b, f].argmax())
                     and torch.allclose(state.fam_g[b, f], g)]
            assert match and match[0] != 0  # a block memory, not slot 0's
            picked.append(match[0])
        assert len(set(picked)) == 3


@torch.no_grad()
def test_keep_logit_zero_fills_like_hard_but_without_copying_other_slots():
    """Keep logits 0: an empty slot takes the candidate it attends to most, as "hard" does,
    among itself and the block's memories (never another slot)."""
    m = model("keep", memory_block=6, memory_blocks=0, fam_slots=1, write_threshold=1.5)
    h = model("hard", memory_block=6, memory_blocks=0, fam_slots=1, write_threshold=1.5)
    h.load_state_dict({k: v for k, v in m.state_dict().items() if "keep" not in k})
    obs, act = walk(L=6)
    _, s_keep = m(obs, act)
    _, s_hard = h(obs, act)
    m._fam_update(s_keep, 0)
    h._fam_update(s_hard, 0)
    torch.testing.assert_close(s_keep.fam_g, s_hard.fam_g)
    assert torch.equal(s_keep.fam_p, s_hard.fam_p)


def test_straight_through_gradient_is_the_soft_gradient():
    """Forward: the hard copy; backward: the softmax's gradient. For a loss linear in the slots'
    contents the straight-through gradient of the keep logits, the slot query weights and the
    update temperature equals that of the soft update exactly, and is non-zero."""
    m = model("keep", memory_block=6, memory_blocks=0, fam_slots=3, write_threshold=1.5)
    with torch.no_grad():
        m.fam_keep.copy_(torch.tensor([0.01, -0.02, 0.0]))
        m.fam_keep_conf.fill_(0.02)
    obs, act = walk(L=6)
    gen = torch.Generator().manual_seed(1)
    c = torch.randn(3, 3, N_OBS, generator=gen)
    grads = []
    for straight_through in (True, False):
        m.zero_grad()
        state = _filled_state(m, obs, act, 1)
        if straight_through:
            m._fam_update(state, 0)
            p = state.fam_p
        else:  # the soft weights of the same scores, over the same candidates
            p = _soft_keep_update(m, state)
        (c * p).sum().backward()
        grads.append({n: m.get_parameter(n).grad.clone()
                      for n in ("fam_keep", "fam_keep_conf", "fam_beta_raw", "W_e.weight")})
    for n in grads[0]:
        torch.testing.assert_close(grads[0][n], grads[1][n])
        assert grads[0][n].abs().sum() > 0, n


def _soft_keep_update(m, state):
    """Reference: the soft observation distributions of ``fam_update = "keep"``'s scores over
    [itself; the block's memories that no slot holds], written slot by slot."""
    from hippo_rep.models.memory import _KEEP_LOGIT_SCALE

    beta = F.softplus(m.fam_beta_raw)
    out = []
    for b in range(state.fam_g.shape[0]):
        mems = [i for i in range(int(state.count[b]))
                if not any(int(state.fam_p[b, f].argmax()) == int(state.X[b, i])
                           and state.fam_p[b, f].max() > 0.5
                           and (_z(state.fam_g[b, f]) @ state.ZG[b, i]) / m.config.n_g
                           > m.config.write_threshold for f in range(state.fam_g.shape[1]))]
        rows = []
        for f in range(state.fam_g.shape[1]):
            q = m.W_e(_z(state.fam_g[b, f]))
            keys = [_z(state.fam_g[b, f])] + [state.ZG[b, i] for i in mems]
            vals = [state.fam_p[b, f]] + [F.one_hot(state.X[b, i], N_OBS).float() for i in mems]
            s = torch.stack([beta * (q @ m.W_e(k)) / m.config.d_key ** 0.5 for k in keys])
            keep = _KEEP_LOGIT_SCALE * (m.fam_keep[f] + m.fam_keep_conf * state.fam_p[b, f].max())
            s = s + torch.cat([keep[None], s.new_zeros(len(mems))])
            rows.append(torch.softmax(s, 0) @ torch.stack(vals))
        out.append(torch.stack(rows))
    return torch.stack(out)


@torch.no_grad()
def test_keep_never_copies_a_conjunction_a_slot_already_holds():
    """Slot 0 holds memory 0; empty slot 1 queries from exactly memory 0's position (its best
    match). With the model's add-if-novel rule (same x, correlation above write_threshold)
    memory 0 is no candidate, and slots never copy each other: slot 1 takes another memory."""
    m = model("keep", memory_block=6, memory_blocks=0, fam_slots=2, write_threshold=0.9)
    m.fam_keep.fill_(-0.5)
    m.fam_keep_conf.fill_(1.0)
    m.W_e.weight.copy_(3 * torch.eye(m.config.n_g))
    obs, act = walk(L=6)
    state = _filled_state(m, obs, act, 1)
    state.fam_g[:, 1] = state.fam_g[:, 0]
    m._fam_update(state, 0)
    for b in range(3):
        assert state.fam_p[b, 1].max() == 1
        assert not (torch.allclose(state.fam_g[b, 1], _rescale(state.G[b, 0]))
                    and int(state.fam_p[b, 1].argmax()) == int(state.X[b, 0]))


def test_set_keep_logits_gives_the_logits_of_empty_and_filled_slots():
    from hippo_rep.models.memory import _KEEP_LOGIT_SCALE, set_keep_logits

    m = model("keep", fam_slots=3)
    set_keep_logits(m, -20.0, 60.0)
    for conf, want in ((1 / N_OBS, -20.0), (1.0, 60.0)):
        got = _KEEP_LOGIT_SCALE * (m.fam_keep + m.fam_keep_conf * conf)
        torch.testing.assert_close(got, torch.full((3,), want), rtol=0, atol=1e-4)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_slots, n_mem", [(1, 0), (1, 3), (5, 4), (11, 7), (48, 64)])
def test_distinct_copies_in_rounds_equals_the_slot_by_slot_greedy(seed, n_slots, n_mem):
    """Integer scores (many ties, many slots wanting the same memory) and random validity:
    the round-based greedy picks what the plain loop picks, row for row."""
    from hippo_rep.models.memory import _distinct_copies

    gen = torch.Generator().manual_seed(seed)
    score = torch.randint(0, 4, (3, n_slots, n_slots + n_mem), generator=gen).float()
    valid = torch.rand(3, n_slots, n_slots + n_mem, generator=gen) > 0.3
    got = _distinct_copies(score, valid, n_slots)
    assert torch.equal(got, _distinct_copies_loop(score, valid, n_slots))
    # no memory column is copied by two slots
    assert (got[..., n_slots:].sum(1) <= 1).all()


def _distinct_copies_loop(score, valid, n_slots: int) -> torch.Tensor:
    """Reference for ``_distinct_copies``: slot by slot, the best valid candidate that no
    earlier slot took (columns >= ``n_slots`` are memories)."""
    taken = torch.zeros_like(valid[:, 0])
    picks = []
    for f in range(n_slots):
        i = score[:, f].masked_fill(~valid[:, f] | taken, -1e30).argmax(-1)
        picks.append(i)
        taken = taken | (F.one_hot(i, score.shape[-1]).bool() & (i >= n_slots)[:, None])
    return F.one_hot(torch.stack(picks, 1), score.shape[-1]).to(score.dtype)

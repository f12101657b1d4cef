"""FAM slots that keep (g, x) conjunctions: ``model.fam_update = "hard"`` against references
computed slot by slot, and with known weights."""

import pytest
import torch
import torch.nn.functional as F

from hippo_rep.config import ConfigError, load_config
from hippo_rep.models.temt import _rescale, _z, build_model

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
    assert load_config("tiny", []).model.fam_update == "soft"

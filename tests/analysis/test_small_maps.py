"""Analysis of worlds too small for some scores: NaN with a recorded reason, no error."""

import numpy as np

from hippo_rep.analysis import analyse, synthetic_recording


def test_analyse_a_4x4_world_completes_with_reasons():
    # the ``tiny`` preset's worlds: grid and band scores need 5 bins along y and x
    rec = synthetic_recording(world="square:4", n_env=2, n_steps=200, n_grid=2, n_place=2,
                              n_random=2, n_memory=6, seed=0)
    an = analyse(rec, shuffles=4, seed=0, decode=False)
    assert an.sizes["y"] == an.sizes["x"] == 4
    for k in ("gridness_60", "gridness_90", "spacing", "band_score"):
        assert an[k].isnull().all(), k
    g = an.sel(unit=an.variable == "g")
    assert (g.grid_nan_reason == "too_small").all()
    assert (g.band_nan_reason == "too_small").all()
    assert not an.is_grid.any()
    # scores that are defined on 4 x 4 maps still are
    assert np.isfinite(g.spatial_info).all()
    assert np.isfinite(g.place_score).all()
    assert np.isfinite(an.pair_structure_r.sel(population="g")).all()

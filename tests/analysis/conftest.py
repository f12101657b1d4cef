"""Shared synthetic recordings (with planted ground truth) and their analyses."""

import pytest

from hippo_rep.analysis import analyse, synthetic_recording

#: A small recording: 11 x 11 square world, 3 environments, random walks (memories remap).
SMALL = dict(world="square:11", n_env=3, n_steps=1500, n_grid=4, n_place=4, n_random=4,
             n_memory=16, seed=3)

#: Shuffles of the shared analyses (enough for the 95th/99th percentiles to be meaningful).
SHUFFLES = 40


@pytest.fixture(scope="session")
def small_rec():
    return synthetic_recording(**SMALL)


@pytest.fixture(scope="session")
def same_rec():
    """Every environment has the same walk and observations: memories do not remap."""
    return synthetic_recording(**{**SMALL, "same_walk": True, "seed": 4})


@pytest.fixture(scope="session")
def small_analysis(small_rec):
    return analyse(small_rec, shuffles=SHUFFLES, seed=1, decode_max_steps_per_env=120)


#: A tiny recording for tests that run the whole pipeline several times.
TINY = dict(world="square:9", n_env=3, n_steps=600, n_grid=2, n_place=2, n_random=2,
            n_memory=8, seed=7)


@pytest.fixture(scope="session")
def tiny_rec():
    return synthetic_recording(**TINY)


@pytest.fixture(scope="session")
def tiny_analysis(tiny_rec):
    """Single process (dask, synchronous scheduler, default chunks)."""
    return analyse(tiny_rec, shuffles=8, seed=2, decode_max_steps_per_env=60)

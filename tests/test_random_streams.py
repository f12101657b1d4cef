import numpy as np

from hippo_rep.random_streams import batch_rng, eval_rng, record_rng


def test_streams_are_reproducible_and_disjoint():
    draws = {"train": batch_rng(5, 0).random(8), "train_1": batch_rng(5, 1).random(8),
             "eval": eval_rng(5).random(8), "record": record_rng(5).random(8)}
    np.testing.assert_equal(batch_rng(5, 0).random(8), draws["train"])
    np.testing.assert_equal(eval_rng(5).random(8), draws["eval"])
    np.testing.assert_equal(record_rng(5).random(8), draws["record"])
    names = list(draws)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not np.isin(draws[a], draws[b]).any(), (a, b)
    # the stream, not only the seed, decides: the same seed in another stream differs
    assert not np.array_equal(eval_rng(0).random(4), record_rng(0).random(4))

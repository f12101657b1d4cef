"""PassKey panels (hippo_rep.plotting.passkey) on known sweep rows."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from hippo_rep.plotting.passkey import (  # noqa: E402
    long_filler_means,
    passkey_curves,
    plot_passkey_sweep,
)

ROWS = [{"variant": v, "filler": f, "accuracy": a, "std": 0.01}
        for v, acc in (("fam_f4", (1.0, 0.9, 0.8)), ("fm2", (1.0, 0.5, 0.2)),
                       ("bswa_m1", (1.0, 0.1, 0.06)))
        for f, a in zip((0, 512, 1024), acc, strict=True)]


def test_plot_passkey_sweep_lines_styles_and_chance():
    fig, ax = plt.subplots()
    assert plot_passkey_sweep(ROWS, ax=ax, chance=1 / 16) is ax
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(labels) == sorted(["fam_f4", "fm2", "bswa_m1", "chance"])
    lines = {c.get_label(): c for c in ax.containers}  # one errorbar container per variant
    fam, fm = lines["fam_f4"].lines[0], lines["fm2"].lines[0]
    assert fam.get_linewidth() == 2 and fm.get_linestyle() == "--"
    np.testing.assert_allclose(np.asarray(fm.get_ydata(), float), [1.0, 0.5, 0.2])
    chance = [ln for ln in ax.lines if ln.get_label() == "chance"]
    assert len(chance) == 1 and np.allclose(np.asarray(chance[0].get_ydata(), float), 1 / 16)
    assert ax.get_xscale() == "symlog"
    plt.close(fig)


def test_without_chance_no_chance_line_and_curves_label_units():
    fig, ax = plt.subplots()
    passkey_curves(ROWS, ax=ax)
    assert not [ln for ln in ax.lines if ln.get_label() == "chance"]
    assert "tokens" in ax.get_xlabel() and "fraction" in ax.get_ylabel()
    plt.close(fig)
    means, long = long_filler_means(ROWS)
    assert long == [512, 1024] and np.isclose(means["fam_f4"], 0.85)

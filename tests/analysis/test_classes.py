"""class_fractions: the one definition of every reported fraction, its denominator, and the
numbers of the shipped data/analysis.nc (pinned; every reader reports the same)."""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import AnalysisError, class_fractions
from hippo_rep.schema import CLASSES, IS_GRID, IS_PLACE, IS_TWO_WAVE, fraction_text

DATA = Path(__file__).resolve().parents[2] / "data"

#: (population, class) -> (numerator, denominator) of data/analysis.nc as shipped. Update
#: these when data/ is rebuilt (print them with
#: ``class_fractions(open_analysis("data/analysis.nc")).to_dataframe()``).
SHIPPED = {
    ("memory_activity", IS_PLACE): (1208, 1400),
    ("g", IS_GRID): (0, 384),
    ("g", IS_TWO_WAVE): (244, 384),
}


def _analysis():
    """2 envs x (2 g units + 3 memory slots); memory slot 2 exists only in env 0."""
    rm = np.ones((2, 5, 6, 6))
    rm[..., 0, 0] = 0.0
    rm[1, 4] = np.nan  # slot not written in env 1
    flags = {
        IS_GRID: [[True, False, False, False, False], [True, True, False, False, False]],
        IS_PLACE: [[False, False, True, True, True], [False, False, True, False, True]],
    }
    return xr.Dataset(
        {"rate_map": (("env", "unit", "y", "x"), rm),
         **{k: (("env", "unit"), np.array(v)) for k, v in flags.items()}},
        coords={"variable": ("unit", ["g", "g", "memory_activity", "memory_activity",
                                      "memory_activity"])},
    )


def test_denominator_is_the_pairs_that_exist():
    fr = class_fractions(_analysis())
    assert fr["cell_class"].values.tolist() == [IS_GRID, IS_PLACE]
    assert fr["population"].values.tolist() == ["g", "memory_activity"]
    den = fr["denominator"].to_pandas()
    assert den.loc["g"].tolist() == [4, 4]
    assert den.loc["memory_activity"].tolist() == [5, 5]  # 3 + 2: slot 2 absent in env 1
    num = fr["numerator"].to_pandas()
    assert num.loc["g", IS_GRID] == 3 and num.loc["memory_activity", IS_PLACE] == 4
    # a flag set where the unit does not exist is not counted
    assert num.loc["memory_activity", IS_GRID] == 0
    assert float(fr["fraction"].sel(population="memory_activity", cell_class=IS_PLACE)) == 0.8
    assert "finite bin" in fr.attrs["denominator"]
    assert fraction_text(fr, "g", IS_GRID) == "3/4 = 75%"


def test_bad_input():
    an = _analysis()
    with pytest.raises(AnalysisError, match="rate_map"):
        class_fractions(an.drop_vars("rate_map"))
    with pytest.raises(AnalysisError, match="class flags"):
        class_fractions(an.drop_vars([IS_GRID, IS_PLACE]))
    with pytest.raises(AnalysisError, match="is_band"):
        class_fractions(an, classes=("is_band",))


def test_shipped_numbers_and_every_reader_agrees():
    from hippo_rep.analysis import open_analysis
    from hippo_rep.analysis.summary import summarise_analysis
    from hippo_rep.explore import classification_summary

    an = open_analysis(DATA / "analysis.nc")
    fr = class_fractions(an)
    xr.testing.assert_identical(an.hippo.summary(), fr)  # the accessor is the same table
    assert set(fr["cell_class"].values) <= set(CLASSES)
    for (pop, cls), (k, n) in SHIPPED.items():
        one = fr.sel(population=pop, cell_class=cls)
        assert (int(one["numerator"]), int(one["denominator"])) == (k, n)
    place = SHIPPED[("memory_activity", IS_PLACE)]
    grid = SHIPPED[("g", IS_GRID)]
    table = classification_summary(an)
    assert table.loc["memory_activity", "frac_place"] == pytest.approx(place[0] / place[1])
    assert table.loc["memory_activity", "n"] == place[1]
    assert table.loc["g", "frac_grid"] == pytest.approx(grid[0] / grid[1])
    summary = summarise_analysis(an)
    assert summary["place_fraction"] == pytest.approx(place[0] / place[1])
    assert summary["grid_fraction"] == pytest.approx(grid[0] / grid[1])

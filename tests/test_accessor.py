"""The ``ds.hippo`` accessor of hippo_rep.schema on recordings and analyses of known content."""

import numpy as np
import pytest
import xarray as xr

from hippo_rep import schema as S
from hippo_rep.schema import AnalysisError, SchemaError
from tests.test_schema import make_recording

#: Populations of the synthetic analysis, one entry per unit.
UNIT_POPULATIONS = ["g", "g", "memory_activity", "memory_activity", "memory_activity"]


def make_analysis() -> xr.Dataset:
    """2 envs x (2 g units + 3 memory slots) with every variable validate_analysis requires.

    Memory slot 2 (unit 4) is not written in env 1 (all-NaN map there), so the memory
    denominator is 3 + 2 = 5 (env, unit) pairs and the g denominator 2 + 2 = 4. Flags:
    is_grid on (env 0, unit 0), (env 1, unit 0), (env 1, unit 1) -> g: 3/4;
    is_place on (0, 2), (0, 3), (0, 4), (1, 2) and (1, 4) where unit 4 does not exist ->
    memory: 4/5 (a flag on a unit that does not exist is not counted).
    """
    n_env, n_unit, ny, nx = 2, 5, 4, 4
    rng = np.random.default_rng(1)
    rm = rng.random((n_env, n_unit, ny, nx))
    rm[1, 4] = np.nan
    is_grid = np.zeros((n_env, n_unit), bool)
    is_grid[0, 0] = is_grid[1, 0] = is_grid[1, 1] = True
    is_place = np.zeros((n_env, n_unit), bool)
    is_place[0, 2:] = True
    is_place[1, 2] = is_place[1, 4] = True
    eu = ("env", "unit")
    scores = {k: (eu, rng.random((n_env, n_unit))) for k in
              ("gridness_60", "gridness_90", "spacing", "orientation", "spatial_info",
               "place_score")}
    return xr.Dataset(
        {"rate_map": (("env", "unit", "y", "x"), rm),
         "occupancy": (("env", "y", "x"), np.ones((n_env, ny, nx))),
         **scores,
         "n_fields": (eu, np.ones((n_env, n_unit), np.int64)),
         "is_grid": (eu, is_grid), "is_place": (eu, is_place)},
        coords={"env": [0, 1], "unit": np.arange(n_unit),
                "variable": ("unit", np.array(UNIT_POPULATIONS)),
                "unit_index": ("unit", np.array([0, 1, 0, 1, 2]))},
        attrs={"hippo_rep_kind": "analysis"},
    )


def one_line(err: pytest.ExceptionInfo) -> str:
    msg = str(err.value)
    assert "\n" not in msg
    return msg


def test_recording_kind_populations_and_population():
    rec = make_recording()
    assert rec.hippo.kind == "recording"
    assert rec.hippo.validate() is rec
    assert rec.hippo.populations == ("g", "g_pi", "memory_activity")
    for pop in rec.hippo.populations:
        xr.testing.assert_identical(rec.hippo.population(pop), rec[pop])
    fam = rec.assign(fam_activity=(("env", "time", "fam_slot"), np.zeros((2, 5, 2))))
    assert fam.hippo.populations == ("g", "g_pi", "memory_activity", "fam_activity")
    assert fam.hippo.population("fam_activity").dims == ("env", "time", "fam_slot")


def test_analysis_kind_populations_and_population():
    an = make_analysis()
    assert an.hippo.kind == "analysis"
    assert an.hippo.validate() is an
    assert an.hippo.populations == ("g", "memory_activity")
    mem = an.hippo.population("memory_activity")
    assert list(mem["unit"].values) == [2, 3, 4]
    assert list(mem["unit_index"].values) == [0, 1, 2]
    np.testing.assert_array_equal(mem["is_place"].values, an["is_place"].values[:, 2:])
    np.testing.assert_array_equal(mem["rate_map"].values, an["rate_map"].values[:, 2:])
    g = an.hippo.population("g")
    assert list(g["unit"].values) == [0, 1] and set(g["variable"].values) == {"g"}
    assert g.sizes["env"] == 2 and g["occupancy"].equals(an["occupancy"])


def test_summary_is_class_fractions_with_the_known_counts():
    an = make_analysis()
    s = an.hippo.summary()
    xr.testing.assert_identical(s, S.class_fractions(an))
    assert list(s["population"].values) == ["g", "memory_activity"]
    assert list(s["cell_class"].values) == ["is_grid", "is_place"]
    num = s["numerator"].sel(cell_class=["is_grid", "is_place"]).values
    den = s["denominator"].sel(cell_class=["is_grid", "is_place"]).values
    np.testing.assert_array_equal(num, [[3, 0], [0, 4]])
    np.testing.assert_array_equal(den, [[4, 4], [5, 5]])
    assert float(s["fraction"].sel(population="memory_activity", cell_class="is_place")) \
        == pytest.approx(4 / 5)
    assert s.attrs["denominator"] == S.DENOMINATOR


def test_describe_names_the_sizes_and_the_known_fractions():
    rec = make_recording()
    assert rec.hippo.describe() == S.describe_recording(rec) == (
        "2 envs × 5 steps of square:3x2 (seed 0, 3 g units, 4 memory neurons)")
    an = make_analysis().assign_attrs(variables="g,memory_activity", n_shuffles=7)
    # the known counts of make_analysis: g grid 3 of 4 pairs, memory place 4 of 5
    assert an.hippo.describe() == S.describe_analysis(an) == (
        "2 envs × 5 units (g,memory_activity) with 7 shuffles; of the (env, unit) pairs "
        "that exist: g: grid 3/4 = 75%, place 0/4 = 0%; memory_activity: grid 0/5 = 0%, "
        "place 4/5 = 80%")


@pytest.mark.parametrize("attrs", [{}, {"hippo_rep_kind": "sweep"}])
def test_a_dataset_of_neither_kind_is_refused(attrs):
    ds = xr.Dataset({"a": ("t", [1.0])}, attrs=attrs)
    for use in (lambda: ds.hippo.kind, ds.hippo.validate, lambda: ds.hippo.populations,
                lambda: ds.hippo.population("g"), ds.hippo.summary):
        with pytest.raises(SchemaError) as err:
            use()
        msg = one_line(err)
        assert "neither a hippo_rep recording nor an analysis" in msg
        assert f"hippo_rep_kind is {attrs.get('hippo_rep_kind', None)!r}" in msg


def test_unknown_population_is_named_with_those_held():
    with pytest.raises(SchemaError) as err:
        make_recording().hippo.population("fam_activity")
    assert one_line(err) == ("no population 'fam_activity' in the recording (populations: "
                             "g, g_pi, memory_activity)")
    with pytest.raises(SchemaError) as err:
        make_analysis().hippo.population("g_pi")
    assert one_line(err) == ("no population 'g_pi' in the analysis (populations: "
                             "g, memory_activity)")


def test_missing_variables_are_named():
    rec = make_recording().drop_vars("memory_activity")
    assert rec.hippo.populations == ("g", "g_pi")
    with pytest.raises(SchemaError) as err:
        rec.hippo.validate()
    assert "missing variable(s) memory_activity" in one_line(err)
    with pytest.raises(SchemaError) as err:
        rec.hippo.population("memory_activity")
    assert "'memory_activity'" in one_line(err)
    an = make_analysis()
    with pytest.raises(AnalysisError) as err:
        an.drop_vars("spacing").hippo.validate("a.nc")
    assert one_line(err) == "'a.nc' is not a valid hippo_rep analysis: missing variable(s) spacing"
    with pytest.raises(SchemaError) as err:
        an.drop_vars("variable").hippo.population("g")
    assert "'variable'" in one_line(err)
    with pytest.raises(AnalysisError) as err:
        an.drop_vars("rate_map").hippo.summary()
    assert "'rate_map'" in one_line(err)
    with pytest.raises(SchemaError) as err:
        make_recording().hippo.summary()
    assert "needs an analysis" in one_line(err)

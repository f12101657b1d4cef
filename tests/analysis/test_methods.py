"""The registry of grid methods (hippo_rep.analysis.methods): every name resolves to its
scorer with the documented defaults, an unknown name is one line naming the registered ones,
and the scores, the nulls, analyse and the command line all read it."""

import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import AnalysisError, analyse, grid_scores
from hippo_rep.analysis.gridscore import GridScorer, grid_kernel
from hippo_rep.analysis.methods import (
    DEFAULT_GRID_METHOD,
    GRID_METHODS,
    grid_method,
    grid_methods_help,
)
from hippo_rep.analysis.shuffle import score_gridness_60
from hippo_rep.analysis.synthetic import hex_grid_map
from hippo_rep.cli import build_parser

UNKNOWN = "sargolini"


def _maps():
    m = np.asarray(hex_grid_map((20, 20), spacing=7.0, orientation=10.0))
    return xr.DataArray(np.stack([m, m.T]), dims=("unit", "y", "x"))


def test_every_registered_method_resolves_with_its_defaults():
    assert DEFAULT_GRID_METHOD in GRID_METHODS
    for name, method in GRID_METHODS.items():
        assert method.name == name and method.summary and "\n" not in method.summary
        scorer = method.scorer()
        assert isinstance(scorer, GridScorer)
        attrs = grid_kernel(name).attrs
        assert attrs["grid_score_method"] == name
        assert attrs["min_max"] == int(method.min_max)
        assert attrs["min_overlap"] == method.min_overlap
        assert attrs["smooth_sigma_bins"] == method.smooth_sigma
        assert attrs["rings"] == scorer.rings
        assert f"{name}: {method.summary}" in grid_methods_help()


@pytest.mark.parametrize("name", list(GRID_METHODS))
def test_the_nulls_score_gridness_60_as_grid_scores_does(name):
    maps = _maps()
    full = grid_scores(maps, method=name)["gridness_60"]
    fast = score_gridness_60(xr.Dataset({"rate_map": maps}), name)
    np.testing.assert_allclose(fast.values, full.values, atol=1e-12)
    assert fast.attrs["long_name"] == f"gridness at 60 degrees ({name})"


def test_an_unknown_method_is_one_line_naming_the_registered_ones():
    with pytest.raises(ValueError) as err:
        grid_method(UNKNOWN, "grid_method")
    text = str(err.value)
    assert "\n" not in text and "grid_method" in text and repr(UNKNOWN) in text
    assert all(name in text for name in GRID_METHODS)
    for call in (lambda: grid_scores(_maps(), method=UNKNOWN),
                 lambda: score_gridness_60(xr.Dataset({"rate_map": _maps()}), UNKNOWN)):
        with pytest.raises(ValueError, match="registered grid method"):
            call()


def test_analyse_refuses_an_unknown_method_before_any_work(tiny_rec):
    with pytest.raises(AnalysisError, match=r"grid_method must be a registered grid method "
                                            r"\(deepmind, bnt\)"):
        analyse(tiny_rec, shuffles=1, grid_method=UNKNOWN)


def test_the_command_line_offers_the_registry(capsys):
    parser = build_parser()
    base = ["analyse", "rec.nc", "--out", "an.nc"]
    assert parser.parse_args(base).grid_method == DEFAULT_GRID_METHOD
    for name in GRID_METHODS:
        assert parser.parse_args([*base, "--grid-method", name]).grid_method == name
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--grid-method", UNKNOWN])
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and all(repr(n) in err for n in GRID_METHODS)
    with pytest.raises(SystemExit):
        parser.parse_args(["analyse", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for name, method in GRID_METHODS.items():
        assert f"{name}: {' '.join(method.summary.split())}" in out

import pytest
import xarray as xr

from hippo_rep import cli, cluster
from hippo_rep.analysis import open_analysis


@pytest.fixture(scope="module")
def rec_path(tmp_path_factory, tiny_rec):
    path = tmp_path_factory.mktemp("rec") / "rec.nc"
    tiny_rec.to_netcdf(path)
    return path


def run(capsys, *argv):
    rc = cli.main(["analyse", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc, err, *needles):
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hippo-rep analyse: error: ")
    for n in needles:
        assert n in lines[0], lines[0]


def test_analyse_writes_one_dataset(tmp_path, capsys, rec_path, tiny_analysis):
    out = tmp_path / "an.nc"  # (.zarr output: tests/analysis/test_pipeline.py)
    rc, stdout, _ = run(capsys, rec_path, "--out", out, "--shuffles", 8, "--seed", 2)
    assert rc == 0
    assert stdout.count("\n") == 1 and str(out) in stdout
    an = open_analysis(out)
    assert an.attrs["n_shuffles"] == 8 and an.attrs["seed"] == 2
    # the CLI computes what the library computes (decoding uses the default sample size)
    for k in ("gridness_60", "spatial_info", "gridness_60_null_q", "is_grid", "is_place",
              "remap_corr", "tem_corr"):
        xr.testing.assert_allclose(an[k], tiny_analysis[k])
    # an existing output is refused, and kept
    rc, _, err = run(capsys, rec_path, "--out", out)
    one_line_error(rc, err, "exists", "--overwrite")
    rc, _, _ = run(capsys, rec_path, "--out", out, "--shuffles", 2, "--overwrite")
    assert rc == 0 and open_analysis(out).attrs["n_shuffles"] == 2


def test_bad_inputs_give_one_line(tmp_path, capsys, rec_path, tiny_rec):
    out = tmp_path / "an.nc"
    rc, _, err = run(capsys, tmp_path / "missing.nc", "--out", out)
    one_line_error(rc, err, "missing.nc", "not found")
    no_gpi = tmp_path / "no_gpi.nc"
    tiny_rec.drop_vars("g_pi").to_netcdf(no_gpi)
    rc, _, err = run(capsys, no_gpi, "--out", out)
    one_line_error(rc, err, "g_pi")
    other = tmp_path / "other.nc"
    xr.Dataset({"a": ("t", [1.0, 2.0])}, attrs={"hippo_rep_kind": "analysis"}).to_netcdf(other)
    rc, _, err = run(capsys, other, "--out", out)
    one_line_error(rc, err, "not a valid hippo_rep recording")
    rc, _, err = run(capsys, rec_path, "--out", tmp_path / "an.csv")
    one_line_error(rc, err, ".nc or .zarr")
    rc, _, err = run(capsys, rec_path, "--out", out, "--shuffles", 0)
    one_line_error(rc, err, "shuffles")
    rc, _, err = run(capsys, rec_path, "--out", out, "--bin-size", 2)  # a session option
    one_line_error(rc, err, "bin_size_cm is for sessions")
    rc, _, err = run(capsys, tmp_path / "missing.nwb", "--out", out)
    one_line_error(rc, err, "missing.nwb", "not found")
    assert not out.exists()


def test_unreachable_scheduler_fails_fast(tmp_path, capsys, rec_path, monkeypatch):
    monkeypatch.setattr(cluster, "SCHEDULER_TIMEOUT_S", 1)
    address = "tcp://127.0.0.1:9"
    rc, _, err = run(capsys, rec_path, "--out", tmp_path / "an.nc", "--scheduler", address)
    one_line_error(rc, err, address, "cannot reach the dask scheduler")
    assert not (tmp_path / "an.nc").exists()


def test_scheduler_and_workers_are_exclusive(capsys, rec_path, tmp_path):
    with pytest.raises(SystemExit):
        cli.main(["analyse", str(rec_path), "--out", str(tmp_path / "a.nc"),
                  "--scheduler", "tcp://x:1", "--workers", "2"])
    capsys.readouterr()


def test_populations_flag_analyses_only_those(tmp_path, capsys, rec_path, tiny_analysis):
    out = tmp_path / "g_only.nc"
    rc, _, _ = run(capsys, rec_path, "--out", out, "--shuffles", 8, "--seed", 2,
                   "--populations", "g")
    assert rc == 0
    an = open_analysis(out)
    assert list(an.hippo.populations) == ["g"]
    xr.testing.assert_allclose(an.hippo.population("g")["gridness_60"],
                               tiny_analysis.hippo.population("g")["gridness_60"])
    rc, _, err = run(capsys, rec_path, "--out", tmp_path / "x.nc", "--populations", "g,cells")
    one_line_error(rc, err, "cells")
    rc, _, err = run(capsys, rec_path, "--out", tmp_path / "y.nc", "--populations", ",")
    one_line_error(rc, err, "--populations")

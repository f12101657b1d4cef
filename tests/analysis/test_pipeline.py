import numpy as np
import pytest
import xarray as xr

from hippo_rep.analysis import (
    CLASSES,
    AnalysisError,
    analyse,
    band_scores,
    classify,
    grid_scores,
    open_analysis,
    pipeline,
    place_fields,
    place_score,
    plane_waves,
    spatial_information,
    synthetic_recording,
    write_analysis,
)
from hippo_rep.cluster import dask_client

PER_UNIT = ["gridness_60", "gridness_90", "spacing", "orientation", "best_radius",
            "grid_nan_reason", "spacing_nodes", "band_score", "band_orientation",
            "band_wavelength", "n_fields", "place_score", "spatial_info", "sparsity",
            "selectivity", "gridness_60_percentile", "spatial_info_percentile", "is_grid",
            "is_grid_threshold", "is_place", "n_waves", "hexagonal", "square",
            "plane_wave_share", "plane_wave_reason", "plane_wave_share_percentile", "is_band",
            "is_two_wave", "is_square"]


def test_contents(small_rec, small_analysis):
    an = small_analysis
    for k in PER_UNIT:
        assert an[k].dims == ("env", "unit"), k
    assert an.rate_map.dims == ("env", "unit", "y", "x")
    assert an.occupancy.dims == ("env", "y", "x")
    assert an.gridness_60_null_q.dims == ("quantile", "env", "unit")
    assert an.field_area.dims == ("env", "unit", "field")
    assert an.remap_corr.dims == ("unit", "env_pair")
    assert an.pv_corr.dims == ("population", "env_pair")
    assert an.decode_xy_r2.dims == ("population", "axis")
    assert an.shuffle_shift.dims == ("env", "shuffle")
    assert an.sizes["unit"] == 12 + 12 + 16
    assert an.variable.values.tolist() == ["g"] * 12 + ["g_pi"] * 12 + ["memory_activity"] * 16
    assert an.unit_index.values.tolist() == [*range(12), *range(12), *range(16)]
    a = an.attrs
    assert a["hippo_rep_kind"] == "analysis"
    assert a["checkpoint_sha256"] == "synthetic" and a["recording_seed"] == 3
    assert a["seed"] == 1 and a["n_shuffles"] == 40
    assert a["grid_score_method"] == "deepmind" and a["place_field_method"] == "fraction"
    assert "package_version" in a and "recording_package_version" in a
    assert a["classify_grid_quantile"] == 0.95 and a["classify_place_quantile"] == 0.99


def test_scores_equal_the_building_blocks(small_analysis):
    an = small_analysis
    gs = grid_scores(an.rate_map)
    for k in ("gridness_60", "gridness_90", "spacing", "orientation"):
        xr.testing.assert_allclose(an[k], gs[k].transpose("env", "unit"))
    xr.testing.assert_allclose(an.band_score, band_scores(an.rate_map).band_score)
    min_area = int(an.attrs["place_field_min_area_bins"])
    assert min_area == 1  # FIELD_MIN_NODES at one bin per node
    xr.testing.assert_equal(an.n_fields, place_fields(an.rate_map, min_area=min_area).n_fields)
    si = spatial_information(an.node_rate, an.node_occupancy, dims=("world_node",))
    xr.testing.assert_allclose(an.spatial_info, si.transpose("env", "unit"))
    pw = plane_waves(an.rate_map)
    for k in ("n_waves", "hexagonal", "square", "plane_wave_share", "plane_wave_reason",
              "wave_length", "wave_angle", "wave_share"):
        xr.testing.assert_allclose(an[k], pw[k].transpose("env", "unit", ...))
    assert an.plane_wave_share_null_q.dims == ("quantile", "env", "unit")
    assert an.attrs["plane_wave_min_share"] == pw.attrs["plane_wave_min_share"]
    # every map score carries the attrs its public function declares (one declaration)
    pf = place_fields(an.rate_map, min_area=min_area)
    for src, names in ((gs, ("gridness_60", "gridness_90", "spacing", "best_radius_90")),
                       (band_scores(an.rate_map), ("band_score", "band_wavelength")),
                       (pf, ("n_fields", "field_area", "field_centroid_y")),
                       (pw, ("n_waves", "hexagonal", "plane_wave_reason", "wave_share"))):
        for k in names:
            assert an[k].attrs == src[k].attrs, k
    assert an.place_score.attrs == place_score(an.rate_map).attrs
    assert an.attrs["band_half_width_deg"] == 15.0 and an.attrs["place_field_threshold"] == 0.2
    cls = classify(an.drop_vars(list(CLASSES)))
    for k in cls.data_vars:
        xr.testing.assert_equal(an[k], cls[k])
    # unused memory slots: NaN scores with a reason
    assert (an.grid_nan_reason != "").sum() == 0  # every slot used in this recording


def test_unused_memory_slots_get_nan_with_a_reason():
    rec = synthetic_recording("square:5", n_env=2, n_steps=300, n_grid=1, n_place=1,
                              n_random=1, n_memory=30)
    an = analyse(rec, shuffles=3, decode=False)
    unused = (an.variable == "memory_activity") & (an.unit_index >= 25)
    sub = an.sel(unit=unused)
    assert (sub.grid_nan_reason == "all_nan").all()
    assert sub.gridness_60.isnull().all() and not sub.is_grid.any()
    assert sub.spatial_info.isnull().all() and not sub.is_place.any()


def test_eager_numpy_equals_dask_chunks(tiny_rec, tiny_analysis):
    eager = analyse(tiny_rec, shuffles=8, seed=2, decode_max_steps_per_env=60,
                    chunk_units=None)
    xr.testing.assert_allclose(eager.drop_attrs(), tiny_analysis.drop_attrs())
    for k in ("is_grid", "is_grid_threshold", "is_place", "n_fields"):
        xr.testing.assert_equal(eager[k], tiny_analysis[k])


@pytest.mark.filterwarnings("ignore:The number of unique classes")  # tiny decoding sample
def test_two_worker_cluster_equals_single_process(tiny_rec, tiny_analysis):
    with dask_client(workers=2, processes=False) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        dist = analyse(tiny_rec, shuffles=8, seed=2, decode_max_steps_per_env=60)
        assert pipeline._active_client() is client
    xr.testing.assert_allclose(dist.drop_attrs(), tiny_analysis.drop_attrs())
    for k in ("is_grid", "is_grid_threshold", "is_place", "n_fields", "grid_nan_reason"):
        xr.testing.assert_equal(dist[k], tiny_analysis[k])
    assert pipeline._active_client() is None


def test_seed_changes_only_the_shuffles(tiny_rec, tiny_analysis):
    other = analyse(tiny_rec, shuffles=8, seed=3, decode_max_steps_per_env=60)
    xr.testing.assert_equal(other.gridness_60, tiny_analysis.gridness_60)
    assert not other.shuffle_shift.equals(tiny_analysis.shuffle_shift)


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_write_and_open(tmp_path, tiny_analysis, suffix):
    path = tmp_path / f"an{suffix}"
    write_analysis(tiny_analysis, path)
    back = open_analysis(path)
    xr.testing.assert_allclose(back.drop_attrs(), tiny_analysis.drop_attrs())
    assert back.attrs["hippo_rep_kind"] == "analysis"
    assert back.attrs["checkpoint_sha256"] == "synthetic"
    assert back.is_grid.dtype == bool and back.variable.dtype.kind == "U"
    if suffix == ".nc":  # compressed, losslessly
        with xr.open_dataset(path, engine="h5netcdf") as raw:
            assert raw.rate_map.encoding.get("zlib") is True  # h5netcdf reads gzip so
        xr.testing.assert_equal(back.rate_map, tiny_analysis.rate_map)
    with pytest.raises(FileExistsError, match="exists"):
        write_analysis(tiny_analysis, path)
    write_analysis(tiny_analysis.isel(env=[0, 1]), path, overwrite=True)
    assert open_analysis(path).sizes["env"] == 2
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left


def test_failed_write_leaves_nothing(tmp_path, tiny_analysis, monkeypatch):
    def boom(self, *args, **kwargs):
        open(args[0], "w").write("partial")
        raise OSError("disk full")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", boom)
    with pytest.raises(OSError, match="disk full"):
        write_analysis(tiny_analysis, tmp_path / "an.nc")
    assert list(tmp_path.iterdir()) == []


def test_bad_paths(tmp_path, tiny_analysis):
    with pytest.raises(AnalysisError, match=r"\.nc or \.zarr"):
        write_analysis(tiny_analysis, tmp_path / "an.h5")
    with pytest.raises(FileNotFoundError):
        open_analysis(tmp_path / "missing.nc")


@pytest.mark.parametrize(("change", "kwargs", "match"), [
    (None, {"shuffles": 0}, "shuffles"),
    (None, {"shuffles": -5}, "shuffles"),
    (None, {"grid_method": "sargolini"}, "grid_method"),
    (None, {"chunk_units": 0}, "chunk_units"),
    (None, {"seed": -1}, "seed"),
    (None, {"variables": ["g", "h"]}, "unknown activity variable 'h'"),
    (None, {"decode_max_steps_per_env": 0}, "decode_max_steps_per_env"),
    (None, {"quantiles": (0.5, 0.95)}, "must include 0.99"),
    (None, {"remap_shuffles": 0}, "remap_shuffles"),
    ("drop_x", {}, "'x'"),
    ("drop_g_pi", {"variables": ["g_pi"]}, "no variable 'g_pi'"),
    ("not_recording", {}, "hippo_rep_kind"),
    ("array", {}, "xarray.Dataset"),
])
def test_bad_inputs(tiny_rec, change, kwargs, match):
    rec = {
        None: tiny_rec,
        "drop_x": tiny_rec.drop_vars("x") if "x" in tiny_rec else tiny_rec,
        "drop_g_pi": tiny_rec.drop_vars("g_pi"),
        "not_recording": tiny_rec.assign_attrs(hippo_rep_kind="analysis"),
        "array": tiny_rec.g,
    }[change]
    with pytest.raises(AnalysisError, match=match):
        analyse(rec, **{"shuffles": 2, **kwargs})


def test_without_x_y_the_rest_still_runs(tiny_rec):
    an = analyse(tiny_rec.drop_vars(["x", "y"]), shuffles=2, decode=False)
    assert "decode_node_accuracy" not in an and "gridness_60" in an


def test_hex_world():
    rec = synthetic_recording("hex:6", n_env=2, n_steps=500, n_grid=2, n_place=1, n_random=1,
                              n_memory=6, seed=1)
    an = analyse(rec, shuffles=3, decode=False, keep_null=True)
    assert an.gridness_60_null.dims == ("env", "unit", "shuffle")
    assert an.attrs["map_resolution"] == 0.5
    xr.testing.assert_allclose(an.spacing_nodes, an.spacing * 0.5)
    planted_grid = (an.variable == "g") & (an.unit_index < 2)
    assert (an.gridness_60.sel(unit=planted_grid) > 0.3).all()


def test_bnt_method_on_small_maps_agrees_with_opexebo(tiny_rec):
    # 9 x 9 maps: "bnt" scores them as opexebo does (it used to give NaN on all)
    from .helpers import opexebo_grid_score

    an = analyse(tiny_rec, shuffles=2, grid_method="bnt", decode=False)
    assert an.attrs["grid_score_method"] == "bnt"
    g = an.sel(unit=an.variable == "g").transpose("env", "unit", ...)
    ours = g.gridness_60.values.ravel()
    maps = g.rate_map.values.reshape(-1, 9, 9)
    ref = np.array([opexebo_grid_score(m)[0] for m in maps])
    full = ~np.isnan(maps).any(axis=(1, 2))
    assert full.sum() >= 6
    # maps without unvisited bins: the same scores, NaN in the same places
    np.testing.assert_array_equal(np.isfinite(ours[full]), np.isfinite(ref[full]))
    both = full & np.isfinite(ref)
    np.testing.assert_allclose(ours[both], ref[both], atol=0.02)
    # planted grids are scored in every environment, close to opexebo even with unvisited
    # bins (which opexebo sets to 0 and "bnt" leaves out)
    is_grid = np.tile(tiny_rec["planted"].values == "grid", g.sizes["env"])
    assert np.isfinite(ours[is_grid]).all()
    np.testing.assert_allclose(ours[is_grid], ref[is_grid], atol=0.15)
    reasons = g.grid_nan_reason.values.ravel()[~np.isfinite(ours)]
    assert set(reasons) <= {"no_central_field", "no_annulus"}


def test_fam_slots_are_analysed_as_a_population(tmp_path):
    from hippo_rep.config import load_config
    from hippo_rep.models.registry import build_model
    from hippo_rep.recording import record_checkpoint
    from hippo_rep.training.checkpoint import save_checkpoint
    from hippo_rep.worlds import parse_world

    cfg = load_config("tiny", ["model.memory=fam", "model.fam_slots=3", "model.memory_block=8",
                               'world.worlds=["square:6"]'])
    w = parse_world("square:6")
    ckpt = tmp_path / "fam.pt"
    save_checkpoint(ckpt, build_model(cfg.model, w.n_actions, cfg.world.n_obs), cfg, step=0)
    rec = record_checkpoint(ckpt, n_envs=2, n_steps=120, seed=0)
    an = analyse(rec, shuffles=3, decode=False)
    fam = an.sel(unit=an["variable"] == "fam_activity")
    assert fam.sizes["unit"] == 3
    assert fam["unit_index"].values.tolist() == [0, 1, 2]
    assert np.isfinite(fam["spatial_info"].values).all()
    # every per-unit score family covers the slots: place fields, plane waves, remapping
    for v in ("place_score", "n_fields", "plane_wave_share", "gridness_60", "remap_corr"):
        assert np.isfinite(fam[v].values).all(), v
    summary = an.hippo.summary()
    assert "fam_activity" in summary["population"].values.tolist()
    # the denominator is every (env, slot) pair: a slot exists from the first step
    assert int(summary["denominator"].sel(population="fam_activity", cell_class="is_place")) == 6


def test_settings_and_keywords_are_the_same_analysis(tiny_rec):
    settings = pipeline.AnalysisSettings(shuffles=2, seed=3, decode=False, chunk_units=None)
    given = analyse(tiny_rec, settings)
    assert given.identical(analyse(tiny_rec, shuffles=2, seed=3, decode=False,
                                   chunk_units=None))
    # keywords replace the settings' fields; an unknown keyword is a TypeError
    other = analyse(tiny_rec, settings, seed=4)
    assert other.attrs["seed"] == 4 and not other.identical(given)
    with pytest.raises(TypeError, match="'shufles'"):
        analyse(tiny_rec, shufles=2)
    with pytest.raises(TypeError, match="AnalysisSettings"):
        analyse(tiny_rec, {"shuffles": 2})


def test_the_recording_is_checked_once(tiny_rec, monkeypatch):
    import importlib

    population = importlib.import_module("hippo_rep.analysis.population")  # not the function
    recordings = importlib.import_module("hippo_rep.analysis.recordings")
    calls = []

    def counted(recording, *args, **kwargs):
        calls.append(args)
        return require(recording, *args, **kwargs)

    require = pipeline.require_recording
    for module in (pipeline, recordings, population):
        monkeypatch.setattr(module, "require_recording", counted)
    analyse(tiny_rec, shuffles=1, remap_shuffles=2, decode_max_steps_per_env=30)
    assert len(calls) == 1

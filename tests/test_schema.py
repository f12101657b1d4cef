"""The recording schema and ``validate`` on good and broken datasets (no torch needed)."""

import json

import numpy as np
import pytest
import xarray as xr

from hippo_rep import schema as S


def make_recording(n_env=2, n_time=5, n_g=3, n_memory=4, n_node=6) -> xr.Dataset:
    """A small synthetic dataset that follows the schema."""
    sizes = {S.ENV: n_env, S.TIME: n_time, S.G_UNIT: n_g, S.MEMORY: n_memory,
             S.WORLD_NODE: n_node}
    rng = np.random.default_rng(0)
    variables = {}
    for name, spec in S.SPECS.items():
        shape = tuple(sizes[d] for d in spec.dims)
        if len(spec.dims) == 1 and spec.dims[0] == name:
            data = np.arange(shape[0])
        else:
            data = rng.integers(0, 3, size=shape)
        variables[name] = xr.Variable(spec.dims, data.astype(spec.dtype), S.var_attrs(name))
    attrs = {S.KIND_ATTR: S.KIND, S.MODEL_CONFIG: json.dumps({"n_g": n_g}),
             S.WORLD_CONFIG: json.dumps({"worlds": ["square:3x2"]}),
             S.RECORDING_CONFIG: json.dumps({"seed": 0}), S.WORLD: "square:3x2",
             S.CHECKPOINT_SHA256: "0" * 64, S.PACKAGE_VERSION: "0", S.SEED: 0,
             S.N_STEPS: n_time, S.SAME_OBSERVATIONS: 0}
    return xr.Dataset({n: variables[n] for n in S.DATA_VARS},
                      coords={n: variables[n] for n in S.COORDS}, attrs=attrs)


def error_of(ds, source=None) -> str:
    with pytest.raises(S.SchemaError) as info:
        S.validate(ds, source)
    return str(info.value)


def test_names_are_the_agreed_ones():
    # The analysis code is written against exactly these names.
    assert S.DIMS == ("env", "time", "g_unit", "memory", "world_node")
    assert tuple(S.DATA_VARS) == ("g", "g_pi", "memory_activity")
    assert set(S.COORDS) == {"env", "time", "g_unit", "memory", "world_node", "node", "x", "y",
                             "action", "observation", "prediction", "correct", "step_type",
                             "memory_node", "memory_time", "memory_observation", "node_x",
                             "node_y"}
    assert S.ATTRS == ("hippo_rep_kind", "model_config", "world_config", "recording_config",
                       "world", "checkpoint_sha256", "package_version", "seed", "n_steps",
                       "same_observations")
    assert S.DATA_VARS["memory_activity"].dims == ("env", "time", "memory")
    assert S.COORDS["memory_node"].dims == ("env", "memory")
    assert S.COORDS["node_x"].dims == ("world_node",)
    assert {S.COORDS[n].dtype for n in ("node", "action", "observation", "prediction",
                                        "memory_node", "memory_time",
                                        "memory_observation")} == {"int64"}
    assert S.COORDS["step_type"].dtype == "int8" and S.COORDS["correct"].dtype == "bool"
    assert {S.SPECS[n].dtype for n in ("g", "g_pi", "memory_activity")} == {"float32"}


def test_every_spec_has_units_and_long_name():
    for name in S.SPECS:
        attrs = S.var_attrs(name)
        assert attrs["units"] and attrs["long_name"], name
    flags = S.var_attrs("step_type")
    assert list(flags["flag_values"]) == [0, 1, 2]
    assert flags["flag_meanings"] == "first_visit revisit_known_edge revisit_new_edge"


def test_good_dataset_validates():
    S.validate(make_recording())


def test_missing_variable_is_named():
    msg = error_of(make_recording().drop_vars("memory_activity"))
    assert "missing variable(s) memory_activity" in msg


def test_every_missing_thing_is_named_in_one_message():
    ds = make_recording().drop_vars(["g", "g_pi", "memory_node", "node_x", "node_y",
                                     "world_node"])
    del ds.attrs["checkpoint_sha256"], ds.attrs["seed"]
    msg = error_of(ds)
    assert "missing dim(s) world_node" in msg
    assert "missing variable(s) g, g_pi" in msg
    assert "missing coordinate(s) world_node, memory_node, node_x, node_y" in msg
    assert "missing attr(s) checkpoint_sha256, seed" in msg


def test_wrong_dims_dtype_placement_and_attrs_are_named():
    ds = make_recording()
    ds["g"] = ds["g"].transpose("env", "g_unit", "time")
    ds = ds.assign_coords(node=ds["node"].astype(np.float32))
    ds = ds.reset_coords("prediction")
    del ds["g_pi"].attrs["units"]
    ds.attrs["model_config"] = "{not json"
    ds.attrs["n_steps"] = -3
    msg = error_of(ds)
    assert "g('env', 'g_unit', 'time')" in msg
    assert "node float32 (expected int64)" in msg
    assert "prediction (should be a coordinate)" in msg
    assert "g_pi (units)" in msg
    assert "attr model_config is not a JSON object" in msg
    assert "attr n_steps must be a non-negative integer" in msg


def test_a_dataset_of_another_kind_is_refused():
    ds = make_recording()
    ds.attrs["hippo_rep_kind"] = "analysis"
    assert "hippo_rep_kind is 'analysis', expected 'recording'" in error_of(ds)
    assert "missing" in error_of(xr.Dataset({"a": ("t", [1.0])}))


def test_validate_names_the_source_and_reads_paths(tmp_path):
    path = tmp_path / "broken.nc"
    make_recording().drop_vars("g").to_netcdf(path)
    msg = error_of(path)
    assert str(path) in msg and "missing variable(s) g" in msg
    assert "'my.zarr'" in error_of(make_recording().drop_vars("g"), "my.zarr")
    good = tmp_path / "good.nc"
    make_recording().to_netcdf(good)
    S.validate(good)  # bool coords come back as bool, int8 as int8

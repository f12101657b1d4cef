"""Recording a checkpoint into xarray datasets: contents, formats, streaming, crashes, errors."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import xarray as xr

from hippo_rep import cli
from hippo_rep import recording as R
from hippo_rep import schema as S
from hippo_rep.config import load_config
from hippo_rep.models.registry import build_model
from hippo_rep.random_streams import eval_rng
from hippo_rep.training.checkpoint import file_sha256, load_checkpoint, save_checkpoint
from hippo_rep.training.evaluate import run_model
from hippo_rep.worlds import parse_world, sample_episodes, step_types

# pytest resets warning filters per test; hippo_rep.recording filters this one for good.
pytestmark = pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part")

# 80 steps in chunks of 16: five chunks, the memory carried from chunk to chunk.
KW = dict(n_envs=3, n_steps=80, chunk=16, seed=3)


def _checkpoint(path, *overrides, step=0):
    """A checkpoint of the tiny preset (untrained weights: recording does not care)."""
    cfg = load_config("tiny", list(overrides))
    w = parse_world(cfg.world.worlds[0])
    save_checkpoint(path, build_model(cfg.model, w.n_actions, cfg.world.n_obs), cfg, step=step)
    return path


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """A tiny square-world checkpoint."""
    return _checkpoint(tmp_path_factory.mktemp("tiny") / "checkpoint.pt", step=5)


@pytest.fixture(scope="module")
def hex_ckpt(tmp_path_factory):
    """A tiny hexagonal-world checkpoint."""
    return _checkpoint(tmp_path_factory.mktemp("hex") / "checkpoint.pt", "world.worlds=hex:3")


@pytest.fixture(scope="module")
def full(ckpt):
    """The in-memory recording of KW."""
    return R.record_checkpoint(ckpt, **KW)


def test_shapes_coords_and_attrs(ckpt, full):
    ds = full
    S.validate(ds)
    model, cfg, payload = load_checkpoint(ckpt)
    B, T, d = 3, 80, cfg.model.n_g
    world = parse_world(cfg.world.worlds[0])
    assert ds.sizes["env"] == B and ds.sizes["time"] == T and ds.sizes["g_unit"] == d
    assert ds.sizes["world_node"] == world.n_nodes
    assert ds["g"].shape == ds["g_pi"].shape == (B, T, d)
    assert ds["memory_activity"].shape == (B, T, ds.sizes["memory"])
    for dim in ("env", "time", "g_unit", "memory", "world_node"):
        np.testing.assert_array_equal(ds[dim], np.arange(ds.sizes[dim]))
    assert ds["g"].dtype == np.float32 and ds["memory_activity"].dtype == np.float32
    assert ds["step_type"].dtype == np.int8 and ds["correct"].dtype == bool
    # positions are the world's coordinates of the node occupied
    np.testing.assert_array_equal(ds["x"], world.coords[ds["node"].values, 0])
    np.testing.assert_array_equal(ds["y"], world.coords[ds["node"].values, 1])
    np.testing.assert_array_equal(ds["node_x"], world.coords[:, 0])
    np.testing.assert_array_equal(ds["correct"], ds["prediction"] == ds["observation"])
    for b in range(B):
        types = step_types(ds["node"].values[b], ds["action"].values[b])
        np.testing.assert_array_equal(ds["step_type"].values[b], types["code"])
    # the model really produced these: rerun it on the same walk, same chunks
    outs = run_model(model, ds["observation"].values, ds["action"].values, chunk=16)
    np.testing.assert_allclose(ds["g"].values, np.concatenate([o.g for o in outs], 1),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ds["g_pi"].values, np.concatenate([o.g_pi for o in outs], 1),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ds["prediction"].values,
                                  np.concatenate([o.logits_pi.argmax(-1) for o in outs], 1))
    a = ds.attrs
    assert a["hippo_rep_kind"] == "recording" and a["world"] == world.spec
    assert a["checkpoint_sha256"] == file_sha256(ckpt)
    assert a["seed"] == 3 and a["n_steps"] == T and a["same_observations"] == 0
    # (through JSON: tuples such as model.tem.n_g come back as lists)
    assert json.loads(a["model_config"]) == json.loads(json.dumps(cfg.to_dict()["model"]))
    assert json.loads(a["world_config"])["worlds"] == [world.spec]
    rc = json.loads(a["recording_config"])
    assert (rc["n_envs"], rc["n_steps"], rc["chunk"], rc["training_step"]) == (B, T, 16, 5)
    assert a["package_version"]


def test_memory_bookkeeping(full):
    ds = full
    node, obs = ds["node"].values, ds["observation"].values
    act = ds["memory_activity"].values
    mt, mn, mo = (ds[n].values for n in ("memory_time", "memory_node", "memory_observation"))
    assert ds.sizes["memory"] == (mt >= 0).sum(1).max()  # memory dim = most memories
    for b in range(ds.sizes["env"]):
        used = mt[b] >= 0
        n = used.sum()
        assert used[:n].all() and not used[n:].any()  # slots fill in order
        assert (mn[b, n:] == -1).all() and (mo[b, n:] == -1).all()
        assert (np.diff(mt[b, :n]) > 0).all()  # written in time order
        assert mt[b, 0] == 0  # the first step always writes
        np.testing.assert_array_equal(mn[b, :n], node[b, mt[b, :n]])
        np.testing.assert_array_equal(mo[b, :n], obs[b, mt[b, :n]])
        for m in range(n):
            tau = mt[b, m]
            # written at step tau, available from tau + 1 on
            assert (act[b, :tau + 1, m] == 0).all()
            if tau + 1 < ds.sizes["time"]:
                assert act[b, tau + 1, m] > 0
        assert (act[b, :, n:] == 0).all()
        # softmax over the memories that exist: sums to 1 from step 1 on
        np.testing.assert_allclose(act[b, 1:].sum(-1), 1, rtol=1e-5)
        assert act[b, 0].sum() == 0


def test_environments_are_seeded_and_unlike_evaluation(ckpt, full):
    again = R.record_checkpoint(ckpt, **KW)
    xr.testing.assert_identical(again, full)
    other = R.record_checkpoint(ckpt, **{**KW, "seed": 4})
    assert not np.array_equal(other["node"], full["node"])
    _, cfg, _ = load_checkpoint(ckpt)
    ev = sample_episodes(parse_world(cfg.world.worlds[0]), 3, 80, cfg.world.n_obs, eval_rng(3),
                         cfg.world.keep_heading, cfg.world.stay_prob)
    assert not np.array_equal(ev.nodes, full["node"].values)


def _observation_maps(ds):
    node, obs = ds["node"].values, ds["observation"].values
    maps = np.full((ds.sizes["env"], ds.sizes["world_node"]), -1)
    for b in range(ds.sizes["env"]):
        maps[b, node[b]] = obs[b]
    return maps


def test_same_observations(ckpt, full):
    same = R.record_checkpoint(ckpt, **{**KW, "n_envs": 4, "same_observations": True})
    assert same.attrs["same_observations"] == 1
    maps = _observation_maps(same)
    for b in range(1, 4):
        both = (maps[0] >= 0) & (maps[b] >= 0)
        np.testing.assert_array_equal(maps[0][both], maps[b][both])
    assert not np.array_equal(same["node"][0], same["node"][1])  # walks still differ
    maps = _observation_maps(full)  # without the flag: fresh observations per environment
    both = (maps[0] >= 0) & (maps[1] >= 0)
    assert (maps[0][both] != maps[1][both]).any()


def test_hex_world(hex_ckpt):
    ds = R.record_checkpoint(hex_ckpt, n_envs=2, n_steps=30, chunk=16)
    S.validate(ds)
    w = parse_world("hex:3")
    np.testing.assert_array_equal(ds["node_y"], w.coords[:, 1])
    assert (ds["y"] % 1 != 0).any()  # rows √3/2 apart
    assert ds["action"].max() <= 6


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_round_trip_equals_in_memory(ckpt, full, tmp_path, suffix):
    out = R.record_to_file(ckpt, tmp_path / f"rec{suffix}", **KW)
    S.validate(out)
    with R.open_recording(out) as ds:
        if suffix == ".zarr":  # lazy, dask-backed, whole walks × blocks of units
            assert ds["g"].chunks[1] == (80,)
            assert set(ds["g"].chunks[2]) <= {R.G_UNIT_CHUNK, 24 % R.G_UNIT_CHUNK}
            assert ds["memory_activity"].chunks is not None
        else:
            assert not ds["g"].variable._in_memory  # lazy
        xr.testing.assert_identical(ds.load(), full)
        assert ds["correct"].dtype == bool and ds["step_type"].dtype == np.int8
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"rec{suffix}"]  # no temp files


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_fam_slots_are_recorded(tmp_path, suffix):
    ck = _checkpoint(tmp_path / "fam.pt", "model.memory=fam", "model.fam_slots=3",
                     "model.memory_block=8", "model.memory_blocks=1")
    mem = R.record_checkpoint(ck, **KW)
    assert mem[S.FAM_ACTIVITY].dims == ("env", "time", "fam_slot")
    assert mem.sizes["fam_slot"] == 3
    # memories and slots share one softmax: together they sum to 1 at every step
    total = mem[S.MEMORY_ACTIVITY].sum("memory") + mem[S.FAM_ACTIVITY].sum("fam_slot")
    np.testing.assert_allclose(total.values, 1.0, atol=1e-5)
    out = R.record_to_file(ck, tmp_path / f"rec{suffix}", **KW)
    with R.open_recording(out) as ds:
        xr.testing.assert_identical(ds.load(), mem)
    bad = mem.copy()
    bad[S.FAM_ACTIVITY] = bad[S.FAM_ACTIVITY].transpose("fam_slot", "env", "time")
    with pytest.raises(S.SchemaError, match="fam_activity"):
        S.validate(bad)


def test_stream_writes_memory_growth_as_zeros(ckpt, tmp_path, monkeypatch):
    # Short chunks and blocks of 2 memory neurons: the memory dim grows at almost every
    # append, into blocks whose chunk files do not exist for the earlier steps.
    monkeypatch.setattr(R.store, "MEMORY_CHUNK", 2)
    kw = {**KW, "chunk": 4, "n_steps": 20}
    out = R.record_to_file(ckpt, tmp_path / "rec.zarr", **kw)
    with R.open_recording(out) as ds:
        assert ds.sizes["memory"] > 2 * 2
        xr.testing.assert_identical(ds.load(), R.record_checkpoint(ckpt, **kw))
    assert xr.open_zarr(out)["memory_activity"].encoding["chunks"] == (3, 4, 2)


def _prefix(full, n):
    """What a recording holding the first n steps of ``full`` must contain."""
    return R.trim(full, n)


def _crash_after(monkeypatch, k):
    """Make Recorder.chunks raise after yielding k chunks."""
    original = R.Recorder.chunks

    def chunks(self):
        for i, c in enumerate(original(self)):
            if i == k:
                raise RuntimeError("simulated crash")
            yield c

    monkeypatch.setattr(R.Recorder, "chunks", chunks)


@pytest.mark.parametrize("k", [0, 1, 3])
def test_crash_between_chunks_leaves_a_valid_prefix_or_nothing(ckpt, full, tmp_path,
                                                              monkeypatch, k):
    _crash_after(monkeypatch, k)
    out = tmp_path / "rec.zarr"
    with pytest.raises(RuntimeError, match="simulated crash"):
        R.record_to_file(ckpt, out, **KW)
    if k == 0:
        assert list(tmp_path.iterdir()) == []  # nothing, not even a temporary folder
        return
    with R.open_recording(out) as ds:
        assert ds.attrs["n_steps"] == ds.sizes["time"] == 16 * k
        xr.testing.assert_identical(ds.load(), _prefix(full, 16 * k))
        assert (ds["memory_time"] < 16 * k).all()


def test_crash_while_recording_netcdf_leaves_no_file_and_the_old_one_intact(
        ckpt, tmp_path, monkeypatch):
    old = tmp_path / "old.nc"
    R.record_to_file(ckpt, old, n_envs=1, n_steps=10)
    before = old.read_bytes()
    _crash_after(monkeypatch, 3)
    for out in (tmp_path / "new.nc", old):
        with pytest.raises(RuntimeError, match="simulated crash"):
            R.record_to_file(ckpt, out, overwrite=True, **KW)
    def half_written(self, path, *args, **kwargs):
        with open(path, "wb") as f:
            f.write(b"\x89HDF\r\n\x1a\n")  # a few bytes, then the disk is full
        raise OSError("disk full")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", half_written)
    with pytest.raises(OSError, match="disk full"):
        R.write_netcdf(R.record_checkpoint(ckpt, n_envs=1, n_steps=10), old, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.nc"]
    assert old.read_bytes() == before


def test_crash_inside_an_append_leaves_the_last_committed_chunks(ckpt, full, tmp_path,
                                                                monkeypatch):
    """Killed after the arrays of chunk 4 were grown and written, before its commit."""
    out = tmp_path / "rec.zarr"

    def crash(self):
        if self.n_steps == 48:
            raise RuntimeError("simulated crash")
        return original(self)

    original = R.ZarrWriter._consolidate
    monkeypatch.setattr(R.ZarrWriter, "_consolidate", crash)
    with pytest.raises(RuntimeError):
        R.record_to_file(ckpt, out, **KW)
    raw = xr.open_zarr(out, consolidated=False)  # the arrays themselves hold 64 steps
    assert raw.sizes["time"] == 64
    with R.open_recording(out) as ds:  # ... but only 48 were committed
        assert ds.attrs["n_steps"] == ds.sizes["time"] == 48
        xr.testing.assert_identical(ds.load(), _prefix(full, 48))


def test_crash_between_metadata_and_n_steps_is_trimmed(ckpt, full, tmp_path, monkeypatch):
    out = tmp_path / "rec.zarr"

    def crash(self, stop):
        if stop == 64:
            raise RuntimeError("simulated crash")
        return original(self, stop)

    original = R.ZarrWriter._set_n_steps
    monkeypatch.setattr(R.ZarrWriter, "_set_n_steps", crash)
    with pytest.raises(RuntimeError):
        R.record_to_file(ckpt, out, **KW)
    raw = xr.open_zarr(out)  # consolidated: 64 steps stored, n_steps says 48
    assert raw.sizes["time"] == 64 and raw.attrs["n_steps"] == 48
    assert (raw["memory_time"] >= 48).any()
    with R.open_recording(out) as ds:
        assert ds.sizes["time"] == 48
        xr.testing.assert_identical(ds.load(), _prefix(full, 48))


@pytest.fixture(scope="module")
def killed(full, tmp_path_factory):
    """A fresh process without torch that opens a recording, then streams ``full`` into a
    new store chunk by chunk and is SIGKILLed in the middle of chunk 3: after g and the
    per-step coordinates were grown and written, before the other arrays."""
    tmp = tmp_path_factory.mktemp("killed")
    source, good, out = tmp / "full.nc", tmp / "good.zarr", tmp / "rec.zarr"
    R.write_netcdf(full, source)
    R.ZarrWriter(good, chunk=80).append(full)
    script = textwrap.dedent(f"""
        import os, signal, sys
        import hippo_rep
        assert "xarray" not in sys.modules, "import hippo_rep imports xarray"
        ds = hippo_rep.open_recording({str(good)!r})
        hippo_rep.validate(ds)
        float(ds.g.mean())
        assert "torch" not in sys.modules, "reading a recording imports torch"
        print("read without torch", flush=True)

        from hippo_rep import recording as R
        full = R.open_recording({str(source)!r}).load()
        original = R.ZarrWriter._write
        def write(self, piece):
            if self.n_steps == 32:
                original(self, piece[["g"]])  # g and the per-step coords only
                os.kill(os.getpid(), signal.SIGKILL)
            return original(self, piece)
        R.ZarrWriter._write = write
        writer = R.ZarrWriter({str(out)!r}, chunk=16)
        for stop in range(16, 81, 16):
            writer.append(R.trim(full, stop).isel(time=slice(stop - 16, stop)))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    return proc, out


def test_reading_needs_no_torch(killed):
    proc, _ = killed
    assert "read without torch" in proc.stdout, proc.stderr


def test_killed_process_mid_append_leaves_a_valid_recording(killed, full):
    proc, out = killed
    assert proc.returncode == -9, proc.stderr
    with pytest.raises(ValueError):  # the per-array metadata disagree ...
        xr.open_zarr(out, consolidated=False)
    with R.open_recording(out) as ds:  # ... the committed recording is whole
        assert ds.attrs["n_steps"] == ds.sizes["time"] == 32
        S.validate(ds)
        xr.testing.assert_identical(ds.load(), _prefix(full, 32))


def test_existing_output_is_refused_and_untouched(ckpt, tmp_path, capsys):
    for name in ("rec.nc", "rec.zarr"):
        out = tmp_path / name
        R.record_to_file(ckpt, out, n_envs=1, n_steps=10)
        before = _snapshot(out)
        with pytest.raises(FileExistsError, match="--overwrite"):
            R.record_to_file(ckpt, out, n_envs=2, n_steps=10)
        rc = cli.main(["record", str(ckpt), "--out", str(out), "--envs", "2", "--steps", "10"])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1
        assert err.startswith("hippo-rep record: error:") and str(out) in err
        # a failing recording with --overwrite does not touch it either
        rc = cli.main(["record", str(ckpt), "--out", str(out), "--world", "hex:3",
                       "--overwrite"])
        assert rc == 2 and "hex:3" in capsys.readouterr().err
        assert _snapshot(out) == before
        rc = cli.main(["record", str(ckpt), "--out", str(out), "--envs", "2", "--steps", "12",
                       "--overwrite"])
        assert rc == 0 and str(out) in capsys.readouterr().out
        with R.open_recording(out) as ds:
            assert ds.sizes["env"] == 2 and ds.sizes["time"] == 12
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.nc", "rec.zarr"]


def _snapshot(path):
    if path.is_file():
        return path.read_bytes()
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


def test_a_folder_that_is_not_a_zarr_store_is_never_replaced(ckpt, tmp_path):
    out = tmp_path / "precious.zarr"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(R.RecordingError, match="not a zarr store"):
        R.record_to_file(ckpt, out, overwrite=True, n_envs=1, n_steps=5)
    assert (out / "notes.txt").read_text() == "keep me"


def test_bad_inputs_give_one_clear_line(ckpt, tmp_path, capsys):
    not_ckpt = tmp_path / "notes.pt"
    not_ckpt.write_text("hello")
    cases = [
        ([str(not_ckpt), "--out", str(tmp_path / "a.nc")], [str(not_ckpt), "not a torch file"]),
        ([str(tmp_path / "missing.pt"), "--out", str(tmp_path / "a.nc")], ["not found"]),
        ([str(ckpt), "--out", str(tmp_path / "a.zarr"), "--world", "hex:4"],
         ["'hex:4x4'", str(ckpt), "7 actions", "square worlds (5 actions)"]),
        ([str(ckpt), "--out", str(tmp_path / "a.h5")], ["must end in .nc", "a.h5"]),
        ([str(ckpt), "--out", str(tmp_path / "a.nc"), "--steps", "0"], ["--steps"]),
        ([str(ckpt), "--out", str(tmp_path / "a.nc"), "--world", "square:x"], ["square:x"]),
    ]
    for argv, words in cases:
        assert cli.main(["record", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("hippo-rep record: error:") and err.count("\n") == 1, err
        for w in words:
            assert w in err, (w, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.pt"]
    with pytest.raises(R.RecordingError, match=r"world 'hex:3x3'.*checkpoint"):
        R.record_checkpoint(ckpt, world="hex:3")


def test_open_recording_refuses_what_is_not_a_recording(full, tmp_path):
    other = tmp_path / "other.nc"
    xr.Dataset({"temperature": ("t", [1.0, 2.0])}).to_netcdf(other)
    with pytest.raises(S.SchemaError, match=r"other\.nc.*missing variable\(s\) g, g_pi"):
        R.open_recording(other)
    text = tmp_path / "text.nc"
    text.write_text("not netcdf")
    with pytest.raises(R.RecordingError, match=r"text\.nc.*not a netCDF file or zarr store"):
        R.open_recording(text)
    with pytest.raises(FileNotFoundError, match="nothing.zarr"):
        R.open_recording(tmp_path / "nothing.zarr")
    folder = tmp_path / "folder.zarr"
    folder.mkdir()
    with pytest.raises(R.RecordingError, match="not a zarr store"):
        R.open_recording(folder)
    broken = tmp_path / "broken.zarr"
    full.drop_vars("memory_activity").to_zarr(broken, consolidated=False)
    with pytest.raises(S.SchemaError, match=r"broken\.zarr.*missing variable\(s\) "
                                            r"memory_activity"):
        R.open_recording(broken)
    damaged = tmp_path / "damaged.nc"
    full.assign_attrs(n_steps=500).to_netcdf(damaged)
    with pytest.raises(S.SchemaError, match="only 80 steps are stored"):
        R.open_recording(damaged)


def test_cli_record_prints_one_line(ckpt, tmp_path, capsys):
    out = tmp_path / "rec.zarr"
    rc = cli.main(["record", str(ckpt), "--out", str(out), "--envs", "2", "--steps", "20",
                   "--seed", "7", "--same-observations", "--chunk", "8"])
    assert rc == 0
    line = capsys.readouterr().out
    assert line.startswith("recorded 2 envs × 20 steps of square:4x4 (seed 7") and str(out) in line
    with R.open_recording(out) as ds:
        assert ds.attrs["same_observations"] == 1 and ds.attrs["seed"] == 7
        assert json.loads(ds.attrs["recording_config"])["chunk"] == 8
    args = cli.build_parser().parse_args(["record", "c.pt", "--out", "o.nc"])
    assert (args.envs, args.chunk, args.seed) == (R.DEFAULT_ENVS, R.DEFAULT_CHUNK, 0)


def test_to_pynapple(full, monkeypatch):
    from hippo_rep.export import to_pynapple

    try:
        import pynapple  # noqa: F401
    except ImportError:
        pynapple = None
    if pynapple is not None:
        out = to_pynapple(full, env=1, step_duration=0.5)
        np.testing.assert_array_equal(out["g"].t, np.arange(80) * 0.5)
        np.testing.assert_array_equal(out["g"].values, full["g"].values[1])
        used = full["memory_time"].values[1] >= 0
        np.testing.assert_array_equal(out["memory_activity"].values,
                                      full["memory_activity"].values[1][:, used])
        np.testing.assert_array_equal(out["memory_activity"].metadata["memory_node"],
                                      full["memory_node"].values[1][used])
        np.testing.assert_array_equal(out["x"].values, full["x"].values[1])
        assert type(out["x"]).__name__ == "Tsd" and type(out["g_pi"]).__name__ == "TsdFrame"
        with pytest.raises(IndexError, match="3 environments"):
            to_pynapple(full, env=3)
    monkeypatch.setitem(sys.modules, "pynapple", None)  # as if it were not installed
    with pytest.raises(ImportError, match="pip install pynapple"):
        to_pynapple(full)


def test_writer_checks_its_pieces(full, tmp_path):
    w = R.ZarrWriter(tmp_path / "rec.zarr", chunk=16)
    with pytest.raises(R.RecordingError, match="starts at step 16, expected 0"):
        w.append(full.isel(time=slice(16, 32)).assign_attrs(n_steps=32))
    assert not os.path.exists(tmp_path / "rec.zarr")


def test_abandoned_recording_leaves_gradients_enabled(tmp_path):
    """Stopping a recording early must not leave torch's grad mode switched off."""
    import torch

    from hippo_rep.config import load_config
    from hippo_rep.recording import Recorder
    from hippo_rep.training.trainer import train

    train(load_config("tiny", ["train.iterations=1"]), tmp_path, progress=False)
    rec = Recorder(tmp_path / "checkpoint.pt", n_envs=1, n_steps=40, chunk=10)
    pieces = rec.chunks()
    next(pieces)  # consume one chunk, then abandon the generator
    assert torch.is_grad_enabled()


def test_a_rerun_writes_the_same_netcdf_file(ckpt, tmp_path):
    """Same checkpoint and settings → the same bytes (no time or random name in the file), so
    a rerun can be checked with a hash."""
    for name in ("a.nc", "b.nc"):
        R.record_to_file(ckpt, tmp_path / name, **KW)
    assert file_sha256(tmp_path / "a.nc") == file_sha256(tmp_path / "b.nc")

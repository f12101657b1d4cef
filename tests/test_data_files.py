"""Every data file is validated on open: damaged zarr chunks are errors naming the variable;
an --overwrite of a zarr store keeps the old one until the new one is complete; stale
temporary files of killed writes are cleaned by the next write."""

import os
import shutil
from pathlib import Path

import pytest
import xarray as xr

from hippo_rep import cli
from hippo_rep import recording as R
from hippo_rep.analysis import AnalysisError, open_analysis, write_analysis
from hippo_rep.analysis.synthetic_recording import synthetic_recording
from hippo_rep.datasets import CHUNKS_COMPLETE_ATTR, check_chunks
from hippo_rep.fileio import atomic_folder, atomic_write, clean_stale

KW = dict(n_envs=2, n_steps=192, chunk=32, world="square:8")


@pytest.fixture(scope="module")
def pristine(tiny_ckpt, tmp_path_factory):
    out = tmp_path_factory.mktemp("rec") / "rec.zarr"
    R.record_to_file(tiny_ckpt, out, **KW)
    return out


@pytest.fixture()
def store(pristine, tmp_path):
    """A healthy recording store of its own for each test."""
    return Path(shutil.copytree(pristine, tmp_path / "rec.zarr"))


def chunk_files(store, var):
    return sorted(p for p in (store / var).rglob("*") if p.is_file() and p.name != "zarr.json")


def snapshot(path):
    if path.is_file():
        return path.read_bytes()
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


def run(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    return rc, capsys.readouterr().err.strip()


def test_every_chunk_of_a_growing_recording_exists(store):
    """memory_activity grows along memory while streaming; its new blocks over earlier steps
    are written too, so no chunk is missing in a healthy store."""
    check_chunks(store)
    with R.open_recording(store) as ds:
        assert ds.sizes["memory"] > R.MEMORY_CHUNK  # the memory dim grew over blocks
        assert CHUNKS_COMPLETE_ATTR not in ds.attrs


@pytest.mark.parametrize("damage", ["delete", "empty"])
def test_missing_or_empty_chunk_is_an_error_naming_the_variable(store, capsys, tmp_path,
                                                                damage):
    victim = chunk_files(store, "memory_activity")[-1]
    if damage == "delete":
        victim.unlink()
    else:
        victim.write_bytes(b"")
    with pytest.raises(R.RecordingError, match="'memory_activity'.*missing or empty"):
        R.open_recording(store)
    rc, err = run(capsys, "analyse", store, "--out", tmp_path / "a.nc", "--shuffles", "2")
    assert rc == 2 and "memory_activity" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "a.nc").exists()


def test_truncated_chunk_is_an_error_naming_the_variable(store, capsys, tmp_path):
    victim = max(chunk_files(store, "g"), key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[:7])
    rc, err = run(capsys, "analyse", store, "--out", tmp_path / "a.nc", "--shuffles", "2")
    assert rc == 2 and "'g'" in err and "damaged" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "a.nc").exists()


def test_killed_overwrite_keeps_the_old_store(store, tiny_ckpt, monkeypatch):
    before = snapshot(store)
    original = R.ZarrWriter._write

    def crash(self, piece):
        if self.n_steps == 32:
            raise KeyboardInterrupt  # like a kill in the middle of the new recording
        return original(self, piece)

    monkeypatch.setattr(R.ZarrWriter, "_write", crash)
    with pytest.raises(KeyboardInterrupt):
        R.record_to_file(tiny_ckpt, store, overwrite=True, **{**KW, "n_envs": 1})
    assert snapshot(store) == before
    assert sorted(p.name for p in store.parent.iterdir()) == ["rec.zarr"]
    monkeypatch.undo()
    R.record_to_file(tiny_ckpt, store, overwrite=True, **{**KW, "n_envs": 1})
    with R.open_recording(store) as ds:
        assert ds.sizes["env"] == 1 and ds.sizes["time"] == KW["n_steps"]


def test_stale_temporaries_are_cleaned_and_an_old_store_put_back(tmp_path):
    out = tmp_path / "m.csv"
    (tmp_path / ".m.csv.abc.tmp").write_text("half")
    (tmp_path / ".m.csv.x.partial").mkdir()
    (tmp_path / ".other.csv.abc.tmp").write_text("someone else's")
    atomic_write(out, lambda tmp: open(tmp, "w").write("new"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.csv.abc.tmp", "m.csv"]
    # a swap killed after the old output was set aside: the next write puts it back first
    aside = tmp_path / ".r.zarr.1.old"
    aside.mkdir()
    (aside / "zarr.json").write_text("{}")
    clean_stale(tmp_path / "r.zarr")
    assert (tmp_path / "r.zarr" / "zarr.json").read_text() == "{}"


def test_atomic_folder_swaps_a_complete_folder_and_keeps_the_old_one_on_failure(tmp_path):
    out = tmp_path / "s.zarr"

    def write(text):
        def fn(tmp):
            tmp.mkdir()
            (tmp / "a").write_text(text)
        return fn

    atomic_folder(out, write("one"))
    atomic_folder(out, write("two"))  # replaces an existing folder
    assert (out / "a").read_text() == "two"

    def crash(tmp):
        write("half")(tmp)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_folder(out, crash)
    assert (out / "a").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarr"]


def test_zarr_recording_killed_before_swap_leaves_no_visible_output(tiny_ckpt, tmp_path):
    """A fresh .zarr killed in its first chunk leaves only a hidden .partial, removed by the
    next recording to the same path."""
    out = tmp_path / "rec.zarr"
    (tmp_path / ".rec.zarr.zz.partial").mkdir()
    R.record_to_file(tiny_ckpt, out, **KW)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.zarr"]


# ------------------------------------------------------------------------ analysis files
@pytest.fixture(scope="module")
def analysis_nc(tmp_path_factory):
    from hippo_rep.analysis import analyse

    rec = synthetic_recording("square:6", n_env=2, n_steps=600, n_grid=3, n_place=3,
                              n_random=2, n_memory=8)
    ds = analyse(rec, shuffles=2, seed=0)
    out = tmp_path_factory.mktemp("an") / "a.nc"
    write_analysis(ds, out)
    return out, ds


def test_analysis_zarr_chunks_are_checked(analysis_nc, tmp_path):
    _, ds = analysis_nc
    out = write_analysis(ds, tmp_path / "a.zarr")
    xr.testing.assert_identical(open_analysis(out), open_analysis(analysis_nc[0]))
    chunk_files(out, "rate_map")[0].unlink()
    with pytest.raises(AnalysisError, match="'rate_map'.*missing"):
        open_analysis(out)


@pytest.mark.parametrize("edit,needle", [
    (lambda ds: ds.drop_vars("gridness_60"), "gridness_60"),
    (lambda ds: ds.assign_attrs(hippo_rep_kind="recording"), "not a hippo_rep analysis"),
    (lambda ds: ds.assign(is_grid=ds.is_grid.transpose()), "is_grid"),
])
def test_analysis_missing_parts_are_named(analysis_nc, tmp_path, edit, needle):
    _, ds = analysis_nc
    write_analysis(edit(ds), tmp_path / "bad.nc")
    with pytest.raises(AnalysisError, match=needle):
        open_analysis(tmp_path / "bad.nc")


@pytest.mark.parametrize("content", [b"", b"\x89HDF\r\n\x1a\n", os.urandom(4096)])
def test_figures_on_a_damaged_analysis_is_one_line(analysis_nc, tmp_path, capsys, content):
    bad = tmp_path / "bad.nc"
    data = analysis_nc[0].read_bytes()
    bad.write_bytes(content or data[: len(data) // 2])
    rc, err = run(capsys, "figures", bad, "--out", tmp_path / "figs")
    assert rc == 2 and "bad.nc" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "figs").exists() or not any((tmp_path / "figs").iterdir())


def test_figures_on_a_recording_given_as_analysis(tmp_path, capsys):
    rec = synthetic_recording("square:4", n_env=1, n_steps=50)
    R.write_netcdf(rec, tmp_path / "rec.nc")
    rc, err = run(capsys, "figures", tmp_path / "rec.nc", "--out", tmp_path / "figs")
    assert rc == 2 and "not a hippo_rep analysis" in err


def test_atomic_write_gives_the_permissions_of_a_plain_write(tmp_path):
    import os
    import stat

    from hippo_rep.fileio import atomic_write

    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    atomic = tmp_path / "atomic.txt"
    atomic_write(atomic, lambda tmp: open(tmp, "w").write("x"))
    assert stat.S_IMODE(os.stat(atomic).st_mode) == stat.S_IMODE(os.stat(plain).st_mode)

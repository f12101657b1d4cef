"""``hippo-rep export-nwb``: a session .nc or a model recording to NWB, atomically, with
one-line errors naming the file."""

import numpy as np
import pytest

from hippo_rep import cli
from hippo_rep.analysis.nwb import read_nwb
from hippo_rep.analysis.sessions import write_session
from hippo_rep.analysis.synthetic_session import simulate_session

pytest.importorskip("pynwb")


@pytest.fixture(scope="module")
def session_path(tmp_path_factory):
    session = simulate_session(minutes=0.5, seed=2)[0]
    return write_session(session, tmp_path_factory.mktemp("s") / "session.nc"), session


@pytest.fixture(scope="module")
def rec_path(tmp_path_factory, tiny_rec):
    path = tmp_path_factory.mktemp("rec") / "rec.nc"
    tiny_rec.to_netcdf(path)
    return path


def run(capsys, *argv):
    rc = cli.main(["export-nwb", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc, err, *needles):
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hippo-rep export-nwb: error: ")
    for n in needles:
        assert n in lines[0], lines[0]


def test_a_session_round_trips(tmp_path, capsys, session_path):
    path, session = session_path
    out = tmp_path / "s.nwb"
    rc, printed, _ = run(capsys, path, "--out", out)
    assert rc == 0 and out.is_file() and "session of" in printed
    back = read_nwb(out)
    np.testing.assert_array_equal(back["spike_times"].values, session["spike_times"].values)
    np.testing.assert_allclose(back["x"].values, session["x"].values)
    assert [p.name for p in tmp_path.iterdir()] == ["s.nwb"]  # no temporary left
    one_line_error(*run(capsys, path, "--out", out)[::2], "exists", "--overwrite")
    assert run(capsys, path, "--out", out, "--overwrite")[0] == 0
    one_line_error(*run(capsys, path, "--out", tmp_path / "x.nwb", "--env", 1)[::2],
                   "env is for recordings", "session.nc")


def test_a_recording_environment(tmp_path, capsys, rec_path, tiny_rec):
    pynwb = pytest.importorskip("pynwb")
    out = tmp_path / "r.nwb"
    rc, printed, _ = run(capsys, rec_path, "--out", out, "--env", 1, "--step-duration", 0.5)
    assert rc == 0 and "environment 1" in printed
    with pynwb.NWBHDF5IO(str(out), "r") as io:
        f = io.read()
        pos = f.processing["behavior"]["Position"]["position"]
        assert pos.rate == 2.0
        np.testing.assert_allclose(pos.data[:, 0], tiny_rec["x"].isel(env=1).values)
    n_env = tiny_rec.sizes["env"]
    one_line_error(*run(capsys, rec_path, "--out", tmp_path / "e.nwb", "--env", n_env)[::2],
                   f"env {n_env} is out of range", "rec.nc")
    assert not (tmp_path / "e.nwb").exists()


def test_bad_inputs_give_one_line(tmp_path, capsys, session_path):
    path, _ = session_path
    one_line_error(*run(capsys, path, "--out", tmp_path / "s.nc")[::2], "must end in .nwb")
    one_line_error(*run(capsys, tmp_path / "none.nc", "--out", tmp_path / "a.nwb")[::2],
                   "not found", "none.nc")
    junk = tmp_path / "junk.nc"
    junk.write_text("not netcdf")
    one_line_error(*run(capsys, junk, "--out", tmp_path / "j.nwb")[::2], "junk.nc")
    one_line_error(*run(capsys, tmp_path / "a.nwb", "--out", tmp_path / "b.nwb")[::2],
                   "NWB file already")
    assert not any(p.suffix == ".nwb" for p in tmp_path.iterdir())

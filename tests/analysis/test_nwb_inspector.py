"""NWB exports validated by nwbinspector: no critical problems, no best-practice violations."""

import numpy as np
import pytest

from hippo_rep.analysis import read_nwb, simulate_session, write_nwb

pytest.importorskip("pynwb")
nwbinspector = pytest.importorskip("nwbinspector")

#: Importance levels an export must not reach (suggestions, e.g. "experimenter is missing",
#: are allowed: the toolkit cannot know them).
FORBIDDEN = ("CRITICAL", "BEST_PRACTICE_VIOLATION", "PYNWB_VALIDATION", "ERROR")


def _problems(path):
    messages = nwbinspector.inspect_nwbfile(nwbfile_path=path)
    return [f"{m.importance.name} {m.check_function_name}: {m.message}" for m in messages
            if m.importance.name in FORBIDDEN]


def test_simulated_session_passes_nwbinspector(tmp_path):
    session, _ = simulate_session(minutes=1, seed=0)
    path = write_nwb(session, tmp_path / "session.nwb")
    assert _problems(path) == []
    back = read_nwb(path)  # tracking at a starting time and rate, the subject and resolution
    np.testing.assert_allclose(back["time"].values, session["time"].values, rtol=0, atol=1e-9)
    for k in ("subject_id", "subject_species", "subject_sex", "subject_age",
              "spike_time_resolution_s"):
        assert back.attrs[k] == session.attrs[k]


def test_model_recording_passes_nwbinspector(tiny_rec, tmp_path):
    import pynwb

    from hippo_rep.export import write_recording_nwb

    path = write_recording_nwb(tiny_rec, tmp_path / "recording.nwb", env=1, step_duration=0.5)
    assert _problems(path) == []
    one = tiny_rec.isel(env=1)
    used = one["memory_time"].values >= 0
    with pynwb.NWBHDF5IO(str(path), "r") as io:
        f = io.read()
        model = f.processing["model"]
        np.testing.assert_array_equal(model["g"].data[:], one["g"].values)
        np.testing.assert_array_equal(model["memory_activity"].data[:],
                                      one["memory_activity"].values[:, used])
        np.testing.assert_array_equal(model["g"].get_timestamps(),
                                      np.arange(one.sizes["time"]) * 0.5)
        xy = f.processing["behavior"]["Position"]["position"].data[:]
        np.testing.assert_array_equal(xy, np.stack([one["x"].values, one["y"].values], 1))
    with pytest.raises(FileExistsError, match="exists"):
        write_recording_nwb(tiny_rec, path)
    with pytest.raises(IndexError, match="3 environments"):
        write_recording_nwb(tiny_rec, tmp_path / "r.nwb", env=3)


def test_the_check_can_fail(tmp_path):
    """A session without a subject or a spike-time resolution, and a hand-made position
    without a description, are reported: the check above is not vacuous."""
    from datetime import UTC, datetime

    import pynwb
    from pynwb.behavior import Position, SpatialSeries

    session, _ = simulate_session(minutes=1, seed=0)
    for k in ("subject_id", "subject_species", "subject_sex", "subject_age",
              "subject_description", "spike_time_resolution_s"):
        del session.attrs[k]
    bare = _problems(write_nwb(session, tmp_path / "bare.nwb"))
    assert any("check_subject_exists" in p for p in bare)
    assert any("check_units_resolution_is_set" in p for p in bare)
    rat = {"subject_id": "r1", "species": "Rattus norvegicus", "sex": "M", "age": "P90D"}
    given = write_nwb(session, tmp_path / "given.nwb", subject=rat,
                      spike_time_resolution_s=1 / 30000)
    assert _problems(given) == []  # what a recorded session passes to write_nwb
    assert read_nwb(given).attrs["subject_species"] == "Rattus norvegicus"
    with pytest.raises(Exception, match="subject field 'weight_kg'"):
        write_nwb(session, tmp_path / "w.nwb", subject={"weight_kg": 0.3})

    f = pynwb.NWBFile(session_description="test", identifier="x",
                      session_start_time=datetime(2020, 1, 1, tzinfo=UTC))
    t = np.arange(500) / 50.0
    f.add_acquisition(Position(spatial_series=SpatialSeries(
        name="pos", data=np.zeros((500, 2)), reference_frame="corner", timestamps=t,
        unit="furlongs")))
    path = tmp_path / "bad.nwb"
    with pynwb.NWBHDF5IO(str(path), "w") as io:
        io.write(f)
    bad = _problems(path)
    for check in ("check_regular_timestamps", "check_spatial_series_unit",
                  "check_subject_exists"):
        assert any(check in p for p in bad), (check, bad)

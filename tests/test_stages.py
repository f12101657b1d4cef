"""The stage runner: order, skipping complete stages, resuming training, stale outputs, errors.

Runs train a tiny TEM-t (or the sinusoidal baseline) on 5x5 worlds for 2 iterations,
evaluate it on 2 environments and record 2 walks of 30 steps, so that a run takes about a
second after the imports.
"""

import json
import subprocess
import sys

import pytest

from hippo_rep.config import load_config
from hippo_rep.pipeline import StageError, StageSettings, run_stages, train
from hippo_rep.recording import open_recording
from hippo_rep.training.checkpoint import file_sha256, read_checkpoint

SETS = ["world.worlds=square:5", "world.walk_steps=30", "train.iterations=2",
        "train.batch_size=2", "model.n_g=8", "model.d_key=8", "model.d_value=8",
        "model.hidden=16"]
SETTINGS = StageSettings(eval_envs=2, eval_steps=30, record_envs=2, record_steps=30,
                         calibrate=False)  # calibration: tests/test_sweep.py


def _config(kind="temt"):
    return load_config("tiny", [*SETS, f"model.kind={kind}"])


def test_unknown_stage_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(StageError, match=r"unknown stage\(s\) 'plot'; stages are train, "):
        run_stages(tmp_path / "run", _config(), ("train", "plot"))
    assert not (tmp_path / "run").exists()
    with pytest.raises(StageError, match="settings.eval_envs must be ≥ 1; got 0"):
        StageSettings(eval_envs=0)


def test_complete_stages_are_skipped_and_a_missing_one_is_redone(tmp_path):
    run, calls, todo = tmp_path / "run", [], ("train", "evaluate", "record")
    rep = run_stages(run, _config(), todo, SETTINGS,
                     before=lambda st, out: calls.append(("before", st, out.name)),
                     after=lambda st, out, res, s: calls.append(("after", st, s >= 0)))
    assert rep.ran == list(todo) and rep.skipped == [] and rep.resumed_from is None
    assert calls == [("before", "train", "checkpoint.pt"), ("after", "train", True),
                     ("before", "evaluate", "eval.json"), ("after", "evaluate", True),
                     ("before", "record", "recording.nc"), ("after", "record", True)]
    ev = json.loads((run / "eval.json").read_text())
    assert ev["meta"]["checkpoint_sha256"] == file_sha256(run / "checkpoint.pt")
    assert read_checkpoint(run / "checkpoint.pt")["step"] == 2
    assert list(rep.results) == list(todo) and rep.results["train"] == run / "checkpoint.pt"
    assert rep.results["evaluate"]["model"] == ev["model"]
    before = {p.name: p.stat().st_mtime_ns for p in run.iterdir()}

    calls.clear()
    rep = run_stages(run, _config(), todo, SETTINGS, before=lambda st, out: calls.append(st))
    assert rep.ran == [] and rep.skipped == list(todo) and calls == []
    assert {p.name: p.stat().st_mtime_ns for p in run.iterdir()} == before

    # the evaluation alone is redone: the recording does not read it
    (run / "eval.json").unlink()
    rep = run_stages(run, _config(), todo, SETTINGS)
    assert rep.ran == ["evaluate"] and rep.skipped == ["train", "record"]
    assert json.loads((run / "eval.json").read_text()) == ev  # same seed, same checkpoint
    for name in ("checkpoint.pt", "recording.nc"):
        assert (run / name).stat().st_mtime_ns == before[name]


def test_interrupted_training_resumes_and_later_outputs_are_redone(tmp_path):
    run, cfg = tmp_path / "run", _config()
    train(cfg, run, stop_at=1)  # killed after iteration 1 (a checkpoint at step 1)
    assert read_checkpoint(run / "checkpoint.pt")["step"] == 1
    stale = {"meta": {"checkpoint_sha256": file_sha256(run / "checkpoint.pt")}}
    (run / "eval.json").write_text(json.dumps(stale))  # made from the unfinished checkpoint
    (run / "recording.nc").write_text("stale")
    rep = run_stages(run, cfg, ("train", "evaluate", "record"), SETTINGS)
    assert rep.ran == ["train", "evaluate", "record"] and rep.resumed_from == 1
    with open_recording(run / "recording.nc") as ds:
        assert ds.attrs["checkpoint_sha256"] == file_sha256(run / "checkpoint.pt")
    assert read_checkpoint(run / "checkpoint.pt")["step"] == 2
    ev = json.loads((run / "eval.json").read_text())
    assert ev["meta"]["checkpoint_sha256"] == file_sha256(run / "checkpoint.pt")
    assert ev["meta"]["checkpoint_sha256"] != stale["meta"]["checkpoint_sha256"]


def test_calibration_is_for_temt_only_and_outputs_go_where_asked(tmp_path):
    run, elsewhere = tmp_path / "baseline", tmp_path / "eval_baseline.json"
    rep = run_stages(run, _config("sinusoidal"), ("train", "calibrate", "evaluate"), SETTINGS,
                     outputs={"evaluate": elsewhere})
    assert rep.ran == ["train", "evaluate"]  # the baseline has no write threshold
    assert rep.outputs == {"train": run / "checkpoint.pt", "evaluate": elsewhere}
    assert not (run / "calibrated.pt").exists() and not (run / "eval.json").exists()
    ev = json.loads(elsewhere.read_text())
    assert ev["meta"]["model_kind"] == "sinusoidal"
    assert ev["meta"]["checkpoint_sha256"] == file_sha256(run / "checkpoint.pt")


def test_the_package_root_offers_the_verbs_without_importing_torch():
    """Each verb of the main job is one call at the package root, the function the commands
    run; importing the root and looking them up imports no torch."""
    import hippo_rep
    from hippo_rep import config, pipeline, recording

    verbs = {"load_config": config.load_config, "train": pipeline.train,
             "record": recording.record_to_file, "analyse": pipeline.analyse,
             "build_figures": pipeline.build_figures, "run_stages": pipeline.run_stages,
             "run_demo": pipeline.run_demo}
    for name, function in verbs.items():
        verb = getattr(hippo_rep, name)  # the torch-needing verbs come wrapped (one-line
        # MissingTorchError without torch): functools.wraps keeps the function underneath
        assert getattr(verb, "__wrapped__", verb) is function, name
        assert name in dir(hippo_rep) and name in hippo_rep.__all__
    with pytest.raises(AttributeError, match="no attribute 'trian'"):
        hippo_rep.trian  # noqa: B018
    code = ("import sys, hippo_rep\n"
            f"fns = [getattr(hippo_rep, n) for n in {sorted(verbs)!r}]\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_analyse_takes_a_file_or_a_dataset_and_writes_only_when_asked(tmp_path):
    from hippo_rep.pipeline import analyse

    run = tmp_path / "run"
    run_stages(run, _config(), ("train", "record"), SETTINGS)
    from_file = analyse(run / "recording.nc", shuffles=2, decode=False)
    with open_recording(run / "recording.nc") as ds:
        from_data = analyse(ds.load(), tmp_path / "a.nc", shuffles=2, decode=False)
    assert from_file.identical(from_data)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.nc", "run"]


def test_analyse_opens_a_recording_file_once(tmp_path, monkeypatch):
    """A netCDF recording is opened once (its kind attr read from that same handle) and
    analysed as the dataset it holds."""
    import xarray as xr

    from hippo_rep.analysis import synthetic_recording
    from hippo_rep.pipeline import analyse
    from hippo_rep.recording import write_netcdf

    rec = synthetic_recording("square:6", n_env=2, n_steps=200, n_grid=1, n_place=1,
                              n_random=1, n_memory=4, seed=1)
    path = write_netcdf(rec, tmp_path / "rec.nc")
    opens, open_dataset = [], xr.open_dataset

    def counted_open(p, *args, **kwargs):
        opens.append(str(p))
        return open_dataset(p, *args, **kwargs)

    monkeypatch.setattr(xr, "open_dataset", counted_open)
    from_file = analyse(path, shuffles=2, decode=False)
    assert opens == [str(path)]
    monkeypatch.undo()
    with open_recording(path) as ds:
        assert from_file.identical(analyse(ds.load(), shuffles=2, decode=False))

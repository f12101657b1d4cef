"""Sweeps: grid expansion, bad input, skip/resume, failing runs, open_sweep, local cluster, CLI.

Every sweep here is 2 activations × 2 seeds of the tiny preset on 6x6 worlds for 3
iterations, with a 2-environment × 60-step recording and 3 shuffles, so that a run takes about
a second after the imports.
"""

import dataclasses
import json
import shutil
import time
from datetime import datetime

import numpy as np
import pytest
import xarray as xr

import hippo_rep
from hippo_rep import cli, cluster
from hippo_rep import sweep as sweep_mod
from hippo_rep.analysis import open_analysis
from hippo_rep.analysis.summary import summarise_analysis
from hippo_rep.cluster import SCHEDULER_TIMEOUT_S
from hippo_rep.config import ConfigError
from hippo_rep.pipeline import (
    DEFAULT_DECODE,
    DEFAULT_REMAP_SHUFFLES,
    SweepSettings,
    run_sweep,
)
from hippo_rep.pipeline import stages as stages_mod
from hippo_rep.pipeline import sweep as sweep_execute
from hippo_rep.recording import open_recording
from hippo_rep.run_files import CALIBRATED_FILE
from hippo_rep.sweep import (
    MANIFEST,
    RUNS_DIR,
    SweepError,
    expand_grid,
    is_finished,
    open_sweep,
    parse_values,
    sweep_table,
)
from hippo_rep.training import trainer as trainer_mod
from hippo_rep.training.checkpoint import file_sha256, read_checkpoint

BASE = ["world.worlds=square:6", "world.walk_steps=40", "train.iterations=3",
        "train.batch_size=4", "model.n_g=8", "model.d_key=8", "model.d_value=8",
        "model.hidden=16"]
GRID = ["model.transition_activation=linear,relu"]
SEEDS = 2
#: CLI-compatible (remap_shuffles and decode are the defaults, which the CLI does not set).
SETTINGS = SweepSettings(eval_envs=4, record_envs=2, record_steps=60, shuffles=3,
                         remap_shuffles=DEFAULT_REMAP_SHUFFLES, decode=DEFAULT_DECODE,
                         eval_world="square:5", record_world="square:7")
CLI_SETTINGS = ["--eval-envs", "4", "--record-envs", "2", "--record-steps", "60",
                "--shuffles", "3", "--eval-world", "square:5", "--record-world", "square:7"]
NAMES = [f"transition_activation={a}__seed={s}" for a in ("linear", "relu") for s in (0, 1)]


def _sweep(out, grid=GRID, seeds=SEEDS, settings=SETTINGS, **kw):
    return run_sweep("tiny", grid, seeds, out, overrides=BASE, settings=settings,
                     progress=False, **kw)


def _table(out) -> xr.Dataset:
    """open_sweep without the folder-dependent attrs."""
    return open_sweep(out).drop_attrs()


@pytest.fixture(scope="module")
def seq(tmp_path_factory):
    """The reference: the 4-run sweep run one by one in this process."""
    out = tmp_path_factory.mktemp("seq") / "sweep"
    return out, _sweep(out)


def test_grid_values_are_read_like_set_values():
    assert parse_values("linear,relu") == ["linear", "relu"]
    assert parse_values("1e-3,3e-4") == [1e-3, 3e-4]
    assert parse_values("true,false") == [True, False]
    assert parse_values("square:6,square:8") == ["square:6", "square:8"]
    assert parse_values('"square:8:holes=3,4;4,4","square:6"') == ["square:8:holes=3,4;4,4",
                                                                   "square:6"]
    assert parse_values('["square:6","square:8"],["square:9"]') == [["square:6", "square:8"],
                                                                    ["square:9"]]


def test_grid_expansion_names_configs_and_order():
    runs = expand_grid("tiny", ["model.transition_activation=linear,relu",
                                "world.worlds=square:6,square:8", "train.lr=1e-3,3e-3"], 3,
                       overrides=["train.iterations=2"])
    assert len(runs) == 2 * 2 * 2 * 3
    assert len({r.name for r in runs}) == len(runs)
    first, last = runs[0], runs[-1]
    assert first.name == "transition_activation=linear__worlds=square-6__lr=0.001__seed=0"
    assert last.name == "transition_activation=relu__worlds=square-8__lr=0.003__seed=2"
    assert last.labels == {"transition_activation": "relu", "worlds": "square:8", "lr": 0.003}
    assert [r.seed for r in runs[:4]] == [0, 1, 2, 0]  # seeds innermost
    cfg = last.config
    assert (cfg.model.transition_activation, cfg.world.worlds, cfg.train.lr, cfg.train.seed,
            cfg.train.iterations) == ("relu", ("square:8",), 0.003, 2, 2)
    assert [r.name for r in expand_grid("tiny", [], 2)] == ["seed=0", "seed=1"]


def test_settings_refuse_an_impossible_world():
    with pytest.raises(SweepError, match="settings.record_world"):
        SweepSettings(record_world="square:0")


@pytest.mark.parametrize("field, value, match", [
    ("record_steps", 10**9, r"settings\.record_steps must be ≤ MAX_WALK_STEPS"),
    ("eval_steps", 10**9, r"settings\.eval_steps must be ≤ MAX_WALK_STEPS"),
    ("record_envs", 5000, r"settings\.record_envs must be ≤ MAX_BATCH"),
    ("eval_envs", 0, r"settings\.eval_envs must be ≥ 1"),
])
def test_settings_refuse_walk_sizes_before_any_run_trains(field, value, match):
    with pytest.raises(SweepError, match=match):
        SweepSettings(**{field: value})
    assert getattr(SweepSettings(**{field: 2}), field) == 2


def test_bad_grids_are_refused_with_the_valid_keys():
    with pytest.raises(ConfigError, match=r"unknown grid key 'model\.activation'; valid keys:"
                                          r" .*model\.transition_activation"):
        expand_grid("tiny", ["model.activation=relu"])
    with pytest.raises(ConfigError, match="--seeds"):
        expand_grid("tiny", ["train.seed=0,1"])
    with pytest.raises(ConfigError, match="must be one of"):
        expand_grid("tiny", ["model.transition_activation=linear,sigmoid"])
    with pytest.raises(ConfigError, match="given twice"):
        expand_grid("tiny", ["train.lr=1e-3,0.001"])
    with pytest.raises(ConfigError, match="not section.key"):
        expand_grid("tiny", ["model.transition_activation"])
    with pytest.raises(SweepError, match="seeds"):
        expand_grid("tiny", GRID, 0)


@pytest.mark.slow
def test_sweep_writes_every_run_and_open_sweep_labels_them(seq):
    out, rep = seq
    assert rep.runs == NAMES and rep.done == NAMES and not rep.failed and not rep.skipped
    man = json.loads((out / MANIFEST).read_text())
    assert man["grid"] == {"model.transition_activation": ["linear", "relu"]}
    assert man["seeds"] == [0, 1] and man["base_config"]["world"]["worlds"] == ["square:6"]
    for name in NAMES:
        assert is_finished(out / RUNS_DIR / name)
    ds = hippo_rep.open_sweep(out)
    assert ds["accuracy"].dims == ("transition_activation", "seed", "agent", "step_type")
    assert list(ds["transition_activation"].values) == ["linear", "relu"]
    assert list(ds["seed"].values) == [0, 1]
    assert (ds["status"] == "done").all()
    run = out / RUNS_DIR / "transition_activation=relu__seed=1"
    ev = json.loads((run / "eval.json").read_text())
    one = ds.sel(transition_activation="relu", seed=1)
    for agent in ("model", "node_agent", "edge_agent"):
        for st in ("revisit", "revisit_new_edge", "revisit_unseen_edge", "first_visit"):
            assert float(one["accuracy"].sel(agent=agent, step_type=st)) == ev[agent][st]
    assert float(one["accuracy"].sel(agent="node_agent", step_type="revisit")) == 1.0
    # evaluated and recorded on the settings' worlds, not the training world
    assert ev["meta"]["world"] == "square:5x5"
    assert float(one["memories_per_node"]) == ev["memory"]["memories_per_node"] > 0
    assert float(one["loop_cosine"]) == ev["transitions"]["loop_returns"]["loop_cosine"]
    with open_recording(run / "recording.nc") as rec:
        assert rec.attrs["world"] == "square:7x7"
        # TEM-t is evaluated and recorded with its calibrated write threshold
        assert rec.attrs["checkpoint_sha256"] == file_sha256(run / CALIBRATED_FILE)
    cal = read_checkpoint(run / CALIBRATED_FILE)["extra"]["calibration"]
    assert ev["transitions"]["loop_returns"]["write_threshold"] == cal["threshold"]
    assert cal["source_sha256"] == file_sha256(run / "checkpoint.pt")
    ana = open_analysis(run / "analysis.nc")
    g = ana.isel(unit=ana["variable"].values == "g")
    assert float(one["grid_fraction"]) == float(g["is_grid"].mean())  # every g unit scored
    summary = summarise_analysis(ana)
    for k, v in summary.items():
        np.testing.assert_equal(float(one[k]), v)
    assert 0 <= summary["place_fraction"] <= 1 and np.isfinite(summary["gridness_median"])
    assert np.isfinite(summary["remap_corr_g"]) and np.isfinite(summary["pv_corr_memory"])
    assert json.loads(ds.attrs["manifest"])["runs"][0]["name"] == NAMES[0]
    assert str(one["run"].values) == run.name
    # a row per run, in grid order, with the values of the dataset
    table = sweep_table(ds, ["revisit", "first_visit"])
    assert list(table.index) == NAMES and (table["status"] == "done").all()
    assert list(table.columns) == ["status", "revisit", "first_visit", "grid_fraction",
                                   "place_fraction"]
    assert table.loc[run.name, "first_visit"] == ev["model"]["first_visit"]
    assert table.loc[run.name, "grid_fraction"] == float(one["grid_fraction"])


def test_a_manifest_from_before_calibration_reads_as_uncalibrated(tmp_path):
    settings = dataclasses.asdict(SETTINGS)
    del settings["calibrate"]
    (tmp_path / MANIFEST).write_text(json.dumps({"format": sweep_mod.FORMAT,
                                                 "format_version": 1, "settings": settings}))
    assert sweep_mod.read_manifest(tmp_path)["settings"]["calibrate"] is False
    assert SweepSettings().calibrate is True  # what new sweeps do


@pytest.mark.slow
def test_without_calibration_the_trained_checkpoint_is_evaluated(tmp_path):
    out = tmp_path / "sweep"
    rep = _sweep(out, grid=[], seeds=1, settings=dataclasses.replace(SETTINGS, calibrate=False))
    run = out / RUNS_DIR / rep.done[0]
    assert not (run / CALIBRATED_FILE).exists()
    ev = json.loads((run / "eval.json").read_text())
    assert ev["meta"]["checkpoint_sha256"] == file_sha256(run / "checkpoint.pt")
    assert ev["transitions"]["loop_returns"]["write_threshold"] == 0.98


@pytest.mark.slow
def test_rerun_skips_finished_runs(seq):
    out, _ = seq
    before = {n: (out / RUNS_DIR / n / "checkpoint.pt").stat().st_mtime_ns for n in NAMES}
    rep = _sweep(out)
    assert rep.ran == [] and rep.skipped == NAMES
    after = {n: (out / RUNS_DIR / n / "checkpoint.pt").stat().st_mtime_ns for n in NAMES}
    assert after == before


@pytest.mark.slow
def test_killed_sweep_reruns_only_unfinished_runs_and_resumes_from_checkpoint(
        seq, tmp_path, monkeypatch):
    # A sweep killed mid-way on a cluster: runs 0 and 2 finished, run 1 killed during its
    # 2nd iteration (Ctrl-C: the trainer saves a checkpoint), run 3 never started.
    out = tmp_path / "sweep"
    shutil.copytree(seq[0], out)
    for name in NAMES[1::2]:
        shutil.rmtree(out / RUNS_DIR / name)
    step = trainer_mod.Trainer.step

    def killed(self, iteration):
        if iteration == 1:
            raise KeyboardInterrupt
        return step(self, iteration)

    monkeypatch.setattr(trainer_mod.Trainer, "step", killed)
    with pytest.raises(KeyboardInterrupt):
        _sweep(out)
    monkeypatch.setattr(trainer_mod.Trainer, "step", step)
    killed_run = out / RUNS_DIR / NAMES[1]
    assert not is_finished(killed_run)
    assert read_checkpoint(killed_run / "checkpoint.pt")["step"] == 1
    assert not (out / RUNS_DIR / NAMES[3]).exists()
    assert _table(out)["status"].values.ravel().tolist() == ["done", "unfinished", "done",
                                                             "not started"]

    rep = _sweep(out)
    assert rep.skipped == NAMES[::2] and rep.ran == NAMES[1::2]  # only the 2 unfinished
    assert rep.resumed == {NAMES[1]: 1}
    # resuming gives exactly the uninterrupted results
    xr.testing.assert_identical(_table(out), _table(seq[0]))

    # a finished run missing a stage's file redoes that stage only
    first = out / RUNS_DIR / NAMES[0]
    (first / "analysis.nc").unlink()
    ckpt = (first / "checkpoint.pt").read_bytes()
    rep = _sweep(out)
    assert rep.ran == NAMES[:1] and rep.resumed == {}
    assert (first / "checkpoint.pt").read_bytes() == ckpt
    xr.testing.assert_identical(_table(out), _table(seq[0]))


@pytest.mark.slow
def test_a_failing_run_is_reported_and_does_not_stop_the_others(tmp_path, monkeypatch):
    out = tmp_path / "sweep"
    # the 4x4 run trains, evaluates and records; its analysis is made to fail (4x4 worlds
    # themselves analyse fine: scores too small for them are NaN with a reason)
    real = stages_mod.analyse_dataset  # the analysis a run's analyse stage calls

    def analyse(recording, *args, **kwargs):
        if recording.sizes["world_node"] == 16:
            raise ValueError("planted failure: analysis of a 4x4 world")
        return real(recording, *args, **kwargs)

    monkeypatch.setattr(stages_mod, "analyse_dataset", analyse)
    own_worlds = dataclasses.replace(SETTINGS, eval_world=None, record_world=None)
    rep = _sweep(out, grid=["world.worlds=square:6,square:4"], seeds=1, settings=own_worlds)
    bad, good = "worlds=square-4__seed=0", "worlds=square-6__seed=0"
    assert rep.done == [good] and list(rep.failed) == [bad]
    assert "planted failure" in rep.failed[bad]
    assert "Traceback" in (out / RUNS_DIR / bad / "error.txt").read_text()
    ds = open_sweep(out)
    assert ds["status"].sel(worlds="square:4", seed=0) == "failed"
    assert np.isnan(ds["accuracy"].sel(worlds="square:4")).all()
    assert np.isnan(ds["grid_fraction"].sel(worlds="square:4")).all()
    assert np.isfinite(ds["accuracy"].sel(worlds="square:6", agent="model",
                                          step_type="revisit")).all()
    rep = _sweep(out, grid=["world.worlds=square:6,square:4"], seeds=1, settings=own_worlds)
    assert rep.skipped == [good] and rep.ran == [bad]  # failed runs are retried


@pytest.mark.slow
def test_a_folder_of_another_sweep_is_refused_unless_overwrite(seq, tmp_path, monkeypatch):
    out, _ = seq
    manifest = (out / MANIFEST).read_bytes()
    with pytest.raises(SweepError, match=r"holds another sweep \(grid: .*--overwrite"):
        _sweep(out, grid=["model.transition_activation=relu,tanh"])
    with pytest.raises(SweepError, match=r"train\.lr: 0\.003 → 0\.01"):
        run_sweep("tiny", GRID, SEEDS, out, overrides=[*BASE, "train.lr=1e-2"],
                  settings=SETTINGS, progress=False)
    assert (out / MANIFEST).read_bytes() == manifest
    loose = tmp_path / "loose"
    (loose / RUNS_DIR / "something").mkdir(parents=True)
    with pytest.raises(SweepError, match="no sweep.json"):
        _sweep(loose)
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)

    def refuse(run_dir, cfg, *args, **kwargs):  # no need to train: the folder is tested
        raise RuntimeError("not run in this test")

    monkeypatch.setattr(sweep_execute, "run_stages", refuse)
    rep = _sweep(copy, grid=["model.transition_activation=tanh"], seeds=1, overwrite=True)
    assert rep.failed == {"transition_activation=tanh__seed=0": "RuntimeError: not run in "
                                                                "this test"}
    assert [p.name for p in (copy / RUNS_DIR).iterdir()] == list(rep.failed)
    assert json.loads((copy / MANIFEST).read_text())["grid"] == {
        "model.transition_activation": ["tanh"]}


@pytest.mark.slow
def test_two_worker_local_cluster_equals_sequential(seq, tmp_path):
    import dask

    out = tmp_path / "sweep"
    # Forked workers inherit this process' imports (torch, xarray, scipy): spawned ones
    # (the default) spend ~20 s importing them on 2 busy cores. The tasks are the same.
    with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}):
        rep = _sweep(out, workers=2)
    assert sorted(rep.done) == NAMES and not rep.failed
    xr.testing.assert_identical(_table(out), _table(seq[0]))
    spans = {}  # one run at a time per worker (1 thread each)
    for name in NAMES:
        done = json.loads((out / RUNS_DIR / name / "done.json").read_text())
        spans.setdefault(done["pid"], []).append(
            (datetime.fromisoformat(done["started"]), datetime.fromisoformat(done["finished"])))
    assert 1 <= len(spans) <= 2
    for runs in spans.values():
        runs.sort()
        assert all(a[1] <= b[0] for a, b in zip(runs, runs[1:], strict=False))


def test_unreachable_scheduler_fails_fast_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster, "SCHEDULER_TIMEOUT_S", 1)  # the default is 5 s
    address = "tcp://127.0.0.1:1"
    t0 = time.perf_counter()
    with pytest.raises(SweepError, match=rf"{address}.* within 1 s"):
        _sweep(tmp_path / "sweep", scheduler=address)
    assert time.perf_counter() - t0 < 1 + 10
    assert SCHEDULER_TIMEOUT_S <= 10
    assert not (tmp_path / "sweep").exists()


@pytest.mark.slow
def test_cli_sweep_resumes_and_figures_draw_it(seq, tmp_path, capsys):
    out, _ = seq
    args = ["sweep", "tiny", "--grid", GRID[0], "--seeds", str(SEEDS), "--out", str(out),
            *[a for s in BASE for a in ("--set", s)], *CLI_SETTINGS, "--no-progress"]
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    assert "0 finished now, 4 already finished, 0 failed" in printed
    assert NAMES[3] in printed
    assert cli.main(["sweep", "tiny", "--grid", "model.nope=1", "--out", str(out)]) == 2
    assert "valid keys" in capsys.readouterr().err
    figs = tmp_path / "figs"
    assert cli.main(["figures", "--sweep", str(out), "--only", "sweep", "--out", str(figs),
                     "--format", "png"]) == 0
    assert (figs / "sweep.png").stat().st_size > 1000


@pytest.mark.slow
def test_plot_sweep_draws_each_seed_as_a_point(seq):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hippo_rep.plotting.sweep import plot_sweep, sweep_frame

    ds = open_sweep(seq[0])
    df = sweep_frame(ds, "accuracy", {"step_type": "revisit"})
    assert list(df.columns) == ["transition_activation", "seed", "accuracy"] and len(df) == 4
    fig, ax = plt.subplots()
    assert plot_sweep(ds, "grid_fraction", ax=ax) is ax
    points = sum(len(c.get_offsets()) for c in ax.collections)
    assert points == 4
    # the jitter is seeded: the same sweep, the same points; numpy's global stream untouched
    from matplotlib.figure import Figure

    state = np.random.get_state()  # noqa: NPY002 (the global stream the plot must not move)
    offsets = []
    for _ in range(2):
        other = Figure().subplots()
        plot_sweep(ds, "grid_fraction", ax=other)
        offsets.append(np.concatenate([c.get_offsets() for c in other.collections]))
    np.testing.assert_array_equal(offsets[0], offsets[1])
    after = np.random.get_state()  # noqa: NPY002
    # the whole state: the key array changes only every 624 draws, the position at each
    assert after[0] == state[0] and np.array_equal(after[1], state[1])
    assert after[2:] == state[2:]
    with pytest.raises(ValueError, match="no variable"):
        plot_sweep(ds, "nope", ax=ax)
    plt.close(fig)

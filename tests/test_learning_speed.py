"""The learning-speed figure (TEM-t paper Fig. 4) and its JSON (bench_tem_vs_temt.py)."""

import importlib.util
import json
from pathlib import Path

import matplotlib
import numpy as np
import pytest

from hippo_rep import cli
from hippo_rep.figures import FigureError, FigureInputs, build_figures, read_learning_speed
from hippo_rep.plotting.learning import LEARNING_SPEED_KIND, learning_speed

matplotlib.use("Agg")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_tem_vs_temt.py"


def fake_speed() -> dict:
    """TEM-t reaching 0.5 at 40 updates (20 s) and 0.9 at 160 (80 s); TEM 0.3 at most."""
    temt = [{"updates": u, "seconds": u / 2, "zero_shot": z}
            for u, z in ((0, 0.02), (10, 0.2), (40, 0.55), (160, 0.92), (320, 0.97))]
    tem = [{"updates": u, "seconds": 20.0 * u, "zero_shot": z}
           for u, z in ((0, 0.02), (1, None), (8, 0.1), (30, 0.3))]
    return {"kind": LEARNING_SPEED_KIND, "runs": {"temt": temt, "tem": tem},
            "node_agent": 1.0, "worlds": ["square:8"], "batch_size": 16, "eval_envs": 16}


def test_learning_speed_panel_draws_the_data():
    import matplotlib.pyplot as plt

    data = fake_speed()
    for x in ("updates", "seconds"):
        fig, ax = plt.subplots()
        assert learning_speed(data, x, ax=ax) is ax
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        temt, tem = lines["TEM-t"], lines["TEM"]
        np.testing.assert_allclose(temt.get_ydata(), [0.02, 0.2, 0.55, 0.92, 0.97])
        np.testing.assert_allclose(tem.get_ydata(), [0.02, np.nan, 0.1, 0.3])
        want = np.array([r[x] for r in data["runs"]["temt"]], float)
        # update / second 0 drawn at half the smallest positive value of either model
        want[0] = {"updates": 0.5, "seconds": 2.5}[x]  # TEM's 1 update, TEM-t's 5 s
        np.testing.assert_allclose(temt.get_xdata(), want)
        assert tem.get_xdata()[0] == want[0]
        assert ax.get_xscale() == "log"
        ceiling = [ln for ln in ax.get_lines() if ln.get_label() == "node agent (limit)"]
        assert len(ceiling) == 1 and np.allclose(ceiling[0].get_ydata(), 1.0)
        plt.close(fig)
    with pytest.raises(ValueError, match="x must be one of"):
        learning_speed(data, "steps")


@pytest.mark.parametrize("with_steps", [True, False])
def test_learning_speed_figure_adds_samples_when_rows_have_them(with_steps):
    """A model updated per 20-step chunk makes 10 updates per 200-step walk: against steps
    walked its curve sits 10x left of where it sits against updates."""
    import matplotlib.pyplot as plt

    from hippo_rep.figures import learning_speed_figure

    data = fake_speed()
    for kind, per_walk in (("temt", 1), ("tem", 10)):
        for r in data["runs"][kind]:
            r["walk_steps"] = 200 * r["updates"] // per_walk
    if not with_steps:
        del data["runs"]["tem"][1]["walk_steps"]
    fig = learning_speed_figure(FigureInputs(learning_speed=data))
    axes = [ax for ax in fig.axes if ax.get_lines()]
    assert len(axes) == (3 if with_steps else 2)
    if with_steps:
        tem = {ln.get_label(): ln for ln in axes[2].get_lines()}["TEM"]
        np.testing.assert_allclose(tem.get_xdata()[1:], [20, 160, 600])
        assert axes[2].get_xlabel().startswith("steps walked")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]  # one, for every panel
    assert "TEM" in legend and "TEM-t" in legend and all(ax.get_legend() is None for ax in axes)
    plt.close(fig)


def test_learning_speed_figure_is_built_or_skipped(tmp_path):
    report = build_figures(FigureInputs(), tmp_path, only=["learning_speed"])
    assert report["learning_speed"].startswith("skipped:") and \
        "--learning-speed" in report["learning_speed"]
    report = build_figures(FigureInputs(learning_speed=fake_speed()), tmp_path,
                           only=["learning_speed"], formats=["png", "svg"])
    assert [p.suffix for p in report["learning_speed"]] == [".png", ".svg"]
    assert all(p.stat().st_size > 1000 for p in report["learning_speed"])


def test_read_learning_speed_names_file_and_field(tmp_path):
    path = tmp_path / "speed.json"
    path.write_text(json.dumps(fake_speed()))
    assert read_learning_speed(path)["runs"]["temt"][2]["zero_shot"] == 0.55
    bad = fake_speed() | {"kind": "evaluation"}
    path.write_text(json.dumps(bad))
    with pytest.raises(FigureError, match="speed.json.*not a learning-speed JSON"):
        read_learning_speed(path)
    bad = fake_speed()
    del bad["runs"]["tem"][1]["seconds"]
    path.write_text(json.dumps(bad))
    with pytest.raises(FigureError, match="speed.json.*runs.tem is not a list of evaluations"):
        read_learning_speed(path)
    path.write_text(json.dumps(fake_speed() | {"node_agent": "1"}))
    with pytest.raises(FigureError, match="'node_agent' is not a number"):
        read_learning_speed(path)


def test_cli_figures_reads_the_learning_speed_json(tmp_path, capsys):
    path = tmp_path / "speed.json"
    path.write_text(json.dumps(fake_speed()))
    rc = cli.main(["figures", "--learning-speed", str(path), "--only", "learning_speed",
                   "--out", str(tmp_path / "figs"), "--format", "png"])
    assert rc == 0 and (tmp_path / "figs" / "learning_speed.png").is_file()
    assert "learning_speed:" in capsys.readouterr().out


def test_bench_thresholds_and_ratios():
    spec = importlib.util.spec_from_file_location("bench_tem_vs_temt", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    data = fake_speed()
    temt, tem = data["runs"]["temt"], data["runs"]["tem"]
    assert bench.first_reaching(temt, 0.5) == {"updates": 40, "seconds": 20.0}
    assert bench.first_reaching(temt, 0.9) == {"updates": 160, "seconds": 80.0}
    assert bench.first_reaching(tem, 0.5) is None  # None entries are skipped, not compared
    hit = bench.first_reaching(temt, 0.5)
    # TEM never reached 0.5: the ratio is a lower bound, TEM's spend over TEM-t's need
    assert bench._ratio(None, hit, tem, "updates") == ">0.8"  # 30 / 40
    assert bench._ratio(None, hit, tem, "seconds") == ">30.0"  # 600 s / 20 s
    assert bench._ratio({"updates": 80, "seconds": 1600.0}, hit, tem, "updates") == "2.0"
    assert bench._ratio(hit, None, tem, "updates") == "n/a"
    assert bench._cell(None, tem, "updates") == ">30"


@pytest.mark.parametrize("complete, partial", [(True, False), (False, True), (None, False)])
def test_learning_speed_figure_says_when_the_run_is_partial(complete, partial):
    import matplotlib.pyplot as plt

    from hippo_rep.figures import learning_speed_figure

    data = fake_speed() | {"tem_schedule": "torch_tem"}
    if complete is not None:  # older JSONs have no "complete": they were written at the end
        data["complete"] = complete
    fig = learning_speed_figure(FigureInputs(learning_speed=data))
    title = fig._suptitle.get_text()
    assert "TEM schedule torch_tem" in title
    assert ("partial" in title) == partial
    assert "resumed" not in title
    plt.close(fig)


@pytest.mark.parametrize("resumed, says", [
    ({"tem": [1009]}, "resumed from a checkpoint: TEM at update 1009"),
    ({"tem": [1009, 1500], "temt": [300]},
     "resumed from a checkpoint: TEM at updates 1009, 1500; TEM-t at update 300"),
    ({"tem": []}, None)])
def test_learning_speed_figure_says_where_a_run_was_resumed(resumed, says):
    import matplotlib.pyplot as plt

    from hippo_rep.figures import learning_speed_figure

    fig = learning_speed_figure(FigureInputs(learning_speed=fake_speed() |
                                             {"resumed_at": resumed}))
    title = fig._suptitle.get_text()
    assert (says in title) if says else ("resumed" not in title)
    plt.close(fig)


def _bench():
    spec = importlib.util.spec_from_file_location("bench_tem_vs_temt", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


#: A TEM small enough to make a few updates in a fraction of a second.
TINY_TEM = ["world.worlds=[\"square:3\"]", "world.n_obs=6", "world.walk_steps=8",
            "train.chunk_len=4", "train.batch_size=2", "train.threads=1",
            "model.tem.n_g=[4,4]", "model.tem.n_g_sub=[2,2]", "model.tem.n_x_c=4",
            "model.tem.freqs=[0.9,0.2]", "model.tem.iters_gen=[2,1]",
            "model.tem.iters_inf=[2,2]", "model.tem.transition_hidden=4"]


@pytest.mark.parametrize("kind, per_walk", [("temt", 1), ("tem", 10)])
def test_kept_rows_get_the_steps_walked(kind, per_walk):
    """Rows from before the bench recorded walk_steps get them from the model's regime: TEM-t
    one update per 200-step walk, TEM (the preset) one per 20-step chunk; rows that have
    them keep theirs."""
    bench = _bench()
    rows = [{"updates": 0}, {"updates": 40}, {"updates": 80, "walk_steps": 7}]
    got = bench.with_walk_steps(rows, bench.bench_config(kind, []))
    assert [r["walk_steps"] for r in got] == [0, 40 * 200 // per_walk, 7]
    assert "walk_steps" not in rows[0]  # the caller's rows are not changed


@pytest.mark.parametrize("per_chunk", [False, True])
def test_learning_run_resumes_where_its_checkpoint_stopped(tmp_path, per_chunk):
    """A run continued from its kept checkpoint makes the same updates, on the same batches,
    as one run straight through (the checkpoint stores the updates done, not one fewer);
    with an update per chunk, updates count chunks (2 per 8-step walk here)."""
    import torch

    from hippo_rep.training.checkpoint import load_checkpoint
    from hippo_rep.training.trainer import Trainer

    bench = _bench()
    sets = [*TINY_TEM, f"train.step_every_chunk={str(per_chunk).lower()}"]
    first = bench.learning_run("tem", 0.3, sets, 2, 1, keep_dir=tmp_path)
    # a budget past what the first run spent, however long its first update took (not 0.8 s:
    # one slow first update could already exceed that, leaving nothing to continue)
    budget = first[-1]["seconds"] + 0.5
    more = bench.learning_run("tem", budget, sets, 2, 1, keep_dir=tmp_path, previous=first)
    assert more[:len(first)] == first and len(more) > len(first)
    assert more[-1]["updates"] > first[-1]["updates"] and more[-1]["seconds"] >= budget
    done = more[-1]["walk_steps"] // 8
    assert more[-1]["updates"] == done * (2 if per_chunk else 1)
    straight = Trainer(bench.bench_config("tem", sets), tmp_path / "straight", progress=False)
    for it in range(done):
        straight.step(it)
    model, _, payload = load_checkpoint(tmp_path / "tem" / "checkpoint.pt")
    assert payload["step"] == done
    kept = model.state_dict()
    for name, w in straight.model.state_dict().items():
        torch.testing.assert_close(kept[name], w, rtol=0, atol=0, msg=name)
    with pytest.raises(SystemExit, match="no evaluation at update"):
        bench.learning_run("tem", 1.0, sets, 2, 1, keep_dir=tmp_path, previous=first)


def test_merge_adds_a_second_tem_run_beside_the_same_temt(tmp_path):
    bench = _bench()
    base = fake_speed() | {"overrides": {"tem": ["a"], "temt": ["a"]}}
    extra = fake_speed() | {"overrides": {"tem": ["a", "train.step_every_chunk=true"]},
                            "resumed_at": {"tem": [8]}}
    extra["runs"] = {"temt": base["runs"]["temt"],
                     "tem": [{"updates": 0, "seconds": 0.0, "zero_shot": 0.02},
                             {"updates": 400, "seconds": 300.0, "zero_shot": 0.6}]}
    paths = [tmp_path / "base.json", tmp_path / "extra.json"]
    for path, data in zip(paths, (base, extra), strict=True):
        path.write_text(json.dumps(data))
    out = bench.merge(str(paths[0]), str(paths[1]), "tem_per_chunk", str(tmp_path / "m.json"))
    assert list(out["runs"]) == ["temt", "tem", "tem_per_chunk"]
    assert out["runs"]["tem"] == base["runs"]["tem"]
    assert out["reached"]["0.5"] == {"temt": {"updates": 40, "seconds": 20.0}, "tem": None,
                                     "tem_per_chunk": {"updates": 400, "seconds": 300.0}}
    assert out["overrides"]["tem_per_chunk"][-1] == "train.step_every_chunk=true"
    assert out["resumed_at"] == {"tem_per_chunk": [8]}
    assert read_learning_speed(tmp_path / "m.json")["runs"] == out["runs"]
    import matplotlib.pyplot as plt

    from hippo_rep.figures import learning_speed_figure

    fig = learning_speed_figure(FigureInputs(learning_speed=out))
    labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
    assert {"TEM-t", "TEM", "TEM, update per chunk, loss at every step"} <= set(labels)
    assert "resumed from a checkpoint: TEM, update per chunk, loss at every step at update 8" \
        in fig._suptitle.get_text()
    plt.close(fig)
    # a TEM-t run beside the same TEM: extra's TEM rows may be a prefix of base's (base
    # trained on after extra was started from a copy of it)
    twin = fake_speed() | {"overrides": {"temt": ["a", "train.step_every_chunk=true"]}}
    twin["runs"] = {"tem": base["runs"]["tem"][:2],
                    "temt": [{"updates": 0, "seconds": 0.0, "zero_shot": 0.02},
                             {"updates": 100, "seconds": 9.0, "zero_shot": 0.7}]}
    paths[1].write_text(json.dumps(twin))
    out = bench.merge(str(paths[0]), str(paths[1]), "temt_per_chunk", str(tmp_path / "m.json"),
                      model="temt")
    assert out["runs"]["temt_per_chunk"] == twin["runs"]["temt"]
    assert out["reached"]["0.5"]["temt_per_chunk"] == {"updates": 100, "seconds": 9.0}
    assert out["overrides"]["temt_per_chunk"][-1] == "train.step_every_chunk=true"
    twin["runs"]["tem"] = [dict(r, zero_shot=0.5) for r in twin["runs"]["tem"]]
    paths[1].write_text(json.dumps(twin))
    with pytest.raises(SystemExit, match="different tem runs"):
        bench.merge(str(paths[0]), str(paths[1]), "x", str(tmp_path / "m.json"), model="temt")
    extra["runs"]["temt"] = [dict(r, seconds=r["seconds"] + 1) for r in extra["runs"]["temt"]]
    paths[1].write_text(json.dumps(extra))
    with pytest.raises(SystemExit, match="different temt runs"):
        bench.merge(str(paths[0]), str(paths[1]), "tem_per_chunk", str(tmp_path / "m.json"))
    paths[1].write_text(json.dumps(fake_speed() | {"worlds": ["square:5"]}))
    with pytest.raises(SystemExit, match="worlds differs"):
        bench.merge(str(paths[0]), str(paths[1]), "tem_per_chunk", str(tmp_path / "m.json"))


def test_resume_reads_overrides_recorded_under_the_old_key_names():
    """A learning JSON written before TEM's keys moved to [train.tem] records them as
    ``train.tem_*``; ``--resume`` compares them under their current names."""
    bench = _bench()
    old = ["train.threads=1", "train.tem_eta_ramp=1", "train.tem_loss_on=revisits"]
    new = ["train.threads=1", "train.tem.eta_ramp=1", "train.tem.loss_on=revisits"]
    assert bench._current_names(old) == bench._current_names(new) == new
    assert bench._current_names(["train.tem_eta_ramp=2"]) != bench._current_names(new[1:2])

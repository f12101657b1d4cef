"""The main job end to end on a tiny world: train both models → evaluate → record → analyse →
figures, by ``hippo-rep demo`` and by ``hippo_rep.run_demo`` (the same files)."""
import contextlib
import io
import json
import re

import pytest

import hippo_rep
from hippo_rep import cli
from hippo_rep.analysis import open_analysis
from hippo_rep.training.checkpoint import read_checkpoint

pytestmark = pytest.mark.slow  # end to end (see pyproject's markers)

SETS = ["world.worlds=square:6"]
ARGS = ["demo", "--config", "tiny", "--set", *SETS, "--record-envs", "2",
        "--record-steps", "80", "--shuffles", "3", "--no-progress"]
#: What the demo writes into --out.
ARTEFACTS = ("run/checkpoint.pt", "run/calibrated.pt", "baseline/checkpoint.pt", "eval.json",
             "eval_baseline.json", "recording.nc", "analysis.nc")


@pytest.fixture(scope="module")
def cli_demo(tmp_path_factory):
    """One ``hippo-rep demo`` run: (out, figures, printed, exit status)."""
    root = tmp_path_factory.mktemp("cli_demo")
    out, figs = root / "demo", root / "figs"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = cli.main([*ARGS, "--out", str(out), "--figures", str(figs)])
    return out, figs, printed.getvalue(), code


def _files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_demo_writes_every_artefact_and_refuses_to_overwrite(cli_demo, capsys):
    out, figs, printed, code = cli_demo
    assert code == 0
    for name in ARTEFACTS:
        assert (out / name).stat().st_size > 0, name
    for fmt in ("pdf", "svg", "png"):
        assert (figs / f"learning.{fmt}").stat().st_size > 1000
    t = json.loads((out / "eval.json").read_text())
    b = json.loads((out / "eval_baseline.json").read_text())
    assert t["meta"]["model_kind"] == "temt" and b["meta"]["model_kind"] == "sinusoidal"
    # TEM-t is evaluated with its calibrated write threshold
    cal = read_checkpoint(out / "run" / "calibrated.pt")
    thr = cal["extra"]["calibration"]["threshold"]
    assert t["transitions"]["loop_returns"]["write_threshold"] == thr
    assert cal["weights_sha256"] == read_checkpoint(out / "run" / "checkpoint.pt")["weights_sha256"]
    assert "TEM-t  sinusoidal" in printed and str(out / "analysis.nc") in printed
    before = (out / "run" / "checkpoint.pt").read_bytes()
    assert cli.main([*ARGS, "--out", str(out), "--figures", str(figs)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "run" / "checkpoint.pt").read_bytes() == before


def test_run_demo_from_python_writes_what_the_command_writes(cli_demo, tmp_path):
    cli_out, cli_figs, printed, _ = cli_demo
    out, figs, lines = tmp_path / "demo", tmp_path / "figs", []
    rep = hippo_rep.run_demo(out, figs, config="tiny", overrides=SETS, record_envs=2,
                             record_steps=80, shuffles=3, log=lines.append)
    assert _files(out) == _files(cli_out) and _files(figs) == _files(cli_figs)
    for name in ("run/checkpoint.pt", "run/calibrated.pt", "baseline/checkpoint.pt"):
        assert read_checkpoint(out / name)["weights_sha256"] == \
            read_checkpoint(cli_out / name)["weights_sha256"], name
    for name in ("eval.json", "eval_baseline.json"):  # the same but for the files' paths
        ours, theirs = (json.loads((o / name).read_text()) for o in (out, cli_out))
        assert ours["model"] == theirs["model"] and ours["counts"] == theirs["counts"]
    assert rep.runs == {"temt": out / "run", "sinusoidal": out / "baseline"}
    assert rep.evals["temt"] == json.loads((out / "eval.json").read_text())
    assert rep.recording == out / "recording.nc" and rep.analysis == out / "analysis.nc"
    assert sorted(f"{n}.png" for n, paths in rep.figures.items()
                  if not isinstance(paths, str)) == [f for f in _files(figs) if f.endswith(".png")]
    # log=print prints what the command prints: the same lines but for the folder and the
    # seconds each stage took
    def same(text, root):
        return re.sub(r"\d+(\.\d+)? s\b", "T s", text.replace(str(root), "ROOT"))

    assert any("trained in" in line for line in lines)
    assert same("\n".join(lines) + "\n", tmp_path) == same(printed, cli_out.parent)

    # build_figures takes data as well as paths: the same figures from an open dataset and a
    # parsed evaluation as from the files
    with open_analysis(out / "analysis.nc") as ds:
        again = hippo_rep.build_figures(tmp_path / "again", analysis=ds,
                                        recording=out / "recording.nc",
                                        evals=[rep.evals["temt"], out / "eval_baseline.json"],
                                        formats=["png"])
    assert {n: isinstance(r, str) for n, r in again.items()} == \
        {n: isinstance(r, str) for n, r in rep.figures.items()}

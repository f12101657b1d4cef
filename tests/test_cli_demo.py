"""The main job end to end on a tiny world: train both models → evaluate → record → analyse →
figures."""
import json

import pytest

from hippo_rep import cli
from hippo_rep.training.checkpoint import read_checkpoint

pytestmark = pytest.mark.slow  # end to end (see pyproject's markers)

ARGS = ["demo", "--config", "tiny", "--set", "world.worlds=square:6", "--record-envs", "2",
        "--record-steps", "80", "--shuffles", "3", "--no-progress"]


def test_demo_writes_every_artefact_and_refuses_to_overwrite(tmp_path, capsys):
    out, figs = tmp_path / "demo", tmp_path / "figs"
    assert cli.main([*ARGS, "--out", str(out), "--figures", str(figs)]) == 0
    for name in ("run/checkpoint.pt", "run/calibrated.pt", "baseline/checkpoint.pt", "eval.json",
                 "eval_baseline.json", "recording.nc", "analysis.nc"):
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
    printed = capsys.readouterr().out
    assert "TEM-t  sinusoidal" in printed and str(out / "analysis.nc") in printed
    before = (out / "run" / "checkpoint.pt").read_bytes()
    assert cli.main([*ARGS, "--out", str(out), "--figures", str(figs)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "run" / "checkpoint.pt").read_bytes() == before

"""One error boundary in the CLI; outputs checked before work starts."""

import sys
from pathlib import Path

import pytest
import torch

import hippo_rep.training.evaluate  # noqa: F401  (the module, for monkeypatching)
from hippo_rep import cli


def run(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.err.strip()


def test_unexpected_exception_is_one_line_and_debug_shows_traceback(monkeypatch, capsys, tiny_ckpt):
    E = sys.modules["hippo_rep.training.evaluate"]

    def boom(*a, **k):
        raise ZeroDivisionError("division by zero somewhere deep")

    monkeypatch.setattr(E, "evaluate_checkpoint", boom)
    rc, err = run(capsys, "evaluate", tiny_ckpt)
    assert rc == 2 and len(err.splitlines()) == 1
    assert err.startswith("hippo-rep evaluate: error: ZeroDivisionError")
    rc, err = run(capsys, "--debug", "evaluate", tiny_ckpt)
    assert rc == 2 and "Traceback" in err and err.splitlines()[-1].startswith("hippo-rep")
    rc, err = run(capsys, "evaluate", tiny_ckpt, "--debug")
    assert rc == 2 and "Traceback" in err


def test_os_error_names_the_file(monkeypatch, capsys, tiny_ckpt, tmp_path):
    from hippo_rep import fileio

    def full(path, write):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(fileio, "atomic_write", full)
    rc, err = run(capsys, "evaluate", tiny_ckpt, "--envs", "1", "--steps", "5",
                  "--json", tmp_path / "e.json")
    assert rc == 2 and len(err.splitlines()) == 1
    assert "e.json" in err and "No space left" in err


def test_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["evaluate", "x.pt", "--steps", "many"])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and len(err.splitlines()) == 1 and "--steps" in err


def test_evaluate_json_is_not_overwritten_without_flag(capsys, tiny_ckpt, tmp_path):
    js = tmp_path / "e.json"
    js.write_text("precious")
    rc, err = run(capsys, "evaluate", tiny_ckpt, "--envs", "1", "--steps", "5", "--json", js)
    assert rc == 2 and "--overwrite" in err and js.read_text() == "precious"
    rc, _ = run(capsys, "evaluate", tiny_ckpt, "--envs", "1", "--steps", "5", "--json", js,
                "--overwrite")
    assert rc == 0 and js.read_text().startswith("{")


@pytest.mark.parametrize("args,needle", [
    (["--steps", "0"], "--steps"), (["--steps", "-3"], "--steps"),
    (["--world", ""], "--world"), (["--world", "  "], "--world"), (["--envs", "0"], "--envs"),
    (["--steps", "1000000000"], "--steps"), (["--world", "square:100000"], "MAX_NODES"),
])
def test_evaluate_bad_arguments(capsys, tiny_ckpt, args, needle):
    rc, err = run(capsys, "evaluate", tiny_ckpt, *args)
    assert rc == 2 and needle in err and len(err.splitlines()) == 1


def test_outputs_are_checked_before_work(capsys, tiny_ckpt, tmp_path, monkeypatch):
    E = sys.modules["hippo_rep.training.evaluate"]

    def never(*a, **k):
        raise AssertionError("work started")

    monkeypatch.setattr(E, "evaluate_checkpoint", never)
    folder = tmp_path / "dir.json"
    folder.mkdir()
    rc, err = run(capsys, "evaluate", tiny_ckpt, "--json", folder, "--overwrite")
    assert rc == 2 and "is a folder" in err
    afile = tmp_path / "file"
    afile.write_text("x")
    rc, err = run(capsys, "evaluate", tiny_ckpt, "--json", afile / "e.json")
    assert rc == 2 and "is not a folder" in err
    rc, err = run(capsys, "evaluate", tiny_ckpt, "--json", tiny_ckpt, "--overwrite")
    assert rc == 2 and "input" in err
    assert tiny_ckpt.stat().st_size > 0


def test_record_and_analyse_refuse_their_own_input(capsys, tiny_ckpt, tmp_path):
    before = tiny_ckpt.read_bytes()
    rc, err = run(capsys, "record", tiny_ckpt, "--out", tiny_ckpt, "--overwrite")
    assert rc == 2 and tiny_ckpt.read_bytes() == before
    rec = tmp_path / "rec.nc"
    assert run(capsys, "record", tiny_ckpt, "--out", rec, "--envs", "1", "--steps", "20")[0] == 0
    data = rec.read_bytes()
    rc, err = run(capsys, "analyse", rec, "--out", rec, "--overwrite", "--shuffles", "0")
    assert rc == 2 and "input" in err and rec.read_bytes() == data


def test_train_out_that_is_a_file(capsys, tmp_path):
    f = tmp_path / "run"
    f.write_text("not a folder")
    rc, err = run(capsys, "train", "--config", "tiny", "--out", f, "--no-progress")
    assert rc == 2 and "is a file" in err and f.read_text() == "not a folder"


def test_figures_out_that_is_a_file(capsys, tmp_path):
    f = tmp_path / "figs"
    f.write_text("x")
    rc, err = run(capsys, "figures", "--out", f)
    assert rc == 2 and "is a file" in err


def test_hostile_long_value_is_cut(capsys, tiny_ckpt, tmp_path):
    payload = torch.load(tiny_ckpt, weights_only=True)
    payload["config"]["model"]["kind"] = "x" * 5_000_000
    torch.save(payload, tmp_path / "long.pt")
    rc, err = run(capsys, "evaluate", tmp_path / "long.pt")
    assert rc == 2 and len(err) < 1000 and "model.kind" in err


def test_random_bytes_as_toml_name_the_file(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(bytes(range(256)) * 4)
    rc, err = run(capsys, "train", "--config", bad, "--out", tmp_path / "r")
    assert rc == 2 and "bad.toml" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("command", ["figures", "analyse"])
def test_a_missing_reader_package_is_named_not_blamed_on_the_file(capsys, monkeypatch, command):
    """A plain install once lacked h5py: the error must say so, not call the file unreadable."""
    import xarray as xr

    from hippo_rep.analysis import pipeline

    def no_h5py(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'h5py'")

    monkeypatch.setattr(xr, "open_dataset", no_h5py)
    monkeypatch.setattr(pipeline.xr, "open_dataset", no_h5py)
    data = Path(__file__).resolve().parents[1] / "data"
    src = str(data / ("analysis.nc" if command == "figures" else "recording.nc"))
    args = [command, src, "--out", "/nonexistent_dir_for_test/out"]
    if command == "analyse":
        args[-1] = "/nonexistent_dir_for_test/out.nc"
    assert cli.main(args) != 0
    err = capsys.readouterr().err
    assert "No module named 'h5py'" in err and "pip install" in err
    assert len(err.strip().splitlines()) == 1


def test_help_imports_no_heavy_library():
    """`hippo-rep --help` and each command's --help must not import torch, scipy, sklearn,
    xarray or matplotlib (seconds of start-up): the parser reads torch-free defaults only."""
    import subprocess

    code = ("import sys\nfrom hippo_rep.cli import main\n"
            "for args in (['--help'], ['delay', '--help'], ['sweep', '--help'],\n"
            "             ['analyse', '--help'], ['passkey', 'sweep', '--help']):\n"
            "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
            "heavy = ('torch', 'scipy', 'sklearn', 'xarray', 'matplotlib')\n"
            "print('LOADED', [m for m in heavy if m in sys.modules], file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "LOADED []" in res.stderr, res.stderr.splitlines()[-1]

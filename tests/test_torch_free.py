"""The analysis and figures without torch (torch is the ``train`` extra).

Each check runs in a fresh interpreter whose ``sitecustomize`` makes ``import torch`` fail as
it does where torch is not installed (``ModuleNotFoundError``, name ``torch``): the analysis
side imports, ``hippo-rep --help``, a session analysed and drawn from the command line, and a
training command failing in one line that names the extra. ``.ci/plain_install`` checks the
same on a real install without torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

BLOCK_TORCH = textwrap.dedent("""\
    import sys


    class _NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None


    sys.meta_path.insert(0, _NoTorch())
    """)

#: The modules that analyse and draw (and the CLI, which imports each command's on use).
ANALYSIS_SIDE = ("hippo_rep", "hippo_rep.analysis", "hippo_rep.plotting", "hippo_rep.figures",
                 "hippo_rep.explore", "hippo_rep.schema", "hippo_rep.recording",
                 "hippo_rep.export", "hippo_rep.sweep", "hippo_rep.pipeline", "hippo_rep.cli")


@pytest.fixture(scope="module")
def no_torch(tmp_path_factory):
    """Run ``python ARGS`` with torch blocked: returns a function giving the
    CompletedProcess."""
    site = tmp_path_factory.mktemp("no_torch_site")
    (site / "sitecustomize.py").write_text(BLOCK_TORCH)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(site), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        MPLBACKEND="Agg")

    def run(*args, cwd=None):
        return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              env=env, cwd=cwd or REPO, timeout=600)

    return run


def test_torch_is_blocked(no_torch):
    r = no_torch("-c", "import torch")
    assert r.returncode == 1 and "ModuleNotFoundError: No module named 'torch'" in r.stderr


def test_analysis_side_imports_without_torch(no_torch):
    code = ("import sys\n" + "".join(f"import {m}\n" for m in ANALYSIS_SIDE)
            + "assert 'torch' not in sys.modules\nprint('ok')")
    r = no_torch("-c", code)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_help_without_torch(no_torch):
    r = no_torch("-m", "hippo_rep.cli", "--help")
    assert r.returncode == 0 and "usage: hippo-rep" in r.stdout, r.stderr
    for command in ("analyse", "figures", "train"):
        r = no_torch("-m", "hippo_rep.cli", command, "--help")
        assert r.returncode == 0 and r.stdout.startswith(f"usage: hippo-rep {command}"), r.stderr


@pytest.mark.parametrize("args", [["train", "--config", "tiny", "--out", "{tmp}/run"],
                                  ["evaluate", "data/temt_paper.pt"],
                                  ["sweep", "tiny", "--grid", "model.n_g=8", "--seeds", "1",
                                   "--out", "{tmp}/sweep"]])
def test_training_commands_name_the_extra_without_torch(no_torch, tmp_path, args):
    from hippo_rep.cli import MISSING_TORCH

    r = no_torch("-m", "hippo_rep.cli", *[a.format(tmp=tmp_path) for a in args])
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"hippo-rep {args[0]}: error: {MISSING_TORCH}\n"
    assert '"train" extra' in MISSING_TORCH
    assert not (tmp_path / "sweep").exists()  # refused before any work


#: The package-root verbs that need torch, each called as a user would (``{tmp}``: a fresh
#: folder).
TORCH_VERBS = {
    "train": "hippo_rep.train(hippo_rep.load_config('tiny'), r'{tmp}/run')",
    "calibrate": "hippo_rep.calibrate('data/temt_paper.pt', r'{tmp}/cal.pt')",
    "evaluate": "hippo_rep.evaluate('data/temt_paper.pt', r'{tmp}/eval.json', envs=1)",
    "record": "hippo_rep.record('data/temt_paper.pt', r'{tmp}/rec.nc', n_envs=1)",
    "run_stages": "hippo_rep.run_stages(r'{tmp}/stages', hippo_rep.load_config('tiny'))",
    "run_demo": "hippo_rep.run_demo(r'{tmp}/demo', r'{tmp}/figures', config='tiny')",
    "run_sweep": "hippo_rep.run_sweep('tiny', [], 1, r'{tmp}/sweep', progress=False)",
}


@pytest.mark.parametrize("verb", list(TORCH_VERBS))
def test_package_verbs_name_torch_and_the_extra_without_torch(no_torch, tmp_path, verb):
    """``hippo_rep.train()`` and the other verbs that run a model raise MissingTorchError:
    one line saying torch is needed and how to install it (torch 2.13.0, then the "train"
    extra), not torch's bare ModuleNotFoundError; still an ImportError, named "torch"."""
    call = TORCH_VERBS[verb].format(tmp=tmp_path)
    code = textwrap.dedent(f"""\
        import hippo_rep
        try:
            {call}
        except ImportError as err:
            assert type(err) is hippo_rep.MissingTorchError and err.name == "torch", err
            assert isinstance(err, ModuleNotFoundError)
            assert err.__cause__ is None and err.__suppress_context__
            print(err)
        else:
            raise SystemExit("no error")
        """)
    r = no_torch("-c", code)
    assert r.returncode == 0, r.stderr
    line = r.stdout
    assert line.count("\n") == 1, line
    assert line.startswith(f"hippo_rep.{verb} needs PyTorch"), line
    assert "pip install torch==2.13.0" in line and '".[train]"' in line
    assert not (tmp_path / "run" / "checkpoint.pt").exists()
    assert not (tmp_path / "sweep").exists()  # refused before anything is written


def test_torch_free_verbs_are_the_functions_themselves():
    """With torch, the root's verbs that need none are the pipeline's own functions, and
    the torch verbs wrap theirs (same name, doc and signature)."""
    import inspect

    import hippo_rep
    from hippo_rep import pipeline

    assert hippo_rep.analyse is pipeline.analyse
    assert hippo_rep.build_figures is pipeline.build_figures
    assert hippo_rep.train.__wrapped__ is pipeline.train
    assert inspect.signature(hippo_rep.train) == inspect.signature(pipeline.train)
    assert hippo_rep.train.__doc__ == pipeline.train.__doc__
    assert hippo_rep.evaluate.__wrapped__ is pipeline.evaluate
    assert hippo_rep.calibrate.__wrapped__ is pipeline.calibrate
    assert hippo_rep.run_sweep.__wrapped__ is pipeline.run_sweep


def test_other_import_errors_pass_through(monkeypatch):
    """Only torch's import error becomes MissingTorchError."""
    import hippo_rep

    def fails(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'h5py'", name="h5py")

    wrapped = hippo_rep._torch_verb("train", fails)
    with pytest.raises(ModuleNotFoundError, match="h5py") as err:
        wrapped()
    assert not isinstance(err.value, hippo_rep.MissingTorchError)


@pytest.mark.slow  # a session analysed and drawn end to end (a minute on 2 cores)
def test_session_analysed_and_drawn_without_torch(no_torch, tmp_path):
    make = ("from hippo_rep.analysis import simulate_session, write_session\n"
            f"write_session(simulate_session(1, seed=1)[0], {str(tmp_path / 's.nc')!r})")
    assert no_torch("-c", make).returncode == 0
    r = no_torch("-m", "hippo_rep.cli", "analyse", str(tmp_path / "s.nc"), "--out",
                 str(tmp_path / "a.nc"), "--shuffles", "2", "--no-progress")
    assert r.returncode == 0 and "analysed 1 envs" in r.stdout, r.stderr
    r = no_torch("-m", "hippo_rep.cli", "figures", str(tmp_path / "a.nc"), "--out",
                 str(tmp_path / "figures"), "--only", "session_cells")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "figures" / "session_cells.png").stat().st_size > 0


def test_task_results_drawn_without_torch(no_torch, tmp_path):
    """The PassKey sweep and the delay result are read (hippo_rep.tasks.results) and drawn
    without torch; running the tasks needs it."""
    r = no_torch("-m", "hippo_rep.cli", "figures", "--passkey", "data/passkey", "--delay",
                 "data/delay.nc", "--only", "passkey", "--only", "memory_delay", "--format",
                 "png", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert {p.name for p in tmp_path.iterdir()} == {"passkey.png", "memory_delay.png"}

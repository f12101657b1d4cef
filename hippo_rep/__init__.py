"""hippo_rep: grid-like and place-like cells in transformer models of the hippocampal formation.

The main job's verbs, one call each (imported on first use)::

    cfg = hippo_rep.load_config("small", ["world.worlds=square:8"])
    hippo_rep.train(cfg, "runs/a")                                  # runs/a/checkpoint.pt
    hippo_rep.calibrate("runs/a/checkpoint.pt", "runs/a/calibrated.pt")  # TEM-t's threshold
    hippo_rep.evaluate("runs/a/calibrated.pt", "eval.json")         # beside the ideal agents
    hippo_rep.record("runs/a/calibrated.pt", "rec.nc", n_envs=4)
    ds = hippo_rep.analyse("rec.nc", "analysis.nc", shuffles=20)    # a path or a dataset
    hippo_rep.build_figures("figures", analysis=ds, evals=["eval.json"])
    hippo_rep.run_stages("runs/b", cfg)                              # all of it, resumable
    hippo_rep.run_demo("demo", "figures")                            # hippo-rep demo
    hippo_rep.run_sweep("small", ["model.transition_activation=linear,relu"], 3, "sweeps/a")

``train``, ``calibrate``, ``evaluate``, ``record``, ``run_stages`` (its model stages),
``run_demo`` and ``run_sweep`` need PyTorch, the ``train`` extra; without it they raise
:class:`MissingTorchError` (one line: what to install), while ``load_config``, ``analyse``,
``build_figures`` and the readers run.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hippo_rep")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

#: Names imported on first use, so that ``import hippo_rep`` stays light (no torch, no
#: xarray): name → (module, attribute).
_LAZY = {
    "load_config": ("hippo_rep.config", "load_config"),
    "train": ("hippo_rep.pipeline", "train"),
    "calibrate": ("hippo_rep.pipeline", "calibrate"),
    "evaluate": ("hippo_rep.pipeline", "evaluate"),
    "record": ("hippo_rep.recording", "record_to_file"),
    "analyse": ("hippo_rep.pipeline", "analyse"),
    "build_figures": ("hippo_rep.pipeline", "build_figures"),
    "run_stages": ("hippo_rep.pipeline", "run_stages"),
    "run_demo": ("hippo_rep.pipeline", "run_demo"),
    "run_sweep": ("hippo_rep.pipeline", "run_sweep"),
    "open_recording": ("hippo_rep.recording", "open_recording"),
    "validate": ("hippo_rep.schema", "validate"),
    "open_sweep": ("hippo_rep.sweep", "open_sweep"),
}

#: The verbs of :data:`_LAZY` that run a model, so need torch (the ``train`` extra).
NEEDS_TORCH = frozenset({"train", "calibrate", "evaluate", "record", "run_stages", "run_demo",
                         "run_sweep"})

#: How to install torch and the ``train`` extra (the CPU build first; see the README).
TORCH_INSTALL = ('`pip install torch==2.13.0 && pip install -e ".[train]"` (the CPU build '
                 'first)')

__all__ = ["MissingTorchError", "NEEDS_TORCH", "TORCH_INSTALL", "__version__", *_LAZY]


class MissingTorchError(ModuleNotFoundError):
    """A verb that needs PyTorch, called where it is not installed (``name`` is "torch", so
    ``except ImportError`` and ``except ModuleNotFoundError`` catch it too)."""

    def __init__(self, verb: str):
        super().__init__(
            f"hippo_rep.{verb} needs PyTorch (the \"train\" extra), which is not installed: "
            f"{TORCH_INSTALL}; hippo_rep.analyse, build_figures and the analysis run "
            "without it", name="torch")


def _is_torch(err: ImportError) -> bool:
    """Whether ``err`` is torch (or one of its modules) failing to import."""
    name = err.name or ""
    return name == "torch" or name.startswith("torch.")


def _torch_verb(verb: str, fn):
    """``fn`` raising :class:`MissingTorchError` (one line) instead of torch's
    ModuleNotFoundError where torch is not installed."""
    import functools

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ModuleNotFoundError as err:
            if isinstance(err, MissingTorchError) or not _is_torch(err):
                raise
            raise MissingTorchError(verb) from None

    return run


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        return _torch_verb(name, value) if name in NEEDS_TORCH else value
    raise AttributeError(f"module 'hippo_rep' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

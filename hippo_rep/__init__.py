"""hippo_rep: grid-like and place-like cells in transformer models of the hippocampal formation.

The main job's verbs, one call each (imported on first use)::

    cfg = hippo_rep.load_config("small", ["world.worlds=square:8"])
    hippo_rep.train(cfg, "runs/a")                                  # runs/a/checkpoint.pt
    hippo_rep.record("runs/a/checkpoint.pt", "rec.nc", n_envs=4)
    ds = hippo_rep.analyse("rec.nc", "analysis.nc", shuffles=20)    # a path or a dataset
    hippo_rep.build_figures("figures", analysis=ds, evals=["eval.json"])
    hippo_rep.run_stages("runs/b", cfg)                              # all of it, resumable
    hippo_rep.run_demo("demo", "figures")                            # hippo-rep demo
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
    "record": ("hippo_rep.recording", "record_to_file"),
    "analyse": ("hippo_rep.pipeline", "analyse"),
    "build_figures": ("hippo_rep.pipeline", "build_figures"),
    "run_stages": ("hippo_rep.pipeline", "run_stages"),
    "run_demo": ("hippo_rep.pipeline", "run_demo"),
    "open_recording": ("hippo_rep.recording", "open_recording"),
    "validate": ("hippo_rep.schema", "validate"),
    "open_sweep": ("hippo_rep.sweep", "open_sweep"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'hippo_rep' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
